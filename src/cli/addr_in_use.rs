//! Why a TCP address is "already in use" when no server listens there: a connection
//! holds the port as its own. Linux lends the ports of its ephemeral range (32768-60999
//! by default, `/proc/sys/net/ipv4/ip_local_port_range`; rpcmux's 54321 is in it) to
//! outgoing connections, and one that closed first keeps the port in TIME_WAIT for a
//! minute, which a listener cannot bind over. The README's blocks, run twice, met it:
//! calls to one section's server took another section's port as their own, and the
//! hint blamed "another process (another rpcmux serve?)" when none was running.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// What to say when [`held_by_a_connection`].
pub const HELD_BY_A_CONNECTION: &str = "nothing listens there: the port is held by a \
     connection that used it as its own (one closed less than a minute ago stays in \
     TIME_WAIT; `ss -tan` shows it); wait a minute, or choose another address with \
     --listen HOST:PORT (port 0 picks a free one)";

/// Whether `addrs` (the addresses asked for; `None` when some are not TCP) are taken
/// though no server answers on any of them: each connection attempt is refused.
pub fn held_by_a_connection(addrs: Option<&[SocketAddr]>) -> bool {
    let Some(addrs) = addrs.filter(|a| !a.is_empty()) else {
        return false;
    };
    addrs.iter().all(|a| {
        let dial = match a.ip().is_unspecified() {
            true if a.is_ipv4() => SocketAddr::from(([127, 0, 0, 1], a.port())),
            true => SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, a.port())),
            false => *a,
        };
        a.port() != 0
            && matches!(
                TcpStream::connect_timeout(&dial, Duration::from_millis(500)),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_listener_is_someone_and_a_closed_port_is_not() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let live = l.local_addr().unwrap();
        assert!(!held_by_a_connection(Some(&[live])));
        drop(l);
        assert!(held_by_a_connection(Some(&[live])));
        assert!(!held_by_a_connection(None));
        assert!(!held_by_a_connection(Some(&[])));
    }
}
