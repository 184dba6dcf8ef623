//! `[ops] metrics_listen`: a listener of its own for `GET /metrics` (and `/health`,
//! `/ready`), for operators who keep metrics off the RPC port. Plain HTTP/1.1, nothing
//! else; connections are few (a scraper), so each gets a task and hyper's defaults.

use crate::shared::Shared;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Serve `listener` until the server shuts down.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let (stream, _) = tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "metrics listener: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let reply = answer(&req, &shared);
                async move { Ok::<_, Infallible>(reply) }
            });
            // half_close: a client that shuts its write side after the request (curl
            // does not, scripts may) still gets the reply; without it hyper could close
            // on that EOF before writing.
            let conn = hyper::server::conn::http1::Builder::new()
                .half_close(true)
                .serve_connection(TokioIo::new(stream), svc);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(60), conn).await;
        });
    }
}

fn answer(req: &Request<hyper::body::Incoming>, shared: &Shared) -> crate::http::service::Reply {
    let om = crate::http::service::wants_openmetrics(req);
    let found = match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => crate::http::service::metrics(shared, om),
        (&Method::GET | &Method::HEAD, p @ ("/health" | "/ready")) => {
            crate::http::service::get(p, shared, om)
        }
        _ => None,
    };
    found.unwrap_or_else(|| {
        let mut r = Response::new(Full::new(Bytes::from_static(b"GET /metrics\n")).into());
        *r.status_mut() = StatusCode::NOT_FOUND;
        r
    })
}
