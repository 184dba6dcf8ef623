//! HTTP/2's side of "this port requires TLS": a plaintext HTTP/2 client (prior knowledge,
//! `curl --http2-prior-knowledge`, httpx with `http2=True` on an `http://` URL) on a port
//! with `--tls required` gets the `400` an HTTP/1.1 client gets, as an HTTP/2 answer to
//! its first request, then the close.
//!
//! Why an answer rather than a GOAWAY alone: clients do not show a GOAWAY's debug data
//! (curl 7.88 says "Error in the HTTP2 framing layer", httpx `ConnectionTerminated` with
//! the bytes in hex), while every one shows a response's status and body. It is hyper's
//! HTTP/2 server (the one rpcmux serves HTTP/2 with), not frames written by hand.
//!
//! Bounds: one request at a time (SETTINGS_MAX_CONCURRENT_STREAMS 1), its header list at
//! most 16 KiB, the request's body never read, [`WITHIN`] for the first request and
//! [`LINGER`] after it;
//! nothing the client sends reaches a route. The connection's slots (its address's
//! count) are held as by any refusal, until this returns.

use crate::io::Rewind;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// How long a refused HTTP/2 client has to send its first request.
const WITHIN: Duration = Duration::from_secs(2);

/// How long the connection is kept after the answer, for the client to read it and close.
const LINGER: Duration = Duration::from_secs(1);

/// Serve the `400` on `io`, whose first bytes (`head`, what the sniffer read) are the
/// start of HTTP/2's preface, until the client has it or [`WITHIN`] passed.
pub(super) async fn refuse<S: AsyncRead + AsyncWrite + Unpin + Send>(io: &mut S, head: Bytes) {
    let answered = Arc::new(tokio::sync::Notify::new());
    let service = {
        let answered = answered.clone();
        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            let answered = answered.clone();
            async move {
                let host = req
                    .uri()
                    .authority()
                    .map(|a| a.as_str().to_owned())
                    .or_else(|| {
                        let host = req.headers().get(hyper::header::HOST)?;
                        host.to_str().ok().map(str::to_owned)
                    });
                let text = super::https_hint::tls_required_text(host.as_deref());
                answered.notify_one();
                let mut reply = Response::new(Full::new(Bytes::from(text)));
                *reply.status_mut() = hyper::StatusCode::BAD_REQUEST;
                reply.headers_mut().insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                Ok::<_, Infallible>(reply)
            }
        })
    };
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(1)
        .max_header_list_size(16 * 1024);
    let conn = builder.serve_connection(TokioIo::new(Rewind::new(head, io)), service);
    let conn = std::pin::pin!(conn);
    let mut conn = conn;
    let first = async {
        tokio::select! {
            _ = conn.as_mut() => false,
            () = answered.notified() => true,
        }
    };
    if tokio::time::timeout(WITHIN, first).await != Ok(true) {
        return;
    }
    // The answer is on its way: serve on until the client, having read it, closes, at
    // most LINGER, then close. No GOAWAY first: hyper's graceful one is two GOAWAYs
    // around a PING, and python-hyper's h2 (httpx) refuses the PING once it has a
    // GOAWAY ("RECV_PING in state CLOSED"), losing the answer; a close after the answer
    // loses nothing.
    let _ = tokio::time::timeout(LINGER, conn).await;
}
