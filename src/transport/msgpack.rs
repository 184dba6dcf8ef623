//! MessagePack-RPC over raw TCP: pipelined requests answered as each completes
//! (out of order; msgids tell them apart), notifications run without reply (unknown
//! ones ignored: pynvim opens with `nvim_set_client_info`), events pushed to
//! connections that subscribed, as `[2, event, [params]]`. A msgpack stream cannot be
//! resynchronised, so a framing error is logged and the connection closed after the
//! replies already owed are written.

use super::session::{self, Calls, Close, Framer};
use crate::events::Event;
use crate::io::{Rewind, Stream};
use crate::server::{ConnInfo, Shared};
use crate::verbs::{CallContext, VerbTable};
use bytes::BytesMut;
use rpcmux_msgpack_rpc::{encode_notification, encode_response, Limits, Message, MsgpackRpcCodec};
use rpcmux_value::{Params, RpcError, Value};
use std::sync::Arc;
use tokio_util::codec::Decoder;

struct Msgpack {
    codec: MsgpackRpcCodec,
    verbs: Arc<VerbTable>,
    ctx: CallContext,
}

impl Framer for Msgpack {
    /// The msgid and outcome of a request; `None` for a notification.
    type Done = Option<(u32, Result<Value, RpcError>)>;

    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut BytesMut,
        calls: &mut Calls<Self::Done>,
        mut room: usize,
    ) -> Result<(), Close> {
        while room > 0 {
            let msg = match self.codec.decode(input) {
                Ok(Some(m)) => m,
                Ok(None) => return Ok(()),
                Err(e) => {
                    input.clear();
                    return Err(Close(format!("msgpack-rpc framing error: {e}")));
                }
            };
            match msg {
                Message::Request {
                    msgid,
                    method,
                    params,
                } => {
                    let fut =
                        self.verbs
                            .call(&method, Params::Positional(params), self.ctx.clone());
                    calls.push(Box::pin(async move { Some((msgid, fut.await)) }));
                    room -= 1;
                }
                Message::Notification { method, params } => {
                    let fut =
                        self.verbs
                            .call(&method, Params::Positional(params), self.ctx.clone());
                    calls.push(Box::pin(async move {
                        if let Err(e) = fut.await {
                            tracing::debug!(%method, error = %e, "notification failed (no reply is sent)");
                        }
                        None
                    }));
                    room -= 1;
                }
                Message::Invalid {
                    msgid: Some(msgid),
                    error,
                } => encode_response(out, msgid, Err(&error)),
                Message::Invalid { msgid: None, error } => {
                    tracing::debug!(error = %error, "invalid notification ignored");
                }
                Message::Response { msgid, .. } => {
                    tracing::debug!(msgid, "client sent a response to no request; ignored");
                }
            }
        }
        Ok(())
    }

    fn reply(&mut self, done: Self::Done, out: &mut BytesMut) {
        if let Some((msgid, result)) = done {
            encode_response(out, msgid, result.as_ref());
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
    session::serve(io, info, shared, "msgpack-rpc", |ctx| Msgpack {
        codec,
        verbs,
        ctx,
    })
    .await;
}

/// An `application/msgpack` HTTP body: one request (or notification). Returns the
/// reply body, or `None` for a notification. A body that is not one msgpack-rpc
/// request is answered `[1, 0, [code, message], nil]` (msgid 0: the real one is unknown).
pub(crate) async fn answer_http(body: &[u8], shared: &Shared, info: &ConnInfo) -> Option<Vec<u8>> {
    let mut out = BytesMut::with_capacity(body.len() + 64);
    match rpcmux_msgpack_rpc::decode_message(body, &limits(shared)) {
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
            encode_response(&mut out, msgid, r.as_ref());
        }
        Ok(Message::Notification { method, params }) => {
            let ctx = info.call_context("msgpack-rpc-http", shared);
            let _ = shared
                .verbs
                .call(&method, Params::Positional(params), ctx)
                .await;
            return None;
        }
        Ok(Message::Invalid { msgid, error }) => {
            encode_response(&mut out, msgid.unwrap_or(0), Err(&error))
        }
        Ok(Message::Response { .. }) => {
            let e = RpcError::invalid_request("a response is not a request");
            encode_response(&mut out, 0, Err(&e));
        }
        Err(e) => encode_response(&mut out, 0, Err(&e.to_rpc_error())),
    }
    Some(out.to_vec())
}
