//! Upstream settings: `--upstream [PREFIX=]URL[,URL...]` and TOML `[[upstream]]`.
//!
//! Plain data, compiled whatever the features, so a config file reads the same in every
//! build (a server built without `gateway` refuses to start with upstreams set rather
//! than ignoring them).

use crate::config::ConfigError;
use serde::{Deserialize, Deserializer};
use std::path::PathBuf;
use std::time::Duration;

/// One server whose verbs rpcmux serves (`[[upstream]]`; docs/gateway.md).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Its address(es), as URLs whose scheme names the protocol
    /// (`xmlrpc+http://HOST:PORT/PATH`, `jsonrpc+http://HOST:PORT/PATH`,
    /// `jsonrpc+tcp://HOST:PORT`, `msgpack+tcp://HOST:PORT`). Several addresses are one
    /// server's replicas, tried in order: a call goes to the first that answers.
    /// In TOML one string or a list.
    #[serde(deserialize_with = "one_or_many")]
    pub url: Vec<String>,
    /// Its verbs are served as `PREFIX.name`; unset, under their own names.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Seconds a forwarded call may take in all (waiting for a connection, connecting,
    /// failing over, the call itself); past it the caller gets -32011.
    #[serde(default = "default_timeout")]
    pub timeout: f64,
    /// Calls forwarded to this upstream at once; one more is refused with -32012.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Connections per address: HTTP carries one call per connection at a time, so
    /// this is its concurrency (default 8); stream protocols pipeline (default 2).
    #[serde(default)]
    pub connections: Option<usize>,
    /// Verb names (as the upstream knows them) to serve when the upstream cannot list
    /// its own: neither `system.listMethods` nor `rpc.discover` answers.
    #[serde(default)]
    pub methods: Vec<String>,
    /// Verb names (as the upstream knows them) that are safe to run twice: a call whose
    /// connection is lost after it was sent is tried again on the next address. `"*"`
    /// names every verb. Calls that never left rpcmux are always tried on the next one.
    #[serde(default)]
    pub idempotent: Vec<String>,
    /// Send the caller's address to HTTP upstreams as `X-Forwarded-For` (the client's
    /// IP: the socket peer, or the address a trusted PROXY header named), so their logs
    /// and access rules see the client rather than rpcmux (default on). TCP upstreams'
    /// protocols have nowhere to put it.
    #[serde(default = "yes")]
    pub forwarded_for: bool,
    /// PEM CA certificate(s) an `https` upstream's certificate must chain to (needed
    /// for `xmlrpc+https` and `jsonrpc+https`: rpcmux's client trusts a CA file, not the
    /// system's roots, as deployments with their own CA want).
    #[serde(default)]
    pub tls_ca: Option<PathBuf>,
    /// Seconds between two discoveries of the upstream's verbs while serving (added and
    /// removed verbs are learned); unset: only at startup and on SIGHUP. Each discovery
    /// costs the upstream a call per verb, hence off by default.
    #[serde(default)]
    pub refresh: Option<f64>,
    /// Seconds between two health checks of each address (a new connection: TCP
    /// connect, and the TLS handshake for https; no call, so the check costs the
    /// upstream nothing but the connection). An address that fails one is tried by calls
    /// only after every other address, until a check succeeds. Unset: no checks, an
    /// address is judged by the calls that use it.
    #[serde(default)]
    pub health_interval: Option<f64>,
    /// Send a JSON-RPC batch, msgpack pipeline or `system.multicall` whose calls go to
    /// this upstream as one `system.multicall`, when the upstream lists it (XML-RPC
    /// only; default on).
    #[serde(default = "yes")]
    pub multicall: bool,
}

fn yes() -> bool {
    true
}

fn default_timeout() -> f64 {
    30.0
}

fn default_max_in_flight() -> usize {
    64
}

/// A period in seconds, unset or not positive meaning off; at least 10 ms, so a tiny
/// value cannot turn into a busy loop against the upstream.
fn seconds(s: Option<f64>) -> Option<Duration> {
    let s = s.filter(|s| *s > 0.0)?;
    Some(Duration::try_from_secs_f64(s.max(0.01)).unwrap_or(Duration::MAX))
}

fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

impl UpstreamConfig {
    /// An upstream with the defaults, at `urls`.
    pub fn new(prefix: Option<String>, urls: Vec<String>) -> Self {
        UpstreamConfig {
            url: urls,
            prefix,
            timeout: default_timeout(),
            max_in_flight: default_max_in_flight(),
            connections: None,
            methods: Vec::new(),
            idempotent: Vec::new(),
            forwarded_for: true,
            tls_ca: None,
            refresh: None,
            health_interval: None,
            multicall: true,
        }
    }

