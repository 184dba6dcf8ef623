//! Forwarding one call to an upstream: the cap on calls in flight, the timeout, the
//! addresses in failover order, and the upstream's failures as documented errors.

use crate::codes::{
    ERR_UPSTREAM_BAD_REPLY, ERR_UPSTREAM_OVERLOADED, ERR_UPSTREAM_TIMEOUT, ERR_UPSTREAM_UNREACHABLE,
};
use crate::config::{UpstreamConfig, UpstreamProto};
use crate::gateway::pool::{Failure, Pool};
use rpcmux_client::{ClientProto, ConnectOpts, TlsOpts};
use rpcmux_value::{Params, RpcError, Value};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// An address that failed to connect is tried after the others for this long, so calls
/// do not each wait for a dead replica before reaching a live one.
const DOWN_FOR: Duration = Duration::from_secs(5);

pub(super) struct Endpoint {
    /// Its URL as logs and metrics show it: without credentials.
    pub url: String,
    pub pool: Pool,
    /// The `Authorization` header value sent with each call (HTTP only), when the
    /// upstream has credentials; replaced when a secret file is read again.
    authorization: RwLock<Option<Secret>>,
    /// When it last failed to connect; cleared when it answers.
    down_since: Mutex<Option<Instant>>,
    /// Whether its last health check failed (`health_interval`): calls try it only
    /// after every other address, until a check succeeds.
    check_failed: AtomicBool,
}

/// A secret header value: its `Debug` never shows it.
#[derive(Clone)]
struct Secret(Arc<str>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Who a call is forwarded for: the client's address (`X-Forwarded-For`) and name
/// (`principal_header`). Calls rpcmux makes itself (discovery) have neither.
#[derive(Clone, Copy, Default)]
pub(super) struct Caller<'a> {
    pub peer: Option<SocketAddr>,
    pub name: Option<&'a str>,
}

/// The caller's name for `principal_header`: its principal (`--auth`), else the
/// verified TLS client name.
pub(super) fn caller_name(ctx: &crate::verbs::CallContext) -> Option<Arc<str>> {
    ctx.principal()
}

/// Longest caller name sent in `principal_header`; a longer one is not sent.
const MAX_PRINCIPAL: usize = 1024;

/// `name` as a header value, if it can be one as it is: no control character (CR, LF,
/// NUL, tab, DEL), not empty, not over [`MAX_PRINCIPAL`] bytes. Otherwise no header is
/// sent (never a mangled name the upstream could mistake for another).
fn header_value(name: &str) -> Option<&str> {
    let ok = !name.is_empty()
        && name.len() <= MAX_PRINCIPAL
        && !name.chars().any(char::is_control)
        && name.trim() == name;
    ok.then_some(name)
}

/// Words the messages of a credentials refusal share ([`refused`]).
const REFUSED_MARK: &str = "credentials (HTTP ";

/// Whether `e` is an upstream refusing rpcmux's credentials (or asking for some): HTTP
/// 401 or 403 without an RPC reply.
pub(super) fn refused(e: &RpcError) -> bool {
    e.code == ERR_UPSTREAM_BAD_REPLY && e.message.contains(REFUSED_MARK)
}

/// The status of a refusal: an HTTP 401 answer, or a 403 to a call that carried
/// credentials, without an RPC reply in it. (A 403 to a call without credentials may be
/// the upstream's own access rule: a bad reply like any other.)
fn refusal_status(e: &rpcmux_client::ClientError, sent_credentials: bool) -> Option<&str> {
    let rpcmux_client::ClientError::Protocol(why) = e else {
        return None;
    };
    let status = why.strip_prefix("HTTP ")?;
    let status = status.split_once(':').map_or(status, |(s, _)| s);
    let refused = status.starts_with("401") || (sent_credentials && status.starts_with("403"));
    refused.then_some(status)
}

impl Endpoint {
    /// The `Authorization` header value for the next call, if any.
    fn authorization(&self) -> Option<Secret> {
        let a = self.authorization.read().unwrap_or_else(|e| e.into_inner());
        a.clone()
    }

    fn down(&self) -> bool {
        let d = self.down_since.lock().unwrap_or_else(|e| e.into_inner());
        d.is_some_and(|t| t.elapsed() < DOWN_FOR)
    }

