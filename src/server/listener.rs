//! Binding (with a real backlog) and the accept loop with its socket cap.

use crate::conn::per_ip::Kind;
use crate::conn::refusals::Refusal;
use crate::server::conn;
use crate::shared::Shared;
use socket2::{Domain, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;

/// Bind with SO_REUSEADDR, IPV6_V6ONLY for v6 addresses, and the configured backlog
/// (VDSM used 5; a burst of clients then saw refused connections).
/// An error names the address: a server binds several, and "Address already in use"
/// alone does not say which.
pub fn bind(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    bind_socket(addr, backlog).map_err(|e| io::Error::new(e.kind(), format!("{addr}: {e}")))
}

fn bind_socket(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog.min(i32::MAX as u32) as i32)?;
    TcpListener::from_std(socket.into())
}

pub async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, tracker: TaskTracker) {
    loop {
        let accepted = tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning on a full fd table.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Some(m) = &shared.metrics {
            m.connections_accepted.inc();
        }
        let Ok(permit) = shared.conns.clone().try_acquire_owned() else {
            let detail = "connection cap reached (max_connections)";
            shared.refusals.refuse(Refusal::Connections, peer, detail);
            drop(stream);
            continue;
        };
        // A trusted balancer is not counted per address; the client it names will be.
        let counted = if shared.front.trusts(peer.ip()) {
            None
        } else {
            match shared.per_ip.try_take(peer.ip(), Kind::Conn) {
                Some(held) => held,
                None => {
                    let detail = "too many connections from this client";
                    shared
                        .refusals
                        .refuse(Refusal::ConnectionsPerIp, peer, detail);
                    continue;
                }
            }
        };
        let id = shared.next_conn.fetch_add(1, Ordering::Relaxed) + 1;
        let shared = shared.clone();
        tracker.spawn(async move {
            conn::handle(stream, peer, id, shared, counted).await;
            drop(permit);
        });
    }
}
