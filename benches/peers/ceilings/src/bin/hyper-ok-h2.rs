//! A bare hyper HTTP/2 server (cleartext, prior knowledge): reads the whole request body,
//! answers `ok`. The ceiling for any RPC over HTTP/2 on this machine (same hyper and h2
//! crates, no RPC work). Usage: hyper-ok-h2 ADDR (port 0 picks one); prints
//! `listening on IP:PORT`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::convert::Infallible;
use tokio::net::TcpListener;

async fn ok(req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    // Read the body, as an RPC server must, so the ceiling carries the same bytes.
    let _ = req.into_body().collect().await;
    Ok(Response::builder()
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from_static(b"ok")))
        .expect("static response"))
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on {}", listener.local_addr()?);
    loop {
        let (tcp, _) = listener.accept().await?;
        tcp.set_nodelay(true)?;
        tokio::spawn(async move {
            let _ = http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), service_fn(ok))
                .await;
        });
    }
}
