//! Which browser pages may use the server: the `Origin` rule for WebSocket upgrades and
//! for POSTs, and the CORS headers for allowed foreign origins.
//!
//! A request without `Origin` comes from a program (curl, every RPC client library) and
//! is allowed; one whose origin is the server's own (`Origin` names the `Host`, or over
//! HTTP/2 the `:authority`) too.
//! Any other origin is allowed only if `[web] allowed_origins` lists it (or `*`).
//! Refused origins get 403 on the upgrade and on POST alike: a cross-origin POST of a
//! form-encoded body needs no preflight, so the browser would send it and the call
//! would run (CSRF) even though the page could not read the reply.

use hyper::header::{HeaderMap, HeaderValue, HOST, ORIGIN};

/// The verdict on a request's origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No `Origin`, or the server's own: no CORS headers needed.
    Own,
    /// A foreign origin that is allowed: echo it in `Access-Control-Allow-Origin`.
    Allowed(HeaderValue),
    /// A foreign origin that is not.
    Refused(String),
}

/// `authority`: the request's `:authority`, HTTP/2's stand-in for `Host`.
pub(crate) fn judge(headers: &HeaderMap, authority: Option<&str>, allowed: &[String]) -> Verdict {
    let Some(origin) = headers.get(ORIGIN) else {
        return Verdict::Own;
    };
    let text = origin.to_str().unwrap_or("").trim_end_matches('/');
    let host = match headers.get(HOST) {
        Some(h) => h.to_str().unwrap_or(""),
        None => authority.unwrap_or(""),
    };
    let authority = text.split_once("://").map(|(_, a)| a).unwrap_or("");
    if !host.is_empty() && authority.eq_ignore_ascii_case(host) {
        return Verdict::Own;
    }
    let listed = allowed
        .iter()
        .any(|a| a == "*" || a.trim_end_matches('/').eq_ignore_ascii_case(text));
    if listed {
        Verdict::Allowed(origin.clone())
    } else {
        Verdict::Refused(text.to_owned())
    }
}

/// Does the request come from a browser? Browsers send `Origin` on every POST and
/// WebSocket upgrade and `Sec-Fetch-*` on every request (navigations included);
/// programs (curl, RPC client libraries) send neither.
pub(crate) fn from_browser(headers: &HeaderMap) -> bool {
    headers.contains_key(ORIGIN)
        || headers.contains_key("sec-fetch-mode")
        || headers.contains_key("sec-fetch-site")
        || headers.contains_key("sec-websocket-key")
}

/// May a browser reach the server by the name in `Host` (or, over HTTP/2, which has
/// none, the request's `:authority`, given as `authority`)? IP addresses and `localhost`
/// (and `*.localhost`) always; other names only when `allowed` lists them (`name`,
/// `.domain` for it and its subdomains, `*`). A request naming no host at all is not a
/// browser's.
pub(crate) fn host_allowed(
    headers: &HeaderMap,
    authority: Option<&str>,
    allowed: &[String],
) -> bool {
    let host = match headers.get(HOST) {
        Some(h) => match h.to_str() {
            Ok(h) => h,
            Err(_) => return false,
        },
        None => match authority {
            Some(a) => a,
            None => return true,
        },
    };
    let name = match host.strip_prefix('[') {
        // An IPv6 literal: [::1]:port
        Some(rest) => {
            return rest
                .split(']')
                .next()
                .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
        }
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.parse::<std::net::Ipv4Addr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
    {
        return true;
    }
    allowed.iter().any(|a| {
        let a = a.trim_end_matches('.').to_ascii_lowercase();
        a == "*"
            || a == name
            || a.strip_prefix('.')
                .is_some_and(|d| name == d || name.ends_with(&format!(".{d}")))
    })
}

/// CORS headers for an allowed foreign origin's reply (and its preflight).
pub(crate) fn cors_headers(h: &mut HeaderMap, origin: HeaderValue, preflight: bool) {
    h.insert("access-control-allow-origin", origin);
    h.insert("vary", HeaderValue::from_static("origin"));
    if preflight {
        h.insert(
            "access-control-allow-methods",
            HeaderValue::from_static("POST, GET, OPTIONS"),
        );
        h.insert(
            "access-control-allow-headers",
            HeaderValue::from_static("content-type, x-request-id, authorization"),
        );
        h.insert("access-control-max-age", HeaderValue::from_static("600"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(HOST, HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            h.insert(ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        h
    }

    #[test]
    fn browsers_reach_the_server_by_its_addresses_localhost_and_listed_names_only() {
        let ok = |host: &str, allowed: &[&str]| {
            let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
            host_allowed(&headers(None, host), None, &allowed)
        };
        for host in [
            "127.0.0.1:54321",
            "10.1.2.3",
            "[::1]:54321",
            "localhost:1",
            "LOCALHOST",
            "app.localhost:8",
        ] {
            assert!(ok(host, &[]), "{host}");
        }
        // A rebinding attacker's name resolves to the server but is not one of its names.
        assert!(!ok("rebind.attacker.example:54321", &[]));
        // HTTP/2 has no Host: its :authority is judged the same.
        let none = HeaderMap::new();
        assert!(!host_allowed(
            &none,
            Some("rebind.attacker.example:443"),
            &[]
        ));
        assert!(host_allowed(&none, Some("127.0.0.1:443"), &[]));
        assert!(host_allowed(&none, None, &[]), "no host named at all");
        assert!(!ok("localhost.attacker.example", &[]));
        assert!(!ok("[not-an-ip]:1", &[]));
        assert!(ok("rpc.example.com:443", &["rpc.example.com"]));
        assert!(ok("a.b.example.com", &[".example.com"]));
        assert!(!ok("example.com.attacker", &[".example.com"]));
        assert!(ok("anything", &["*"]));
        assert!(from_browser(&headers(Some("http://x"), "h")));
        assert!(
            !from_browser(&headers(None, "h")),
            "programs send no Origin or Sec-Fetch-*"
        );
    }

    #[test]
    fn programs_and_same_origin_pass_others_only_if_listed() {
        let none: Vec<String> = vec![];
        assert_eq!(judge(&headers(None, "a:1"), None, &none), Verdict::Own);
        // HTTP/2: no Host, the :authority names the server.
        let mut h2 = HeaderMap::new();
        h2.insert(ORIGIN, HeaderValue::from_static("https://a:1"));
        assert_eq!(judge(&h2, Some("a:1"), &none), Verdict::Own);
        assert_eq!(
            judge(&h2, Some("b:1"), &none),
            Verdict::Refused("https://a:1".into())
        );
        assert_eq!(
            judge(&headers(Some("http://a:1"), "a:1"), None, &none),
            Verdict::Own
        );
        assert!(matches!(
            judge(&headers(Some("http://evil"), "a:1"), None, &none),
            Verdict::Refused(_)
        ));
        assert!(matches!(
            judge(&headers(Some("null"), "a:1"), None, &none),
            Verdict::Refused(_)
        ));
        let listed = vec!["https://app.example".to_string()];
        assert!(matches!(
            judge(&headers(Some("https://app.example"), "a:1"), None, &listed),
            Verdict::Allowed(_)
        ));
        let any = vec!["*".to_string()];
        assert!(matches!(
            judge(&headers(Some("null"), "a:1"), None, &any),
            Verdict::Allowed(_)
        ));
    }
}
