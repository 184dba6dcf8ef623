//! JSON-RPC 2.0 over WebSocket (subprotocol none or `jsonrpc`): one request or batch per
//! text message, one reply message per request, replies out of order (ids tell them
//! apart), notifications unanswered, and events from `subscribe` as notification
//! messages. The answering is `rpc/jsonrpc.rs`'s, as for HTTP and raw TCP.

use crate::conn::out::Out;
use crate::events::outbox::Delivery;
use crate::events::{Event, Lost};
use crate::rpc::jsonrpc::{self, Bounds};
use crate::stream::driver::{Calls, Close};
use crate::stream::websocket::conn::Messages;
use crate::verbs::{CallContext, VerbTable};
use bytes::BytesMut;
use rpcmux_value::RpcError;
use rpcmux_websocket as frames;
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
        out: &mut Out,
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
        match crate::stream::jsonrpc_tcp::start_message(
            payload,
            0,
            size,
            &self.verbs,
            &self.ctx,
            &self.bounds,
            calls,
        ) {
            Ok(()) => Ok(true),
            Err(body) => {
                frames::put_frame(out, frames::TEXT, &body);
                Ok(false)
            }
        }
    }

    fn reply(&mut self, done: Self::Done, out: &mut Out) {
        if let Some(body) = done {
            frames::put_header(out, frames::TEXT, body.len(), None);
            out.put_owned(body);
        }
    }

    fn event(&mut self, event: &Event, how: &Delivery, out: &mut Out) {
        let budget = out.budget().clone();
        let n = event.json_for(&budget, how);
        frames::put_header(out, frames::TEXT, n.len(), None);
        n.put(out);
    }

    fn lost(&mut self, notice: &Lost, out: &mut Out) {
        frames::put_frame(out, frames::TEXT, &notice.json());
    }
}
