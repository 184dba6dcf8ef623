//! MessagePack-RPC over raw TCP: pipelined requests answered as each completes
//! (out of order; msgids tell them apart), notifications run without reply (unknown
//! ones ignored: pynvim opens with `nvim_set_client_info`), events pushed to
//! connections that subscribed, as `[2, event, [params]]`. A msgpack stream cannot be
//! resynchronised, so a framing error is logged and the connection closed after the
//! replies already owed are written.

use super::session::{self, Calls, Close, Framer};
use crate::events::Event;
use crate::heavy;
use crate::io::{Rewind, Stream};
use crate::server::{ConnInfo, Shared};
use crate::verbs::{CallContext, VerbTable};
use bytes::BytesMut;
use rpcmux_msgpack_rpc::{
    encode_notification, encode_response, parse_framed, Framed, Limits, Message, MsgpackRpcCodec,
};
use rpcmux_value::{Params, RpcError, Value};
use std::sync::Arc;

struct Msgpack {
    codec: MsgpackRpcCodec,
    verbs: Arc<VerbTable>,
    ctx: CallContext,
    max_reply: usize,
}

impl Msgpack {
    /// Start what one message asks; `size` is its length on the wire.
    fn start(
        &mut self,
        msg: Message,
        size: usize,
        out: &mut BytesMut,
        calls: &mut Calls<Done>,
    ) -> bool {
        match msg {
            Message::Request {
                msgid,
                method,
                params,
            } => {
                let fut = self
                    .verbs
                    .call(&method, Params::Positional(params), self.ctx.clone());
                calls.start(size, async move { Some(Reply::Value(msgid, fut.await)) });
                true
            }
            Message::Notification { method, params } => {
                let fut = self
                    .verbs
                    .call(&method, Params::Positional(params), self.ctx.clone());
                calls.start(size, async move {
                    if let Err(e) = fut.await {
                        tracing::debug!(%method, error = %e, "notification failed (no reply is sent)");
                    }
                    None
                });
                true
            }
            Message::Invalid {
                msgid: Some(msgid),
                error,
            } => {
                encode_response(out, msgid, Err(&error));
                false
            }
            Message::Invalid { msgid: None, error } => {
                tracing::debug!(error = %error, "invalid notification ignored");
                false
            }
            Message::Response { msgid, .. } => {
                tracing::debug!(msgid, "client sent a response to no request; ignored");
                false
            }
        }
    }
}

/// Append the reply to `msgid`; one over `max_reply` bytes becomes error -32003.
fn put_reply(out: &mut BytesMut, msgid: u32, result: Result<&Value, &RpcError>, max_reply: usize) {
    let start = out.len();
    encode_response(out, msgid, result);
    if out.len() - start > max_reply {
        out.truncate(start);
        encode_response(out, msgid, Err(&reply_too_large(max_reply)));
    }
}

/// The encoded reply of a finished big call, encoded off the async workers.
async fn encoded_reply(
    msgid: u32,
    result: Result<Value, RpcError>,
    size: usize,
    max_reply: usize,
) -> Reply {
    heavy::run(size, move || {
        let mut out = BytesMut::new();
        put_reply(&mut out, msgid, result.as_ref(), max_reply);
        Reply::Encoded(out)
    })
    .await
}

pub(crate) fn reply_too_large(max: usize) -> RpcError {
    RpcError::new(
        super::jsonrpc::ERR_REPLY_TOO_LARGE,
        format!("reply larger than {max} bytes (max_reply)"),
    )
}

/// A finished call's reply: its msgid and outcome, to encode straight into the output
/// (small calls), or already encoded (big ones); `None` for a notification.
enum Reply {
    Value(u32, Result<Value, RpcError>),
    Encoded(BytesMut),
}
type Done = Option<Reply>;

