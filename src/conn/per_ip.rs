//! Per-client-address caps: open connections, and connections still sniffing or
//! handshaking. One address opening a thousand slow connections must not lock out
//! everyone else (the global caps alone let it hold every sniffing permit).
//!
//! IPv6 clients are counted per /64: one host usually owns a whole /64, so per-address
//! counting would not bind it. A trusted PROXY peer (a load balancer) is not counted;
//! the client its header names is. Over a Unix-domain socket the count is per user id:
//! local processes have no address, and one user must not lock out the others.
//!
//! The table also counts event subscriptions per address (`max_subscriptions_per_ip`,
//! charged by [`crate::events::conn_subs`]): one address's connections together hold
//! at most that many patterns, however many connections and sessions carry them.

use crate::conn::Peer;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The unit a cap is counted in: an IPv4 address, an IPv6 /64 or a local user id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key(u128);

impl Key {
    fn of(ip: IpAddr) -> Key {
        match ip.to_canonical() {
            IpAddr::V4(v4) => Key(u32::from(v4) as u128),
            // Tagged above the v4 range so the two never collide.
            IpAddr::V6(v6) => Key((u128::from(v6) & !((1u128 << 64) - 1)) | 1 << 32),
        }
    }

    /// A Unix socket's process is counted by its uid, tagged apart from both above
    /// (bit 33 set, bit 32 and the upper 64 bits clear).
    fn of_peer(peer: &Peer) -> Key {
        match peer {
            Peer::Tcp(a) => Key::of(a.ip()),
            Peer::Unix(c) => Key(1 << 33 | c.uid as u128),
        }
    }
}

#[derive(Default, Clone, Copy)]
struct Counts {
    conns: usize,
    sniffing: usize,
    subs: usize,
}

impl Counts {
    /// Nothing counted: the entry can go.
    fn is_empty(&self) -> bool {
        self.conns == 0 && self.sniffing == 0 && self.subs == 0
    }
}

/// Which count a [`Held`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Conn,
    Sniffing,
}

/// Counts per client address, with their caps (0 = no cap).
pub(crate) struct PerIp {
    counts: Mutex<HashMap<Key, Counts>>,
    max_conns: usize,
    max_sniffing: usize,
    /// Event subscriptions per address (0 = no cap).
    max_subs: usize,
}

/// One counted connection or sniff; dropping it gives the slot back.
pub(crate) struct Held {
    table: Arc<PerIp>,
    key: Key,
    kind: Kind,
}

impl PerIp {
    #[cfg(test)]
    pub fn new(max_conns: usize, max_sniffing: usize) -> Arc<PerIp> {
        Self::with_subs(max_conns, max_sniffing, 0)
    }

    /// The table with a cap on event subscriptions per address too (0 = no cap).
    pub fn with_subs(max_conns: usize, max_sniffing: usize, max_subs: usize) -> Arc<PerIp> {
        Arc::new(PerIp {
            counts: Mutex::new(HashMap::new()),
            max_conns,
            max_sniffing,
            max_subs,
        })
    }

    /// Are subscriptions counted per address (is there a cap)?
    pub fn counts_subs(&self) -> bool {
        self.max_subs > 0
    }

    /// `max_subscriptions_per_ip`.
    pub fn max_subs(&self) -> usize {
        self.max_subs
    }

    /// Count one subscription more for `peer`; false at the cap (nothing counted).
    pub fn take_sub(&self, peer: &Peer) -> bool {
        if self.max_subs == 0 {
            return true;
        }
        let key = Key::of_peer(peer);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let c = counts.entry(key).or_default();
        if c.subs >= self.max_subs {
            if c.is_empty() {
                counts.remove(&key);
            }
            return false;
        }
        c.subs += 1;
        true
    }

    /// Give back `n` subscriptions of `peer`.
    pub fn give_subs(&self, peer: &Peer, n: usize) {
        if self.max_subs == 0 {
            return;
        }
        let key = Key::of_peer(peer);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = counts.get_mut(&key) {
            c.subs = c.subs.saturating_sub(n);
            if c.is_empty() {
                counts.remove(&key);
            }
        }
    }

