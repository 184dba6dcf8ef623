//! Refused connections, counted, and logged at most [`BURST`] times a second per reason.
//!
//! A flood of refusals must not become a flood of log lines (1.2 MB of log in 35 s was
//! seen): each reason keeps a counter, and past [`BURST`] lines in a second its
//! refusals are only counted; the next line logged says how many were not.

use crate::conn::Peer;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Why a connection was closed before a framer ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `max_connections` open sockets.
    Connections,
    /// `max_connections_per_ip` from this client.
    ConnectionsPerIp,
    /// `max_sniffing` connections still sniffing.
    Sniffing,
    /// `max_sniffing_per_ip` from this client.
    SniffingPerIp,
    /// No protocol shown by the sniff deadline.
    SniffTimeout,
    /// Bytes no probe knows.
    UnknownProtocol,
    /// A front layer refused: PROXY from an untrusted peer, TLS when off, plaintext
    /// when TLS is required, a malformed PROXY header, a failed TLS handshake.
    Front,
}

impl Refusal {
    pub(crate) const ALL: [Refusal; 7] = [
        Refusal::Connections,
        Refusal::ConnectionsPerIp,
        Refusal::Sniffing,
        Refusal::SniffingPerIp,
        Refusal::SniffTimeout,
        Refusal::UnknownProtocol,
        Refusal::Front,
    ];

    /// The name used in logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::Connections => "connections",
            Refusal::ConnectionsPerIp => "connections_per_ip",
            Refusal::Sniffing => "sniffing",
            Refusal::SniffingPerIp => "sniffing_per_ip",
            Refusal::SniffTimeout => "sniff_timeout",
            Refusal::UnknownProtocol => "unknown_protocol",
            Refusal::Front => "front_layer",
        }
    }
}

const N: usize = Refusal::ALL.len();

/// Counters and log throttles, one per [`Refusal`].
pub struct Refusals {
    start: Instant,
    total: [AtomicU64; N],
    /// The second (since `start`) each reason's log window is in.
    window: [AtomicU64; N],
    /// Lines logged for each reason in its window.
    logged: [AtomicU64; N],
    /// Refusals counted but not logged, per reason, since its last line.
    suppressed: [AtomicU64; N],
}

impl Default for Refusals {
    fn default() -> Self {
        Refusals {
            start: Instant::now(),
            total: Default::default(),
            window: Default::default(),
            logged: Default::default(),
            suppressed: Default::default(),
        }
    }
}

/// Log lines per reason per second at most.
pub const BURST: u64 = 10;

impl Refusals {
    /// Count a refusal and log it unless this reason was logged less than a second ago.
    pub fn refuse(&self, why: Refusal, peer: Peer, detail: &str) {
        let i = why as usize;
        let total = self.total[i].fetch_add(1, Ordering::Relaxed) + 1;
        let second = self.start.elapsed().as_secs();
        if self.window[i].swap(second, Ordering::Relaxed) != second {
            self.logged[i].store(0, Ordering::Relaxed);
        }
        if self.logged[i].fetch_add(1, Ordering::Relaxed) >= BURST {
            self.suppressed[i].fetch_add(1, Ordering::Relaxed);
            return;
        }
        let suppressed = self.suppressed[i].swap(0, Ordering::Relaxed);
        match why {
            Refusal::SniffTimeout => {
                tracing::info!(%peer, reason = why.name(), suppressed, total, "{detail}; closing")
            }
            _ => tracing::warn!(%peer, reason = why.name(), suppressed, total, "{detail}; closing"),
        }
    }

    /// Refusals counted for one reason since start (`/metrics` reads them).
    pub fn count(&self, why: Refusal) -> u64 {
        self.total[why as usize].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_refusal() {
        let r = Refusals::default();
        let peer = Peer::Tcp("127.0.0.1:1".parse().unwrap());
        for _ in 0..1000 {
            r.refuse(Refusal::Sniffing, peer, "test");
        }
        assert_eq!(r.count(Refusal::Sniffing), 1000);
        assert_eq!(r.count(Refusal::Connections), 0);
        // BURST lines logged, the rest (within the same second) only counted.
        let not_logged = r.suppressed[Refusal::Sniffing as usize].load(Ordering::Relaxed);
        assert!(not_logged >= 1000 - 2 * BURST, "{not_logged}");
    }
}
