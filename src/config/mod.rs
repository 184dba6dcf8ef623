//! Server settings: the same names in the TOML config file and on the command line
//! (the README's "Serving" table; every bound in docs/limits.md).

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub mod events;
mod listen;
pub mod stomp;
pub mod upstream;
pub mod web;

/// Protocols a listener can detect. A listener with fewer enabled sniffs fewer probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
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
    /// Every protocol: what a listener detects unless told otherwise.
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
    pub body_timeout: f64,
    /// Bytes per second an HTTP body must average once `body_timeout` has passed.
    pub min_body_rate: usize,
    /// Event subscriptions (`subscribe`) per connection.
    pub max_subscriptions: usize,
    /// Bytes queued for clients in the whole process, replies and events not yet
    /// written (an event shared by many subscribers counts once). Past it a connection
    /// with output waiting is not read, and a reply over 64 KiB is replaced by an error
    /// (-32006) until clients read (see docs/limits.md).
    pub max_total_output: usize,
    /// Seconds output may wait for a peer that reads nothing before the connection is
    /// closed and its output freed (nginx's `send_timeout`).
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
            max_total_output: 256 << 20,
            send_timeout: 60.0,
            max_calls_per_request: 10_000,
        }
    }
}

// The limits are seconds as f64 so the TOML file and the flags can say `0.5`; these
// turn them into Durations (negative: zero; huge: Duration::MAX).
impl Limits {
    /// The `sniff_timeout` field as a `Duration`.
    pub fn sniff_timeout(&self) -> Duration {
        secs(self.sniff_timeout)
    }
    /// The `idle_timeout` field as a `Duration`.
    pub fn idle_timeout(&self) -> Duration {
        secs(self.idle_timeout)
    }
    /// The `shutdown_timeout` field as a `Duration`.
    pub fn shutdown_timeout(&self) -> Duration {
        secs(self.shutdown_timeout)
    }
    /// The `body_timeout` field as a `Duration`.
    pub fn body_timeout(&self) -> Duration {
        secs(self.body_timeout)
    }
    /// The `send_timeout` field as a `Duration`.
    pub fn send_timeout(&self) -> Duration {
        secs(self.send_timeout)
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// Everything a [`Server`](crate::Server) can be told, and `rpcmux serve` with it.
///
/// Start from the defaults and change what you need:
///
/// ```
/// let config = rpcmux::Config {
///     listen: vec!["0.0.0.0:8080".parse().unwrap()],
///     limits: rpcmux::Limits { max_connections: 500, ..Default::default() },
///     ..Default::default()
/// };
/// assert!(!config.demo, "a library server serves only its own verbs");
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Addresses to listen on, every protocol on each (default `127.0.0.1:54321`;
    /// port 0 picks a free port, see [`Server::local_addrs`](crate::Server::local_addrs)).
    /// In a config file, entries may also be `HOST:PORT` names, resolved when the file
    /// is read ([`Config::resolve_listen`]).
    #[serde(deserialize_with = "listen::deserialize")]
    pub listen: Vec<SocketAddr>,
    /// Register the demo verbs (`ping`, `echo`, `VM.*`, ...). Off by default so a
    /// library server serves only its own verbs; `rpcmux serve` turns it on unless
    /// told `--no-demo` or `demo = false`.
    pub demo: bool,
    /// Protocols the sniffer looks for.
    pub protocols: Vec<Proto>,
    /// Bounds on what clients can make the server hold.
    pub limits: Limits,
    /// STOMP destinations (`[stomp]`).
    pub stomp: crate::stream::stomp::StompConfig,
    /// WebSocket bounds and keep-alive (`[websocket]`).
    pub websocket: crate::stream::websocket::WsConfig,
    /// Browsers: allowed origins, the console page (`[web]`).
    pub web: crate::stream::websocket::WebConfig,
    /// TLS on the same port (`[tls]`).
    pub tls: TlsConfig,
    /// Networks (CIDR) whose connections may start with a PROXY v1/v2 header, i.e. the
    /// load balancers in front of this server. Anyone else sending one is refused.
    pub proxy_from: Vec<ipnet::IpNet>,
    /// Metrics, the access log, readiness and draining (`[ops]`).
    pub ops: OpsConfig,
    /// Existing RPC servers whose verbs are served too (`[[upstream]]`,
    /// docs/gateway.md): discovered when the server starts, before it listens. Needs
    /// the `gateway` feature; without it a server with upstreams refuses to start.
    pub upstream: Vec<crate::gateway::UpstreamConfig>,
    /// Events fanned out to the other instances of a fleet (`[events]`,
    /// docs/fleet.md); in-process only unless `url` is set.
    pub events: crate::events::EventsConfig,
}

/// What operators watch and how the server leaves a load balancer's rotation
/// (docs/operations.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpsConfig {
    /// Count calls, connections, refusals and bytes, served as Prometheus text at
    /// `GET /metrics` (default on).
    pub metrics: bool,
    /// Serve `/metrics` on this address only (plain HTTP), not on the RPC port.
    pub metrics_listen: Option<SocketAddr>,
    /// Networks (CIDR) whose clients get `/metrics` on the RPC port (default loopback
    /// only: verb names, counts and upstream URLs are not for anyone who can reach the
    /// port); others get 403. `metrics_listen` serves whoever reaches its address.
    pub metrics_from: Vec<ipnet::IpNet>,
    /// The level of the one line logged per call (target `rpcmux::access`).
    pub access_log: crate::observe::AccessLevel,
    /// Seconds past which a call is logged at warn, whatever `access_log` says.
    pub slow_call: f64,
    /// Seconds between the start of shutdown and closing the listeners: `GET /ready`
    /// answers 503 meanwhile while connections are still accepted, so a balancer that
    /// polls it takes the server out of rotation before it stops listening.
    pub drain_delay: f64,
}

impl Default for OpsConfig {
    fn default() -> Self {
        OpsConfig {
            metrics: true,
            metrics_listen: None,
            metrics_from: vec![
                "127.0.0.0/8".parse().expect("a network"),
                "::1/128".parse().expect("a network"),
            ],
            access_log: Default::default(),
            slow_call: 1.0,
            drain_delay: 0.0,
        }
    }
}

impl OpsConfig {
    /// The `slow_call` field as a `Duration`.
    pub fn slow_call(&self) -> Duration {
        secs(self.slow_call)
    }
    /// The `drain_delay` field as a `Duration`.
    pub fn drain_delay(&self) -> Duration {
        secs(self.drain_delay)
    }
}

/// What a listener does with TLS and plaintext clients (both are told apart by the
/// first byte, so one port serves both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum TlsMode {
    /// Plaintext only: a TLS ClientHello is closed and logged.
    Off,
    /// TLS and plaintext side by side.
    Optional,
    /// TLS only: a plaintext connection is closed and logged.
    Required,
}

