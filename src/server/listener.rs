//! Binding (with a real backlog) and the accept loop with its socket cap, for TCP and
//! Unix-domain listeners alike.

use crate::config::{Listen, UnixConfig};
use crate::conn::per_ip::Kind;
use crate::conn::refusals::Refusal;
use crate::conn::{Peer, PeerCred};
use crate::server::conn::{self, Conn};
use crate::server::socket_file::{self, SocketFile};
use crate::shared::Shared;
use socket2::{Domain, Socket, Type};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, UnixListener};
use tokio_util::task::TaskTracker;

/// A listening socket the server accepts on.
pub(crate) enum Listener {
    Tcp(TcpListener),
    Unix {
        listener: UnixListener,
        /// Its socket file, removed when the listener goes (none for an abstract name,
        /// or a socket systemd passed and owns).
        _file: Option<SocketFile>,
    },
}

impl Listener {
    /// Bind `addr` with the configured backlog (and, for a socket file, `[unix]`).
    pub fn bind(addr: &Listen, unix: &UnixConfig, backlog: u32) -> io::Result<Listener> {
        match addr {
            Listen::Tcp(a) => bind(*a, backlog).map(Listener::Tcp),
            Listen::Unix(u) => {
                let (l, file) = socket_file::bind(u, unix, backlog)?;
                Ok(Listener::Unix {
                    listener: UnixListener::from_std(l)?,
                    _file: file,
                })
            }
        }
    }

    /// Where it listens, as `--listen` writes it.
    pub fn local(&self) -> Option<Listen> {
        match self {
            Listener::Tcp(l) => l.local_addr().ok().map(Listen::Tcp),
            Listener::Unix { listener, .. } => {
                unix_name(&listener.local_addr().ok()?).map(Listen::Unix)
            }
        }
    }

    /// The next connection and who is at the other end.
    async fn accept(&self) -> io::Result<(Conn, Peer)> {
        match self {
            Listener::Tcp(l) => {
                let (stream, peer) = l.accept().await?;
                Ok((Conn::Plain(stream), Peer::Tcp(peer)))
            }
            Listener::Unix { listener, .. } => {
                let (stream, _) = listener.accept().await?;
                let cred = stream.peer_cred()?;
                let peer = Peer::Unix(PeerCred {
                    uid: cred.uid(),
                    gid: cred.gid(),
                    pid: cred.pid(),
                });
                Ok((Conn::Unix(stream), peer))
            }
        }
    }
}

/// A Unix socket's own address as a listen address (a path, or an abstract name).
fn unix_name(addr: &tokio::net::unix::SocketAddr) -> Option<crate::config::UnixAddr> {
    use crate::config::UnixAddr;
    if let Some(path) = addr.as_pathname() {
        return Some(UnixAddr::Path(path.to_owned()));
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::linux::net::SocketAddrExt;
        let std: std::os::unix::net::SocketAddr = addr.clone().into();
        if let Some(name) = std.as_abstract_name() {
            return Some(UnixAddr::Abstract(
                String::from_utf8_lossy(name).into_owned(),
            ));
        }
    }
    None
}

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

pub async fn accept_loop(listener: Listener, shared: Arc<Shared>, tracker: TaskTracker) {
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
        let counted = if shared.front.trusts(&peer) {
            None
        } else {
            match shared.per_ip.try_take(&peer, Kind::Conn) {
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
        let id = shared.next_id();
        let shared = shared.clone();
        tracker.spawn(async move {
            conn::handle(stream, peer, id, shared, counted).await;
            drop(permit);
        });
    }
}
