//! Load for a bare byte-echo server: the ceiling of a stream protocol on this machine.
//!
//! It sends the exact bytes a real call would (same protocol, same payload), D at a time
//! per connection, and counts a call done when the same bytes come back. The server does
//! no RPC work at all; the load generator still does a client's share: it decodes every
//! echo with the protocol's decoder into a `Value` and checks its param against the
//! payload, as `rpcmux bench` checks a real reply. So the ceiling and rpcmux are loaded
//! by generators doing comparable work, and the gap between them is the server's.

use super::stats::{Outcome, Recorder};
use super::{same, Progress};
use crate::client::ClientProto;
use bytes::{Buf, Bytes, BytesMut};
use rpcmux_value::Value;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// What every echo connection sends and expects, and when.
pub(crate) struct Plan {
    pub proto: ClientProto,
    /// The bytes of one call, as the client would write them.
    pub request: Bytes,
    /// The first param the echoed call must decode to.
    pub expect: Option<Value>,
    pub pipeline: usize,
    pub measure_from: Instant,
    pub end: Instant,
}

/// One connection with `plan.pipeline` requests in flight, until `plan.end`.
pub(crate) async fn connection(
    mut tcp: TcpStream,
    plan: Arc<Plan>,
    progress: Arc<Progress>,
) -> Recorder {
    let Plan {
        proto,
        ref request,
        ref expect,
        pipeline,
        measure_from,
        end,
    } = *plan;
    let mut rec = Recorder::new();
    let mut sent: VecDeque<Instant> = VecDeque::with_capacity(pipeline);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut out = Vec::with_capacity(request.len() * pipeline);
    let lost = |rec: &mut Recorder, why: String| {
        rec.record(std::time::Duration::ZERO, Outcome::Transport, || why);
    };
    for _ in 0..pipeline {
        out.extend_from_slice(request);
        sent.push_back(Instant::now());
    }
    loop {
        if !out.is_empty() {
            if let Err(e) = tcp.write_all(&out).await {
                lost(&mut rec, format!("write failed: {e}"));
                break;
            }
            out.clear();
        }
        if sent.is_empty() {
            break;
        }
        match tcp.read_buf(&mut buf).await {
            Ok(0) => {
                lost(&mut rec, "closed by the server".into());
                break;
            }
            Ok(_) => {}
            Err(e) => {
                lost(&mut rec, format!("read failed: {e}"));
                break;
            }
        }
        let now = Instant::now();
        while buf.len() >= request.len() {
            let Some(t0) = sent.pop_front() else {
                lost(&mut rec, "more bytes back than were sent".into());
                return rec;
            };
            let echoed = first_param(proto, &buf[..request.len()]);
            let outcome = match (&echoed, expect) {
                (Some(got), Some(want)) if same(got, want) => Outcome::Ok,
                (Some(_), None) => Outcome::Ok,
                _ => Outcome::WrongResult,
            };
            buf.advance(request.len());
            progress.calls.fetch_add(1, Ordering::Relaxed);
            if outcome != Outcome::Ok {
                progress.errors.fetch_add(1, Ordering::Relaxed);
            }
            if t0 >= measure_from {
                rec.record(now - t0, outcome, || {
                    "the echo did not decode to the request".into()
                });
            }
            if now < end {
                out.extend_from_slice(request);
                sent.push_back(now);
            }
        }
    }
    rec
}

/// Decode an echoed request as `proto`'s client would decode a reply, and return its
/// first param (`None`: it did not decode, or had none).
fn first_param(proto: ClientProto, bytes: &[u8]) -> Option<Value> {
    let first = |params: Vec<Value>| params.into_iter().next();
    match proto {
        ClientProto::Msgpack => {
            let limits = rpcmux_msgpack_rpc::Limits::default();
            match rpcmux_msgpack_rpc::decode_message(bytes, &limits).ok()? {
                rpcmux_msgpack_rpc::Message::Request { params, .. } => first(params),
                _ => None,
            }
        }
        ClientProto::JsonrpcTcp => json_first_param(bytes),
        ClientProto::Stomp => {
            use tokio_util::codec::Decoder;
            let mut codec = rpcmux_stomp::StompCodec::default();
            let mut buf = BytesMut::from(bytes);
            match codec.decode(&mut buf).ok()?? {
                rpcmux_stomp::Item::Frame(f) => json_first_param(&f.body),
                rpcmux_stomp::Item::Heartbeat => None,
            }
        }
        ClientProto::Xmlrpc | ClientProto::Jsonrpc => None,
    }
}

fn json_first_param(bytes: &[u8]) -> Option<Value> {
    match rpcmux_jsonrpc::parse(bytes).ok()? {
        rpcmux_jsonrpc::Incoming::Single(Ok(req)) => match req.params {
            rpcmux_value::Params::Positional(p) => p.into_iter().next(),
            rpcmux_value::Params::Named(_) => None,
        },
        _ => None,
    }
}
