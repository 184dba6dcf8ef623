//! The server address of `rpcmux call` and `rpcmux bench`: `HOST:PORT`, or the URL forms
//! users paste (`http://HOST:PORT/PATH`, `ws://HOST:PORT/`, their TLS forms, `tcp://`).
//! A Unix-domain socket is `unix:/path` or `unix:@name`.
//! Checked here so that a bad one is refused with the forms that work, not with the
//! resolver's "invalid socket address".

use rpcmux::client::{ClientProto, ConnectOpts};
use std::time::Duration;

/// What the address says: where to dial, the HTTP or WebSocket path, and the protocol
/// and TLS its scheme implies.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    /// `host:port` or `unix:/path`, as `Client::connect` dials it.
    pub addr: String,
    /// The path of an `http://` or `ws://` URL, when not `/`.
    pub path: Option<String>,
    /// `ws://` and `wss://` imply JSON-RPC over WebSocket when `--proto` is not given.
    pub proto: Option<ClientProto>,
    /// `https://` and `wss://` need TLS.
    pub tls: bool,
}

/// The address and the options every client subcommand (`call`, `watch`) takes alike:
/// `--timeout` (positive seconds), TLS and credentials; a TLS URL without `--tls-ca` is
/// refused here, naming the flag.
pub fn connect(
    addr: &str,
    timeout: f64,
    tls: &super::tls_args::TlsArgs,
    credentials: &super::credential_args::CredentialArgs,
) -> Result<(Target, ConnectOpts), String> {
    let timeout = positive_secs("--timeout", timeout)?;
    let mut opts = ConnectOpts {
        timeout,
        tls: tls.opts(),
        credentials: credentials.credentials()?,
        ..ConnectOpts::default()
    };
    let mut target = parse(addr)?;
    if target.tls && opts.tls.is_none() {
        return Err(format!(
            "`{addr}` is a TLS URL: add --tls-ca FILE, the CA that signed the server's certificate"
        ));
    }
    opts.http_path = target.path.take();
    Ok((target, opts))
}

/// A flag in seconds that must be more than 0.
pub fn positive_secs(flag: &str, v: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{flag} must be a positive number of seconds, not {v}"))
}

const FORMS: &str = "expected HOST:PORT (such as localhost:54321), a URL (http://HOST:PORT/PATH, \
                     ws://HOST:PORT/) or a Unix socket (unix:/PATH, unix:@NAME)";

/// Read `text`, the address argument.
pub fn parse(text: &str) -> Result<Target, String> {
    if let Some(rest) = text.strip_prefix("unix:") {
        if rest.is_empty() || rest == "@" {
            return Err(format!("`{text}`: no socket path or name; {FORMS}"));
        }
        return Ok(Target {
            addr: text.to_owned(),
            path: None,
            proto: None,
            tls: false,
        });
    }
    let (scheme, rest) = match text.split_once("://") {
        Some((scheme, rest)) => (Some(scheme.to_ascii_lowercase()), rest),
        None => (None, text),
    };
    let (default_port, proto, tls) = match scheme.as_deref() {
        None | Some("tcp") => (None, None, false),
        Some("http") => (Some(80), None, false),
        Some("https") => (Some(443), None, true),
        Some("ws") => (Some(80), Some(ClientProto::JsonrpcWs), false),
        Some("wss") => (Some(443), Some(ClientProto::JsonrpcWs), true),
        Some(other) => return Err(format!("`{text}`: unknown scheme `{other}://`; {FORMS}")),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        // Not quoted back: the part before '@' may be a password.
        return Err(
            "the address holds credentials (USER:PASSWORD@): they are not taken from \
             the command line, where `ps` shows them; give --user NAME with --password-file \
             FILE (or RPCMUX_PASSWORD), or --token-file FILE (or RPCMUX_TOKEN)"
                .into(),
        );
    }
    if scheme.is_none() && !path.is_empty() {
        return Err(format!(
            "`{text}`: a path needs a URL (http://HOST:PORT/PATH); {FORMS}"
        ));
    }
    // `[::1]:54321`, `host:54321`; a bare IPv6 address has colons but no brackets.
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') || host.ends_with(']') => (host, Some(port)),
        _ => (authority, None),
    };
    if host.is_empty() {
        return Err(format!("`{text}`: no host; {FORMS}"));
    }
    let port = match (port, default_port) {
        (Some(p), _) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| format!("`{text}`: `{p}` is not a port (1-65535); {FORMS}"))?,
        (None, Some(p)) => p,
        (None, None) => return Err(format!("`{text}`: no port; {FORMS}")),
    };
    Ok(Target {
        addr: format!("{host}:{port}"),
        path: (path.len() > 1).then(|| path.to_string()),
        proto,
        tls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Target {
        parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn host_port_and_urls() {
        assert_eq!(ok("localhost:54321").addr, "localhost:54321");
        assert_eq!(ok("[::1]:54321").addr, "[::1]:54321");
        assert_eq!(ok("tcp://127.0.0.1:1").addr, "127.0.0.1:1");
        let t = ok("http://localhost:54321/RPC2");
        assert_eq!(
            (t.addr.as_str(), t.path.as_deref()),
            ("localhost:54321", Some("/RPC2"))
        );
        assert_eq!(ok("http://localhost/").addr, "localhost:80");
        assert_eq!(ok("http://localhost:8080/").path, None);
        let t = ok("ws://localhost:54321/");
        assert_eq!((t.proto, t.tls), (Some(ClientProto::JsonrpcWs), false));
        let t = ok("wss://example.org");
        assert_eq!((t.addr.as_str(), t.tls), ("example.org:443", true));
        assert!(ok("https://[::1]:9/x").tls);
    }

    #[test]
    fn bad_addresses_name_the_forms_that_work() {
        for bad in [
            "localhost",
            "localhost:99999",
            "localhost:0",
            "localhost:http",
            ":54321",
            "ftp://x:1",
            "localhost:1/RPC2",
            "::1",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("expected HOST:PORT"), "{bad}: {e}");
            assert!(e.contains(bad), "{bad}: {e}");
        }
        let e = parse("http://alice:s3cret@localhost:1/").unwrap_err();
        assert!(
            e.contains("--password-file") && !e.contains("s3cret"),
            "{e}"
        );
    }

    #[test]
    fn unix_sockets() {
        assert_eq!(ok("unix:/run/rpcmux.sock").addr, "unix:/run/rpcmux.sock");
        assert_eq!(ok("unix:@rpcmux").addr, "unix:@rpcmux");
        assert!(parse("unix:").is_err());
        assert!(parse("unix:@").is_err());
    }
}
