//! JSON-RPC over STOMP 1.2, the way VDSM's clients speak it: CONNECT, SUBSCRIBE to the
//! response destination, then each call is a SEND to the request destination with a
//! `reply-to` header; each reply comes back as a MESSAGE whose body is the JSON-RPC
//! response. Heart-beats are declined (`0,0`): calls carry their own timeout.

use super::stream::{Decode, Encode, Incoming, Parts};
use super::{json, ClientError, ConnectOpts, Event, Io, StompOpts};
use bytes::{Bytes, BytesMut};
use rpcmux_stomp::{encode_frame, Command, Frame, Item, Limits, StompCodec};
use rpcmux_value::{Params, RpcError, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::Decoder;

/// The subscription id of the reply subscription (one per connection).
const REPLY_SUB: &str = "rpcmux-client-replies";
/// The subscription id of the event subscription (`Client::subscribe`).
const EVENT_SUB: &str = "rpcmux-client-events";
/// The receipt of an event SUBSCRIBE is this and the call id it answers as.
const SUB_RECEIPT: &str = "rpcmux-client-sub-";

pub(crate) async fn start<S: Io>(
    mut io: S,
    host: &str,
    opts: &ConnectOpts,
) -> Result<Parts<S>, ClientError> {
    let mut codec = StompCodec::new(Limits {
        max_frame: opts.max_reply,
        ..Limits::default()
    });
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    let mut connect = Frame::new(Command::Connect)
        .header("accept-version", "1.2")
        .header("host", host)
        .header("heart-beat", "0,0");
    // Credentials as RabbitMQ and ActiveMQ take them (and rpcmux `--auth`): a token is
    // the passcode alone. `Credentials` refused at its making what a header cannot carry.
    if let Some(c) = &opts.credentials {
        let (login, passcode) = c.stomp_headers();
        if let Some(login) = login {
            connect = connect.header("login", login);
        }
        connect = connect.header("passcode", passcode);
    }
    send(&mut io, &connect).await?;
    let mut buf = BytesMut::with_capacity(4096);
    let connected = loop {
        match codec.decode(&mut buf).map_err(stomp_err)? {
            Some(Item::Frame(f)) => break f,
            Some(Item::Heartbeat) => continue,
            None => {}
        }
        if io.read_buf(&mut buf).await? == 0 {
            return Err(ClientError::Connect(
                "STOMP: closed before CONNECTED".into(),
            ));
        }
    };
    match connected.command {
        Command::Connected => {}
        Command::Error => return Err(ClientError::Connect(error_text(&connected))),
        other => {
            return Err(ClientError::Connect(format!(
                "STOMP: expected CONNECTED, got {other}"
            )))
        }
    }
    let subscribe = Frame::new(Command::Subscribe)
        .header("destination", opts.stomp.response_destination.as_str())
        .header("id", REPLY_SUB)
        .header("ack", "auto");
    send(&mut io, &subscribe).await?;
    Ok(Parts {
        io,
        input: buf,
        encode: Box::new(Sends(opts.stomp.clone())),
        decode: Box::new(Messages(codec)),
    })
}

async fn send<S: Io>(io: &mut S, frame: &Frame) -> Result<(), ClientError> {
    let mut out = BytesMut::new();
    encode_frame(frame, &mut out).map_err(stomp_err)?;
    io.write_all(&out).await?;
    Ok(())
}

fn stomp_err(e: rpcmux_stomp::StompError) -> ClientError {
    ClientError::Protocol(format!("STOMP: {e}"))
}

/// An ERROR frame's `message` header and body, as one line (the body once when it
/// only repeats the message, as rpcmux's does).
fn error_text(f: &Frame) -> String {
    let body = String::from_utf8_lossy(&f.body);
    let (message, body) = (f.get("message").unwrap_or(""), body.trim());
    let body = if body == message { "" } else { body };
    format!("STOMP ERROR: {message} {body}")
        .trim_end()
        .to_string()
}

pub(crate) struct Sends(pub(crate) StompOpts);

impl Encode for Sends {
    fn encode(&self, id: u32, method: &str, params: &Params) -> Result<Bytes, ClientError> {
        let mut body = Vec::with_capacity(128);
        json::write_call(&mut body, id, method, params);
        let frame = Frame::new(Command::Send)
            .header("destination", self.0.request_destination.as_str())
            .header("reply-to", self.0.response_destination.as_str())
            .header("content-type", "application/json")
            .with_body(body);
        let mut out = BytesMut::with_capacity(frame.body.len() + 160);
        encode_frame(&frame, &mut out).map_err(stomp_err)?;
        Ok(out.freeze())
    }

    /// A SUBSCRIBE to the event destination (every event: the pattern is the
    /// caller's to apply), `since` as a header, answered by a RECEIPT.
    fn subscribe(
        &self,
        id: u32,
        _pattern: &str,
        since: Option<&str>,
    ) -> Option<Result<Bytes, ClientError>> {
        let mut frame = Frame::new(Command::Subscribe)
            .header("destination", self.0.event_destination.as_str())
            .header("id", EVENT_SUB)
            .header("ack", "auto")
            .header("receipt", format!("{SUB_RECEIPT}{id}"));
        if let Some(since) = since {
            frame.push_header("since", since);
        }
        let mut out = BytesMut::with_capacity(256);
        Some(
            encode_frame(&frame, &mut out)
                .map_err(stomp_err)
                .map(|()| out.freeze()),
        )
    }
}

/// A STOMP ERROR ends the session (the server closes it after): it answers the event
/// SUBSCRIBE it refuses, or is the notice of events lost, or else every call in flight
/// fails with it.
fn error_frame(f: &Frame) -> Result<Incoming, ClientError> {
    if let Some(id) = subscribe_answered(f) {
        return Ok(Incoming::Reply {
            id,
            reply: Err(refusal(f)),
        });
    }
    match f.get("first-lost") {
        Some(first) => Ok(Incoming::Event(lost_notice(f, first))),
        None => Err(ClientError::Protocol(error_text(f))),
    }
}

/// The call id a RECEIPT or ERROR answers, when it answers an event SUBSCRIBE.
fn subscribe_answered(f: &Frame) -> Option<u32> {
    f.get("receipt-id")?.strip_prefix(SUB_RECEIPT)?.parse().ok()
}

/// The ERROR refusing an event SUBSCRIBE as the error reply the `subscribe` call gives
/// on the other protocols: its `code` header (-32007 for a `since` older than the
/// window), or -32602 from a server that sends none.
fn refusal(f: &Frame) -> RpcError {
    let message = f.get("message").unwrap_or("SUBSCRIBE refused");
    let code = f
        .get("code")
        .and_then(|c| c.parse().ok())
        .unwrap_or(RpcError::INVALID_PARAMS);
    RpcError::new(code, message)
}

/// The ERROR closing a session that fell behind (header `first-lost`) as the
/// `events.lost` notice the other protocols send.
fn lost_notice(f: &Frame, first_lost: &str) -> Event {
    let message = f.get("message").unwrap_or("");
    let reason = match (message.find('('), message.find(')')) {
        (Some(a), Some(b)) if a < b => &message[a + 1..b],
        _ => message,
    };
    let mut m = rpcmux_value::Map::default();
    m.insert("reason", reason.into());
    m.insert("first_lost", first_lost.into());
    Event {
        name: Event::LOST.into(),
        params: Value::Struct(Box::new(m)),
        id: None,
    }
}

struct Messages(StompCodec);

impl Decode for Messages {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, ClientError> {
        Ok(match self.0.decode(buf).map_err(stomp_err)? {
            None => None,
            Some(Item::Heartbeat) => Some(Incoming::Other),
            Some(Item::Frame(f)) => match f.command {
                Command::Message => Some(match json::read_message(&f.body)? {
                    // The header names the event on every MESSAGE, asked for or not.
                    Incoming::Event(mut e) => {
                        if let Some(id) = f.get("event-id") {
                            e.id = Some(id.to_owned());
                        }
                        Incoming::Event(e)
                    }
                    other => other,
                }),
                Command::Receipt => match subscribe_answered(&f) {
                    Some(id) => Some(Incoming::Reply {
                        id,
                        reply: Ok(Value::Bool(true)),
                    }),
                    None => Some(Incoming::Other),
                },
                Command::Error => Some(error_frame(&f)?),
                _ => Some(Incoming::Other),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_answer_the_subscribe_or_tell_of_events_lost() {
        let too_old = Frame::new(Command::Error)
            .header("receipt-id", "rpcmux-client-sub-7")
            .header(
                "message",
                "since is older than the events retained here (oldest retained: 00000000000000ff-6)",
            )
            .header("code", "-32007");
        let Ok(Incoming::Reply { id: 7, reply }) = error_frame(&too_old) else {
            panic!()
        };
        assert_eq!(reply.unwrap_err().code, -32007);
        let lost = Frame::new(Command::Error)
            .header(
                "message",
                "events lost (outbox overflow); subscribe again with since",
            )
            .header("first-lost", "00000000000000ff-9");
        let Ok(Incoming::Event(e)) = error_frame(&lost) else {
            panic!()
        };
        assert!(e.is_lost_notice());
        assert_eq!(
            e.params.get("reason").and_then(Value::as_str),
            Some("outbox overflow")
        );
        assert_eq!(
            e.params.get("first_lost").and_then(Value::as_str),
            Some("00000000000000ff-9")
        );
        let other = Frame::new(Command::Error).header("message", "bad frame");
        assert!(error_frame(&other).is_err());
    }
}
