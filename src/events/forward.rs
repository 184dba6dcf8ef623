//! The hub's end of the fan-out to other instances, and what it counts: below both the
//! hub (which queues each event it delivers) and the fan-out task (which drains it).

use crate::events::Event;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

/// What the fan-out did, for `/metrics` (and the tests that read it).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Events sent to the engine.
    pub sent: AtomicU64,
    /// Events published here that will not reach the engine: the queue to it full
    /// (`queue`, `queue_bytes`: a long outage), or too big.
    pub not_sent: AtomicU64,
    /// Events sent again: to an engine that lost them (from the resend window), or
    /// after a send whose answer was lost. An event sent after a failed try counts as
    /// sent (once) and as resent.
    pub resent: AtomicU64,
    /// Events the engine lost that were not sent again: more than fit in `queue` /
    /// `queue_bytes` with those waiting (logged with their ids).
    pub not_resent: AtomicU64,
    /// Events published here and acknowledged, still unsent when the fan-out stopped
    /// at shutdown (the engine unreachable or slow until the deadline; logged with
    /// their ids).
    pub unflushed: AtomicU64,
    /// Copies of other instances' events sent again to an engine that lost them, which
    /// it had taken before this instance began reading: skipped, as history.
    pub history: AtomicU64,
    /// Events from other instances delivered here.
    pub received: AtomicU64,
    /// Events from other instances received again and skipped (already delivered).
    pub duplicate: AtomicU64,
    /// Messages on the channel that were not a valid envelope.
    pub refused: AtomicU64,
    /// Events of other instances that never arrived (gaps in their sequence numbers).
    pub missed: AtomicU64,
    /// Events waiting to be sent now.
    pub waiting: AtomicU64,
    /// Entries of the stream this instance has not read yet (sampled about once a
    /// second).
    pub lag: AtomicU64,
    /// Connections made to the engine, the first included.
    pub connects: AtomicU64,
    /// Connected and subscribed now.
    pub up: AtomicBool,
}

/// The hub's end of the fan-out: the queue into the forwarding task.
#[derive(Debug)]
pub(crate) struct Forward {
    pub(crate) tx: mpsc::Sender<Arc<Event>>,
    pub stats: Arc<Stats>,
    pub(crate) full: Throttle,
}

impl Forward {
    /// Queue an event already delivered locally. Never waits: with the queue full the
    /// event is counted as not fanned out (the other instances see a gap).
    pub fn send(&self, event: Arc<Event>) {
        if let Err(e) = self.tx.try_send(event) {
            self.stats.not_sent.fetch_add(1, Ordering::Relaxed);
            let Some(more) = self.full.allow() else {
                return;
            };
            match e {
                TrySendError::Full(ev) => tracing::warn!(
                    event = ev.name,
                    more,
                    "events: fan-out queue full ([events] queue); event delivered locally only"
                ),
                // Published after the fan-out flushed at shutdown.
                TrySendError::Closed(ev) => tracing::warn!(
                    event = ev.name,
                    id = %ev.id(),
                    more,
                    "events: published after the fan-out stopped (shutting down); event delivered locally only"
                ),
            }
        }
    }
}

/// At most one log line a second for a kind of trouble; the next one says how many
/// were left out.
#[derive(Debug, Default)]
pub(crate) struct Throttle(Mutex<Option<(Instant, u64)>>);

impl Throttle {
    /// `Some(left out since the last line)` when a line may be logged now.
    pub fn allow(&self) -> Option<u64> {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match &mut *s {
            Some((last, skipped)) if now.duration_since(*last) < Duration::from_secs(1) => {
                *skipped += 1;
                None
            }
            _ => {
                let skipped = s.map_or(0, |(_, n)| n);
                *s = Some((now, 0));
                Some(skipped)
            }
        }
    }
}
