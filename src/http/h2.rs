//! HTTP/2 (hyper's server on the `h2` crate): the same routes as HTTP/1.1
//! ([`super::service::route`]: XML-RPC, JSON-RPC, msgpack bodies, `/metrics`, `/health`,
//! `/ready`, the console), many calls at once on one connection, and WebSocket sessions
//! on streams of their own (RFC 8441's extended CONNECT, which browsers use once the
//! server's SETTINGS allow it). A connection is HTTP/2 when it opens with the connection
//! preface, in cleartext (prior knowledge, `curl --http2-prior-knowledge`) or after ALPN
//! `h2` under TLS; the HTTP/1.1 `Upgrade: h2c` dance is not offered (no client this
//! server is for needs it, and it lets one request switch protocols mid-connection).
//!
//! Bounds, for what an HTTP/2 client can make the server hold or do:
//! - streams: at most `max_in_flight` at once per connection (SETTINGS
//!   MAX_CONCURRENT_STREAMS), the next refused by the h2 crate with REFUSED_STREAM;
//! - header lists: [`MAX_HEADER_LIST`] bytes (HPACK-decoded, CONTINUATION frames
//!   included), past it the stream is refused (and a CONTINUATION flood stops there);
//! - rapid reset (CVE-2023-44487): streams the client resets before they are answered
//!   count against [`MAX_PENDING_RESETS`]; past it the connection is closed (GOAWAY);
//! - output: replies are charged to `max_total_output` as on HTTP/1.1, and at most
//!   [`MAX_SEND_BUF`] bytes per stream wait in the h2 crate for a window; a peer that
//!   takes nothing while replies wait for `send_timeout` is closed, whether it leaves the
//!   socket unread or withholds flow-control window from a stream
//!   ([`super::h2_progress`]);
//! - idle: a connection with no stream for `idle_timeout` is closed with GOAWAY;
//! - WebSocket sessions: each holds one stream (so counts against the streams cap) and
//!   has the bounds of every WebSocket (`[websocket]`, the stream driver's); the
//!   connection ends only after its sessions. At most `max_sessions_per_connection` run
//!   at once: the next extended CONNECT is answered `429` with a text body naming the
//!   cap, before any upgrade (its slot is taken before the handshake is answered, so
//!   streams opened together cannot all pass). The subscriptions of all the sessions
//!   count against one `max_connection_subscriptions` (`events::conn_subs`).