    /// Subscriptions counted for `peer` now (for tests).
    #[cfg(test)]
    pub fn subs_held(&self, peer: &Peer) -> usize {
        let counts = self.counts.lock().unwrap();
        counts.get(&Key::of_peer(peer)).map_or(0, |c| c.subs)
    }

    /// Take one slot of `kind` for `peer`, or `None` when its cap is reached. With no
    /// cap configured nothing is counted (and nothing locked).
    pub fn try_take(self: &Arc<Self>, peer: &Peer, kind: Kind) -> Option<Option<Held>> {
        let cap = match kind {
            Kind::Conn => self.max_conns,
            Kind::Sniffing => self.max_sniffing,
        };
        if cap == 0 {
            return Some(None);
        }
        let key = Key::of_peer(peer);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let c = counts.entry(key).or_default();
        let n = match kind {
            Kind::Conn => &mut c.conns,
            Kind::Sniffing => &mut c.sniffing,
        };
        if *n >= cap {
            if c.is_empty() {
                counts.remove(&key);
            }
            return None;
        }
        *n += 1;
        Some(Some(Held {
            table: self.clone(),
            key,
            kind,
        }))
    }

    /// Addresses currently counted (for tests: entries must not outlive their holders).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.counts.lock().unwrap().len()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut counts = self.table.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = counts.get_mut(&self.key) {
            match self.kind {
                Kind::Conn => c.conns = c.conns.saturating_sub(1),
                Kind::Sniffing => c.sniffing = c.sniffing.saturating_sub(1),
            }
            if c.is_empty() {
                counts.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Peer {
        Peer::Tcp(std::net::SocketAddr::new(s.parse().unwrap(), 1))
    }

    #[test]
    fn caps_per_address_and_forgets_released_ones() {
        let t = PerIp::new(2, 1);
        let a = ip("10.0.0.1");
        let b = ip("10.0.0.2");
        let c1 = t.try_take(&a, Kind::Conn).unwrap();
        let c2 = t.try_take(&a, Kind::Conn).unwrap();
        assert!(t.try_take(&a, Kind::Conn).is_none(), "third from a");
        assert!(
            t.try_take(&b, Kind::Conn).unwrap().is_some(),
            "b is separate"
        );
        let s = t.try_take(&a, Kind::Sniffing).unwrap();
        assert!(t.try_take(&a, Kind::Sniffing).is_none());
        drop((c1, s));
        assert!(t.try_take(&a, Kind::Conn).unwrap().is_some());
        drop(c2);
        assert_eq!(t.len(), 0, "no entry outlives its holders");
    }

    #[test]
    fn ipv6_counts_per_64_and_v4_mapped_as_v4() {
        let t = PerIp::new(1, 0);
        let x = t.try_take(&ip("2001:db8::1"), Kind::Conn).unwrap();
        assert!(t.try_take(&ip("2001:db8::ffff"), Kind::Conn).is_none());
        assert!(t
            .try_take(&ip("2001:db8:0:1::1"), Kind::Conn)
            .unwrap()
            .is_some());
        let y = t.try_take(&ip("10.1.1.1"), Kind::Conn).unwrap();
        assert!(t.try_take(&ip("::ffff:10.1.1.1"), Kind::Conn).is_none());
        assert!(
            t.try_take(&ip("10.1.1.1"), Kind::Sniffing)
                .unwrap()
                .is_none(),
            "cap 0: not counted"
        );
        drop((x, y));
    }

    #[test]
    fn unix_peers_count_per_uid_apart_from_addresses() {
        let t = PerIp::new(1, 0);
        let user = |uid| {
            Peer::Unix(crate::conn::PeerCred {
                uid,
                gid: 0,
                pid: None,
            })
        };
        let a = t.try_take(&user(1000), Kind::Conn).unwrap();
        assert!(t.try_take(&user(1000), Kind::Conn).is_none(), "same uid");
        let b = t.try_take(&user(1001), Kind::Conn).unwrap();
        // uid 0 and the address 0.0.0.0 are different keys.
        let c = t.try_take(&user(0), Kind::Conn).unwrap();
        let tcp = Peer::Tcp("0.0.0.0:1".parse().unwrap());
        assert!(t.try_take(&tcp, Kind::Conn).unwrap().is_some());
        drop((a, b, c));
    }
}
