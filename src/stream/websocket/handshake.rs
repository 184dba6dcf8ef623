//! The opening handshake (RFC 6455 section 4.2): a `GET` with `Upgrade: websocket` on
//! any path is answered `101 Switching Protocols` by hyper, with the accept key and the
//! chosen subprotocol; anything malformed gets 400 (426 for another version). Over
//! HTTP/2 the handshake is RFC 8441's extended CONNECT (`:protocol: websocket`),
//! answered 200 with no key: the stream then carries the frames.

use base64::Engine;
use http_body_util::Full;
use hyper::header::{HeaderMap, HeaderValue, CONNECTION, UPGRADE};
use hyper::{Method, Request, Response, StatusCode, Version};
use rpcmux_websocket::accept_key;

/// What runs in the messages of an accepted session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subprotocol {
    /// None asked, or `jsonrpc`: JSON-RPC 2.0.
    Json,
    /// `v12.stomp` or `v11.stomp` (stompjs's names): STOMP frames in messages.
    Stomp,
}

/// Subprotocols we speak, by the name a client offers, in our order of preference
/// among those offered (the client's order decides first).
const KNOWN: [(&str, Subprotocol); 3] = [
    ("jsonrpc", Subprotocol::Json),
    ("v12.stomp", Subprotocol::Stomp),
    ("v11.stomp", Subprotocol::Stomp),
];

/// Does this request ask for a WebSocket: `Upgrade: websocket` (HTTP/1.1), or an
/// extended CONNECT for `websocket` (HTTP/2, RFC 8441)?
pub fn is_upgrade<B>(req: &Request<B>) -> bool {
    header_has(req.headers(), UPGRADE, "websocket") || is_extended_connect(req)
}

/// An HTTP/2 extended CONNECT whose `:protocol` is `websocket` (RFC 8441 section 4).
pub fn is_extended_connect<B>(req: &Request<B>) -> bool {
    req.method() == Method::CONNECT
        && req
            .extensions()
            .get::<hyper::ext::Protocol>()
            .is_some_and(|p| p.as_str().eq_ignore_ascii_case("websocket"))
}

/// A reply to an upgrade request.
pub type Reply = Response<Full<bytes::Bytes>>;

/// The reply to an upgrade request: the 101 and the subprotocol chosen, or a refusal
/// (400, 426) and `None`.
pub fn accept<B>(req: &Request<B>) -> (Reply, Option<Subprotocol>) {
    match check(req) {
        Ok((reply, sub)) => (reply, Some(sub)),
        Err((status, why)) => {
            let mut r = refuse(status, why);
            if status == StatusCode::UPGRADE_REQUIRED {
                r.headers_mut()
                    .insert("sec-websocket-version", HeaderValue::from_static("13"));
            }
            (r, None)
        }
    }
}

/// The 101 (200 over HTTP/2) and the subprotocol, or the status and reason of a refusal.
fn check<B>(req: &Request<B>) -> Result<(Reply, Subprotocol), (StatusCode, &'static str)> {
    let h = req.headers();
    if is_extended_connect(req) {
        // RFC 8441 section 5: no Upgrade, Connection, key or accept; the version and
        // subprotocol headers as in RFC 6455.
        if h.get("sec-websocket-version").map(|v| v.as_bytes()) != Some(b"13") {
            return Err((
                StatusCode::UPGRADE_REQUIRED,
                "only WebSocket version 13 is spoken\n",
            ));
        }
        let mut r = Response::new(Full::default());
        let sub = choose(h, r.headers_mut());
        return Ok((r, sub));
    }
    if req.method() != Method::GET || req.version() != Version::HTTP_11 {
        return Err((
            StatusCode::BAD_REQUEST,
            "a WebSocket opens with GET over HTTP/1.1\n",
        ));
    }
    if !header_has(h, CONNECTION, "upgrade") {
        return Err((
            StatusCode::BAD_REQUEST,
            "Upgrade without Connection: upgrade\n",
        ));
    }
    if h.get("sec-websocket-version").map(|v| v.as_bytes()) != Some(b"13") {
        return Err((
            StatusCode::UPGRADE_REQUIRED,
            "only WebSocket version 13 is spoken\n",
        ));
    }
    let key = h
        .get("sec-websocket-key")
        .map(|v| v.as_bytes())
        .unwrap_or(b"");
    let decoded = base64::engine::general_purpose::STANDARD.decode(key.trim_ascii());
    if decoded.map(|k| k.len()) != Ok(16) {
        return Err((StatusCode::BAD_REQUEST, "bad Sec-WebSocket-Key\n"));
    }
    let mut r = Response::new(Full::default());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let rh = r.headers_mut();
    rh.insert(UPGRADE, HeaderValue::from_static("websocket"));
    rh.insert(CONNECTION, HeaderValue::from_static("Upgrade"));
    let accept = HeaderValue::from_str(&accept_key(key.trim_ascii())).expect("base64 is a header");
    rh.insert("sec-websocket-accept", accept);
    let sub = choose(h, rh);
    Ok((r, sub))
}

