//! What a bench run is told, and its live totals.

use crate::cli::bench::engine::payload::Payload;
use crate::cli::bench::engine::stats::Outcome;
use rpcmux::client::{ClientProto, ConnectOpts};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub proto: ClientProto,
    pub addr: String,
    pub connections: usize,
    /// Calls in flight per connection (must be 1 for HTTP protocols).
    pub pipeline: usize,
    /// Measured time.
    pub duration: Duration,
    /// Time run before measuring starts (connections warm, caches filled).
    pub warmup: Duration,
    pub payload: Payload,
    pub opts: ConnectOpts,
    /// The server is a bare byte echo (a ceiling, not an RPC server): send the bytes a
    /// call of `proto` would, and count a call done when they come back and decode to that call.
    pub echo_server: bool,
    /// Stream protocols: an answer whose bytes equal a right answer's (its id aside,
    /// learnt from a connection's second decoded answer) is right without being decoded; only answers that differ are decoded and
    /// judged. A lighter load generator, so a fast server is measured at its full core.
    pub check_bytes: bool,
}

/// Live totals, for the progress line.
#[derive(Default)]
pub struct Progress {
    pub calls: AtomicU64,
    pub errors: AtomicU64,
}

impl Progress {
    /// One more call ended this way.
    pub(crate) fn count(&self, outcome: Outcome) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if outcome != Outcome::Ok {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}
