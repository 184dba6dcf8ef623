//! HTTP/1.x (hyper): RPC bodies routed by Content-Type, plus `GET /`, `/health`,
//! `/ready` and `/metrics`.
//!
//! `application/json`, `application/json-rpc` (jsonrpclib), or no Content-Type with
//! a JSON body (tinyrpc sends none) are JSON-RPC. Errors that happen before a body
//! reaches a framer are HTTP statuses (405, 413, 415), each with a body in the
//! caller's protocol where one can be told.

use crate::conn::ConnInfo;
use crate::http::auth::{authenticate, Memo};
use crate::http::body::{self, BodyError, BodyLimits};
use crate::http::encoding;
use crate::http::origin::{self, Verdict};
use crate::http::reply::{text, with_type, ReplyBody};
use crate::io::{Rewind, StallClock, Stream, WriteStall};
use crate::offload;
use crate::shared::Shared;
use crate::stream::websocket::{handshake, Subprotocol};
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, ACCEPT_ENCODING, ALLOW, AUTHORIZATION, CONNECTION, CONTENT_ENCODING,
    CONTENT_LENGTH, CONTENT_TYPE, VARY,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rpcmux_value::RpcError;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub(crate) type Reply = Response<ReplyBody>;

/// What a POST body is, by its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Json,
    Xml,
    Msgpack,
    /// No Content-Type: decided from the body's first byte.
    Unlabelled,
}

fn body_kind(req: &Request<Incoming>) -> Result<BodyKind, String> {
    let Some(ct) = req.headers().get(CONTENT_TYPE) else {
        return Ok(BodyKind::Unlabelled);
    };
    let ct = ct
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim();
    // Media types are case-insensitive; compared without lowering a copy (a request's
    // allocation for nothing).
    const KINDS: [(&str, BodyKind); 9] = [
        ("application/json", BodyKind::Json),
        ("application/json-rpc", BodyKind::Json),
        ("application/jsonrequest", BodyKind::Json),
        ("text/xml", BodyKind::Xml),
        ("application/xml", BodyKind::Xml),
        ("application/msgpack", BodyKind::Msgpack),
        ("application/x-msgpack", BodyKind::Msgpack),
        ("application/vnd.msgpack", BodyKind::Msgpack),
        // curl -d labels everything form-urlencoded; judge such bodies by their bytes.
        ("application/x-www-form-urlencoded", BodyKind::Unlabelled),
    ];
    if ct.is_empty() {
        return Ok(BodyKind::Unlabelled);
    }
    KINDS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(ct))
        .map(|&(_, kind)| kind)
        .ok_or_else(|| ct.to_ascii_lowercase())
}

/// hyper's read buffer cap: a request head must fit (nginx allows 32 KiB by default).
const MAX_HTTP_BUF: usize = 64 * 1024;

/// After this long without a request or a byte moving, an HTTP connection gives its
/// hyper state back (read and write buffers, 8 KiB each) and waits for its next
/// request holding only the socket.
const RELEASE_IDLE_AFTER: Duration = Duration::from_secs(1);

/// Bytes an idle HTTP/1.x connection's wait for its next request reads: enough for
/// `POST / HTTP/1.1` and small enough to be no weight in every idle connection's task.
const FIRST_READ: usize = 32;

