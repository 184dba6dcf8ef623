//! XML-RPC and JSON-RPC over one HTTP/1.1 keep-alive connection (hyper's client).
//!
//! HTTP/1.1 answers requests in order, one at a time, so calls on one connection take
//! turns (a lock around hyper's sender); concurrency comes from more connections.
//! The body codec is per protocol; the rest (framing, status, keep-alive) is here.

use super::{json, ClientError, ClientProto, ConnectOpts, Io, Reply};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1;
use hyper::header::{CONTENT_TYPE, HOST, USER_AGENT};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use rpcmux_value::Params;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

const AGENT: &str = concat!("rpcmux/", env!("CARGO_PKG_VERSION"));

pub(crate) struct HttpClient {
    proto: ClientProto,
    sender: Mutex<http1::SendRequest<Full<Bytes>>>,
    conn: JoinHandle<()>,
    host: String,
    path: String,
    max_reply: usize,
    next_id: AtomicU32,
}

impl HttpClient {
    pub(crate) async fn start<S: Io>(
        proto: ClientProto,
        io: S,
        host: &str,
        opts: &ConnectOpts,
    ) -> Result<HttpClient, ClientError> {
        let (sender, conn) = http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| ClientError::Connect(format!("HTTP: {e}")))?;
        // The connection future does the socket I/O; it ends when the sender is dropped.
        let conn = tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "HTTP client connection ended");
            }
        });
        let path = opts.http_path.clone().unwrap_or_else(|| {
            if proto == ClientProto::Xmlrpc {
                "/RPC2"
            } else {
                "/"
            }
            .to_string()
        });
        Ok(HttpClient {
            proto,
            sender: Mutex::new(sender),
            conn,
            host: host.to_string(),
            path,
            max_reply: opts.max_reply,
            next_id: AtomicU32::new(1),
        })
    }

    pub(crate) async fn call(
        &self,
        method: &str,
        params: &Params,
        headers: &[(&str, &str)],
    ) -> Result<Reply, ClientError> {
        let (ctype, body) = match self.proto {
            ClientProto::Jsonrpc => {
                let mut body = Vec::with_capacity(128);
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                json::write_call(&mut body, id, method, params);
                ("application/json", body)
            }
            _ => ("text/xml", super::xmlrpc::write_call(method, params)?),
        };
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(self.path.as_str())
            .header(HOST, self.host.as_str())
            .header(USER_AGENT, AGENT)
            .header(CONTENT_TYPE, ctype);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ClientError::Unsupported(format!("bad request: {e}")))?;
        let (status, body) = {
            let mut sender = self.sender.lock().await;
            sender
                .ready()
                .await
                .map_err(|e| ClientError::NotSent(e.to_string()))?;
            // `try_send_request` hands the request back when hyper never wrote it (the
            // connection closed meanwhile): that failure is safe to retry elsewhere.
            let resp = sender.try_send_request(req).await.map_err(|e| {
                if e.message().is_some() {
                    ClientError::NotSent(e.into_error().to_string())
                } else {
                    hyper_err(e.into_error())
                }
            })?;
            let status = resp.status();
            let body = Limited::new(resp.into_body(), self.max_reply)
                .collect()
                .await
                .map_err(|e| ClientError::Protocol(format!("reading the body: {e}")))?
                .to_bytes();
            (status, body)
        };
        // An RPC error body counts whatever the status (a 413 can carry a fault);
        // a body that is not one is a transport-level failure, reported with the status.
        let parsed = match self.proto {
            ClientProto::Jsonrpc => json::read_reply(&body),
            _ => super::xmlrpc::read_reply(&body),
        };
        match parsed {
            Ok(reply) => Ok(reply),
            Err(_) if !status.is_success() => Err(ClientError::Protocol(format!(
                "HTTP {status}: {}",
                json::snippet(&body, 200)
            ))),
            Err(e) => Err(e),
        }
    }
}

fn hyper_err(e: hyper::Error) -> ClientError {
    if e.is_closed() || e.is_incomplete_message() || e.is_canceled() {
        ClientError::Closed(e.to_string())
    } else {
        ClientError::Io(std::io::Error::other(e))
    }
}

impl HttpClient {
    /// The connection is over: hyper's connection task ended (the server closed it, or
    /// an error did), or the request sender says so.
    pub(crate) fn is_closed(&self) -> bool {
        self.conn.is_finished() || self.sender.try_lock().is_ok_and(|s| s.is_closed())
    }
}

impl Drop for HttpClient {
    fn drop(&mut self) {
        self.conn.abort();
    }
}
