//! Upstream URLs naming a Unix-domain socket (`xmlrpc+unix:///var/run/supervisor.sock`,
//! `jsonrpc+unix://@name`). Such a URL has no host, and its socket path takes the place
//! of the HTTP path, so another HTTP path than the protocol's usual one is a query:
//! `?path=/PATH`.

use super::percent::percent_decode;

/// Why an `@` is refused: the URL has no authority to carry credentials in.
const NO_CREDENTIALS: &str = "an '@' in a Unix-socket url: it carries no credentials (set \
     username and password_file, or token_file, in its [[upstream]] table); write an '@' of \
     the socket path as %40";

/// Whether `scheme` names a Unix-domain socket rather than `HOST:PORT`.
pub(super) fn is_unix(scheme: &str) -> bool {
    scheme.ends_with("+unix")
}

/// The URL as logs and errors show it: as written, or as its scheme alone when it holds
/// an `@` past the one naming an abstract socket (which may be credentials).
pub(super) fn redacted(scheme: &str, rest: &str) -> String {
    match stray_at(rest) {
        true => format!("{scheme}://…"),
        false => format!("{scheme}://{rest}"),
    }
}

/// Whether `rest` holds an `@` other than the one starting an abstract socket's name.
fn stray_at(rest: &str) -> bool {
    rest.strip_prefix('@').unwrap_or(rest).contains('@')
}

/// Read what follows `SCHEME://`: `/PATH` (a socket file, percent-decoded) or `@NAME`
/// (Linux's abstract namespace), then `?path=/HTTP/PATH` for an HTTP protocol.
/// Returns the address `rpcmux_client::Endpoint` dials (`unix:/PATH`, `unix:@NAME`) and
/// the HTTP path: `http_default` (`None` for a stream protocol) unless the query gives one.
pub(super) fn parse(
    rest: &str,
    http_default: Option<&str>,
) -> Result<(String, Option<String>), String> {
    if stray_at(rest) {
        return Err(NO_CREDENTIALS.into());
    }
    let (socket, query) = match rest.split_once('?') {
        Some((s, q)) => (s, Some(q)),
        None => (rest, None),
    };
    let addr = if let Some(name) = socket.strip_prefix('@') {
        let name = decode(name, "the abstract socket name")?;
        if name.is_empty() {
            return Err("an abstract socket needs a name: SCHEME://@NAME".into());
        }
        if !cfg!(any(target_os = "linux", target_os = "android")) {
            return Err("abstract sockets (SCHEME://@NAME) are Linux's".into());
        }
        format!("unix:@{name}")
    } else if socket.starts_with('/') {
        let path = decode(socket, "the socket path")?;
        if path.ends_with('/') {
            return Err(
                "the url names a directory, not a socket file: SCHEME:///PATH/TO.sock".into(),
            );
        }
        format!("unix:{path}")
    } else if socket.is_empty() {
        return Err("no socket: SCHEME:///PATH/TO.sock (three slashes) or SCHEME://@NAME".into());
    } else {
        return Err("the socket path must be absolute, after three slashes \
             (SCHEME:///PATH/TO.sock): a Unix-socket url has no host"
            .into());
    };
    let mut path = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "path" {
            return Err(format!(
                "unknown query parameter {key:?}: the only one is ?path=/HTTP/PATH"
            ));
        }
        if http_default.is_none() {
            return Err("?path= is an HTTP path: a stream upstream has none".into());
        }
        if path.is_some() {
            return Err("?path= given twice".into());
        }
        let p = decode(value, "?path=")?;
        if !p.starts_with('/') || !p.chars().all(|c| c.is_ascii_graphic()) {
            return Err(
                "?path= must be an HTTP path: '/' then printable ASCII, no spaces \
                 (percent-encoded in the url)"
                    .into(),
            );
        }
        path = Some(p);
    }
    Ok((addr, path.or_else(|| http_default.map(str::to_owned))))
}