/// Serve HTTP/1.x on `io` with keep-alive. While a connection is idle its hyper state is
/// released: hyper keeps an 8 KiB read buffer reserved and an 8 KiB header buffer for
/// as long as a connection lives, which made an idle keep-alive connection cost ~37 KiB.
/// An idle connection is ended gracefully between requests (hyper hands back the socket
/// and any bytes it had read), waits for its next byte with a small buffer, and starts a
/// fresh hyper connection with that byte replayed.
///
/// A connection that upgrades to a WebSocket returns its session, to be run once this
/// future (hyper's state, the connection's own) is gone: an idle session then holds the
/// driver's memory alone, as a raw-TCP connection does.
pub(crate) async fn serve<S: Stream>(
    io: Rewind<S>,
    info: ConnInfo,
    shared: Arc<Shared>,
) -> Option<crate::stream::Session> {
    let idle = shared
        .config
        .limits
        .idle_timeout()
        .min(Duration::from_secs(3600));
    let mut io = io;
    // Since when a request head has been arriving across releases: a release must not
    // restart the header deadline of a client that trickles its headers.
    let mut partial_since: Option<tokio::time::Instant> = None;
    let memo = Arc::new(Memo::default());
    loop {
        // Boxed: hyper's connection state (about 1.4 KiB of future besides its buffers)
        // is then held only while hyper runs, not by every idle connection's task,
        // which waits below. One allocation per stretch of requests, not per request.
        let round = Box::pin(serve_until_idle(io, &info, &shared, idle, &memo));
        let (rest, mut inner) = match round.await {
            Round::Ended => return None,
            // Idle: only the socket (and bytes hyper had read, if any) is kept.
            Round::Idle(rest, inner) => (rest, inner),
            Round::Upgraded(io, info, sub) => {
                // Boxed: the session's future is not part of every HTTP connection's.
                return Some(Box::pin(crate::stream::websocket::serve(
                    io, info, shared, sub,
                )));
            }
        };
        if !rest.is_empty() {
            let since = *partial_since.get_or_insert_with(tokio::time::Instant::now);
            if since.elapsed() >= idle {
                tracing::debug!(peer = %info.peer, "request head not complete by the idle timeout; closing");
                return None;
            }
            io = Rewind::new(rest, inner);
            continue;
        }
        partial_since = None;
        // An empty `Bytes` from hyper still owns its 8 KiB read buffer: let it go now.
        drop(rest);
        // The wait for the next request reads its first bytes into the future itself,
        // not into a buffer allocated for the wait: hyper reads the rest.
        let mut first = [0u8; FIRST_READ];
        let next = tokio::select! {
            _ = shared.shutdown.cancelled() => return None,
            r = tokio::time::timeout(idle, inner.read(&mut first)) => r,
        };
        match next {
            Ok(Ok(n)) if n > 0 => {
                io = Rewind::new(Bytes::copy_from_slice(&first[..n]), inner);
            }
            _ => return None, // closed, failed, or idle past idle_timeout
        }
    }
}

/// How one hyper connection (a stretch of requests) ended.
enum Round<S> {
    /// Closed, failed, or shut down.
    Ended,
    /// Idle, hyper's state released: the bytes it had read but not used, and the stream.
    Idle(Bytes, S),
    /// A request was answered 101: the WebSocket session to run on the stream, the
    /// connection's last (with its facts as the upgrade request proved them).
    Upgraded(Rewind<S>, ConnInfo, Subprotocol),
}

