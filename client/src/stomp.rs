//! JSON-RPC over STOMP 1.2, the way VDSM's clients speak it: CONNECT, SUBSCRIBE to the
//! response destination, then each call is a SEND to the request destination with a
//! `reply-to` header; each reply comes back as a MESSAGE whose body is the JSON-RPC
//! response. Heart-beats are declined (`0,0`): calls carry their own timeout.

use super::stream::{Decode, Encode, Incoming, Parts};
use super::{json, ClientError, ConnectOpts, Io, StompOpts};
use bytes::{Bytes, BytesMut};
use rpcmux_stomp::{encode_frame, Command, Frame, Item, Limits, StompCodec};
use rpcmux_value::Params;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::Decoder;

/// The subscription id of the reply subscription (one per connection).
const REPLY_SUB: &str = "rpcmux-client-replies";

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
}

struct Messages(StompCodec);

impl Decode for Messages {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, ClientError> {
        Ok(match self.0.decode(buf).map_err(stomp_err)? {
            None => None,
            Some(Item::Heartbeat) => Some(Incoming::Other),
            Some(Item::Frame(f)) => match f.command {
                Command::Message => Some(json::read_message(&f.body)?),
                // A STOMP ERROR ends the session: every call in flight fails with it.
                Command::Error => return Err(ClientError::Protocol(error_text(&f))),
                _ => Some(Incoming::Other),
            },
        })
    }
}
