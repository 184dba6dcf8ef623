//! Refused connections, counted, and logged at most once a second per reason.
//!
//! A flood of refusals must not become a flood of log lines (1.2 MB of log in 35 s was
//! seen): each reason keeps a counter, and a refusal is logged only when a second has
//! passed since that reason was last logged, with the number suppressed meanwhile.

use std::net::SocketAddr;
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
    const ALL: [Refusal; 7] = [
        Refusal::Connections,
        Refusal::ConnectionsPerIp,
        Refusal::Sniffing,
        Refusal::SniffingPerIp,
        Refusal::SniffTimeout,
        Refusal::UnknownProtocol,
        Refusal::Front,
    ];

    /// The name used in logs (and, later, metric labels).
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
    /// Milliseconds since `start` when each reason was last logged (0: never).
    last_logged: [AtomicU64; N],
    /// How many were counted when each reason was last logged.
    at_last_log: [AtomicU64; N],
}

impl Default for Refusals {
    fn default() -> Self {
        Refusals {
            start: Instant::now(),
            total: Default::default(),
            last_logged: Default::default(),
            at_last_log: Default::default(),
        }
    }
}

/// Minimum time between two log lines for the same reason.
const LOG_EVERY_MS: u64 = 1000;

impl Refusals {
    /// Count a refusal and log it unless this reason was logged less than a second ago.
    pub fn refuse(&self, why: Refusal, peer: SocketAddr, detail: &str) {
        let i = why as usize;
        let total = self.total[i].fetch_add(1, Ordering::Relaxed) + 1;
        let now = self.start.elapsed().as_millis() as u64 + 1;
        let last = self.last_logged[i].load(Ordering::Relaxed);
        if last != 0 && now < last + LOG_EVERY_MS {
            return;
        }
        if self.last_logged[i]
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return; // another thread logs this second
        }
        let before = self.at_last_log[i].swap(total, Ordering::Relaxed);
        let suppressed = total.saturating_sub(before).saturating_sub(1);
        match why {
            Refusal::SniffTimeout => {
                tracing::info!(%peer, reason = why.name(), suppressed, total, "{detail}; closing")
            }
            _ => tracing::warn!(%peer, reason = why.name(), suppressed, total, "{detail}; closing"),
        }
    }

    /// Refusals counted for one reason since start.
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
        let peer = "127.0.0.1:1".parse().unwrap();
        for _ in 0..1000 {
            r.refuse(Refusal::Sniffing, peer, "test");
        }
        assert_eq!(r.count(Refusal::Sniffing), 1000);
        assert_eq!(r.count(Refusal::Connections), 0);
        // One log line per second at most: the throttle's clock moved once.
        assert!(r.last_logged[Refusal::Sniffing as usize].load(Ordering::Relaxed) > 0);
        assert_eq!(
            r.at_last_log[Refusal::Sniffing as usize].load(Ordering::Relaxed),
            1
        );
    }
}