/// Run one hyper connection until it ends, goes idle and is released, or upgrades.
async fn serve_until_idle<S: Stream>(
    io: Rewind<S>,
    info: &ConnInfo,
    shared: &Arc<Shared>,
    idle: Duration,
    memo: &Arc<Memo>,
) -> Round<S> {
    let busy = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    // Set when a request was answered 101: the socket then leaves hyper for the
    // WebSocket session (hyper's own upgrade needs `with_upgrades`, which has no
    // `into_parts` for the idle release below; `poll_without_shutdown` returns after
    // the 101 instead, with the socket and the bytes read past the request).
    let upgrade: Arc<std::sync::Mutex<Option<Upgraded>>> = Default::default();
    let svc_shared = shared.clone();
    let svc_info = info.clone();
    let svc_busy = busy.clone();
    let svc_upgrade = upgrade.clone();
    let svc_memo = memo.clone();
    let service = hyper::service::service_fn(move |req| {
        let (shared, info, busy) = (svc_shared.clone(), svc_info.clone(), svc_busy.clone());
        let (upgrade, memo) = (svc_upgrade.clone(), svc_memo.clone());
        // Boxed (one allocation per request): `poll_without_shutdown`, which the idle
        // release and the WebSocket hand-over need, wants the service's future `Unpin`.
        Box::pin(async move {
            // Counts requests being answered, and every request ever seen (high bits).
            busy.fetch_add(1 + (1 << 20), Ordering::Relaxed);
            let reply = route(req, &shared, &info, &upgrade, &memo).await;
            busy.fetch_sub(1, Ordering::Relaxed);
            Ok::<_, Infallible>(reply)
        })
    });
    // Since when the peer has read nothing while a reply waits (`send_timeout`).
    let stall = StallClock::new();
    let send_timeout = shared.config.limits.send_timeout();
    let mut conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // Also bounds how long an idle keep-alive connection may wait for its next request.
        .header_read_timeout(idle)
        .keep_alive(true)
        // Clients that half-close after sending (nc, some scripts) still get their reply.
        .half_close(true)
        // hyper reads ahead into a buffer of up to this much (400 KiB by default): 300
        // connections whose large bodies wait for the budget held 117 MiB that way.
        .max_buf_size(MAX_HTTP_BUF)
        .serve_connection(TokioIo::new(WriteStall::new(io, stall.clone())), service);
    let mut check = tokio::time::interval(RELEASE_IDLE_AFTER);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    check.reset();
    let mut seen = 0;
    let mut releasing = false;
    let shutting_down = shared.shutdown.cancelled();
    tokio::pin!(shutting_down);
    loop {
        tokio::select! {
            r = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => {
                if let Err(e) = r {
                    tracing::debug!(peer = %info.peer, error = %e, "http connection ended with an error");
                    return Round::Ended;
                }
                let sub = upgrade.lock().map(|mut u| u.take()).unwrap_or(None);
                if let Some(Upgraded { sub, principal, .. }) = sub {
                    let (rest, io) = take_parts(conn.into_parts());
                    let io = Rewind::new(rest, io);
                    // The session is the connection's last: it keeps the connection's
                    // number, and the principal the upgrade request proved is its own.
                    let info = info.proved(principal).into_owned();
                    return Round::Upgraded(io, info, sub);
                }
                if !releasing || shared.shutdown.is_cancelled() {
                    // The client closed, or asked to (Connection: close), or shutdown.
                    let mut io = conn.into_parts().io.into_inner().into_inner();
                    let _ = io.shutdown().await;
                    return Round::Ended;
                }
                tracing::trace!(peer = %info.peer, "idle HTTP connection released its buffers");
                let (rest, io) = take_parts(conn.into_parts());
                return Round::Idle(rest, io);
            }
            _ = &mut shutting_down, if !releasing => {
                std::pin::Pin::new(&mut conn).graceful_shutdown();
                releasing = true;
            }
            _ = check.tick() => {
                if stall.stalled_for().is_some_and(|t| t >= send_timeout) {
                    // The reply (and hyper's buffers) go with the connection.
                    tracing::info!(peer = %info.peer, "peer stopped reading (send_timeout); closing");
                    if let Some(m) = &shared.metrics {
                        m.refused("send_timeout");
                    }
                    return Round::Ended;
                }
                if releasing {
                    continue;
                }
                let now = busy.load(Ordering::Relaxed);
                // No request started or running since the last tick: idle.
                if now == seen && now & ((1 << 20) - 1) == 0 {
                    std::pin::Pin::new(&mut conn).graceful_shutdown();
                    releasing = true;
                }
                seen = now;
            }
        }
    }
}

/// The socket of a hyper connection that has stopped, and the bytes read from it that
/// hyper did not use (they come before any it had not yet read from the rewind).
fn take_parts<S: Stream, F>(
    parts: hyper::server::conn::http1::Parts<TokioIo<WriteStall<Rewind<S>>>, F>,
) -> (Bytes, S) {
    let (unread, io) = parts.io.into_inner().into_inner().into_parts();
    let rest = if unread.is_empty() {
        parts.read_buf
    } else {
        [parts.read_buf, unread].concat().into()
    };
    (rest, io)
}

/// A WebSocket handshake answered (101 over HTTP/1.1, 200 over HTTP/2).
pub(super) struct Upgraded {
    pub sub: Subprotocol,
    /// The principal its `Authorization` proved (`--auth`).
    pub principal: Option<rpcmux_auth::Principal>,
    /// Over HTTP/2 (RFC 8441), the stream the session runs on once the 200 is sent;
    /// over HTTP/1.1 the socket itself leaves hyper instead.
    pub stream: Option<hyper::upgrade::OnUpgrade>,
}

