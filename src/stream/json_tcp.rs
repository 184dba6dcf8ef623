//! JSON-RPC 2.0 over raw TCP: requests arrive one per line or back to back; each
//! response is one line. Replies may come out of order; the ids tell them apart.
//! A value that is not valid JSON gets a -32700 line and the stream goes on after it;
//! bytes that cannot start a value are skipped through the next newline; a value
//! larger than the frame cap gets an error line and the connection is closed.

use crate::conn::out::Out;
use crate::conn::ConnInfo;
use crate::events::Event;
use crate::io::{Rewind, Stream};
use crate::rpc::jsonrpc::{self, Bounds};
use crate::shared::Shared;
use crate::stream::driver::{self, Calls, Close, Framer};
use crate::verbs::{CallContext, VerbTable};
use bytes::{Buf, BufMut, BytesMut};
use rpcmux_jsonrpc::{Split, Splitter};
use rpcmux_value::RpcError;
use std::sync::Arc;

struct JsonTcp {
    splitter: Splitter,
    verbs: Arc<VerbTable>,
    ctx: CallContext,
    bounds: Bounds,
    max_frame: usize,
}

impl Framer for JsonTcp {
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
                    let frame = input.split_to(end);
                    // The newline after a value is not left behind: a connection whose
                    // input holds only it would look busy and keep its read buffer.
                    let blank = input.iter().take_while(|b| b.is_ascii_whitespace()).count();
                    input.advance(blank);
                    let size = frame.len();
                    match jsonrpc::start_message(
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
                Split::Garbage { .. } | Split::Incomplete => return Ok(()),
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

    fn event(&mut self, event: &Event, out: &mut Out) {
        out.put_shared(event.json(out.budget()));
        out.put_u8(b'\n');
    }
}

fn line(out: &mut BytesMut, body: &[u8]) {
    out.reserve(body.len() + 1);
    out.put_slice(body);
    out.put_u8(b'\n');
}

pub(crate) async fn serve<S: Stream>(io: Rewind<S>, info: ConnInfo, shared: Arc<Shared>) {
    let max_frame = shared.config.limits.max_frame;
    let verbs = shared.verbs.clone();
    let bounds = Bounds::of(&shared);
    driver::serve(io, info, shared, "jsonrpc-tcp", |ctx| JsonTcp {
        splitter: Splitter::new(max_frame),
        verbs,
        ctx,
        bounds,
        max_frame,
    })
    .await;
}