/// The subprotocol: the first offered that we speak, named in the reply's headers.
/// Offering only names we do not speak gets no protocol header: JSON-RPC, and the
/// client decides whether that will do (RFC 6455 section 4.1).
fn choose(h: &HeaderMap, reply: &mut HeaderMap) -> Subprotocol {
    let offered = h
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim);
    let chosen = offered
        .filter_map(|name| KNOWN.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)))
        .next();
    match chosen {
        Some((name, sub)) => {
            reply.insert("sec-websocket-protocol", HeaderValue::from_static(name));
            *sub
        }
        None => Subprotocol::Json,
    }
}

/// Does a comma-separated header hold `token` (case-insensitive)?
fn header_has(h: &HeaderMap, name: hyper::header::HeaderName, token: &str) -> bool {
    h.get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

fn refuse(status: StatusCode, why: &'static str) -> Reply {
    let mut r = Response::new(Full::new(bytes::Bytes::from_static(why.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upgrade(extra: &[(&str, &str)]) -> Request<()> {
        let mut b = Request::get("/any/path")
            .header("upgrade", "websocket")
            .header("connection", "keep-alive, Upgrade")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
        for (k, v) in extra {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn picks_the_first_known_subprotocol() {
        let (r, sub) = check(&upgrade(&[(
            "sec-websocket-protocol",
            "mqtt, v12.stomp, jsonrpc",
        )]))
        .unwrap();
        assert_eq!(sub, Subprotocol::Stomp);
        assert_eq!(r.headers()["sec-websocket-protocol"], "v12.stomp");
        let (r, sub) = check(&upgrade(&[])).unwrap();
        assert_eq!(
            (sub, r.headers().get("sec-websocket-protocol")),
            (Subprotocol::Json, None)
        );
        assert_eq!(r.status(), StatusCode::SWITCHING_PROTOCOLS);
    }

    #[test]
    fn http2_extended_connect_is_answered_200_without_a_key() {
        let mut req = Request::connect("/")
            .version(Version::HTTP_2)
            .header("sec-websocket-version", "13")
            .header("sec-websocket-protocol", "v12.stomp")
            .body(())
            .unwrap();
        req.extensions_mut()
            .insert(hyper::ext::Protocol::from_static("websocket"));
        assert!(is_upgrade(&req));
        let (r, sub) = accept(&req);
        assert_eq!(
            (r.status(), sub),
            (StatusCode::OK, Some(Subprotocol::Stomp))
        );
        assert_eq!(r.headers()["sec-websocket-protocol"], "v12.stomp");
        assert!(r.headers().get("sec-websocket-accept").is_none());
        // A plain CONNECT (a proxy tunnel) is no WebSocket.
        let plain = Request::connect("/").body(()).unwrap();
        assert!(!is_upgrade(&plain));
    }

    #[test]
    fn refuses_other_versions_and_bad_keys() {
        let mut req = upgrade(&[]);
        req.headers_mut()
            .insert("sec-websocket-version", HeaderValue::from_static("8"));
        let (r, sub) = accept(&req);
        assert_eq!((r.status(), sub), (StatusCode::UPGRADE_REQUIRED, None));
        assert_eq!(r.headers()["sec-websocket-version"], "13");
        let mut req = upgrade(&[]);
        req.headers_mut()
            .insert("sec-websocket-key", HeaderValue::from_static("short"));
        let (r, sub) = accept(&req);
        assert_eq!((r.status(), sub), (StatusCode::BAD_REQUEST, None));
    }
}
