//! Upstream settings: `--upstream [PREFIX=]URL[,URL...]` and TOML `[[upstream]]`.
//!
//! Plain data, compiled whatever the features, so a config file reads the same in every
//! build (a server built without `gateway` refuses to start with upstreams set rather
//! than ignoring them).

use crate::config::ConfigError;
use serde::{Deserialize, Deserializer};
use std::path::PathBuf;
use std::time::Duration;

mod percent;
mod unix;

use percent::percent_decode;

/// One server whose verbs rpcmux serves (`[[upstream]]`; docs/gateway.md).
///
/// Its `Debug` hides the secrets: passwords and tokens, and the credentials in a URL.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Its address(es), as URLs whose scheme names the protocol
    /// (`xmlrpc+http://HOST:PORT/PATH`, `jsonrpc+http://HOST:PORT/PATH`,
    /// `jsonrpc+tcp://HOST:PORT`, `msgpack+tcp://HOST:PORT`), or the same on a
    /// Unix-domain socket (`xmlrpc+unix:///PATH/TO.sock[?path=/RPC2]`,
    /// `jsonrpc+http+unix://`, `jsonrpc+unix://`, `msgpack+unix://`; `@NAME` for an
    /// abstract socket; docs/gateway.md). Several addresses are one server's replicas,
    /// tried in order: a call goes to the first that answers.
    /// In TOML one string or a list. An HTTP URL with a host may carry credentials,
    /// `xmlrpc+http://USER:PASSWORD@HOST:PORT/PATH` (percent-encoded), sent as HTTP Basic
    /// authentication; logs, metrics and errors show the URL without them.
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
    /// and access rules see the client rather than rpcmux (default on). Stream upstreams'
    /// protocols (`+tcp`, `jsonrpc+unix`, `msgpack+unix`) have nowhere to put it.
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
    /// HTTP Basic authentication to the upstream: the user name (with `password` or
    /// `password_file`). Not with credentials in a URL, nor with a token.
    #[serde(default)]
    pub username: Option<String>,
    /// The password for `username`. A secret: prefer `password_file`.
    #[serde(default)]
    pub password: Option<String>,
    /// A file holding the password for `username` (a trailing newline is dropped); read
    /// at startup and again at each refresh (SIGHUP, `refresh`), so it can be rotated.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// A bearer token, sent as `Authorization: Bearer TOKEN`. A secret: prefer
    /// `token_file`.
    #[serde(default)]
    pub token: Option<String>,
    /// A file holding the bearer token (a trailing newline is dropped); read at startup
    /// and again at each refresh.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// An HTTP header in which HTTP upstreams get the caller's name (the verified TLS
    /// client name), e.g. `X-Rpcmux-Principal`; none is sent for an anonymous caller.
    /// Batches to this upstream then go call by call (no `system.multicall`), each call
    /// carrying its caller's name.
    #[serde(default)]
    pub principal_header: Option<String>,
}

/// Prints every setting, secrets hidden: the password and token as `"<redacted>"`, URLs
/// without their credentials.
impl std::fmt::Debug for UpstreamConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("UpstreamConfig")
            .field("url", &self.urls_shown())
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("connections", &self.connections)
            .field("methods", &self.methods)
            .field("idempotent", &self.idempotent)
            .field("forwarded_for", &self.forwarded_for)
            .field("tls_ca", &self.tls_ca)
            .field("refresh", &self.refresh)
            .field("health_interval", &self.health_interval)
            .field("multicall", &self.multicall)
            .field("username", &self.username)
            .field("password", &hidden(&self.password))
            .field("password_file", &self.password_file)
            .field("token", &hidden(&self.token))
            .field("token_file", &self.token_file)
            .field("principal_header", &self.principal_header)
            .finish()
    }
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