/// TLS settings. With `client_ca` set every TLS client must present a certificate
/// that chains to it (mutual TLS); plaintext clients, where `mode` lets them in,
/// have no identity.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain, leaf first.
    pub cert: Option<PathBuf>,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<PathBuf>,
    /// PEM CA certificate(s) that client certificates must chain to.
    pub client_ca: Option<PathBuf>,
    /// Unset: `optional` when a certificate is given, else `off`.
    pub mode: Option<TlsMode>,
    /// Seconds a TLS handshake may take; separate from the sniff deadline, since a
    /// handshake costs round trips and CPU the first bytes do not.
    pub handshake_timeout: f64,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            cert: None,
            key: None,
            client_ca: None,
            mode: None,
            handshake_timeout: 10.0,
        }
    }
}

impl TlsConfig {
    /// The mode in force: as set, else `optional` when a certificate is given.
    pub fn mode(&self) -> TlsMode {
        match (self.mode, &self.cert) {
            (Some(m), _) => m,
            (None, Some(_)) => TlsMode::Optional,
            (None, None) => TlsMode::Off,
        }
    }
    /// The `handshake_timeout` field as a `Duration`.
    pub fn handshake_timeout(&self) -> Duration {
        secs(self.handshake_timeout)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: vec![SocketAddr::from(([127, 0, 0, 1], 54321))],
            demo: false,
            protocols: Proto::ALL.to_vec(),
            limits: Limits::default(),
            stomp: Default::default(),
            websocket: Default::default(),
            web: Default::default(),
            tls: TlsConfig::default(),
            proxy_from: Vec::new(),
            ops: OpsConfig::default(),
            upstream: Vec::new(),
            events: Default::default(),
        }
    }
}

impl Config {
    /// Listen addresses from text, as `rpcmux serve --listen` and the config file take
    /// them: IP literals as they are, `HOST:PORT` names resolved now to every address of
    /// the name this machine has (each once). A name with none is an error naming it.
    ///
    /// ```
    /// let addrs = rpcmux::Config::resolve_listen(&["localhost:0"]).unwrap();
    /// assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    /// ```
    pub fn resolve_listen<S: AsRef<str>>(specs: &[S]) -> std::io::Result<Vec<SocketAddr>> {
        listen::resolve(specs)
    }
}

#[cfg(feature = "toml")]
impl Config {
    /// Read a TOML config file (feature `toml`); unknown keys are errors, missing
    /// ones keep their defaults.
    pub fn from_toml(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }
}

#[cfg(all(test, feature = "toml"))]
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

    #[test]
    fn tls_and_proxy_settings() {
        let c = Config::default();
        assert_eq!(c.tls.mode(), TlsMode::Off);
        assert_eq!(c.tls.handshake_timeout(), Duration::from_secs(10));
        let c = Config::from_toml(
            "proxy_from = [\"10.0.0.0/8\", \"::1/128\"]\n[tls]\ncert = \"c.pem\"\nkey = \"k.pem\"\nhandshake_timeout = 2.5\n",
        )
        .unwrap();
        assert_eq!(c.tls.mode(), TlsMode::Optional, "a cert without a mode");
        assert_eq!(c.tls.handshake_timeout(), Duration::from_millis(2500));
        assert_eq!(c.proxy_from.len(), 2);
        let c = Config::from_toml("[tls]\ncert = \"c.pem\"\nmode = \"required\"\n").unwrap();
        assert_eq!(c.tls.mode(), TlsMode::Required);
        assert!(Config::from_toml("[tls]\nmode = \"sometimes\"\n").is_err());
        assert!(Config::from_toml("[tls]\ncertificate = \"c.pem\"\n").is_err());
        assert!(Config::from_toml("proxy_from = [\"10.0.0.0/33\"]\n").is_err());
    }
}
