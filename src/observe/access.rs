//! The access log: one line per call, under the `rpcmux::access` target, and a warning
//! for every call slower than the threshold (VDSM's habit), whatever the level.

use crate::config::AccessLevel;
use crate::conn::Peer;
use std::time::Duration;

/// The access log's settings, copied into every call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AccessLog {
    pub level: AccessLevel,
    /// Calls taking longer are logged at warn.
    pub slow: Duration,
}

/// One finished call, as logged.
pub(crate) struct Line<'a> {
    pub protocol: &'static str,
    pub method: &'a str,
    /// The name the client asked for, when no verb has it.
    pub requested: Option<&'a str>,
    /// A TCP client's address, or a Unix socket's process: `unix(uid=..,gid=..,pid=..)`.
    pub peer: Option<Peer>,
    pub identity: Option<&'a str>,
    pub flow_id: Option<&'a str>,
    pub elapsed: Duration,
    /// The error code returned; `None` when the call succeeded.
    pub code: Option<i64>,
}

macro_rules! line {
    ($level:expr, $l:expr, $msg:literal) => {
        tracing::event!(
            target: "rpcmux::access",
            $level,
            protocol = $l.protocol,
            method = $l.method,
            requested = $l.requested,
            peer = $l.peer.map(tracing::field::display),
            identity = $l.identity,
            flow_id = $l.flow_id,
            duration_ms = ms($l.elapsed),
            code = %Code($l.code),
            $msg
        )
    };
}

/// A duration in milliseconds, to the microsecond: a number, so `--log-format json`
/// writes `"duration_ms":0.016` for log shippers to sum and compare, not a string.
fn ms(d: Duration) -> f64 {
    d.as_micros() as f64 / 1000.0
}

/// `ok`, or the error code.
struct Code(Option<i64>);

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            None => f.write_str("ok"),
            Some(c) => write!(f, "{c}"),
        }
    }
}

impl AccessLog {
    /// Whether a call that took `elapsed` gets a line the log filter lets through (so
    /// one that would not is not made up at all: the default level, debug, is off).
    pub fn logs(&self, elapsed: Duration) -> bool {
        use tracing::Level;
        elapsed >= self.slow
            || match self.level {
                AccessLevel::Off => false,
                AccessLevel::Debug => tracing::enabled!(target: "rpcmux::access", Level::DEBUG),
                AccessLevel::Info => tracing::enabled!(target: "rpcmux::access", Level::INFO),
            }
    }

    pub fn log(&self, l: &Line<'_>) {
        if l.elapsed >= self.slow {
            line!(tracing::Level::WARN, l, "slow call");
            return;
        }
        match self.level {
            AccessLevel::Off => {}
            AccessLevel::Debug => line!(tracing::Level::DEBUG, l, "call"),
            AccessLevel::Info => line!(tracing::Level::INFO, l, "call"),
        }
    }
}