/// Read `--upstream-methods`' value, `[PREFIX=]NAME[,NAME...]`, and add the names to
/// the `methods` of the upstream it picks among `upstreams` (the file's and the
/// flags'): the one with that prefix, or without `PREFIX=` the only one without a
/// prefix. A flag that picks none, or more than one, is an error naming the candidates,
/// never silently dropped: a `methods` list that does not reach its upstream fails only
/// later, at startup, with a hint to set the very thing that was set.
pub fn add_upstream_methods(
    upstreams: &mut [UpstreamConfig],
    spec: &str,
) -> Result<(), ConfigError> {
    let err = |why: String| ConfigError::new("upstream-methods", why);
    let (prefix, names) = match spec.split_once('=') {
        Some((p, names)) => (Some(p.trim()), names),
        None => (None, spec),
    };
    let names: Vec<String> = names.split(',').map(|n| n.trim().to_owned()).collect();
    if names.iter().any(String::is_empty) {
        return Err(err(format!(
            "{spec:?} has an empty verb name; give `[PREFIX=]NAME[,NAME...]`"
        )));
    }
    let prefixes = || {
        let mut p: Vec<&str> = upstreams
            .iter()
            .filter_map(|u| u.prefix.as_deref())
            .collect();
        p.dedup();
        if p.is_empty() {
            "none has a prefix".to_owned()
        } else {
            format!("the prefixes are {}", p.join(", "))
        }
    };
    let picked: Vec<usize> = (0..upstreams.len())
        .filter(|&i| upstreams[i].prefix.as_deref() == prefix)
        .collect();
    match (picked.as_slice(), prefix) {
        ([i], _) => {
            upstreams[*i].methods.extend(names);
            Ok(())
        }
        ([], Some(p)) => Err(err(format!(
            "no upstream has the prefix {p:?} ({}); give --upstream {p}=URL",
            prefixes()
        ))),
        ([], None) => Err(err(format!(
            "no upstream without a prefix ({}); name it: --upstream-methods PREFIX=NAME,...",
            prefixes()
        ))),
        (_, Some(p)) => Err(err(format!(
            "{} upstreams have the prefix {p:?}; each needs a prefix of its own",
            picked.len()
        ))),
        (_, None) => Err(err(format!(
            "{} upstreams have no prefix; give each a prefix (--upstream PREFIX=URL) and \
             name it: --upstream-methods PREFIX=NAME,...",
            picked.len()
        ))),
    }
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
            username: None,
            password: None,
            password_file: None,
            token: None,
            token_file: None,
            principal_header: None,
        }
    }

    /// Read `--upstream`'s value: `[PREFIX=]URL[,URL...]` (the commas separate the
    /// addresses of one upstream, in failover order; an HTTP URL may carry
    /// `USER:PASSWORD@`, percent-encoded). The URLs are checked here.
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

    /// The name logs, metrics and error messages use: the prefix, else the first URL
    /// (without its credentials).
    pub fn name(&self) -> String {
        match &self.prefix {
            Some(p) => p.clone(),
            None => self.url.first().map(|u| redacted(u)).unwrap_or_default(),
        }
    }

    /// Each URL as logs, metrics and errors show it: without its credentials.
    pub fn urls_shown(&self) -> Vec<String> {
        self.url.iter().map(|u| redacted(u)).collect()
    }

    /// Whether a secret is read from a file (`password_file`, `token_file`): read again
    /// at each refresh.
    pub fn reads_secret_files(&self) -> bool {
        self.password_file.is_some() || self.token_file.is_some()
    }

    /// The `Authorization` header value for each URL, in order (`None`: none is sent):
    /// `Basic` for a user name and password (in the URL, or `username` with `password`
    /// or `password_file`), `Bearer` for a token. Reads the secret files now. The values
    /// are secrets: never log them. Errors name the upstream and the file, never a
    /// secret.
    pub fn authorization(&self) -> Result<Vec<Option<String>>, ConfigError> {
        self.check()?;
        let name = self.name();
        let err = |why: String| ConfigError::new("upstream", format!("upstream {name}: {why}"));
        let read = |key: &str, path: &std::path::Path| -> Result<String, ConfigError> {
            let text = std::fs::read_to_string(path)
                .map_err(|e| err(format!("cannot read {key} {}: {e}", path.display())))?;
            let secret = text.trim_end_matches(['\n', '\r']).to_owned();
            if secret.is_empty() {
                return Err(err(format!("{key} {} is empty", path.display())));
            }
            Ok(secret)
        };
        let explicit = match (&self.username, &self.token) {
            (Some(user), _) => {
                let password = match (&self.password, &self.password_file) {
                    (Some(p), _) => p.clone(),
                    (None, Some(path)) => read("password_file", path)?,
                    (None, None) => String::new(), // refused by check()
                };
                check_secret(&password, false).map_err(|w| err(w.into()))?;
                Some(basic(user, &password))
            }
            (None, Some(token)) => Some(format!("Bearer {token}")),
            (None, None) => match &self.token_file {
                Some(path) => {
                    let token = read("token_file", path)?;
                    check_secret(&token, true).map_err(|w| err(w.into()))?;
                    Some(format!("Bearer {token}"))
                }
                None => None,
            },
        };
        self.url
            .iter()
            .map(|u| {
                Ok(match userinfo(u).map_err(|w| err(w.into()))? {
                    Some((user, password)) => Some(basic(&user, &password)),
                    None => explicit.clone(),
                })
            })
            .collect()
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
        self.check_credentials(&urls)?;
        Ok(urls)
    }

    /// The credential settings make sense together, each is well formed (the secret
    /// files are read later, by [`authorization`](Self::authorization)), and they go
    /// to HTTP upstreams only.
    fn check_credentials(&self, urls: &[UpstreamUrl]) -> Result<(), ConfigError> {
        let err =
            |why: &str| ConfigError::new("upstream", format!("upstream {}: {why}", self.name()));
        let http = |u: &UpstreamUrl| {
            matches!(
                u.proto,
                UpstreamProto::XmlrpcHttp | UpstreamProto::JsonrpcHttp
            )
        };
        let basic =
            self.username.is_some() || self.password.is_some() || self.password_file.is_some();
        let bearer = self.token.is_some() || self.token_file.is_some();
        let mut in_url = false;
        for (text, u) in self.url.iter().zip(urls) {
            if userinfo(text).map_err(err)?.is_some() {
                in_url = true;
                if !http(u) {
                    return Err(err(NO_CREDENTIALS_OVER_TCP));
                }
            }
        }
        if in_url && (basic || bearer) {
            return Err(err(
                "credentials both in a url and in username/password/token settings: give them one way",
            ));
        }
        if basic && bearer {
            return Err(err(
                "username/password and token are two kinds of credentials: set one",
            ));
        }
        if self.password.is_some() && self.password_file.is_some() {
            return Err(err("password and password_file: set one"));
        }
        if self.token.is_some() && self.token_file.is_some() {
            return Err(err("token and token_file: set one"));
        }
        if basic {
            let Some(user) = &self.username else {
                return Err(err("a password needs a username"));
            };
            if self.password.is_none() && self.password_file.is_none() {
                return Err(err("username needs password or password_file"));
            }
            if user.is_empty() || user.contains(':') || user.chars().any(char::is_control) {
                return Err(err(
                    "username must be non-empty, without ':' or control characters",
                ));
            }
            if let Some(p) = &self.password {
                check_secret(p, false).map_err(err)?;
            }
        }
        if let Some(t) = &self.token {
            check_secret(t, true).map_err(err)?;
        }
        if (basic || bearer) && !urls.iter().all(http) {
            return Err(err(NO_CREDENTIALS_OVER_TCP));
        }
        if let Some(h) = &self.principal_header {
            let name = hyper::header::HeaderName::from_bytes(h.as_bytes()).map_err(|_| {
                err(&format!(
                    "principal_header {h:?} is not an HTTP header name"
                ))
            })?;
            if RESERVED_HEADERS.contains(&name.as_str()) {
                return Err(err(&format!(
                    "principal_header {h:?} is a header rpcmux sets itself"
                )));
            }
            if !urls.iter().all(http) {
                return Err(err(
                    "principal_header is for HTTP upstreams (the jsonrpc and msgpack stream schemes have no headers)",
                ));
            }
        }
        Ok(())
    }
}

