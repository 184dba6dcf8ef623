//! Sockets bound and listening before the server starts, handed to
//! [`Server::from_listeners`](crate::Server::from_listeners): those systemd passes on
//! socket activation, or an embedder's own.

/// A listening socket the server is given rather than binds.
#[derive(Debug)]
pub enum PassedListener {
    /// A TCP socket (`ListenStream=127.0.0.1:54321`).
    Tcp(std::net::TcpListener),
    /// A Unix-domain socket (`ListenStream=/run/rpcmux.sock`). Its file is left to
    /// whoever made it: systemd removes its own.
    Unix(std::os::unix::net::UnixListener),
}

impl From<std::net::TcpListener> for PassedListener {
    fn from(l: std::net::TcpListener) -> Self {
        PassedListener::Tcp(l)
    }
}

impl From<std::os::unix::net::UnixListener> for PassedListener {
    fn from(l: std::os::unix::net::UnixListener) -> Self {
        PassedListener::Unix(l)
    }
}
