//! Load for a bare byte-echo server: the ceiling of a stream protocol on this machine.
//!
//! It sends the exact bytes a real call would (same protocol, same payload), D at a time
//! per connection, and counts a call done when the same bytes come back. No decoding, no
//! dispatch: what is left is the cost of the sockets and the runtime, which is what an
//! RPC server's figure is compared against. A reply that differs from the request
//! counts as a wrong result.

use super::stats::{Outcome, Recorder};
use super::Progress;
use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// One connection with `pipeline` requests in flight, until `end`.
pub(crate) async fn connection(
    mut tcp: TcpStream,
    request: Bytes,
    pipeline: usize,
    progress: Arc<Progress>,
    measure_from: Instant,
    end: Instant,
) -> Recorder {
    let mut rec = Recorder::new();
    let mut sent: VecDeque<Instant> = VecDeque::with_capacity(pipeline);
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut out = Vec::with_capacity(request.len() * pipeline);
    let lost = |rec: &mut Recorder, why: String| {
        rec.record(std::time::Duration::ZERO, Outcome::Transport, || why);
    };
    for _ in 0..pipeline {
        out.extend_from_slice(&request);
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
            let outcome = if buf[..request.len()] == request[..] {
                Outcome::Ok
            } else {
                Outcome::WrongResult
            };
            buf.advance(request.len());
            progress.calls.fetch_add(1, Ordering::Relaxed);
            if outcome != Outcome::Ok {
                progress.errors.fetch_add(1, Ordering::Relaxed);
            }
            if t0 >= measure_from {
                rec.record(now - t0, outcome, || {
                    "the echo differs from the request".into()
                });
            }
            if now < end {
                out.extend_from_slice(&request);
                sent.push_back(now);
            }
        }
    }
    rec
}
