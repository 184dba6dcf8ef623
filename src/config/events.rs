//! `[events]`: where events go besides this instance's own subscribers.

use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// Fanning events out to the other instances of a fleet (`[events]`, `--events`;
/// docs/fleet.md). With no `url` events stay in this process.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsConfig {
    /// The engine that carries events between instances: `redis://HOST:PORT[/DB]`
    /// (feature `events-redis`, in the binary). Unset: in-process only.
    pub url: Option<String>,
    /// The Redis stream (its key) every instance of one fleet appends to and reads;
    /// fleets sharing one Redis each take their own.
    pub channel: String,
    /// Events waiting to be sent to the engine (while it is away, too): past it new
    /// ones are not fanned out (counted and logged; local subscribers still get them).
    /// Also the most events kept to send again to a fresh engine (`resend_window`).
    pub queue: usize,
    /// Bytes (encoded) the events waiting to be sent may take, and the events kept to
    /// send again: past it, as past `queue`.
    pub queue_bytes: usize,
    /// Seconds of this instance's recent events kept to send again when the engine
    /// comes back without them (a Redis restarted without persistence), so an event it took
    /// but no other instance read yet is not lost.
    #[serde(deserialize_with = "crate::config::limits::seconds")]
    pub resend_window: f64,
    /// Entries the stream keeps, about (`XADD MAXLEN ~`): how far behind an instance
    /// may fall, or how long it may be away, and still read every event.
    pub max_len: usize,
    /// Bytes an encoded event may take on the channel, both ways: a bigger one is not
    /// sent, and one received is refused (counted and logged).
    pub max_message: usize,
    /// Seconds the reconnect backoff grows to at most (it starts at 0.1 s and doubles).
    #[serde(deserialize_with = "crate::config::limits::seconds")]
    pub reconnect_max: f64,
    /// Recent events this instance keeps for subscribers that resume (`subscribe` with
    /// `since`), at most; 0 keeps none.
    pub retain: usize,
    /// Bytes (in memory) the recent events kept may take.
    pub retain_bytes: usize,
    /// Seconds a recent event is kept (0: none).
    #[serde(deserialize_with = "crate::config::limits::seconds")]
    pub retain_secs: f64,
    /// Live events one subscribed session may have waiting to be written, at most;
    /// past it (or past `outbox_bytes`) the session is told what it lost
    /// (`events.lost`) and closed, and resumes with `since` (docs/events.md).
    pub outbox: usize,
    /// Bytes (in memory) of live events one session may have waiting, at most (an
    /// outbox with nothing waiting always takes the next event, however big).
    pub outbox_bytes: usize,
    /// A directory for the event log (`--events-dir`; feature `events-log`, in the
    /// binary): the instance keeps its id, its sequence and its retained window across
    /// restarts, SIGKILL included, so resuming clients continue with no gap
    /// (docs/events.md, "Across a restart"). Unset (the default): nothing is written,
    /// and a restart is a new instance id (a reported gap). The systemd unit uses
    /// `StateDirectory=rpcmux` (`/var/lib/rpcmux`).
    pub dir: Option<PathBuf>,
    /// `fdatasync` each append to the log, so an OS crash or power loss loses no
    /// acknowledged event either (a process kill loses none without it); ~0.1-0.3 ms per
    /// publish.
    pub fsync: bool,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            url: None,
            channel: "rpcmux.events".into(),
            queue: 65_536,
            queue_bytes: 64 << 20,
            resend_window: 30.0,
            max_len: 100_000,
            max_message: 1 << 20,
            reconnect_max: 5.0,
            retain: 65_536,
            retain_bytes: 64 << 20,
            retain_secs: 300.0,
            outbox: 4096,
            outbox_bytes: 16 << 20,
            dir: None,
            fsync: false,
        }
    }
}

impl EventsConfig {
    /// The `reconnect_max` field as a `Duration` (at least 0.1 s).
    pub fn reconnect_max(&self) -> Duration {
        secs(self.reconnect_max.max(0.1))
    }

    /// The `retain_secs` field as a `Duration` (0 or less: nothing is kept).
    pub fn retain_for(&self) -> Duration {
        secs(self.retain_secs.max(0.0))
    }

    /// The `resend_window` field as a `Duration` (0 or less: nothing is kept).
    pub fn resend_window(&self) -> Duration {
        secs(self.resend_window.max(0.0))
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}