/// The log budget of browser requests refused for their `Host` or `Origin`: one line
/// each let a keep-alive client write a log line per request, unauthenticated (at most
/// a few a second, each saying how many were not logged; `rpcmux_refused_total` counts).
static REFUSED_BROWSERS: std::sync::LazyLock<crate::observe::log_budget::LogBudget> =
    std::sync::LazyLock::new(crate::observe::log_budget::LogBudget::new);

/// The origin rule (`http/origin.rs`) around [`route_rpc`], and WebSocket handshakes
/// (an HTTP/1.1 upgrade, or an HTTP/2 extended CONNECT: [`super::h2`]).
pub(super) async fn route(
    mut req: Request<Incoming>,
    shared: &Shared,
    info: &ConnInfo,
    upgrade: &std::sync::Mutex<Option<Upgraded>>,
    memo: &Memo,
) -> Reply {
    // HTTP/2 carries the host as `:authority`, not `Host`.
    let authority = req.uri().authority().map(|a| a.as_str());
    if origin::from_browser(req.headers())
        && !origin::host_allowed(req.headers(), authority, &shared.config.web.allowed_hosts)
    {
        // DNS rebinding: a page on a name the attacker points at this server is "same
        // origin" with it; only the names the server is known by are served to browsers.
        if let Some(suppressed) = REFUSED_BROWSERS.admit() {
            tracing::info!(peer = %info.peer, host = ?req.headers().get(hyper::header::HOST), suppressed, "browser request for a host name not allowed; answering 403");
        }
        if let Some(m) = &shared.metrics {
            m.refused("host");
        }
        return text(
            StatusCode::FORBIDDEN,
            "host name not allowed for browsers (see [web] allowed_hosts, --allow-host)\n",
        );
    }
    let verdict = origin::judge(req.headers(), authority, &shared.config.web.allowed_origins);
    let is_ws = handshake::is_upgrade(&req);
    if let Verdict::Refused(o) = &verdict {
        if is_ws || req.method() == Method::POST || req.method() == Method::OPTIONS {
            if let Some(suppressed) = REFUSED_BROWSERS.admit() {
                tracing::info!(peer = %info.peer, origin = %o, suppressed, "origin not allowed; answering 403");
            }
            return text(
                StatusCode::FORBIDDEN,
                "origin not allowed (see --allow-origin, [web] allowed_origins)\n",
            );
        }
    }
    if is_ws {
        // A browser cannot give a WebSocket an `Authorization` header: an upgrade
        // without one is served as an unauthenticated connection, like a raw-TCP one
        // (`rpc.login`, and what `anonymous` allows, until then). Credentials that are
        // sent are checked here, and wrong ones refused with 401.
        let principal = if req.headers().contains_key(AUTHORIZATION) {
            match authenticate(req.headers(), shared, info, memo).await {
                Ok(c) => c,
                Err(refused) => return *refused,
            }
        } else {
            None
        };
        let (reply, sub) = handshake::accept(&req);
        if let (Some(sub), Ok(mut u)) = (sub, upgrade.lock()) {
            let stream = handshake::is_extended_connect(&req).then(|| hyper::upgrade::on(&mut req));
            *u = Some(Upgraded {
                sub,
                principal,
                stream,
            });
        }
        return reply.map(ReplyBody::from);
    }
    let Verdict::Allowed(origin) = verdict else {
        return route_rpc(req, shared, info, memo).await;
    };
    if req.method() == Method::OPTIONS {
        // A CORS preflight from an allowed origin.
        let mut r = with_type(
            StatusCode::NO_CONTENT,
            Bytes::new(),
            "text/plain; charset=utf-8",
        );
        origin::cors_headers(r.headers_mut(), origin, true);
        return r;
    }
    let mut r = route_rpc(req, shared, info, memo).await;
    origin::cors_headers(r.headers_mut(), origin, false);
    r
}

