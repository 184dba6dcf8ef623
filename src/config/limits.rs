//! `[limits]`: bounds on everything a client can make the server hold (docs/limits.md).

use serde::Deserialize;
use std::time::Duration;

/// Bounds on everything a client can make the server hold.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Open sockets, all states. Over it, a new connection is accepted and closed at once.
    pub max_connections: usize,
    /// Connections still being sniffed (slowloris guard). Over it: closed at once.
    pub max_sniffing: usize,
    /// Seconds a new connection may take to show which protocol it speaks.
    #[serde(deserialize_with = "seconds")]
    pub sniff_timeout: f64,
    /// Seconds without traffic (and no call in flight) before a connection is closed.
    #[serde(deserialize_with = "seconds")]
    pub idle_timeout: f64,
    /// Calls in flight per connection; past it the server stops reading that connection.
    pub max_in_flight: usize,
    /// HTTP request body cap in bytes (413 past it).
    pub max_body: usize,
    /// Stream frame cap in bytes (one JSON value, msgpack message or STOMP frame).
    pub max_frame: usize,
    /// Seconds graceful shutdown waits for calls in flight.
    #[serde(deserialize_with = "seconds")]
    pub shutdown_timeout: f64,
    /// Listen backlog.
    pub backlog: u32,
    /// Open sockets per client address (IPv6: per /64); 0 = no cap. A trusted PROXY
    /// peer is not counted: the client its header names is.
    pub max_connections_per_ip: usize,
    /// Connections from one client address still sniffing or handshaking; 0 = no cap.
    pub max_sniffing_per_ip: usize,
    /// JSON-RPC batch members and `system.multicall` calls per request (-32600 past it).
    pub max_batch: usize,
    /// Encoded reply cap in bytes: a bigger reply is replaced by an error (-32003).
    pub max_reply: usize,
    /// Request bytes of calls in flight on one connection; past it the connection is
    /// not read until calls finish (one call may always run, however large).
    pub max_in_flight_bytes: usize,
    /// Request bytes of calls in flight in the whole process, HTTP bodies being read
    /// included; past it requests over 64 KiB wait, and smaller ones go on in a reserve of
    /// a quarter more (see docs/limits.md).
    pub max_total_in_flight_bytes: usize,
    /// Seconds an HTTP body may go without a byte arriving (nginx's client_body_timeout).
    #[serde(deserialize_with = "seconds")]
    pub body_timeout: f64,
    /// Bytes per second an HTTP body must average once `body_timeout` has passed.
    pub min_body_rate: usize,
    /// Event subscriptions (`subscribe`) per session: a connection, or one WebSocket
    /// session of an HTTP/2 connection.
    pub max_subscriptions: usize,
    /// WebSocket sessions (RFC 8441 extended CONNECT streams) one HTTP/2 connection may
    /// carry at once; past it the CONNECT is answered 429 before any upgrade (0 = only
    /// the streams cap, `max_in_flight`).
    pub max_sessions_per_connection: usize,
    /// Event subscriptions of one connection, all its sessions together (-32002 past
    /// it; 0 = no cap).
    pub max_connection_subscriptions: usize,
    /// Event subscriptions of all the connections of one client address (IPv6: per
    /// /64; a Unix socket: per uid) (-32002 past it; 0 = no cap).
    pub max_subscriptions_per_ip: usize,
    /// Bytes queued for clients in the whole process, replies and events not yet
    /// written (an event shared by many subscribers counts once). Past it a connection
    /// with output waiting is not read, and a reply over 64 KiB is replaced by an error
    /// (-32006) until clients read (see docs/limits.md).
    pub max_total_output: usize,
    /// Bytes of unsent output one stream connection (raw TCP, STOMP, WebSocket) may
    /// hold before it stops reading requests and taking events: a reader that does not
    /// keep up then fills its event outbox, and is told what it lost (`events.lost`).
    pub max_conn_output: usize,
    /// Seconds output may wait for a peer that reads nothing before the connection is
    /// closed and its output freed (nginx's `send_timeout`).
    #[serde(deserialize_with = "seconds")]
    pub send_timeout: f64,
    /// Calls one request may start, whatever their nesting: JSON-RPC batch members,
    /// each counted with the `system.multicall` calls it carries (-32600 past it).
    pub max_calls_per_request: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 10_000,
            max_sniffing: 1_024,
            sniff_timeout: 10.0,
            idle_timeout: 300.0,
            max_in_flight: 128,
            max_body: 16 << 20,
            max_frame: 16 << 20,
            shutdown_timeout: 30.0,
            backlog: 4_096,
            max_connections_per_ip: 1_000,
            max_sniffing_per_ip: 64,
            max_batch: 1_000,
            max_reply: 32 << 20,
            max_in_flight_bytes: 16 << 20,
            max_total_in_flight_bytes: 32 << 20,
            body_timeout: 30.0,
            min_body_rate: 4_096,
            max_subscriptions: 64,
            max_sessions_per_connection: 16,
            max_connection_subscriptions: 256,
            max_subscriptions_per_ip: 4_096,
            max_total_output: 256 << 20,
            max_conn_output: 4 << 20,
            send_timeout: 60.0,
            max_calls_per_request: 10_000,
        }
    }
}

// The limits are seconds as f64 so the TOML file and the flags can say `0.5`; these
// turn them into Durations. One rule for every duration: 0 is off (no timeout, as 0 is
// no cap for the counts), a negative one is refused where it is read (`seconds`).
impl Limits {
    /// The `sniff_timeout` field as a `Duration` (0: none).
    pub fn sniff_timeout(&self) -> Duration {
        timeout(self.sniff_timeout)
    }
    /// The `idle_timeout` field as a `Duration` (0: none).
    pub fn idle_timeout(&self) -> Duration {
        timeout(self.idle_timeout)
    }
    /// The `shutdown_timeout` field as a `Duration` (0: none).
    pub fn shutdown_timeout(&self) -> Duration {
        timeout(self.shutdown_timeout)
    }
    /// The `body_timeout` field as a `Duration` (0: none).
    pub fn body_timeout(&self) -> Duration {
        timeout(self.body_timeout)
    }
    /// The `send_timeout` field as a `Duration` (0: none).
    pub fn send_timeout(&self) -> Duration {
        timeout(self.send_timeout)
    }
}

/// Seconds from the settings as a `Duration` (negative: zero; huge: [`OFF`]).
pub(crate) fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).map_or(OFF, |d| d.min(OFF))
}

/// A timeout from the settings: 0 (or less) is off, a duration never reached.
pub(crate) fn timeout(s: f64) -> Duration {
    if s > 0.0 {
        secs(s)
    } else {
        OFF
    }
}

/// What "off" is for a timeout: a century, far enough never to pass and near enough
/// that `now + OFF` never overflows an `Instant` (which `Duration::MAX` would).
pub(crate) const OFF: Duration = Duration::from_secs(100 * 365 * 86_400);

/// The one rule for a duration in seconds, in the config file and on the command
/// line: a number, not negative; 0 is off.
pub fn check_seconds(s: f64) -> Result<f64, String> {
    if s.is_nan() || s < 0.0 {
        return Err(format!(
            "{s}: expected seconds, 0 or more (0 = off; fractions such as 0.5 allowed)"
        ));
    }
    Ok(s)
}

/// Serde's reader of a duration field, by [`check_seconds`].
pub(crate) fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    check_seconds(f64::deserialize(d)?).map_err(serde::de::Error::custom)
}
