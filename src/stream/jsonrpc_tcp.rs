//! JSON-RPC 2.0 over raw TCP: requests arrive one per line or back to back; each
//! response is one line. Replies may come out of order; the ids tell them apart.
//! A value that is not valid JSON gets a -32700 line and the stream goes on after it;
//! bytes that cannot start a value are skipped through the next newline; a value
//! larger than the frame cap gets an error line and the connection is closed. A value
//! (or line) left unfinished when the stream ends (the peer's EOF, the idle timeout)
//! gets a -32700 line naming it, instead of going unanswered.

use crate::conn::out::Out;
use crate::conn::ConnInfo;
use crate::events::outbox::Delivery;
use crate::events::{Event, Lost};
use crate::io::{Rewind, Stream};
use crate::rpc::jsonrpc::{self, Bounds};
use crate::shared::Shared;
use crate::stream::driver::{self, Calls, Close, Framer};
use crate::verbs::{CallContext, VerbTable};
use bytes::{Buf, BufMut, BytesMut};
use rpcmux_jsonrpc::{Split, Splitter, Unfinished};
use rpcmux_value::RpcError;
use std::sync::Arc;

struct JsonrpcTcp {
    splitter: Splitter,
    verbs: Arc<VerbTable>,
    ctx: CallContext,
    bounds: Bounds,
    max_frame: usize,
    /// The first bytes of the value being received, once a read ended inside it: what
    /// the -32700 at the end of the stream shows if it never closes.
    head: Option<Vec<u8>>,
}

/// How much of an unfinished value the error shows.
const HEAD: usize = 40;

impl Framer for JsonrpcTcp {
    /// The encoded reply line, or nothing for a notification.
    type Done = Option<Vec<u8>>;

    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut Out,
        calls: &mut Calls<Self::Done>,
        mut room: usize,
    ) -> Result<(), Close> {
        while room > 0 {
            match self.splitter.next(input) {
                Split::Value { start, end } => {
                    self.head = None;
                    let frame = input.split_to(end);
                    // The newline after a value is not left behind: a connection whose
                    // input holds only it would look busy and keep its read buffer.
                    let blank = input.iter().take_while(|b| b.is_ascii_whitespace()).count();
                    input.advance(blank);
                    let size = frame.len();
                    match start_message(
                        frame,
                        start,
                        size,
                        &self.verbs,
                        &self.ctx,
                        &self.bounds,
                        calls,
                    ) {
                        Ok(()) => room -= 1,
                        Err(body) => line(out, &body),
                    }
                }
                Split::Garbage { skip } if skip > 0 => {
                    let bad = input.split_to(skip);
                    tracing::debug!(bytes = bad.len(), "skipping bytes that are not JSON");
                    let e = RpcError::parse_error("expected a JSON object or array");
                    line(out, &jsonrpc::error_body(&e));
                }
                Split::Incomplete => {
                    if let (None, Some(Unfinished::Value { start, .. })) =
                        (&self.head, self.splitter.unfinished())
                    {
                        self.head = Some(input[start..input.len().min(start + HEAD)].to_vec());
                    }
                    return Ok(());
                }
                Split::Garbage { .. } => return Ok(()),
                Split::TooLarge => {
                    let e = RpcError::invalid_request(format!(
                        "message larger than {} bytes",
                        self.max_frame
                    ));
                    line(out, &jsonrpc::error_body(&e));
                    input.clear();
                    return Err(Close::over_limit("frame", "frame too large"));
                }
            }
        }
        Ok(())
    }

    fn reply(&mut self, done: Self::Done, out: &mut Out) {
        if let Some(body) = done {
            out.put_owned(body);
            out.put_u8(b'\n');
        }
    }

    fn event(&mut self, event: &Event, how: &Delivery, out: &mut Out) {
        let budget = out.budget().clone();
        event.json_for(&budget, how).put(out);
        out.put_u8(b'\n');
    }

    fn lost(&mut self, notice: &Lost, out: &mut Out) {
        out.extend_from_slice(&notice.json());
        out.put_u8(b'\n');
    }

    /// The stream ended (EOF, idle timeout, shutdown) with a value or a line begun and
    /// not finished: say so, as -32700 naming it, rather than drop it unanswered.
    fn finish(&mut self, out: &mut Out) {
        let Some(e) = unfinished_error(self.splitter.unfinished(), self.head.as_deref()) else {
            return;
        };
        tracing::debug!(error = %e.message, "stream ended inside a JSON value");
        line(out, &jsonrpc::error_body(&e));
    }
}