/// Why credentials are refused on the stream schemes.
const NO_CREDENTIALS_OVER_TCP: &str = "credentials are for HTTP upstreams only: jsonrpc+tcp, \
     msgpack+tcp, jsonrpc+unix and msgpack+unix have no standard way to send them (put the \
     upstream behind HTTP, or on a trusted network)";

/// Headers `principal_header` may not name: rpcmux sets them itself, or they frame the
/// request.
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "user-agent",
    "x-forwarded-for",
    "proxy-authorization",
];

/// Whether `secret` can be sent: not empty, no control characters; a bearer token also
/// no space and ASCII only (it goes into the header as it is). The message names the
/// setting, never the secret.
fn check_secret(secret: &str, token: bool) -> Result<(), &'static str> {
    if secret.is_empty() {
        return Err(match token {
            true => "the token is empty",
            false => "the password is empty",
        });
    }
    let bad = |c: char| c.is_control() || (token && (c == ' ' || !c.is_ascii()));
    if secret.chars().any(bad) {
        return Err(match token {
            true => {
                "the token holds a character a header cannot carry (control, space or non-ASCII)"
            }
            false => "the password holds a control character",
        });
    }
    Ok(())
}

/// `Basic base64(user:password)`.
fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {b64}")
}

/// `url`'s authority part (between `://` and the path) and the rest.
fn authority(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find('/').unwrap_or(rest.len());
    Some((scheme, &rest[..end], &rest[end..]))
}