    /// Read `--upstream`'s value: `[PREFIX=]URL[,URL...]` (the commas separate the
    /// addresses of one upstream, in failover order). The URLs are checked here.
    pub fn from_flag(spec: &str) -> Result<Self, ConfigError> {
        let (prefix, urls) = match (spec.find('='), spec.find("://")) {
            (Some(eq), Some(scheme)) if eq < scheme => (Some(&spec[..eq]), &spec[eq + 1..]),
            _ => (None, spec),
        };
        let urls: Vec<String> = urls.split(',').map(|u| u.trim().to_owned()).collect();
        let c = UpstreamConfig::new(prefix.map(str::to_owned), urls);
        c.check()?;
        Ok(c)
    }

    /// The name logs and error messages use: the prefix, else the first URL.
    pub fn name(&self) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => self.url.first().cloned().unwrap_or_default(),
        }
    }

    /// The `timeout` field as a `Duration`.
    pub fn timeout(&self) -> Duration {
        Duration::try_from_secs_f64(self.timeout.max(0.0)).unwrap_or(Duration::MAX)
    }

    /// The `refresh` field as a `Duration`, when set (and positive).
    pub fn refresh(&self) -> Option<Duration> {
        seconds(self.refresh)
    }

    /// The `health_interval` field as a `Duration`, when set (and positive).
    pub fn health_interval(&self) -> Option<Duration> {
        seconds(self.health_interval)
    }

    /// Every URL parsed, or what is wrong with the settings.
    pub fn check(&self) -> Result<Vec<UpstreamUrl>, ConfigError> {
        if self.url.is_empty() {
            return Err(ConfigError::new(
                "upstream",
                "an upstream needs at least one url",
            ));
        }
        if let Some(p) = &self.prefix {
            if p.is_empty() || p.contains(char::is_whitespace) || p.ends_with('.') {
                return Err(ConfigError::new(
                    "upstream",
                    format!("bad upstream prefix {p:?}"),
                ));
            }
        }
        if self.max_in_flight == 0 || self.connections == Some(0) {
            return Err(ConfigError::new(
                "upstream",
                format!(
                    "upstream {}: max_in_flight and connections must be at least 1",
                    self.name()
                ),
            ));
        }
        let urls: Vec<UpstreamUrl> = self
            .url
            .iter()
            .map(|u| UpstreamUrl::parse(u))
            .collect::<Result<_, _>>()?;
        if urls.iter().any(|u| u.tls) && self.tls_ca.is_none() {
            return Err(ConfigError::new(
                "upstream",
                format!(
                    "upstream {}: an https url needs tls_ca, the CA file its certificate must \
                 chain to (set it in an [[upstream]] table of the config file)",
                    self.name()
                ),
            ));
        }
        Ok(urls)
    }
}

/// The protocol an upstream URL's scheme names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamProto {
    /// `xmlrpc+http://`
    XmlrpcHttp,
    /// `jsonrpc+http://`
    JsonrpcHttp,
    /// `jsonrpc+tcp://` (one JSON value per line).
    JsonrpcTcp,
    /// `msgpack+tcp://` (MessagePack-RPC).
    Msgpack,
}

/// One parsed upstream address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamUrl {
    /// The protocol.
    pub proto: UpstreamProto,
    /// `HOST:PORT` to connect to.
    pub addr: String,
    /// The HTTP request path (`/` when the URL has none); `None` for stream protocols.
    pub path: Option<String>,
    /// HTTPS: TLS under the HTTP (`xmlrpc+https`, `jsonrpc+https`).
    pub tls: bool,
}