async fn route_rpc(req: Request<Incoming>, shared: &Shared, info: &ConnInfo, memo: &Memo) -> Reply {
    match (req.method(), req.uri().path()) {
        (&Method::POST, _) => {
            // Credentials are checked before the body is read: a refused client
            // costs no body's worth of memory.
            // The request gets its own caller (`Shared::call_context`): `rpc.login`
            // over HTTP binds this one request's, and what its `Authorization` proved
            // is this request's alone, not the connection's (a proxy's pooled
            // connection, an HTTP/2 connection's other streams, carry other clients).
            match authenticate(req.headers(), shared, info, memo).await {
                Ok(proved) => rpc(req, shared, &info.proved(proved)).await,
                Err(refused) => *refused,
            }
        }
        (&Method::GET | &Method::HEAD, path @ ("/" | "/console.js" | "/favicon.ico"))
            if crate::http::console::enabled(&shared.config)
                && (path != "/" || crate::http::console::wants_html(&req)) =>
        {
            crate::http::console::serve(path).map(ReplyBody::from)
        }
        (&Method::GET | &Method::HEAD, "/metrics")
            if !shared
                .config
                .ops
                .metrics_from
                .iter()
                .any(|n| info.peer.ip().is_some_and(|ip| n.contains(&ip))) =>
        {
            tracing::debug!(peer = %info.peer, "/metrics refused: not in [ops] metrics_from");
            text(
                StatusCode::FORBIDDEN,
                "/metrics is not served to this address (see [ops] metrics_from, --metrics-from)\n",
            )
        }
        (&Method::GET | &Method::HEAD, path) => match get(path, shared, wants_openmetrics(&req)) {
            Some(r) => r,
            None => text(StatusCode::NOT_FOUND, INDEX),
        },
        _ => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, INDEX);
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST, GET"));
            r
        }
    }
}

/// What `GET /` says: the endpoints, for whoever points a browser or curl at the port.
const INDEX: &str = "rpcmux: XML-RPC, JSON-RPC and MessagePack-RPC on this port.
POST /            an RPC body (text/xml, application/json, application/msgpack)
GET  /health      200 while the process is up (liveness)
GET  /ready       200 while serving, 503 once shutdown begins (readiness)
GET  /metrics     Prometheus metrics (unless served on their own address)
GET  (Upgrade: websocket, any path)  JSON-RPC 2.0, or STOMP 1.2 with v12.stomp
The same port also speaks JSON-RPC and msgpack-rpc over raw TCP, and STOMP 1.2.
A browser opening / gets the console page (unless --no-console).
";

/// The `GET` endpoints; `None`: not one of them. `openmetrics`: the client's Accept
/// header asks for OpenMetrics (Prometheus does).
pub(crate) fn get(path: &str, shared: &Shared, openmetrics: bool) -> Option<Reply> {
    Some(match path {
        "/" => text(StatusCode::OK, INDEX),
        "/health" => text(StatusCode::OK, "ok\n"),
        "/ready" if shared.draining.load(std::sync::atomic::Ordering::Acquire) => {
            text(StatusCode::SERVICE_UNAVAILABLE, "draining\n")
        }
        "/ready" => text(StatusCode::OK, "ready\n"),
        "/metrics" if shared.config.ops.metrics_listen.is_none() => metrics(shared, openmetrics)?,
        _ => return None,
    })
}

/// `GET /metrics`: the exposition, OpenMetrics or the classic text format; `None`
/// when metrics are off.
pub(crate) fn metrics(shared: &Shared, openmetrics: bool) -> Option<Reply> {
    let text = shared.scrape(openmetrics)?;
    let ctype = if openmetrics {
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    } else {
        "text/plain; version=0.0.4; charset=utf-8"
    };
    Some(with_type(StatusCode::OK, text.into(), ctype))
}

/// Does the request's Accept header ask for OpenMetrics?
pub(crate) fn wants_openmetrics<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/openmetrics-text"))
}