/// `url` without the credentials of its authority (`USER:PASSWORD@`): what logs,
/// metrics and errors show. A text with an `@` it cannot place is shown as its scheme
/// only.
fn redacted(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://").filter(|(s, _)| unix::is_unix(s)) {
        return unix::redacted(scheme, rest);
    }
    match authority(url) {
        Some((scheme, auth, path)) => {
            let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
            // An '@' after the authority: a path's, or a password holding an unencoded
            // '/'. Its authority then shows no port ("HOST:PORT" checks), so hide it all.
            if path.contains('@') && !auth.contains('@') && !port_ok(host) {
                return format!("{scheme}://…");
            }
            format!("{scheme}://{host}{path}")
        }
        None if url.contains('@') => "…".to_owned(),
        None => url.to_owned(),
    }
}

/// Whether `authority` ends in `:PORT` with a numeric port (outside an IPv6 literal).
fn port_ok(authority: &str) -> bool {
    authority
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok())
}

/// The user name and password in `url`'s authority (`USER:PASSWORD@HOST:PORT`),
/// percent-decoded; `None` without. The error never holds them.
fn userinfo(url: &str) -> Result<Option<(String, String)>, &'static str> {
    let Some((scheme, auth, _)) = authority(url) else {
        return Ok(None);
    };
    if unix::is_unix(scheme) {
        return Ok(None); // no authority: UpstreamUrl::parse refuses an '@' in it
    }
    let Some((info, _)) = auth.rsplit_once('@') else {
        return Ok(None);
    };
    let Some((user, password)) = info.split_once(':') else {
        return Err("credentials in a url are USER:PASSWORD@ (percent-encoded)");
    };
    let (user, password) = match (percent_decode(user), percent_decode(password)) {
        (Some(u), Some(p)) => (u, p),
        _ => return Err("bad percent-encoding in a url's credentials"),
    };
    if user.is_empty() || user.contains(':') || user.chars().any(char::is_control) {
        return Err("a url's user name must be non-empty, without ':' or control characters");
    }
    check_secret(&password, false)?;
    Ok(Some((user, password)))
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
    /// Where to connect, as `rpcmux_client::Endpoint` reads it: `HOST:PORT`, or
    /// `unix:/PATH` / `unix:@NAME` for a Unix-domain socket.
    pub addr: String,
    /// The HTTP request path (`/` when the URL has none; over a socket, `?path=` or
    /// XML-RPC's `/RPC2`); `None` for stream protocols.
    pub path: Option<String>,
    /// HTTPS: TLS under the HTTP (`xmlrpc+https`, `jsonrpc+https`).
    pub tls: bool,
}