impl UpstreamUrl {
    /// Parse `SCHEME://HOST:PORT[/PATH]`.
    pub fn parse(url: &str) -> Result<UpstreamUrl, ConfigError> {
        let bad = |why: &str| ConfigError::new("upstream", format!("upstream url {url:?}: {why}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("expected SCHEME://HOST:PORT[/PATH]"))?;
        let (proto, tls) = match scheme {
            "xmlrpc+http" => (UpstreamProto::XmlrpcHttp, false),
            "xmlrpc+https" => (UpstreamProto::XmlrpcHttp, true),
            "jsonrpc+http" => (UpstreamProto::JsonrpcHttp, false),
            "jsonrpc+https" => (UpstreamProto::JsonrpcHttp, true),
            "jsonrpc+tcp" => (UpstreamProto::JsonrpcTcp, false),
            "msgpack+tcp" => (UpstreamProto::Msgpack, false),
            _ => return Err(bad(
                "unknown scheme (xmlrpc+http, xmlrpc+https, jsonrpc+http, jsonrpc+https, jsonrpc+tcp, msgpack+tcp)",
            )),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let http = matches!(
            proto,
            UpstreamProto::XmlrpcHttp | UpstreamProto::JsonrpcHttp
        );
        if path.is_some_and(|p| p != "/") && !http {
            return Err(bad("a TCP upstream has no path"));
        }
        // The port follows the last ':' outside an IPv6 literal's brackets.
        let has_port = authority
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && !p.is_empty() && !p.contains(']'));
        if !has_port {
            return Err(bad("HOST:PORT needs a port"));
        }
        Ok(UpstreamUrl {
            proto,
            addr: authority.to_owned(),
            path: http.then(|| path.unwrap_or("/").to_owned()),
            tls,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_their_protocol() {
        let u = UpstreamUrl::parse("xmlrpc+http://127.0.0.1:9001/RPC2").unwrap();
        assert_eq!(u.proto, UpstreamProto::XmlrpcHttp);
        assert_eq!(
            (u.addr.as_str(), u.path.as_deref()),
            ("127.0.0.1:9001", Some("/RPC2"))
        );
        let u = UpstreamUrl::parse("jsonrpc+http://[::1]:80").unwrap();
        assert_eq!(
            (u.addr.as_str(), u.path.as_deref()),
            ("[::1]:80", Some("/"))
        );
        let u = UpstreamUrl::parse("msgpack+tcp://localhost:18800").unwrap();
        assert_eq!(
            (u.proto, u.path, u.tls),
            (UpstreamProto::Msgpack, None, false)
        );
        let u = UpstreamUrl::parse("xmlrpc+https://h:443/RPC2").unwrap();
        assert_eq!((u.proto, u.tls), (UpstreamProto::XmlrpcHttp, true));
        let no_ca = UpstreamConfig::from_flag("jsonrpc+https://h:443/")
            .unwrap_err()
            .to_string();
        assert!(no_ca.contains("needs tls_ca"), "{no_ca}");
        for bad in [
            "http://a:1/",
            "xmlrpc+http://a/RPC2",
            "jsonrpc+tcp://a:1/x",
            "msgpack+tcp://[::1]",
            "msgpack+tls://a:1",
            "a:1",
        ] {
            assert!(UpstreamUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn flags_and_toml() {
        let c = UpstreamConfig::from_flag(
            "sv=xmlrpc+http://127.0.0.1:1/RPC2, xmlrpc+http://127.0.0.1:2/RPC2",
        )
        .unwrap();
        assert_eq!(c.prefix.as_deref(), Some("sv"));
        assert_eq!(c.url.len(), 2);
        assert_eq!(c.check().unwrap()[1].addr, "127.0.0.1:2");
        let c = UpstreamConfig::from_flag("jsonrpc+http://h:1/?a=b").unwrap();
        assert_eq!(c.prefix, None, "an '=' after the scheme is part of the URL");
        assert!(UpstreamConfig::from_flag("=xmlrpc+http://h:1/").is_err());
        assert!(UpstreamConfig::from_flag("x=ftp://h:1/").is_err());

        #[derive(Deserialize)]
        struct File {
            upstream: Vec<UpstreamConfig>,
        }
        let f: File = toml::from_str(
            "[[upstream]]\nurl = \"msgpack+tcp://h:1\"\n[[upstream]]\nurl = [\"jsonrpc+tcp://a:1\", \"jsonrpc+tcp://b:1\"]\nprefix = \"p\"\ntimeout = 0.5\nmethods = [\"m\"]\nidempotent = [\"*\"]\n",
        )
        .unwrap();
        assert_eq!(f.upstream[0].url, ["msgpack+tcp://h:1"]);
        assert_eq!(f.upstream[0].timeout(), Duration::from_secs(30));
        assert_eq!(f.upstream[1].url.len(), 2);
        assert_eq!(f.upstream[1].timeout(), Duration::from_millis(500));
        assert!(f.upstream[0].forwarded_for, "on by default");
        assert!(toml::from_str::<File>("[[upstream]]\nurl = \"a\"\nbogus = 1\n").is_err());
    }
}