/// `s` percent-decoded, without NUL or other control characters (a socket path holding
/// one is a mistake, and logs show it).
fn decode(s: &str, what: &str) -> Result<String, String> {
    let d = percent_decode(s).ok_or_else(|| format!("bad percent-encoding in {what}"))?;
    if d.chars().any(char::is_control) {
        return Err(format!("a control character in {what}"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::super::{UpstreamConfig, UpstreamProto, UpstreamUrl};

    fn parse(url: &str) -> (UpstreamProto, String, Option<String>) {
        let u = UpstreamUrl::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(!u.tls, "{url}");
        (u.proto, u.addr, u.path)
    }

    #[test]
    fn every_protocol_on_a_socket_file() {
        use UpstreamProto::*;
        let sock = |proto, path: Option<&str>| {
            (
                proto,
                "unix:/run/s.sock".to_owned(),
                path.map(str::to_owned),
            )
        };
        assert_eq!(
            parse("xmlrpc+unix:///run/s.sock"),
            sock(XmlrpcHttp, Some("/RPC2"))
        );
        assert_eq!(
            parse("xmlrpc+http+unix:///run/s.sock"),
            sock(XmlrpcHttp, Some("/RPC2"))
        );
        assert_eq!(
            parse("jsonrpc+http+unix:///run/s.sock"),
            sock(JsonrpcHttp, Some("/"))
        );
        assert_eq!(parse("jsonrpc+unix:///run/s.sock"), sock(JsonrpcTcp, None));
        assert_eq!(parse("msgpack+unix:///run/s.sock"), sock(Msgpack, None));
        // Another HTTP path: a query, percent-decoded (so it may hold its own query).
        assert_eq!(
            parse("xmlrpc+unix:///run/s.sock?path=/xmlrpc/2/object"),
            sock(XmlrpcHttp, Some("/xmlrpc/2/object"))
        );
        assert_eq!(
            parse("jsonrpc+http+unix:///run/s.sock?path=/rpc%3Fv%3D2"),
            sock(JsonrpcHttp, Some("/rpc?v=2"))
        );
        // The socket path percent-decoded: a comma (which separates --upstream's URLs),
        // a '?', an '@', a space.
        assert_eq!(
            parse("msgpack+unix:///tmp/a%2Cb%3F%40%20c.sock").1,
            "unix:/tmp/a,b?@ c.sock"
        );
        assert_eq!(parse("jsonrpc+unix:///run/s.sock?").2, None);
    }

    #[test]
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn abstract_sockets() {
        assert_eq!(
            parse("jsonrpc+unix://@rpcmux"),
            (UpstreamProto::JsonrpcTcp, "unix:@rpcmux".into(), None)
        );
        // X11's are named like paths.
        assert_eq!(
            parse("xmlrpc+unix://@/tmp/sv?path=/"),
            (
                UpstreamProto::XmlrpcHttp,
                "unix:@/tmp/sv".into(),
                Some("/".into())
            )
        );
    }

    #[test]
    fn bad_socket_urls_say_what_is_wrong() {
        for (url, want) in [
            ("xmlrpc+unix://", "no socket"),
            ("xmlrpc+unix://?path=/RPC2", "no socket"),
            ("xmlrpc+unix:///", "a directory, not a socket file"),
            ("msgpack+unix:///run/", "a directory"),
            ("xmlrpc+unix://run/s.sock", "must be absolute"),
            ("jsonrpc+unix://localhost/run/s.sock", "must be absolute"),
            ("jsonrpc+unix://./s.sock", "must be absolute"),
            ("jsonrpc+unix://@", "needs a name"),
            (
                "jsonrpc+unix:///run/s.sock?path=/x",
                "a stream upstream has none",
            ),
            (
                "msgpack+unix:///run/s.sock?path=/x",
                "a stream upstream has none",
            ),
            (
                "xmlrpc+unix:///run/s.sock?path=RPC2",
                "must be an HTTP path",
            ),
            ("xmlrpc+unix:///run/s.sock?path=", "must be an HTTP path"),
            (
                "xmlrpc+unix:///run/s.sock?path=/a%20b",
                "must be an HTTP path",
            ),
            ("xmlrpc+unix:///run/s.sock?path=/a&path=/b", "given twice"),
            (
                "xmlrpc+unix:///run/s.sock?timeout=3",
                "unknown query parameter \"timeout\"",
            ),
            (
                "xmlrpc+unix:///run/s%zz.sock",
                "bad percent-encoding in the socket path",
            ),
            (
                "xmlrpc+unix:///run/s%00.sock",
                "a control character in the socket path",
            ),
            (
                "xmlrpc+https+unix:///run/s.sock",
                "no TLS over a Unix-domain socket",
            ),
            ("jsonrpc+tcp+unix:///run/s.sock", "unknown scheme"),
            ("xmlrpc+http://unix:80/RPC2", "a host named \"unix\""),
        ] {
            let e = UpstreamUrl::parse(url).unwrap_err().to_string();
            assert!(e.contains(want), "{url}: {e}");
        }
    }

    /// A socket URL holds no credentials; one that seems to is refused and not shown.
    #[test]
    fn credentials_go_in_the_table() {
        for url in [
            "xmlrpc+unix://admin:hunter2@/run/s.sock",
            "xmlrpc+unix:///run/s.sock?path=/x@hunter2",
            "jsonrpc+unix://@admin:hunter2@name",
        ] {
            let e = UpstreamConfig::from_flag(url).unwrap_err().to_string();
            assert!(e.contains("carries no credentials"), "{url}: {e}");
            assert!(!e.contains("hunter2"), "{url}: {e}");
        }
        #[derive(serde::Deserialize)]
        struct File {
            upstream: Vec<UpstreamConfig>,
        }
        let f: File = toml::from_str(
            "[[upstream]]\nurl = \"xmlrpc+unix:///run/s.sock\"\nusername = \"admin\"\npassword = \"hunter2\"\n\
             [[upstream]]\nurl = \"jsonrpc+http+unix://@api\"\ntoken = \"t0k\"\nprincipal_header = \"x-p\"\n\
             [[upstream]]\nurl = \"msgpack+unix:///run/s.sock\"\ntoken = \"t0k\"\n",
        )
        .unwrap();
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode("admin:hunter2");
        let basic = Some(format!("Basic {b64}"));
        assert_eq!(f.upstream[0].authorization().unwrap(), [basic]);
        assert_eq!(f.upstream[0].name(), "xmlrpc+unix:///run/s.sock");
        if cfg!(target_os = "linux") {
            let bearer = Some("Bearer t0k".to_owned());
            assert_eq!(f.upstream[1].authorization().unwrap(), [bearer]);
        }
        let e = f.upstream[2].check().unwrap_err().to_string();
        assert!(e.contains("credentials are for HTTP upstreams only"), "{e}");
    }
}