/// The -32700 for what a stream ended inside, if anything; `head` is the value's start.
fn unfinished_error(unfinished: Option<Unfinished>, head: Option<&[u8]>) -> Option<RpcError> {
    let what = match unfinished? {
        Unfinished::Garbage => {
            return Some(RpcError::parse_error(
                "the stream ended inside a line that is no JSON object or array",
            ))
        }
        Unfinished::Value {
            in_string: true, ..
        } => "a string never closed (a missing \")".to_owned(),
        Unfinished::Value { open, .. } => format!(
            "{open} bracket{} never closed (a missing }} or ])",
            if open == 1 { "" } else { "s" }
        ),
    };
    let head = head.unwrap_or_default();
    let shown = String::from_utf8_lossy(head);
    let more = if head.len() >= HEAD { "…" } else { "" };
    Some(RpcError::parse_error(format_args!(
        "the stream ended inside the JSON value {shown}{more}: {what}"
    )))
}

fn line(out: &mut BytesMut, body: &[u8]) {
    out.reserve(body.len() + 1);
    out.put_slice(body);
    out.put_u8(b'\n');
}

/// Serve a raw-TCP JSON-RPC connection. A plain fn returning the driver's future, as
/// msgpack's and STOMP's `serve`: an `async fn` would keep its arguments beside the
/// copies moved into the driver, for the connection's whole life.
pub(crate) fn serve<S: Stream>(
    io: Rewind<S>,
    info: ConnInfo,
    shared: Arc<Shared>,
) -> impl std::future::Future<Output = ()> {
    let max_frame = shared.config.limits.max_frame;
    let verbs = shared.verbs.clone();
    let bounds = shared.json_bounds();
    driver::serve(io, info, shared, "jsonrpc-tcp", move |ctx| JsonrpcTcp {
        splitter: Splitter::new(max_frame),
        verbs,
        ctx,
        bounds,
        max_frame,
        head: None,
    })
}

/// Start one JSON-RPC message of a stream (a request, a notification or a batch: the
/// text of `frame` from `start` on, `frame` holding `size` bytes of input) as a call
/// whose result is its encoded reply (`None` for notifications only). A large message
/// is parsed inside the call, off the async workers (see `heavy`); a small one now, so
/// that a message that does not parse starts no call: its error body is returned, to be
/// written at once. Shared by raw-TCP JSON-RPC and JSON-RPC over WebSocket.
pub(crate) fn start_message(
    mut frame: bytes::BytesMut,
    start: usize,
    size: usize,
    verbs: &Arc<VerbTable>,
    ctx: &CallContext,
    bounds: &Bounds,
    calls: &mut crate::stream::driver::Calls<Option<Vec<u8>>>,
) -> Result<(), Vec<u8>> {
    let (verbs, ctx) = (verbs.clone(), ctx.clone());
    if size >= crate::offload::OFFLOAD_AT {
        let bounds = bounds.clone();
        let text = frame.split_off(start).freeze();
        calls.start(size, async move {
            let mut body = Vec::new();
            match jsonrpc::parse(text, &bounds, &verbs).await {
                Ok(incoming) => jsonrpc::answer(verbs, ctx, incoming, &bounds, size, &mut body)
                    .await
                    .then_some(body),
                Err(e) => Some(jsonrpc::error_body(&e)),
            }
        });
        return Ok(());
    }
    let incoming =
        jsonrpc::parse_now(&frame[start..], bounds, &verbs).map_err(|e| jsonrpc::error_body(&e))?;
    let bounds = bounds.clone();
    calls.start(size, async move {
        let mut body = jsonrpc::reply_buffer(size);
        jsonrpc::answer(verbs, ctx, incoming, &bounds, size, &mut body)
            .await
            .then_some(body)
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unfinished_value_is_named() {
        let e = unfinished_error(
            Some(Unfinished::Value {
                start: 0,
                open: 1,
                in_string: false,
            }),
            Some(br#"{"jsonrpc":"2.0","method":"ping","id":1"#),
        )
        .unwrap();
        assert_eq!(e.code, -32700);
        assert_eq!(
            e.message,
            r#"Parse error: the stream ended inside the JSON value {"jsonrpc":"2.0","method":"ping","id":1: 1 bracket never closed (a missing } or ])"#
        );
        let e = unfinished_error(
            Some(Unfinished::Value {
                start: 0,
                open: 2,
                in_string: true,
            }),
            Some(&[b'['; HEAD]),
        )
        .unwrap();
        assert!(
            e.message.contains("[[[…: a string never closed"),
            "{}",
            e.message
        );
        assert!(unfinished_error(None, None).is_none());
        assert_eq!(
            unfinished_error(Some(Unfinished::Garbage), None)
                .unwrap()
                .code,
            -32700
        );
    }
}