    fn check_failed(&self) -> bool {
        self.check_failed.load(Ordering::Relaxed)
    }

    /// Whether calls would go to it first: its last check (if any) passed and it has
    /// not failed to connect lately. The `/metrics` gauge.
    pub fn up(&self) -> bool {
        !self.check_failed() && !self.down()
    }

    /// Record a health check's outcome; a change is logged once.
    pub fn checked(&self, upstream: &str, ok: bool, why: &dyn std::fmt::Display) {
        let was_failed = self.check_failed.swap(!ok, Ordering::Relaxed);
        match (was_failed, ok) {
            (false, false) => {
                tracing::warn!(upstream, url = %self.url, error = %why, "upstream address failed its health check: skipped by calls")
            }
            (true, true) => {
                tracing::info!(upstream, url = %self.url, "upstream address passed its health check")
            }
            _ => {}
        }
        if ok {
            // A passing check also clears a failed connect: calls may go there first.
            *self.down_since.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// Record whether it answered; a change is logged once, not per call.
    fn mark(&self, upstream: &str, down: bool, why: &dyn std::fmt::Display) {
        let mut d = self.down_since.lock().unwrap_or_else(|e| e.into_inner());
        match (d.is_some(), down) {
            (false, true) => {
                tracing::warn!(upstream, url = %self.url, error = %why, "upstream address down")
            }
            (true, false) => tracing::info!(upstream, url = %self.url, "upstream address back"),
            _ => {}
        }
        *d = down.then(Instant::now);
    }
}

/// One upstream server (all its addresses), shared by every verb forwarded to it.
pub(super) struct Upstream {
    /// Its prefix, or its first URL: how errors and logs name it.
    pub name: String,
    pub endpoints: Vec<Endpoint>,
    /// Seconds between health checks of each address, when set.
    pub health_interval: Option<Duration>,
    /// Whether every address takes parameters by name (JSON-RPC).
    named_params: bool,
    timeout: Duration,
    in_flight: Semaphore,
    max_in_flight: usize,
    idempotent: HashSet<String>,
    all_idempotent: bool,
    forwarded_for: bool,
    /// The header carrying the caller's name, lower case (`principal_header`).
    principal_header: Option<String>,
    /// Whether the upstream listed `system.multicall` at its last discovery (and
    /// `multicall` is on in its settings): batches to it go as one multicall.
    multicall: AtomicBool,
    multicall_allowed: bool,
}

impl Upstream {
    /// Check `c` and set up its pools (no connection is opened yet).
    pub fn new(c: &UpstreamConfig) -> Result<Upstream, crate::config::ConfigError> {
        let urls = c.check()?;
        let authorization = c.authorization()?;
        let timeout = c.timeout();
        let endpoints = urls
            .iter()
            .zip(c.urls_shown())
            .zip(authorization)
            .map(|((u, text), auth)| {
                let proto = match u.proto {
                    UpstreamProto::XmlrpcHttp => ClientProto::Xmlrpc,
                    UpstreamProto::JsonrpcHttp => ClientProto::Jsonrpc,
                    UpstreamProto::JsonrpcTcp => ClientProto::JsonrpcTcp,
                    UpstreamProto::Msgpack => ClientProto::Msgpack,
                };
                let opts = ConnectOpts {
                    timeout,
                    http_path: u.path.clone(),
                    tls: u.tls.then(|| TlsOpts {
                        ca: c.tls_ca.clone().unwrap_or_default(),
                        client_cert: None,
                        server_name: None,
                    }),
                    ..ConnectOpts::default()
                };
                let n = c
                    .connections
                    .unwrap_or(if proto.pipelines() { 2 } else { 8 });
                Endpoint {
                    url: text,
                    pool: Pool::new(proto, u.addr.clone(), opts, n),
                    authorization: RwLock::new(auth.map(|a| Secret(a.into()))),
                    down_since: Mutex::new(None),
                    check_failed: AtomicBool::new(false),
                }
            })
            .collect();
        Ok(Upstream {
            name: c.name(),
            endpoints,
            health_interval: c.health_interval(),
            named_params: urls.iter().all(|u| {
                matches!(
                    u.proto,
                    UpstreamProto::JsonrpcHttp | UpstreamProto::JsonrpcTcp
                )
            }),
            timeout,
            in_flight: Semaphore::new(c.max_in_flight),
            max_in_flight: c.max_in_flight,
            all_idempotent: c.idempotent.iter().any(|m| m == "*"),
            idempotent: c.idempotent.iter().cloned().collect(),
            forwarded_for: c.forwarded_for,
            principal_header: c.principal_header.as_ref().map(|h| h.to_ascii_lowercase()),
            multicall: AtomicBool::new(false),
            // A multicall is sent without a caller (BatchTarget has its address only),
            // so an upstream told the caller's name gets each call on its own.
            multicall_allowed: c.multicall
                && c.principal_header.is_none()
                && urls.iter().all(|u| u.proto == UpstreamProto::XmlrpcHttp),
        })
    }

    /// Read the secret files of `c` (this upstream's settings) again, at a refresh: a
    /// rotated password or token is used from the next call on. A file that cannot be
    /// read keeps the secret read before (logged, without it).
    pub fn reload_secrets(&self, c: &UpstreamConfig) {
        if !c.reads_secret_files() {
            return;
        }
        match c.authorization() {
            Ok(auth) => {
                for (e, a) in self.endpoints.iter().zip(auth) {
                    let mut slot = e.authorization.write().unwrap_or_else(|e| e.into_inner());
                    *slot = a.map(|a| Secret(a.into()));
                }
            }
            Err(err) => {
                tracing::warn!(upstream = %self.name, error = %err, "cannot read the upstream's secret again: the one read before is kept")
            }
        }
    }

    /// Record whether the upstream lists `system.multicall` (at each discovery).
    pub fn set_multicall(&self, listed: bool) {
        let on = listed && self.multicall_allowed;
        self.multicall.store(on, Ordering::Relaxed);
    }

    /// Whether batches to this upstream go as one `system.multicall`.
    pub fn multicall(&self) -> bool {
        self.multicall.load(Ordering::Relaxed)
    }

    /// Call `method` (its name on the upstream) for `caller`. The upstream's own error
    /// replies come back as they are (code, message, data); failures to get one are
    /// -32010..-32013.
    pub async fn forward(
        &self,
        method: &str,
        params: Params,
        caller: Caller<'_>,
    ) -> Result<Value, RpcError> {
        let retry = self.idempotent(method);
        self.forward_as(method, params, caller, retry).await
    }

    /// Whether `method` (its name on the upstream) is safe to run twice.
    pub fn idempotent(&self, method: &str) -> bool {
        self.all_idempotent || self.idempotent.contains(method)
    }

    /// [`forward`](Self::forward), saying whether the call may be sent again after its
    /// connection was lost (a multicall: only if every call in it may).
    pub async fn forward_as(
        &self,
        method: &str,
        params: Params,
        caller: Caller<'_>,
        retry: bool,
    ) -> Result<Value, RpcError> {
        if matches!(params, Params::Named(_)) && !self.named_params {
            return Err(RpcError::invalid_params(format!(
                "{method} is served by upstream {}, which takes parameters by position only",
                self.name
            )));
        }
        let Ok(_permit) = self.in_flight.try_acquire() else {
            return Err(RpcError::new(
                ERR_UPSTREAM_OVERLOADED,
                format!(
                    "upstream {} overloaded: {} calls in flight (max_in_flight)",
                    self.name, self.max_in_flight
                ),
            ));
        };
        let ip = caller
            .peer
            .filter(|_| self.forwarded_for)
            .map(|p| p.ip().to_string());
        let mut headers: Vec<(&str, &str)> = Vec::with_capacity(3);
        if let Some(ip) = &ip {
            headers.push(("x-forwarded-for", ip.as_str()));
        }
        if let (Some(h), Some(name)) = (&self.principal_header, caller.name) {
            match header_value(name) {
                Some(v) => headers.push((h.as_str(), v)),
                None => {
                    tracing::debug!(upstream = %self.name, "caller's name not sent: not a valid header value")
                }
            }
        }
        let call = self.attempt(method, &params, &headers, retry);
        match tokio::time::timeout(self.timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(self.timed_out(method)),
        }
    }

    fn timed_out(&self, method: &str) -> RpcError {
        RpcError::new(
            ERR_UPSTREAM_TIMEOUT,
            format!(
                "upstream {}: no reply to {method} within {:?}",
                self.name, self.timeout
            ),
        )
    }

    /// Try the addresses in order, those that recently failed to connect last.
    async fn attempt(
        &self,
        method: &str,
        params: &Params,
        headers: &[(&str, &str)],
        retry: bool,
    ) -> Result<Value, RpcError> {
        // Healthy first, then those that failed a connect lately, then those that
        // failed their health check: tried only when nothing else answers.
        let rank = |e: &&Endpoint| (e.check_failed(), e.down());
        let mut order: Vec<&Endpoint> = self.endpoints.iter().collect();
        order.sort_by_key(rank);
        if retry && order.len() == 1 {
            // One address: a verb safe to repeat gets one more try on a new connection.
            order.push(order[0]);
        }
        let mut why = Vec::new();
        for e in order {
            let auth = e.authorization();
            let mut with_auth;
            let headers = match &auth {
                Some(a) => {
                    with_auth = headers.to_vec();
                    with_auth.push(("authorization", &a.0));
                    &with_auth[..]
                }
                None => headers,
            };
            match e.pool.call(method, params, headers).await {
                Ok(reply) => {
                    e.mark(&self.name, false, &"");
                    return reply;
                }
                Err(Failure::NotSent(err)) => {
                    e.mark(&self.name, true, &err);
                    why.push(format!("{}: {err}", e.url));
                }
                Err(Failure::Lost(err)) => {
                    why.push(format!("{}: {err}", e.url));
                    if !retry {
                        break;
                    }
                }
                // The client's deadline is the same as ours; whichever fires first.
                Err(Failure::TimedOut) => return Err(self.timed_out(method)),
                Err(Failure::Unsendable(err)) => {
                    return Err(RpcError::invalid_params(format!(
                        "cannot forward {method} to upstream {}: {err}",
                        self.name
                    )))
                }
                Err(Failure::Bad(err)) if refusal_status(&err, auth.is_some()).is_some() => {
                    let status = refusal_status(&err, auth.is_some()).unwrap_or_default();
                    // An upstream without a prefix is named by its URL: not twice.
                    let url = e.url.to_string();
                    let who = if self.name == url {
                        format!("upstream {url}")
                    } else {
                        format!("upstream {} ({url})", self.name)
                    };
                    let message = match auth {
                        Some(_) => format!("{who} refused our credentials (HTTP {status})"),
                        None => format!(
                            "{who} asks for credentials (HTTP {status}): set username and \
                             password, or token, in its [[upstream]] table"
                        ),
                    };
                    return Err(RpcError::new(ERR_UPSTREAM_BAD_REPLY, message));
                }
                Err(Failure::Bad(err)) => {
                    return Err(RpcError::new(
                        ERR_UPSTREAM_BAD_REPLY,
                        format!("upstream {} ({}): {err}", self.name, e.url),
                    ))
                }
            }
        }
        Err(RpcError::new(
            ERR_UPSTREAM_UNREACHABLE,
            format!("upstream {} unreachable: {}", self.name, why.join("; ")),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_client::ClientError;

    #[test]
    fn refusals_and_caller_names() {
        let e = |s: &str| ClientError::Protocol(s.into());
        let unauthorized = e("HTTP 401 Unauthorized: <html>");
        assert_eq!(
            refusal_status(&unauthorized, false),
            Some("401 Unauthorized")
        );
        let forbidden = e("HTTP 403 Forbidden: no");
        assert_eq!(refusal_status(&forbidden, true), Some("403 Forbidden"));
        assert_eq!(refusal_status(&forbidden, false), None, "an access rule");
        assert_eq!(refusal_status(&e("HTTP 404 Not Found: x"), true), None);
        assert_eq!(refusal_status(&e("bad XML"), true), None);
        assert_eq!(
            refusal_status(&ClientError::Connect("HTTP 401".into()), true),
            None
        );

        assert_eq!(header_value("agent-7"), Some("agent-7"));
        assert_eq!(header_value("José García"), Some("José García"));
        for bad in [
            "",
            "a\r\nX-Admin: 1",
            "a\nb",
            "a\tb",
            "a\0",
            " pad",
            &"x".repeat(MAX_PRINCIPAL + 1),
        ] {
            assert_eq!(header_value(bad), None, "{bad:?}");
        }
        assert!(format!("{:?}", Secret("Basic c2VjcmV0".into())) == "<redacted>");
    }
}