async fn rpc(req: Request<Incoming>, shared: &Shared, info: &ConnInfo) -> Reply {
    let kind = match body_kind(&req) {
        Ok(k) => k,
        Err(ct) => {
            return text(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("unsupported Content-Type {ct:?}: use application/json or text/xml\n"),
            )
        }
    };
    let limits = &shared.config.limits;
    let max = limits.max_body;
    let too_large = |kind: BodyKind| {
        if let Some(m) = &shared.metrics {
            m.refused("body");
        }
        let e = RpcError::invalid_request(format!("request body larger than {max} bytes"));
        error_reply(kind, StatusCode::PAYLOAD_TOO_LARGE, &e)
    };
    let headers = req.headers();
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let encoding = headers
        .get(CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?"));
    let Some(coding) = encoding::Coding::parse(encoding) else {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!(
                "unsupported Content-Encoding {:?}: use gzip, deflate or none\n",
                encoding.unwrap_or_default()
            ),
        );
    };
    // A correlation id for the access log, as VDSM's clients and proxies send them.
    let flow_id = FLOW_ID_HEADERS
        .iter()
        .find_map(|h| headers.get(h))
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(128).collect::<String>());
    let with_flow;
    let info = match flow_id {
        Some(f) => {
            with_flow = ConnInfo {
                flow_id: Some(f),
                ..info.clone()
            };
            &with_flow
        }
        None => info,
    };
    let legacy = bitcoind_client(headers);
    let gzip_reply = headers
        .get(ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(encoding::accepts_gzip);
    // A compressed body is large whatever its size: what it inflates to is unknown, and
    // it must not take the small requests' reserve while it waits to be inflated.
    let lane = match coding {
        encoding::Coding::Identity => body::Lane::BySize,
        _ => body::Lane::Large,
    };
    let body_limits = BodyLimits {
        max,
        gap: limits.body_timeout(),
        min_rate: limits.min_body_rate,
    };
    let (mut body, mut charge) = match body::collect(
        req.into_body(),
        declared,
        &body_limits,
        &shared.budget,
        lane,
    )
    .await
    {
        Ok(b) => b,
        Err(BodyError::TooLarge) => return too_large(kind),
        Err(BodyError::TooSlow(why)) => {
            tracing::info!(peer = %info.peer, "{why}; answering 408");
            let e = RpcError::invalid_request(why);
            let mut r = error_reply(kind, StatusCode::REQUEST_TIMEOUT, &e);
            r.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            return r;
        }
        Err(BodyError::Broken(e)) => {
            return text(StatusCode::BAD_REQUEST, &format!("bad request body: {e}\n"))
        }
    };
    if coding != encoding::Coding::Identity {
        let zipped = body;
        // What a compressed body inflates to is known only once inflated: bodies are
        // inflated one at a time, each only while running work leaves the process budget
        // room for a big request, and charged before the next starts (300 gzip'd 1 MiB
        // bodies inflated side by side held 300 MiB outside the budget). While a body
        // waits its turn its charge is parked: bodies that wait never keep each other
        // waiting (`conn::budget`), and turns go round the client addresses.
        let parked = shared.budget.park(charge);
        let _turn = shared.inflating.wait(info.peer.throttle_ip()).await;
        while !shared.budget.room_to_resume() {
            shared.budget.freed().await;
        }
        charge = parked.resume();
        let inflated = offload::run(zipped.len(), move || {
            encoding::inflate(coding, &zipped, max)
        })
        .await;
        body = match inflated {
            Ok(b) => b.into(),
            Err(encoding::InflateError::TooLarge) => return too_large(kind),
            Err(encoding::InflateError::Corrupt(e)) => {
                return text(
                    StatusCode::BAD_REQUEST,
                    &format!("bad {coding:?} body: {e}\n"),
                )
            }
        };
        charge.grow(body.len());
    }
    // A UTF-8 byte order mark is not part of the message (some Windows tools send one).
    if body.starts_with(BOM) {
        body = body.slice(BOM.len()..);
    }
    let kind = match kind {
        BodyKind::Unlabelled if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<') => {
            BodyKind::Xml
        }
        k => k,
    };
    let size = body.len();
    let (status, ctype, out) = match kind {
        BodyKind::Xml => (
            StatusCode::OK,
            XML_TYPE,
            crate::http::xmlrpc::answer(body, shared, info).await,
        ),
        BodyKind::Msgpack => match crate::stream::msgpack::answer_http(body, shared, info).await {
            Some(out) => (StatusCode::OK, "application/msgpack", out),
            None => (StatusCode::NO_CONTENT, "application/msgpack", Vec::new()),
        },
        BodyKind::Json | BodyKind::Unlabelled => {
            let (status, out) = json_rpc(body, shared, info, legacy).await;
            (status, "application/json", out)
        }
    };
    drop(charge);
    if gzip_reply && out.len() >= encoding::GZIP_MIN {
        let zipped = offload::run(out.len().max(size), move || encoding::gzip(&out)).await;
        let mut r = charged(status, zipped, ctype, shared);
        let h = r.headers_mut();
        h.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        h.insert(VARY, HeaderValue::from_static("accept-encoding"));
        return r;
    }
    charged(status, out, ctype, shared)
}

