//! XML-RPC and JSON-RPC over one HTTP/1.1 keep-alive connection (hyper's client).
//!
//! HTTP/1.1 answers requests in order, one at a time, so calls on one connection take
//! turns (a lock around hyper's sender); concurrency comes from more connections.
//! The body codec is per protocol; the rest (framing, status, keep-alive) is here.

use super::{json, ClientError, ClientProto, ConnectOpts, Io, Reply};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http1;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST, USER_AGENT};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use rpcmux_value::Params;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio::sync::{watch, Mutex};
use tokio::task::JoinHandle;

const AGENT: &str = concat!("rpcmux/", env!("CARGO_PKG_VERSION"));

pub(crate) struct HttpClient {
    proto: ClientProto,
    sender: Mutex<http1::SendRequest<Full<Bytes>>>,
    conn: JoinHandle<()>,
    /// Why hyper's connection task ended (its error and causes), once it has: a request
    /// it fails only says "canceled" or "connection closed", the TLS alert that was the
    /// cause ("CertificateRequired") is here.
    ended: watch::Receiver<Option<String>>,
    host: String,
    path: String,
    max_reply: usize,
    next_id: AtomicU32,
    /// `Authorization` for every request (`ConnectOpts::credentials`), marked
    /// sensitive so hyper neither indexes nor shows it.
    authorization: Option<HeaderValue>,
}

impl HttpClient {
    pub(crate) async fn start<S: Io>(
        proto: ClientProto,
        io: S,
        host: &str,
        opts: &ConnectOpts,
    ) -> Result<HttpClient, ClientError> {
        let authorization = match &opts.credentials {
            None => None,
            Some(c) => {
                let mut v = HeaderValue::from_str(&c.authorization()).map_err(|_| {
                    ClientError::Unsupported("the credentials cannot go in an HTTP header".into())
                })?;
                v.set_sensitive(true);
                Some(v)
            }
        };
        let (sender, conn) = http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| ClientError::Connect(format!("HTTP: {e}")))?;
        // The connection future does the socket I/O; it ends when the sender is dropped.
        let (end, ended) = watch::channel(None);
        let conn = tokio::spawn(async move {
            let why = match conn.await {
                Ok(()) => String::new(),
                Err(e) => {
                    tracing::debug!(error = %e, "HTTP client connection ended");
                    causes(&e)
                }
            };
            end.send_replace(Some(why));
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
            ended,
            host: host.to_string(),
            path,
            max_reply: opts.max_reply,
            next_id: AtomicU32::new(1),
            authorization,
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
        if let Some(a) = &self.authorization {
            req = req.header(AUTHORIZATION, a.clone());
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ClientError::Unsupported(format!("bad request: {e}")))?;
        let (status, body) = {
            let mut sender = self.sender.lock().await;
            if let Err(e) = sender.ready().await {
                return Err(ClientError::NotSent(self.why(e).await));
            }
            // `try_send_request` hands the request back when hyper never wrote it (the
            // connection closed meanwhile): that failure is safe to retry elsewhere.
            let resp = match sender.try_send_request(req).await {
                Ok(resp) => resp,
                Err(e) if e.message().is_some() => {
                    return Err(ClientError::NotSent(self.why(e.into_error()).await))
                }
                Err(e) => {
                    let e = e.into_error();
                    if e.is_closed() || e.is_incomplete_message() || e.is_canceled() {
                        return Err(ClientError::Closed(self.why(e).await));
                    }
                    return Err(ClientError::Io(std::io::Error::other(self.why(e).await)));
                }
            };
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

/// `e` and its causes, `: `-separated (hyper's own text is often just "connection error").
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl HttpClient {
    /// `e`, a request's failure, with the connection's own error when it has one: the
    /// connection task is ending as the request fails, so it is given a moment.
    async fn why(&self, e: hyper::Error) -> String {
        let mut ended = self.ended.clone();
        let wait = ended.wait_for(Option::is_some);
        let conn = match tokio::time::timeout(std::time::Duration::from_millis(200), wait).await {
            Ok(Ok(why)) => why.clone().unwrap_or_default(),
            _ => String::new(),
        };
        // An error with a cause of its own names it already; "canceled" does not.
        if conn.is_empty() || std::error::Error::source(&e).is_some() {
            causes(&e)
        } else {
            format!("{e}: {conn}")
        }
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