impl Framer for Msgpack {
    type Done = Done;

    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut BytesMut,
        calls: &mut Calls<Self::Done>,
        mut room: usize,
    ) -> Result<(), Close> {
        while room > 0 {
            let before = input.len();
            let framed = match self.codec.decode_or_frame(input, heavy::OFFLOAD_AT) {
                Ok(Some(f)) => f,
                Ok(None) => return Ok(()),
                Err(e) => {
                    input.clear();
                    return Err(Close(format!("msgpack-rpc framing error: {e}")));
                }
            };
            let size = before - input.len();
            let started = match framed {
                Framed::Message(msg) => self.start(msg, size, out, calls),
                Framed::Raw(frame) => {
                    // Big: parsed inside the call, off the async workers (see `heavy`).
                    let (verbs, ctx, max_reply) =
                        (self.verbs.clone(), self.ctx.clone(), self.max_reply);
                    calls.start(size, async move {
                        let frame = frame.freeze();
                        let parsed = heavy::run(size, move || parse_framed(&frame)).await;
                        match parsed {
                            Ok(Message::Request { msgid, method, params }) => {
                                let r = verbs.call(&method, Params::Positional(params), ctx).await;
                                Some(encoded_reply(msgid, r, size, max_reply).await)
                            }
                            Ok(Message::Notification { method, params }) => {
                                let _ = verbs.call(&method, Params::Positional(params), ctx).await;
                                None
                            }
                            Ok(Message::Invalid { msgid: Some(msgid), error }) => {
                                Some(Reply::Value(msgid, Err(error)))
                            }
                            Ok(_) => None,
                            Err(e) => {
                                tracing::debug!(error = %e, "unparsable msgpack-rpc message ignored");
                                None
                            }
                        }
                    });
                    true
                }
            };
            if started {
                room -= 1;
            }
        }
        Ok(())
    }

    fn reply(&mut self, done: Self::Done, out: &mut BytesMut) {
        match done {
            Some(Reply::Value(msgid, r)) => put_reply(out, msgid, r.as_ref(), self.max_reply),
            Some(Reply::Encoded(bytes)) => out.extend_from_slice(&bytes),
            None => {}
        }
    }

    fn event(&mut self, event: &Event, out: &mut BytesMut) {
        if let Err(e) = encode_notification(out, &event.name, std::slice::from_ref(&event.params)) {
            tracing::warn!(error = %e, event = %event.name, "event not encodable as msgpack");
        }
    }
}

fn limits(shared: &Shared) -> Limits {
    Limits {
        max_message: shared.config.limits.max_frame,
        ..Limits::default()
    }
}

pub(crate) async fn serve<S: Stream>(io: Rewind<S>, info: ConnInfo, shared: Arc<Shared>) {
    let codec = MsgpackRpcCodec::new(limits(&shared));
    let verbs = shared.verbs.clone();
    let max_reply = shared.config.limits.max_reply;
    session::serve(io, info, shared, "msgpack-rpc", |ctx| Msgpack {
        codec,
        verbs,
        ctx,
        max_reply,
    })
    .await;
}

/// An `application/msgpack` HTTP body: one request (or notification). Returns the
/// reply body, or `None` for a notification. A body that is not one msgpack-rpc
/// request is answered `[1, 0, [code, message], nil]` (msgid 0: the real one is unknown).
pub(crate) async fn answer_http(
    body: bytes::Bytes,
    shared: &Shared,
    info: &ConnInfo,
) -> Option<Vec<u8>> {
    let size = body.len();
    let limits = limits(shared);
    let max_reply = shared.config.limits.max_reply;
    let parsed = heavy::run(size, move || {
        rpcmux_msgpack_rpc::decode_message(&body, &limits)
    })
    .await;
    let (msgid, result) = match parsed {
        Ok(Message::Request {
            msgid,
            method,
            params,
        }) => {
            let ctx = info.call_context("msgpack-rpc-http", shared);
            let r = shared
                .verbs
                .call(&method, Params::Positional(params), ctx)
                .await;
            (msgid, r)
        }
        Ok(Message::Notification { method, params }) => {
            let ctx = info.call_context("msgpack-rpc-http", shared);
            let _ = shared
                .verbs
                .call(&method, Params::Positional(params), ctx)
                .await;
            return None;
        }
        Ok(Message::Invalid { msgid, error }) => (msgid.unwrap_or(0), Err(error)),
        Ok(Message::Response { .. }) => (
            0,
            Err(RpcError::invalid_request("a response is not a request")),
        ),
        Err(e) => (0, Err(e.to_rpc_error())),
    };
    let out = heavy::run(size, move || {
        let mut out = BytesMut::new();
        put_reply(&mut out, msgid, result.as_ref(), max_reply);
        out
    })
    .await;
    Some(out.to_vec())
}
