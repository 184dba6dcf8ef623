//! Server settings: the same names in the TOML config file and on the command line
//! (the README's "Serving" table; every bound in docs/limits.md).

use serde::Deserialize;
use std::net::SocketAddr;

mod access;
mod auth;
mod error;
mod events;
mod jsonrpc;
mod limits;
mod listen;
mod ops;
mod stomp;
mod tls;
mod unix;
mod upstream;
mod web;

pub use access::AccessLevel;
pub use auth::AuthConfig;
pub use error::ConfigError;
pub use events::EventsConfig;
pub use jsonrpc::{JsonrpcConfig, V1Error};
pub use limits::{check_seconds, Limits};
pub use listen::Listen;
pub use ops::OpsConfig;
pub use stomp::StompConfig;
pub use tls::{TlsConfig, TlsMode};
pub use unix::{parse_mode, UnixAddr, UnixConfig};
pub use upstream::{add_upstream_methods, UpstreamConfig, UpstreamProto, UpstreamUrl};
pub use web::{WebConfig, WsConfig};

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

    /// Its name in logs and metric labels (`msgpack-rpc`; the config file says `msgpack`).
    pub fn name(self) -> &'static str {
        match self {
            Proto::Http => "http",
            Proto::JsonrpcTcp => "jsonrpc-tcp",
            Proto::Msgpack => "msgpack-rpc",
            Proto::Stomp => "stomp",
        }
    }
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
    /// port 0 picks a free port, see [`Server::local_addrs`](crate::Server::local_addrs)),
    /// TCP or Unix-domain sockets (`unix:/path`, `unix:@name`). In a config file,
    /// entries may also be `HOST:PORT` names, resolved when the file is read
    /// ([`Config::resolve_listen`]).
    #[serde(deserialize_with = "listen::deserialize")]
    pub listen: Vec<Listen>,
    /// How socket files are made: their mode, owner and group (`[unix]`).
    pub unix: UnixConfig,
    /// Register the demo verbs (`ping`, `echo`, `VM.*`, ...). Off by default so a
    /// library server serves only its own verbs; `rpcmux serve` turns it on unless
    /// told `--no-demo` or `demo = false`.
    pub demo: bool,
    /// Protocols the sniffer looks for.
    pub protocols: Vec<Proto>,
    /// Bounds on what clients can make the server hold.
    pub limits: Limits,
    /// STOMP destinations (`[stomp]`).
    pub stomp: StompConfig,
    /// WebSocket bounds and keep-alive (`[websocket]`).
    pub websocket: WsConfig,
    /// Browsers: allowed origins, the console page (`[web]`).
    pub web: WebConfig,
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
    pub upstream: Vec<UpstreamConfig>,
    /// Events fanned out to the other instances of a fleet (`[events]`,
    /// docs/fleet.md); in-process only unless `url` is set.
    pub events: EventsConfig,
    /// Who may call what (`[auth]`, `--auth`; docs/auth.md): off unless `file` is set.
    pub auth: AuthConfig,
    /// JSON-RPC 1.0's error shape (`[jsonrpc]`, docs/protocols.md).
    pub jsonrpc: JsonrpcConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: vec![Listen::Tcp(SocketAddr::from(([127, 0, 0, 1], 54321)))],
            unix: UnixConfig::default(),
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
            auth: Default::default(),
            jsonrpc: Default::default(),
        }
    }
}

impl Config {
    /// Listen addresses from text, as `rpcmux serve --listen` and the config file take
    /// them: IP literals as they are, `HOST:PORT` names resolved now to every address of
    /// the name this machine has (each once). A name with none is an error naming it.
    /// `unix:/path` and `unix:@name` are Unix-domain sockets.
    ///
    /// ```
    /// use rpcmux::config::Listen;
    /// let addrs = rpcmux::Config::resolve_listen(&["localhost:0", "unix:/run/rpcmux.sock"]).unwrap();
    /// assert!(matches!(&addrs[0], Listen::Tcp(a) if a.ip().is_loopback()));
    /// assert_eq!(addrs.last().unwrap().to_string(), "unix:/run/rpcmux.sock");
    /// ```
    pub fn resolve_listen<S: AsRef<str>>(specs: &[S]) -> std::io::Result<Vec<Listen>> {
        listen::resolve(specs)
    }
}

