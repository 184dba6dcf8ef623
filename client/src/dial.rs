//! The byte stream under a protocol: TCP to `HOST:PORT`, or a Unix-domain socket named
//! `unix:/path` (a socket file) or `unix:@name` (Linux's abstract namespace).

use crate::error::ClientError;
use crate::opts::Io;
use std::time::Duration;
use tokio::net::TcpStream;

/// Where a server listens, as [`Client::connect`](crate::Client::connect) reads an
/// address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// `HOST:PORT`, over TCP.
    Tcp(&'a str),
    /// `unix:/path`: a socket file.
    Unix(&'a str),
    /// `unix:@name`: a socket in Linux's abstract namespace (no file).
    Abstract(&'a str),
}

impl<'a> Endpoint<'a> {
    /// Read `addr`: `unix:` and what follows name a Unix-domain socket, anything else
    /// is `HOST:PORT`.
    pub fn parse(addr: &'a str) -> Endpoint<'a> {
        match addr.strip_prefix("unix:") {
            Some(rest) => match rest.strip_prefix('@') {
                Some(name) => Endpoint::Abstract(name),
                None => Endpoint::Unix(rest),
            },
            None => Endpoint::Tcp(addr),
        }
    }

    /// The host name the protocols carry (HTTP `Host`, STOMP `host`, the name a TLS
    /// certificate is checked against): `HOST` of `HOST:PORT`, and `localhost` for a
    /// Unix-domain socket, which has no host.
    pub fn host(&self) -> &'a str {
        match self {
            Endpoint::Tcp(addr) => addr.rsplit_once(':').map_or(addr, |(h, _)| h),
            Endpoint::Unix(_) | Endpoint::Abstract(_) => "localhost",
        }
    }

    /// What the HTTP `Host` header carries: `HOST:PORT` as dialled over TCP,
    /// `localhost` over a Unix-domain socket.
    pub fn authority(&self) -> &'a str {
        match self {
            Endpoint::Tcp(addr) => addr,
            Endpoint::Unix(_) | Endpoint::Abstract(_) => "localhost",
        }
    }

    /// Connect within `limit`. TCP has Nagle off: calls are small request/reply
    /// messages, never to be held back waiting for more.
    pub async fn connect(&self, limit: Duration) -> Result<Box<dyn Io>, ClientError> {
        let shown = self.to_string();
        let fail = |e: std::io::Error| ClientError::Connect(format!("{shown}: {e}"));
        let connect = async {
            Ok::<Box<dyn Io>, std::io::Error>(match self {
                Endpoint::Tcp(addr) => {
                    let tcp = TcpStream::connect(addr).await?;
                    tcp.set_nodelay(true)?;
                    Box::new(tcp)
                }
                Endpoint::Unix(path) => Box::new(tokio::net::UnixStream::connect(path).await?),
                Endpoint::Abstract(name) => Box::new(abstract_socket(name)?),
            })
        };
        tokio::time::timeout(limit, connect)
            .await
            .map_err(|_| ClientError::Connect(format!("{shown}: no answer within {limit:?}")))?
            .map_err(fail)
    }
}

impl std::fmt::Display for Endpoint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(addr) => f.write_str(addr),
            Endpoint::Unix(path) => write!(f, "unix:{path}"),
            Endpoint::Abstract(name) => write!(f, "unix:@{name}"),
        }
    }
}

/// A connection to the abstract socket `name` (a local connect: it succeeds or fails at
/// once, so the blocking std call is fine here).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn abstract_socket(name: &str) -> std::io::Result<tokio::net::UnixStream> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    let std = std::os::unix::net::UnixStream::connect_addr(&addr)?;
    std.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn abstract_socket(_: &str) -> std::io::Result<tokio::net::UnixStream> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "abstract Unix-domain sockets (unix:@name) are Linux's",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_their_transport() {
        let tcp = Endpoint::parse("127.0.0.1:54321");
        assert_eq!(tcp, Endpoint::Tcp("127.0.0.1:54321"));
        assert_eq!(
            (tcp.host(), tcp.authority()),
            ("127.0.0.1", "127.0.0.1:54321")
        );
        let file = Endpoint::parse("unix:/run/rpcmux.sock");
        assert_eq!(file, Endpoint::Unix("/run/rpcmux.sock"));
        assert_eq!((file.host(), file.authority()), ("localhost", "localhost"));
        assert_eq!(file.to_string(), "unix:/run/rpcmux.sock");
        let abs = Endpoint::parse("unix:@rpcmux");
        assert_eq!(abs, Endpoint::Abstract("rpcmux"));
        assert_eq!(abs.to_string(), "unix:@rpcmux");
    }

    #[test]
    fn a_missing_socket_file_is_a_connect_error_naming_it() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let at = Endpoint::parse("unix:/nonexistent/rpcmux.sock");
        let e = rt
            .block_on(at.connect(Duration::from_secs(1)))
            .err()
            .expect("no such socket");
        let text = e.to_string();
        assert!(text.contains("unix:/nonexistent/rpcmux.sock"), "{text}");
    }
}