use crate::conn::ConnInfo;
use crate::http::auth::Memo;
use crate::http::h2_progress::Watch;
use crate::http::service::Upgraded;
use crate::io::{Rewind, StallClock, Stream, WriteStall};
use crate::shared::Shared;
use crate::stream::websocket::handshake::is_extended_connect;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The largest header list a request may carry, decoded (HTTP/1.1's head fits in 64 KiB
/// of buffer too).
const MAX_HEADER_LIST: u32 = 64 * 1024;

/// Reply bytes a stream may have waiting in the h2 crate for flow-control window; the
/// rest stays in the charged reply body.
const MAX_SEND_BUF: usize = 64 * 1024;

/// Streams a client may reset before their reply, not yet settled: rapid reset opens
/// and cancels streams to make the server start work it never has to answer for.
const MAX_PENDING_RESETS: usize = 20;

/// How often the connection's stall and idle clocks are read.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Serve HTTP/2 on `io` until the client closes, goes idle, stops reading, or shutdown.
pub(crate) async fn serve<S: Stream>(io: Rewind<S>, mut info: ConnInfo, shared: Arc<Shared>) {
    info.http2 = true;
    let limits = &shared.config.limits;
    let idle = limits.idle_timeout();
    let send_timeout = limits.send_timeout();
    let streams = u32::try_from(limits.max_in_flight)
        .unwrap_or(u32::MAX)
        .max(1);
    let memo = Arc::new(Memo::default());
    let replies = Watch::new();
    // One subscription count for every session of this connection.
    info.subs = Some(crate::events::conn_subs::ConnSubs::for_connection(
        &shared.per_ip,
        limits.max_connection_subscriptions,
        &info.peer,
    ));
    let slots = Slots::new(limits.max_sessions_per_connection);
    // Requests being answered and WebSocket sessions (low bits), and every request ever
    // seen (high bits).
    let busy = Arc::new(AtomicUsize::new(0));
    // WebSocket handshakes answered, for the connection to run their sessions (as many
    // as streams may be open: the streams cap bounds them).
    let (opened, mut handshakes) = tokio::sync::mpsc::unbounded_channel::<(Upgraded, Slot)>();
    let service = {
        let (shared, info, busy, replies) =
            (shared.clone(), info.clone(), busy.clone(), replies.clone());
        hyper::service::service_fn(move |req| {
            let (shared, info, busy, memo, replies, opened, slots) = (
                shared.clone(),
                info.clone(),
                busy.clone(),
                memo.clone(),
                replies.clone(),
                opened.clone(),
                slots.clone(),
            );
            // Boxed: hyper spawns each stream's future as a task, and the route's state
            // machine inline made every spawn copy it whole (memmove was 11 % of an
            // HTTP/2 echo's server CPU).
            Box::pin(async move {
                busy.fetch_add(1 + (1 << 20), Ordering::Relaxed);
                // A WebSocket session's slot, taken before its handshake is answered.
                let slot = if is_extended_connect(&req) {
                    match slots.take() {
                        Some(slot) => Some(slot),
                        None => {
                            busy.fetch_sub(1, Ordering::Relaxed);
                            if let Some(m) = &shared.metrics {
                                m.refused("ws_sessions");
                            }
                            let reply = slots.refusal();
                            return Ok::<_, Infallible>(watched(reply, &replies));
                        }
                    }
                } else {
                    None
                };
                let upgrade = std::sync::Mutex::new(None);
                let reply = super::service::route(req, &shared, &info, &upgrade, &memo).await;
                if let (Ok(Some(handshake)), Some(slot)) = (upgrade.into_inner(), slot) {
                    // Counted busy until its session ends (see `session`); the slot is
                    // held as long.
                    busy.fetch_add(1, Ordering::Relaxed);
                    let _ = opened.send((handshake, slot));
                }
                busy.fetch_sub(1, Ordering::Relaxed);
                Ok::<_, Infallible>(watched(reply, &replies))
            })
        })
    };
    let stall = StallClock::new();
    let mut conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .max_concurrent_streams(streams)
        .max_header_list_size(MAX_HEADER_LIST)
        .max_send_buf_size(MAX_SEND_BUF)
        .max_pending_accept_reset_streams(Some(MAX_PENDING_RESETS))
        .enable_connect_protocol()
        .serve_connection(TokioIo::new(WriteStall::new(io, stall.clone())), service);
    let mut check = tokio::time::interval(CHECK_EVERY);
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    check.reset();
    let (mut seen, mut idle_since) = (0, tokio::time::Instant::now());
    let mut closing = false;
    let mut sessions = tokio::task::JoinSet::new();
    let shutting_down = shared.shutdown.cancelled();
    tokio::pin!(shutting_down);
    loop {
        tokio::select! {
            r = &mut conn => {
                if let Err(e) = r {
                    tracing::debug!(peer = %info.peer, error = %e, "http/2 connection ended with an error");
                }
                break;
            }
            Some((handshake, slot)) = handshakes.recv() => {
                sessions.spawn(session(handshake, slot, info.clone(), shared.clone(), busy.clone()));
            }
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
            _ = &mut shutting_down, if !closing => {
                std::pin::Pin::new(&mut conn).graceful_shutdown();
                closing = true;
            }
            _ = check.tick() => {
                let unread = replies.longest_wait().is_some_and(|t| t >= send_timeout);
                if unread || stall.stalled_for().is_some_and(|t| t >= send_timeout) {
                    tracing::info!(peer = %info.peer, "peer stopped reading (send_timeout); closing");
                    if let Some(m) = &shared.metrics {
                        m.refused("send_timeout");
                    }
                    break;
                }
                let now = busy.load(Ordering::Relaxed);
                if now != seen || now & ((1 << 20) - 1) != 0 {
                    idle_since = tokio::time::Instant::now();
                } else if !closing && idle_since.elapsed() >= idle {
                    tracing::debug!(peer = %info.peer, "http/2 connection idle; closing");
                    std::pin::Pin::new(&mut conn).graceful_shutdown();
                    closing = true;
                }
                seen = now;
            }
        }
    }
    // The connection is gone, and with it every session's stream: stop what is left.
    sessions.abort_all();
    while sessions.join_next().await.is_some() {}
}

/// Run one WebSocket session on its HTTP/2 stream, once hyper has sent the 200.
///
/// One of many on the connection: it is its own session, with a number of its own for
/// events (its subscriptions, unsubscribes and reset touch no other stream's) and a
/// caller of its own (`rpc.login` on it binds no other stream), starting as what its
/// handshake's `Authorization` proved, else what the connection did (a certificate).
async fn session(
    handshake: Upgraded,
    _slot: Slot,
    info: ConnInfo,
    shared: Arc<Shared>,
    busy: Arc<AtomicUsize>,
) {
    let Upgraded {
        sub,
        principal,
        stream,
    } = handshake;
    let upgraded = match stream {
        Some(on) => on.await.ok(),
        None => None,
    };
    if let Some(upgraded) = upgraded {
        let info = info.stream_session(shared.next_id(), principal);
        // Its subscriptions go with it however it ends: the connection's end aborts
        // this task, and an aborted session never got to tell the hub (a client that
        // dropped its connection left them there for good, visited by every publish).
        let _forget = Forget(shared.events.clone(), info.session);
        let io = Rewind::new(bytes::Bytes::new(), TokioIo::new(upgraded));
        crate::stream::websocket::serve(io, info, shared, sub).await;
    }
    busy.fetch_sub(1, Ordering::Relaxed);
}

/// The WebSocket sessions one connection runs, at most `max_sessions_per_connection`
/// (0: only the streams cap).
#[derive(Clone)]
struct Slots {
    open: Arc<AtomicUsize>,
    max: usize,
}

/// One session's place among its connection's; dropping it gives the place back.
struct Slot(Arc<AtomicUsize>);

impl Slots {
    fn new(max: usize) -> Slots {
        Slots {
            open: Arc::new(AtomicUsize::new(0)),
            max,
        }
    }

    /// A place for one session more, or `None` at the cap.
    fn take(&self) -> Option<Slot> {
        let max = self.max;
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (max == 0 || n < max).then_some(n + 1)
            })
            .ok()?;
        Some(Slot(self.open.clone()))
    }

    /// The answer to a CONNECT past the cap: 429, in words a person reads.
    fn refusal(&self) -> crate::http::service::Reply {
        crate::http::reply::text(
            hyper::StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "too many WebSocket sessions on this HTTP/2 connection (max_sessions_per_connection = {}); close one or open another connection\n",
                self.max
            ),
        )
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Drops a session's subscriptions when dropped.
struct Forget(Arc<crate::events::EventHub>, u64);

impl Drop for Forget {
    fn drop(&mut self) {
        self.0.drop_connection(self.1);
    }
}

/// A reply as it leaves for the h2 crate: its body watched for reads, its length said
/// without an allocation (`content_length`).
fn watched(
    reply: super::service::Reply,
    replies: &Arc<Watch>,
) -> hyper::Response<super::h2_progress::Watched> {
    use hyper::body::Body as _;
    let (mut head, body) = reply.into_parts();
    // As hyper would: only for a body (an empty one, such as a CONNECT's 200, says none).
    if !body.is_end_stream() {
        super::content_length::set(&mut head.headers, body.size_hint().exact());
    }
    hyper::Response::from_parts(head, replies.watch(body))
}
