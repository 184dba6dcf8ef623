//! Server settings: the same names in the TOML config file and on the command line.

use serde::Deserialize;
use std::net::SocketAddr;
use std::time::Duration;

/// Protocols a listener can detect. A listener with fewer enabled sniffs fewer probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Proto {
    /// HTTP/1.x: JSON-RPC, XML-RPC and msgpack-rpc bodies, /health.
    Http,
    /// JSON-RPC 2.0 over raw TCP.
    JsonrpcTcp,
    /// MessagePack-RPC over raw TCP.
    Msgpack,
    /// JSON-RPC over STOMP 1.2.
    Stomp,
}

impl Proto {
    pub const ALL: [Proto; 4] = [Proto::Http, Proto::JsonrpcTcp, Proto::Msgpack, Proto::Stomp];
}

/// Bounds on everything a client can make the server hold.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Open sockets, all states. Over it, a new connection is accepted and closed at once.
    pub max_connections: usize,
    /// Connections still being sniffed (slowloris guard). Over it: closed at once.
    pub max_sniffing: usize,
    /// Seconds a new connection may take to show which protocol it speaks.
    pub sniff_timeout: f64,
    /// Seconds without traffic (and no call in flight) before a connection is closed.
    pub idle_timeout: f64,
    /// Calls in flight per connection; past it the server stops reading that connection.
    pub max_in_flight: usize,
    /// HTTP request body cap in bytes (413 past it).
    pub max_body: usize,
    /// Stream frame cap in bytes (one JSON value, msgpack message or STOMP frame).
    pub max_frame: usize,
    /// Seconds graceful shutdown waits for calls in flight.
    pub shutdown_timeout: f64,
    /// Listen backlog.
    pub backlog: u32,
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
        }
    }
}

impl Limits {
    pub fn sniff_timeout(&self) -> Duration {
        secs(self.sniff_timeout)
    }
    pub fn idle_timeout(&self) -> Duration {
        secs(self.idle_timeout)
    }
    pub fn shutdown_timeout(&self) -> Duration {
        secs(self.shutdown_timeout)
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// Everything `rpcmux serve` can be told.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub listen: Vec<SocketAddr>,
    /// Register the demo verbs.
    pub demo: bool,
    /// Protocols the sniffer looks for.
    pub protocols: Vec<Proto>,
    pub limits: Limits,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 54321))],
            demo: true,
            protocols: Proto::ALL.to_vec(),
            limits: Limits::default(),
        }
    }
}

impl Config {
    /// Read a TOML config file.
    pub fn from_toml(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_overrides_defaults_and_rejects_typos() {
        let c = Config::from_toml(
            "listen = [\"[::1]:0\"]\nprotocols = [\"http\", \"jsonrpc-tcp\"]\n[limits]\nmax_connections = 5\nsniff_timeout = 0.5\n",
        )
        .unwrap();
        assert_eq!(c.listen[0].to_string(), "[::1]:0");
        assert_eq!(c.protocols, vec![Proto::Http, Proto::JsonrpcTcp]);
        assert_eq!(c.limits.max_connections, 5);
        assert_eq!(c.limits.sniff_timeout(), Duration::from_millis(500));
        assert_eq!(c.limits.max_body, 16 << 20);
        assert!(Config::from_toml("[limits]\nmax_conections = 5\n").is_err());
    }
}
