//! `[events]`: where events go besides this instance's own subscribers.

use serde::Deserialize;
use std::time::Duration;

/// Fanning events out to the other instances of a fleet (`[events]`, `--events`;
/// docs/fleet.md). With no `url` events stay in this process.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsConfig {
    /// The engine that carries events between instances: `redis://HOST:PORT[/DB]`
    /// (feature `events-redis`, in the binary). Unset: in-process only.
    pub url: Option<String>,
    /// The pub/sub channel every instance of one fleet publishes to and listens on;
    /// fleets sharing one Redis each take their own.
    pub channel: String,
    /// Events waiting to be sent to the engine; past it new ones are not fanned out
    /// (counted and logged; local subscribers still get them).
    pub queue: usize,
    /// Bytes an encoded event may take on the channel, both ways: a bigger one is not
    /// sent, and one received is refused (counted and logged).
    pub max_message: usize,
    /// Seconds the reconnect backoff grows to at most (it starts at 0.1 s and doubles).
    pub reconnect_max: f64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            url: None,
            channel: "rpcmux.events".into(),
            queue: 4_096,
            max_message: 1 << 20,
            reconnect_max: 5.0,
        }
    }
}

impl EventsConfig {
    /// The `reconnect_max` field as a `Duration` (at least 0.1 s).
    pub fn reconnect_max(&self) -> Duration {
        Duration::try_from_secs_f64(self.reconnect_max.max(0.1)).unwrap_or(Duration::MAX)
    }
}
