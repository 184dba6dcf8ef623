//! One connection's whole path, read top to bottom in [`handle`]:
//! accept → \[PROXY header\] → \[TLS\] → sniff → framer.
//!
//! Each turn of the loop sniffs the stream; a front layer (a PROXY header, a TLS
//! handshake) consumes its part and hands back the stream that follows, which is
//! sniffed again. Only a protocol ends the loop. A sniffing slot (global and per client
//! address) is held while sniffing and while a front layer runs, never by a framer.

use crate::config::Proto;
use crate::conn::per_ip::{Held, Kind};
use crate::conn::refusals::Refusal;
use crate::conn::{ConnInfo, Peer, Stage};
use crate::io::{Metered, Rewind, Stream};
use crate::shared::Shared;
use crate::sniff::{self, Decision, Detected};
use bytes::{Bytes, BytesMut};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::OwnedSemaphorePermit;

/// Serve one accepted socket. `counted` is its per-address connection slot (none for a
/// trusted PROXY peer, whose real client is counted once its header is read).
pub(crate) async fn handle(
    mut io: Conn,
    peer: Peer,
    id: u64,
    shared: Arc<Shared>,
    mut counted: Option<Held>,
) {
    if let Conn::Plain(tcp) = &io {
        let _ = tcp.set_nodelay(true);
    }
    let mut info = ConnInfo::new(id, peer);
    loop {
        let Some(slot) = SniffSlot::take(&shared, &info) else {
            return;
        };
        // Boxed, as the refusal below and the framers are: this task's future is as big
        // as its biggest await point, for the connection's life, and inline the sniff
        // (about 400 bytes of state) was that point.
        let sniffing = Box::pin(sniff_once(&mut io, &info, &shared));
        let Some((detected, sniffed)) = sniffing.await else {
            return;
        };
        if let Err(why) = shared.front.admit(detected, &info) {
            shared
                .refusals
                .refuse(Refusal::Front, info.peer, &why.to_string());
            if why == crate::front::Refused::PlaintextWhenRequired
                && detected == Detected::Protocol(Proto::Http)
            {
                Box::pin(crate::front::refuse_plaintext_http(&mut io, &sniffed)).await;
            }
            return;
        }
        if let Some(m) = &shared.metrics {
            m.sniffed
                .get_or_create(&crate::observe::OutcomeLabel {
                    outcome: detected.name(),
                })
                .inc();
        }
        let rewound = Rewind::new(sniffed, io);
        let framer = match detected {
            Detected::ProxyHeader => {
                let Some(rest) = Box::pin(crate::front::proxy::read_header(
                    rewound,
                    &mut info,
                    shared.config.limits.sniff_timeout(),
                    shared.config.auth.proxy_cert_names,
                    &shared.shutdown,
                    &shared.refusals,
                ))
                .await
                else {
                    return;
                };
                // The balancer's socket was not counted; the client it names is.
                match shared.per_ip.try_take(&info.peer, Kind::Conn) {
                    Some(held) => counted = held,
                    None => {
                        let detail = "too many connections from this client";
                        shared
                            .refusals
                            .refuse(Refusal::ConnectionsPerIp, info.peer, detail);
                        return;
                    }
                }
                io = Conn::Layered(Box::new(rest));
                continue;
            }
            Detected::Tls => {
                // `Front::admit` refused TLS already when it is off.
                let Some(tls) = shared.front.tls() else {
                    return;
                };
                let failed = shared.metrics.as_ref().map(|m| &m.tls_failed);
                let handshake = crate::front::tls::handshake(
                    rewound,
                    &mut info,
                    tls,
                    &shared.shutdown,
                    &shared.refusals,
                    failed,
                );
                let Some(tls) = Box::pin(handshake).await else {
                    return;
                };
                io = Conn::Layered(Box::new(tls));
                continue;
            }
            Detected::Protocol(p) => p,
        };
        drop(slot);
        tracing::debug!(peer = %info.peer, conn = info.id, ?detected, "protocol detected");
        if let Some(auth) = &shared.auth {
            // A verified certificate (here, or at a trusted proxy), or a Unix socket's
            // uid, is a principal from the first call on; anyone else starts anonymous.
            // Each session or request on the connection gets its own caller from it
            // (`Shared::call_context`); the connection keeps only what it proved.
            info.principal = match (info.peer_identity.as_deref(), info.peer.cred()) {
                (Some(name), _) => auth.certificate(name),
                (None, Some(cred)) => Some(auth.unix_peer(cred.uid)),
                (None, None) => None,
            };
        }
        let (sniffed, io) = rewound.into_parts();
        let metered = shared
            .metrics
            .as_ref()
            .map(|m| m.connection(detected.name()));
        let counters = metered.as_ref().map(|c| {
            c.received.inc_by(sniffed.len() as u64);
            (c.received.clone(), c.sent.clone())
        });
        let io = Rewind::new(sniffed, Metered::new(io, counters));
        serve_framer(framer, io, info, shared).await;
        drop(metered);
        drop(counted);
        return;
    }
}