#[cfg(feature = "toml")]
impl Config {
    /// Read a TOML config file (feature `toml`); unknown keys are errors, missing
    /// ones keep their defaults. Its relative paths are as written: see
    /// [`Config::paths_beside`].
    pub fn from_toml(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }
}

impl Config {
    /// Make the relative paths a config file names relative to `dir`, the directory of
    /// that file: one rule for every file rpcmux reads (the credentials file's key
    /// files are beside it too), so a file means the same whatever directory the
    /// server starts in. The paths: `[tls]` `cert`, `key`, `client_ca`; `[auth] file`;
    /// `[events] dir`; each `[[upstream]]`'s `tls_ca`, `password_file`, `token_file`; `listen`'s
    /// `unix:` socket files. Paths on the command line stay relative to the working
    /// directory, as every command's do.
    pub fn paths_beside(&mut self, dir: &std::path::Path) {
        let beside = |p: &mut std::path::PathBuf| {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        };
        let optional = |p: &mut Option<std::path::PathBuf>| {
            if let Some(p) = p {
                beside(p);
            }
        };
        optional(&mut self.tls.cert);
        optional(&mut self.tls.key);
        optional(&mut self.tls.client_ca);
        optional(&mut self.auth.file);
        optional(&mut self.events.dir);
        for u in &mut self.upstream {
            optional(&mut u.tls_ca);
            optional(&mut u.password_file);
            optional(&mut u.token_file);
        }
        for l in &mut self.listen {
            if let Listen::Unix(unix::UnixAddr::Path(p)) = l {
                beside(p);
            }
        }
    }
}

#[cfg(all(test, feature = "toml"))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn relative_paths_are_beside_the_file() {
        let mut c = Config::from_toml(
            "listen = [\"unix:run/r.sock\", \"unix:/abs.sock\", \"unix:@name\"]\n\
             [tls]\ncert = \"cert.pem\"\nkey = \"/etc/k.pem\"\n[auth]\nfile = \"users.toml\"\n",
        )
        .unwrap();
        c.paths_beside(std::path::Path::new("/etc/rpcmux"));
        assert_eq!(
            c.tls.cert.unwrap(),
            std::path::Path::new("/etc/rpcmux/cert.pem")
        );
        assert_eq!(c.tls.key.unwrap(), std::path::Path::new("/etc/k.pem"));
        assert_eq!(
            c.auth.file.unwrap(),
            std::path::Path::new("/etc/rpcmux/users.toml")
        );
        let listen: Vec<String> = c.listen.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            listen,
            [
                "unix:/etc/rpcmux/run/r.sock",
                "unix:/abs.sock",
                "unix:@name"
            ]
        );
    }

    #[test]
    fn unix_sockets_in_toml() {
        let c = Config::from_toml(
            "listen = [\"127.0.0.1:0\", \"unix:/run/rpcmux/rpcmux.sock\"]\n[unix]\nmode = \"0660\"\ngroup = \"rpcmux\"\nproxy = true\n",
        )
        .unwrap();
        assert_eq!(
            c.listen[1],
            Listen::Unix(UnixAddr::Path("/run/rpcmux/rpcmux.sock".into()))
        );
        assert_eq!(c.unix.mode, Some(0o660));
        assert_eq!(c.unix.group.as_deref(), Some("rpcmux"));
        assert!(c.unix.proxy);
        assert_eq!(
            Config::from_toml("[unix]\nmode = 0o600\n")
                .unwrap()
                .unix
                .mode,
            Some(0o600)
        );
        assert!(Config::from_toml("[unix]\nmode = \"999\"\n").is_err());
        assert!(Config::from_toml("[unix]\nmod = 1\n").is_err());
    }

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
