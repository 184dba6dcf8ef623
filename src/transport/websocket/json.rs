//! JSON-RPC 2.0 over WebSocket (subprotocol none or `jsonrpc`): one request or batch per
//! text message, one reply message per request, replies out of order (ids tell them
//! apart), notifications unanswered, and events from `subscribe` as notification
//! messages. The answering is `transport/jsonrpc.rs`'s, as for HTTP and raw TCP.

use super::conn::Messages;
use super::frames;
use crate::events::Event;
use crate::heavy;
use crate::transport::jsonrpc::{self, Bounds};
use crate::transport::session::{Calls, Close};
use crate::verbs::{CallContext, VerbTable};
use bytes::BytesMut;
use rpcmux_value::RpcError;
use std::sync::Arc;

pub(crate) struct JsonWs {
    pub verbs: Arc<VerbTable>,
    pub ctx: CallContext,
    pub bounds: Bounds,
}

impl Messages for JsonWs {
    /// The encoded reply, or nothing for a notification.
    type Done = Option<Vec<u8>>;

    fn message(
        &mut self,
        text: bool,
        payload: BytesMut,
        out: &mut BytesMut,
        calls: &mut Calls<Self::Done>,
    ) -> Result<bool, (Option<u16>, Close)> {
        if !text {
            // The session goes on: a binary message is the caller's mistake, not the stream's.
            let e =
                RpcError::parse_error("binary message: JSON-RPC over WebSocket is text messages");
            frames::put_frame(out, frames::TEXT, &jsonrpc::error_body(&e));
            return Ok(false);
        }
        let size = payload.len();
        let (verbs, ctx, bounds) = (self.verbs.clone(), self.ctx.clone(), self.bounds);
        if size >= heavy::OFFLOAD_AT {
            // Parsed inside the call, off the async workers (see `heavy`).
            let text = payload.freeze();
            calls.start(size, async move {
                let mut body = Vec::new();
                match jsonrpc::parse(text, bounds, &verbs).await {
                    Ok(incoming) => jsonrpc::answer(verbs, ctx, incoming, bounds, size, &mut body)
                        .await
                        .then_some(body),
                    Err(e) => Some(jsonrpc::error_body(&e)),
                }
            });
            return Ok(true);
        }
        match jsonrpc::parse_now(&payload, bounds, &verbs) {
            Ok(incoming) => {
                calls.start(size, async move {
                    let mut body = Vec::with_capacity(256);
                    jsonrpc::answer(verbs, ctx, incoming, bounds, size, &mut body)
                        .await
                        .then_some(body)
                });
                Ok(true)
            }
            Err(e) => {
                frames::put_frame(out, frames::TEXT, &jsonrpc::error_body(&e));
                Ok(false)
            }
        }
    }

    fn reply(&mut self, done: Self::Done, out: &mut BytesMut) {
        if let Some(body) = done {
            frames::put_frame(out, frames::TEXT, &body);
        }
    }

    fn event(&mut self, event: &Event, out: &mut BytesMut) {
        let mut body = Vec::with_capacity(128);
        rpcmux_jsonrpc::write_notification(&mut body, &event.name, &event.params);
        frames::put_frame(out, frames::TEXT, &body);
    }
}