impl UpstreamUrl {
    /// Parse `SCHEME://[USER:PASSWORD@]HOST:PORT[/PATH]`, or `SCHEME+unix:///PATH` /
    /// `SCHEME+unix://@NAME` with `?path=` (see `unix.rs`); the credentials are left out
    /// (see [`UpstreamConfig::authorization`]), and no error shows them.
    pub fn parse(url: &str) -> Result<UpstreamUrl, ConfigError> {
        let shown = redacted(url);
        let bad =
            |why: &str| ConfigError::new("upstream", format!("upstream url {shown:?}: {why}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("expected SCHEME://HOST:PORT[/PATH]"))?;
        let unix_url = |proto| {
            let (addr, path) = unix::parse(rest, unix_http_default(proto)).map_err(|w| bad(&w))?;
            Ok(UpstreamUrl {
                proto,
                addr,
                path,
                tls: false,
            })
        };
        let (proto, tls) = match scheme {
            "xmlrpc+http" => (UpstreamProto::XmlrpcHttp, false),
            "xmlrpc+https" => (UpstreamProto::XmlrpcHttp, true),
            "jsonrpc+http" => (UpstreamProto::JsonrpcHttp, false),
            "jsonrpc+https" => (UpstreamProto::JsonrpcHttp, true),
            "jsonrpc+tcp" => (UpstreamProto::JsonrpcTcp, false),
            "msgpack+tcp" => (UpstreamProto::Msgpack, false),
            "xmlrpc+unix" | "xmlrpc+http+unix" => return unix_url(UpstreamProto::XmlrpcHttp),
            "jsonrpc+http+unix" => return unix_url(UpstreamProto::JsonrpcHttp),
            "jsonrpc+unix" => return unix_url(UpstreamProto::JsonrpcTcp),
            "msgpack+unix" => return unix_url(UpstreamProto::Msgpack),
            "xmlrpc+https+unix" | "jsonrpc+https+unix" => return Err(bad(
                "no TLS over a Unix-domain socket: the socket file's permissions guard it (xmlrpc+unix, jsonrpc+http+unix)",
            )),
            _ => return Err(bad(
                "unknown scheme (xmlrpc+http, xmlrpc+https, jsonrpc+http, jsonrpc+https, jsonrpc+tcp, msgpack+tcp; \
                 on a Unix-domain socket xmlrpc+unix, jsonrpc+http+unix, jsonrpc+unix, msgpack+unix)",
            )),
        };
        if authority(url)
            .is_some_and(|(_, a, _)| a.rsplit('@').next().is_some_and(|h| h.starts_with("unix:")))
        {
            return Err(bad(
                "a host named \"unix\" would read as a Unix-domain socket: give its IP, or use a +unix scheme",
            ));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let http = matches!(
            proto,
            UpstreamProto::XmlrpcHttp | UpstreamProto::JsonrpcHttp
        );
        if path.is_some_and(|p| p != "/") && !http {
            return Err(bad("a TCP upstream has no path"));
        }
        // The port follows the last ':' outside an IPv6 literal's brackets.
        if !port_ok(authority) {
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

/// The protocol's default HTTP path over a socket, where the URL's path is the socket's:
/// `/RPC2` for XML-RPC (supervisord's, and XML-RPC clients' usual), `/` for JSON-RPC.
fn unix_http_default(proto: UpstreamProto) -> Option<&'static str> {
    match proto {
        UpstreamProto::XmlrpcHttp => Some("/RPC2"),
        UpstreamProto::JsonrpcHttp => Some("/"),
        UpstreamProto::JsonrpcTcp | UpstreamProto::Msgpack => None,
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
    fn methods_flag_picks_one_upstream() {
        let mut ups = vec![
            UpstreamConfig::from_flag("xmlrpc+http://h:1/RPC2").unwrap(),
            UpstreamConfig::from_flag("mp=msgpack+tcp://h:2").unwrap(),
        ];
        add_upstream_methods(&mut ups, "add, sub").unwrap();
        add_upstream_methods(&mut ups, "mp=echo").unwrap();
        add_upstream_methods(&mut ups, "mp=fail").unwrap();
        assert_eq!(ups[0].methods, ["add", "sub"]);
        assert_eq!(ups[1].methods, ["echo", "fail"]);
        let e = add_upstream_methods(&mut ups, "sv=x")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no upstream has the prefix \"sv\" (the prefixes are mp)"),
            "{e}"
        );
        assert!(add_upstream_methods(&mut ups, "mp=a,,b").is_err());
        ups.push(UpstreamConfig::from_flag("jsonrpc+tcp://h:3").unwrap());
        let e = add_upstream_methods(&mut ups, "x").unwrap_err().to_string();
        assert!(e.contains("2 upstreams have no prefix"), "{e}");
        let e = add_upstream_methods(&mut ups[1..2], "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no upstream without a prefix"), "{e}");
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

    /// `USER:PASSWORD@` in a URL: percent-decoded, sent as Basic; shown nowhere.
    #[test]
    fn credentials_in_a_url_are_used_and_hidden() {
        use base64::Engine;
        let c = UpstreamConfig::from_flag(
            "sv=xmlrpc+http://admin:s%40cr%3At@127.0.0.1:9001/RPC2,xmlrpc+http://127.0.0.1:9002/RPC2",
        )
        .unwrap();
        let auth = c.authorization().unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode("admin:s@cr:t");
        assert_eq!(auth, [Some(format!("Basic {b64}")), None]);
        assert_eq!(c.check().unwrap()[0].addr, "127.0.0.1:9001");
        assert_eq!(
            c.urls_shown(),
            [
                "xmlrpc+http://127.0.0.1:9001/RPC2",
                "xmlrpc+http://127.0.0.1:9002/RPC2"
            ]
        );
        let debug = format!("{c:?}");
        assert!(
            !debug.contains("s%40cr") && !debug.contains("admin:"),
            "{debug}"
        );
        // Unnamed, the upstream is called by its first URL, without the credentials.
        let c = UpstreamConfig::from_flag("xmlrpc+http://u:hunter2@h:1/RPC2").unwrap();
        assert_eq!(c.name(), "xmlrpc+http://h:1/RPC2");
        // Bad URLs holding a password: the error does not show it.
        for bad in [
            "xmlrpc+http://u:hunter2@h/RPC2",
            "xmlrpc+http://u:hun/ter2@h:1/RPC2",
            "ftp://u:hunter2@h:1/",
            "jsonrpc+tcp://u:hunter2@h:1",
            "xmlrpc+http://u:hunter2%zz@h:1/",
            "xmlrpc+http://hunter2@h:1/",
        ] {
            let e = UpstreamConfig::from_flag(bad).unwrap_err().to_string();
            assert!(!e.contains("hunter2") && !e.contains("ter2"), "{bad}: {e}");
        }
        let e = UpstreamConfig::from_flag("p=msgpack+tcp://u:hunter2@h:1")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("upstream p: credentials are for HTTP upstreams only"),
            "{e}"
        );
    }

    #[test]
    fn credential_settings() {
        #[derive(Deserialize)]
        struct File {
            upstream: Vec<UpstreamConfig>,
        }
        let dir =
            std::env::temp_dir().join(format!("rpcmux-upstream-creds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (pw, tok) = (dir.join("pw"), dir.join("tok"));
        std::fs::write(&pw, "hunter2\n").unwrap();
        std::fs::write(&tok, "t0ken.abc\r\n").unwrap();
        let one = |extra: &str| -> Result<UpstreamConfig, String> {
            let text = format!(
                "[[upstream]]\nurl = \"xmlrpc+http://h:1/RPC2\"\nprefix = \"sv\"\n{extra}\n"
            );
            let f: File = toml::from_str(&text).map_err(|e| e.to_string())?;
            let c = f.upstream.into_iter().next().unwrap();
            c.authorization().map_err(|e| e.to_string())?;
            Ok(c)
        };
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let c = one(&format!("username = \"admin\"\npassword_file = {:?}", pw)).unwrap();
        assert_eq!(
            c.authorization().unwrap(),
            [Some(format!("Basic {}", b64("admin:hunter2")))]
        );
        assert!(c.reads_secret_files());
        let c = one("username = \"admin\"\npassword = \"hunter2\"").unwrap();
        assert!(!format!("{c:?}").contains("hunter2"), "{c:?}");
        assert!(!c.reads_secret_files());
        let c = one(&format!("token_file = {:?}", tok)).unwrap();
        assert_eq!(
            c.authorization().unwrap(),
            [Some("Bearer t0ken.abc".into())]
        );
        let c = one("token = \"hunter2\"\nprincipal_header = \"X-Rpcmux-Principal\"").unwrap();
        assert_eq!(c.authorization().unwrap(), [Some("Bearer hunter2".into())]);
        assert!(!format!("{c:?}").contains("hunter2"));
        for (extra, want) in [
            ("username = \"a\"", "username needs password"),
            ("password = \"hunter2\"", "a password needs a username"),
            (
                "username = \"a\"\npassword = \"hunter2\"\ntoken = \"hunter2\"",
                "set one",
            ),
            (
                "token = \"hunter2\"\ntoken_file = \"/x\"",
                "token and token_file",
            ),
            ("token = \"hunt er2\"", "cannot carry"),
            (
                "username = \"a\"\npassword_file = \"/nonexistent/pw\"",
                "cannot read password_file /nonexistent/pw",
            ),
            (
                "principal_header = \"Authorization\"",
                "a header rpcmux sets itself",
            ),
            ("principal_header = \"X Bad\"", "not an HTTP header name"),
        ] {
            let e = one(extra).unwrap_err();
            assert!(
                e.contains("upstream sv: ") && e.contains(want),
                "{extra}: {e}"
            );
            assert!(!e.contains("hunter2"), "{e}");
        }
        // Credentials in the URL and in keys: refused, naming the upstream only.
        let f: File = toml::from_str(
            "[[upstream]]\nurl = \"xmlrpc+http://a:hunter2@h:1/RPC2\"\nusername = \"a\"\npassword = \"hunter2\"\n",
        )
        .unwrap();
        let e = f.upstream[0].check().unwrap_err().to_string();
        assert!(
            e.contains("upstream xmlrpc+http://h:1/RPC2: credentials both in a url"),
            "{e}"
        );
        assert!(!e.contains("hunter2"), "{e}");
        // Not over the stream schemes, nor a principal header.
        let f: File = toml::from_str(
            "[[upstream]]\nurl = \"jsonrpc+tcp://h:1\"\ntoken = \"x\"\n[[upstream]]\nurl = \"msgpack+tcp://h:1\"\nprincipal_header = \"x-p\"\n",
        )
        .unwrap();
        assert!(f.upstream.iter().all(|c| c.check().is_err()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
