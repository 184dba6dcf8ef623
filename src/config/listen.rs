//! Listen addresses written as text (`--listen`, the TOML `listen` key): an IP socket
//! address as it is, `HOST:PORT` resolved once, when the setting is read, or a
//! Unix-domain socket (`unix:/path`, `unix:@name`).
//!
//! Names are resolved here, in the text layer, rather than carried into [`Config`], so
//! binding never waits on DNS. A name stands for every address it resolves to, each
//! bound, as nginx does with `listen localhost:80`.
//!
//! [`Config`]: crate::config::Config

use crate::config::unix::UnixAddr;
use serde::{Deserialize, Deserializer};
use std::io::{Error, ErrorKind};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

/// One address the server listens on; every protocol is sniffed on each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address (port 0 picks a free port).
    Tcp(SocketAddr),
    /// A Unix-domain socket.
    Unix(UnixAddr),
}

impl From<SocketAddr> for Listen {
    fn from(a: SocketAddr) -> Listen {
        Listen::Tcp(a)
    }
}

/// An IP socket address (`127.0.0.1:54321`, `[::1]:0`) or `unix:/path`, `unix:@name`.
/// Names are not resolved here: [`Config::resolve_listen`] does that.
///
/// [`Config::resolve_listen`]: crate::config::Config::resolve_listen
impl std::str::FromStr for Listen {
    type Err = String;
    fn from_str(s: &str) -> Result<Listen, String> {
        match s.strip_prefix("unix:") {
            Some(rest) => UnixAddr::parse(rest).map(Listen::Unix),
            None => s
                .parse()
                .map(Listen::Tcp)
                .map_err(|_| format!("listen {s}: expected IP:PORT, [IPv6]:PORT or unix:PATH")),
        }
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(a) => a.fmt(f),
            Listen::Unix(u) => u.fmt(f),
        }
    }
}

/// Every address of `specs`, in order, each once. An IP literal (`127.0.0.1:80`,
/// `[::1]:80`) is taken as is; a name is resolved by the system resolver
/// (`/etc/hosts`, DNS), and of its addresses those this machine has are kept (so
/// `localhost` works on a host whose `/etc/hosts` lists `::1` but has no IPv6). A name
/// that yields no usable address is an error naming it. `unix:PATH` and `unix:@NAME`
/// are Unix-domain sockets.
pub(super) fn resolve<S: AsRef<str>>(specs: &[S]) -> std::io::Result<Vec<Listen>> {
    let mut out = Vec::new();
    for spec in specs {
        let spec = spec.as_ref();
        let found = match spec.strip_prefix("unix:") {
            Some(rest) => vec![Listen::Unix(UnixAddr::parse(rest).map_err(|why| {
                Error::new(ErrorKind::InvalidInput, format!("listen {why}"))
            })?)],
            None => resolve_one(spec)?.into_iter().map(Listen::Tcp).collect(),
        };
        for addr in found {
            if !out.contains(&addr) {
                out.push(addr);
            }
        }
    }
    Ok(out)
}

fn resolve_one(spec: &str) -> std::io::Result<Vec<SocketAddr>> {
    if let Ok(addr) = spec.parse::<SocketAddr>() {
        return Ok(vec![addr]);
    }
    let invalid =
        |why: String| Error::new(ErrorKind::InvalidInput, format!("listen {spec}: {why}"));
    if spec
        .rsplit_once(':')
        .is_none_or(|(host, _)| host.is_empty())
    {
        return Err(invalid(
            "expected HOST:PORT, IPv4:PORT or [IPv6]:PORT".into(),
        ));
    }
    let resolved: Vec<SocketAddr> = spec
        .to_socket_addrs()
        .map_err(|e| invalid(format!("cannot resolve: {e}")))?
        .collect();
    let local: Vec<SocketAddr> = resolved.iter().copied().filter(is_local).collect();
    if local.is_empty() {
        let listed = resolved
            .iter()
            .map(|a| a.ip().to_string())
            .collect::<Vec<_>>();
        return Err(invalid(if listed.is_empty() {
            "resolves to no address".into()
        } else {
            format!(
                "resolves to {}, none of them an address of this machine",
                listed.join(", ")
            )
        }));
    }
    for skipped in resolved.iter().filter(|a| !local.contains(a)) {
        tracing::warn!("listen {spec}: skipping {skipped}: not an address of this machine");
    }
    Ok(local)
}

/// Whether this machine can bind `addr`'s IP: a probe on port 0, closed at once. Only
/// names are probed; a literal the machine lacks fails at bind, naming the error.
fn is_local(addr: &SocketAddr) -> bool {
    TcpListener::bind(SocketAddr::new(addr.ip(), 0)).is_ok()
}

/// serde's `deserialize_with` for `Config.listen`: a list of strings, resolved.
pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Listen>, D::Error> {
    let specs = Vec::<String>::deserialize(d)?;
    resolve(&specs).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_pass_names_resolve_and_duplicates_go() {
        let got = resolve(&["127.0.0.1:7", "[::1]:8", "127.0.0.1:7", "unix:/tmp/s"]).unwrap();
        assert_eq!(
            got,
            [
                "127.0.0.1:7".parse().unwrap(),
                "[::1]:8".parse().unwrap(),
                "unix:/tmp/s".parse().unwrap()
            ]
        );
        assert_eq!(got[2], Listen::Unix(UnixAddr::Path("/tmp/s".into())));
        let got = resolve(&["localhost:9"]).unwrap();
        assert!(!got.is_empty());
        assert!(
            got.iter()
                .all(|a| matches!(a, Listen::Tcp(a) if a.ip().is_loopback() && a.port() == 9)),
            "{got:?}"
        );
    }

    #[test]
    fn bad_specs_are_errors_naming_them() {
        for spec in [
            "localhost",
            ":80",
            "localhost:http-alt-x",
            "no-such-host.invalid:80",
            "unix:",
            "unix:@",
        ] {
            let e = resolve(&[spec]).unwrap_err().to_string();
            assert!(e.contains(spec), "{spec}: {e}");
        }
    }
}