/// The framer's future. Each is boxed: a connection still sniffing then holds only the
/// small sniffing state, not room for the largest framer's (an async fn's state is as
/// big as its biggest await point). Not an `async fn`, which would keep its arguments
/// (the stream, the connection's facts) beside the framer's copies for the connection's
/// life.
fn serve_framer(
    framer: Proto,
    io: Rewind<Metered<Conn>>,
    info: ConnInfo,
    shared: Arc<Shared>,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    match framer {
        Proto::Http => {
            // A WebSocket session runs after the HTTP connection's state is let go.
            let http = Box::pin(crate::http::entry::serve(io, info, shared));
            Box::pin(async move {
                if let Some(session) = http.await {
                    session.await
                }
            })
        }
        Proto::JsonrpcTcp => Box::pin(crate::stream::jsonrpc_tcp::serve(io, info, shared)),
        Proto::Msgpack => Box::pin(crate::stream::msgpack::serve(io, info, shared)),
        Proto::Stomp => Box::pin(crate::stream::stomp::serve(io, info, shared)),
    }
}

/// A sniffing permit: one of `max_sniffing`, and one of the client's `max_sniffing_per_ip`.
struct SniffSlot {
    _global: OwnedSemaphorePermit,
    _per_ip: Option<Held>,
}

impl SniffSlot {
    fn take(shared: &Arc<Shared>, info: &ConnInfo) -> Option<SniffSlot> {
        // A trusted balancer's own socket is not capped per address: it carries many clients.
        let per_ip = if info.stage == Stage::Start && shared.front.trusts(&info.peer) {
            None
        } else {
            match shared.per_ip.try_take(&info.peer, Kind::Sniffing) {
                Some(held) => held,
                None => {
                    let detail = "too many connections from this client still sniffing";
                    shared
                        .refusals
                        .refuse(Refusal::SniffingPerIp, info.peer, detail);
                    return None;
                }
            }
        };
        let Ok(global) = shared.sniffing.clone().try_acquire_owned() else {
            let detail = "too many connections still sniffing";
            shared.refusals.refuse(Refusal::Sniffing, info.peer, detail);
            return None;
        };
        Some(SniffSlot {
            _global: global,
            _per_ip: per_ip,
        })
    }
}

/// The sniff deadline for a new sniff: the configured one while fewer than half the
/// sniffing permits are taken, then shrinking with the permits left, down to a tenth.
/// Slow sniffers then free their permits sooner exactly when permits run short.
fn sniff_deadline(shared: &Shared) -> Duration {
    let full = shared.config.limits.sniff_timeout();
    let max = shared.config.limits.max_sniffing.max(1) as f64;
    let free = shared.sniffing.available_permits() as f64 / max;
    full.mul_f64((free * 2.0).clamp(0.1, 1.0))
}

/// Sniff `io` once: what it speaks and the bytes read to find out. `None`: closed.
async fn sniff_once(io: &mut Conn, info: &ConnInfo, shared: &Shared) -> Option<(Detected, Bytes)> {
    let mut buf = BytesMut::with_capacity(512);
    let deadline = sniff_deadline(shared);
    let decision = tokio::select! {
        _ = shared.shutdown.cancelled() => return None,
        r = tokio::time::timeout(deadline, sniff::sniff(io, &shared.probes, &mut buf, sniff::MAX_SNIFF)) => r,
    };
    match decision {
        Err(_) => {
            let detail = format!(
                "sniff deadline passed ({deadline:?}, {} bytes read)",
                buf.len()
            );
            shared
                .refusals
                .refuse(Refusal::SniffTimeout, info.peer, &detail);
            None
        }
        Ok(Err(e)) => {
            tracing::debug!(peer = %info.peer, error = %e, "connection closed while sniffing");
            None
        }
        Ok(Ok(Decision::Found(d))) => Some((d, buf.freeze())),
        Ok(Ok(_)) => {
            // Escaped byte by byte (`\x93\x00`): binary protocols are the common case,
            // and a lossy UTF-8 view would show them as U+FFFD and raw control bytes.
            let head = buf[..buf.len().min(32)].escape_ascii();
            let detail = format!("unknown protocol, starting \"{head}\"");
            shared
                .refusals
                .refuse(Refusal::UnknownProtocol, info.peer, &detail);
            let _ = io.shutdown().await;
            None
        }
    }
}

/// The stream under the framers: the accepted socket itself (static dispatch on the
/// common paths) or what a front layer made of it (TLS, bytes after a PROXY header).
pub(crate) enum Conn {
    Plain(TcpStream),
    Unix(UnixStream),
    Layered(Box<dyn Stream>),
}

macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Conn::Plain($s) => {
                let $s = Pin::new($s);
                $e
            }
            Conn::Unix($s) => {
                let $s = Pin::new($s);
                $e
            }
            Conn::Layered($s) => {
                let $s = Pin::new($s.as_mut());
                $e
            }
        }
    };
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        delegate!(self, s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        delegate!(self, s => s.poll_write(cx, buf))
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        delegate!(self, s => s.poll_write_vectored(cx, bufs))
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s) => s.is_write_vectored(),
            Conn::Unix(s) => s.is_write_vectored(),
            Conn::Layered(s) => s.is_write_vectored(),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        delegate!(self, s => s.poll_flush(cx))
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        delegate!(self, s => s.poll_shutdown(cx))
    }
}