/// An RPC reply, held against the output budget until hyper has taken it.
fn charged(status: StatusCode, body: Vec<u8>, ctype: &'static str, shared: &Shared) -> Reply {
    let mut r = Response::new(ReplyBody::charged(body, &shared.out_budget));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

/// Headers that carry a correlation id (looked up by prepared name: no parsing per
/// request).
const FLOW_ID_HEADERS: [hyper::header::HeaderName; 3] = [
    hyper::header::HeaderName::from_static("x-request-id"),
    hyper::header::HeaderName::from_static("flowid"),
    hyper::header::HeaderName::from_static("x-correlation-id"),
];

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// XML-RPC replies say their charset: strict clients (aXMLRPC) refuse them otherwise.
const XML_TYPE: &str = "text/xml; charset=utf-8";

/// An error answered before the body reached a framer, in the caller's protocol.
fn error_reply(kind: BodyKind, status: StatusCode, e: &RpcError) -> Reply {
    match kind {
        BodyKind::Xml => with_type(status, crate::http::xmlrpc::fault_body(e).into(), XML_TYPE),
        _ => json(status, crate::rpc::jsonrpc::error_body(e)),
    }
}

/// Whether the request comes from a client written for bitcoind's replies, which
/// (before bitcoind 28.0) carried `result` and `error` both whatever the request said:
/// python-bitcoinrpc's `AuthServiceProxy` (and Bitcoin Core's test framework, its
/// origin) sends `"jsonrpc":"2.0"` batch members yet reads `error` from every member.
/// Its `User-Agent` is the only thing that tells it.
fn bitcoind_client(headers: &hyper::HeaderMap) -> bool {
    headers
        .get(hyper::header::USER_AGENT)
        .is_some_and(|ua| ua.as_bytes().starts_with(b"AuthServiceProxy/"))
}

/// The status and body for a JSON-RPC request body; `legacy`: every reply in 1.0's
/// shape ([`bitcoind_client`]).
async fn json_rpc(
    body: Bytes,
    shared: &Shared,
    info: &ConnInfo,
    legacy: bool,
) -> (StatusCode, Vec<u8>) {
    let mut bounds = shared.json_bounds();
    bounds.shape.legacy = legacy;
    let size = body.len();
    let incoming = match crate::rpc::jsonrpc::parse(body, &bounds, &shared.verbs).await {
        Ok(i) => i,
        Err(e) => return (StatusCode::OK, line(crate::rpc::jsonrpc::error_body(&e))),
    };
    let ctx = shared.call_context(info, info.http_protocol("jsonrpc-http", "jsonrpc-h2"));
    let is_batch = matches!(incoming, rpcmux_jsonrpc::Incoming::Batch(_));
    let mut out = Vec::with_capacity(size.min(1 << 20) + 64);
    if crate::rpc::jsonrpc::answer(shared.verbs.clone(), ctx, incoming, &bounds, size, &mut out)
        .await
    {
        (StatusCode::OK, line(out))
    } else if is_batch {
        // A batch of notifications only: nothing to say (the JSON-RPC-over-HTTP convention).
        (StatusCode::NO_CONTENT, Vec::new())
    } else {
        // A single notification: 200 with an empty body, because jsonrpclib-pelix's
        // `_notify` treats any other status (204 included) as a transport failure.
        (StatusCode::OK, Vec::new())
    }
}

fn json(status: StatusCode, body: Vec<u8>) -> Reply {
    with_type(status, line(body).into(), "application/json")
}

/// A JSON reply ends in a newline, as curl users (and their shell prompt) expect; JSON
/// parsers take it as whitespace.
fn line(mut body: Vec<u8>) -> Vec<u8> {
    body.push(b'\n');
    body
}
