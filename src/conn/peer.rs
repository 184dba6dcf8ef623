//! Who is at the other end of a connection: a TCP client's address, or the process
//! behind a Unix-domain socket, known by the kernel's account of it (`SO_PEERCRED`).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The credentials of the process that connected over a Unix-domain socket, as the
/// kernel recorded them at `connect` (`SO_PEERCRED`): not something the client says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerCred {
    /// The connecting process's effective user id.
    pub uid: u32,
    /// Its effective group id.
    pub gid: u32,
    /// Its process id, where the platform reports one.
    pub pid: Option<i32>,
}

impl std::fmt::Display for PeerCred {
    /// `unix(uid=1000,gid=1000,pid=4242)`: one token, so a log line keeps it whole.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unix(uid={},gid={}", self.uid, self.gid)?;
        if let Some(pid) = self.pid {
            write!(f, ",pid={pid}")?;
        }
        f.write_str(")")
    }
}

/// The other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// A TCP client (or the client a trusted PROXY header named).
    Tcp(SocketAddr),
    /// A process on this host, over a Unix-domain socket.
    Unix(PeerCred),
}

impl Peer {
    /// The client's address; `None` over a Unix-domain socket.
    pub fn addr(&self) -> Option<SocketAddr> {
        match self {
            Peer::Tcp(a) => Some(*a),
            Peer::Unix(_) => None,
        }
    }

    /// The client's IP address; `None` over a Unix-domain socket.
    pub fn ip(&self) -> Option<IpAddr> {
        self.addr().map(|a| a.ip().to_canonical())
    }

    /// The process's credentials; `None` over TCP.
    pub fn cred(&self) -> Option<PeerCred> {
        match self {
            Peer::Tcp(_) => None,
            Peer::Unix(c) => Some(*c),
        }
    }

    /// The address failed logins are throttled by. A uid becomes the /64
    /// `100:0:UIDHI:UIDLO::/64`, inside `100::/32`, reserved (`0000::/8`) and never a
    /// real client's: each local user is throttled on its own, never together with a
    /// TCP client. Its own /64, because the throttle counts an IPv6 source per /64 (one
    /// host usually holds a whole /64): uids in one /64 would share one count, and five
    /// wrong logins from `nobody` would lock `root` out.
    pub fn throttle_ip(&self) -> IpAddr {
        match self {
            Peer::Tcp(a) => a.ip().to_canonical(),
            Peer::Unix(c) => IpAddr::V6(Ipv6Addr::new(
                0x100,
                0,
                (c.uid >> 16) as u16,
                c.uid as u16,
                0,
                0,
                0,
                0,
            )),
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Tcp(a) => a.fmt(f),
            Peer::Unix(c) => c.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unix_peer_shows_its_credentials_as_one_token() {
        let c = PeerCred {
            uid: 1000,
            gid: 100,
            pid: Some(42),
        };
        assert_eq!(Peer::Unix(c).to_string(), "unix(uid=1000,gid=100,pid=42)");
        assert_eq!(Peer::Unix(c).ip(), None);
        let tcp: SocketAddr = "[::ffff:10.0.0.1]:5".parse().unwrap();
        assert_eq!(Peer::Tcp(tcp).ip(), Some("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn each_uid_is_throttled_apart_from_every_tcp_client() {
        let user = |uid| {
            Peer::Unix(PeerCred {
                uid,
                gid: 0,
                pid: None,
            })
        };
        let a = user(1000).throttle_ip();
        let b = user(1001).throttle_ip();
        assert_ne!(a, b);
        assert_eq!(a.to_string(), "100:0:0:3e8::");
        // Apart by /64, the unit the throttle counts IPv6 sources in.
        let prefix = |ip: IpAddr| match ip {
            IpAddr::V6(v6) => u128::from(v6) >> 64,
            IpAddr::V4(_) => unreachable!(),
        };
        assert_ne!(prefix(a), prefix(b));
        assert_ne!(
            prefix(user(0).throttle_ip()),
            prefix(user(65534).throttle_ip())
        );
        let tcp: SocketAddr = "127.0.0.1:9".parse().unwrap();
        assert_eq!(Peer::Tcp(tcp).throttle_ip(), tcp.ip());
    }
}
