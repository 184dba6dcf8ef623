//! The application-protocol probes. Each looks only at the bytes given.

use crate::verdict::Probe;

/// Longest HTTP method token we wait for before deciding it is not HTTP.
const MAX_METHOD: usize = 16;

/// HTTP/1.x: a request line starts with an upper-case method token and a space.
/// Any such token matches (not just the known methods), so a garbage request line
/// reaches the HTTP parser, which answers `400 Bad Request` instead of a silent close.
/// STOMP commands are upper-case too but end in an EOL, not a space.
pub fn http(p: &[u8]) -> Probe {
    for (i, &b) in p.iter().enumerate() {
        match b {
            b'A'..=b'Z' | b'-' | b'_' if i < MAX_METHOD => {}
            b' ' if i > 0 => return Probe::Match,
            _ => return Probe::NoMatch,
        }
    }
    Probe::NeedMore
}

/// The connection preface every HTTP/2 client sends first (RFC 9113 section 3.4),
/// with prior knowledge in cleartext and after ALPN `h2` under TLS.
pub const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// HTTP/2: the whole connection preface. Its first bytes also make an HTTP/1.x request
/// line (`PRI `), so an HTTP server that serves both asks this first, on the bytes
/// [`http`] matched; a client that sends `PRI` and then something else is HTTP/1.x
/// (whose parser answers it `400`).
pub fn http2(p: &[u8]) -> Probe {
    let n = p.len().min(HTTP2_PREFACE.len());
    if p[..n] != HTTP2_PREFACE[..n] {
        Probe::NoMatch
    } else if n == HTTP2_PREFACE.len() {
        Probe::Match
    } else {
        Probe::NeedMore
    }
}

/// JSON-RPC over raw TCP: the first non-whitespace byte opens an object or array.
pub fn json(p: &[u8]) -> Probe {
    match p.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{' | b'[') => Probe::Match,
        Some(_) => Probe::NoMatch,
        None => Probe::NeedMore,
    }
}

/// MessagePack-RPC: a 4-element array whose type is 0 (request), or a 3-element
/// array whose type is 2 (notification).
pub fn msgpack_rpc(p: &[u8]) -> Probe {
    match p {
        [] => Probe::NeedMore,
        [0x94 | 0x93] => Probe::NeedMore,
        [0x94, 0x00, ..] | [0x93, 0x02, ..] => Probe::Match,
        _ => Probe::NoMatch,
    }
}

/// STOMP: any client command (so a reconnecting client that starts with SEND or
/// SUBSCRIBE is recognised too), after optional heart-beat EOLs. The STOMP codec's own
/// probe ([`rpcmux_stomp::probe_client_frame`]).
pub fn stomp(p: &[u8]) -> Probe {
    match rpcmux_stomp::probe_client_frame(p) {
        rpcmux_stomp::Probe::Match => Probe::Match,
        rpcmux_stomp::Probe::NoMatch => Probe::NoMatch,
        rpcmux_stomp::Probe::NeedMore => Probe::NeedMore,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http2_preface() {
        assert_eq!(http2(b""), Probe::NeedMore);
        assert_eq!(http2(b"PRI * HTTP/2.0\r\n"), Probe::NeedMore);
        assert_eq!(http2(HTTP2_PREFACE), Probe::Match);
        assert_eq!(http2(&[HTTP2_PREFACE, b"\0\0"].concat()), Probe::Match);
        assert_eq!(http2(b"PRI /x HTTP/1.1\r\n"), Probe::NoMatch);
        assert_eq!(http2(b"POST / HTTP/1.1\r\n"), Probe::NoMatch);
        assert_eq!(
            http(HTTP2_PREFACE),
            Probe::Match,
            "an HTTP request line too"
        );
    }

    #[test]
    fn http_tokens() {
        assert_eq!(http(b"GET / HTTP/1.1"), Probe::Match);
        assert_eq!(
            http(b"BREW "),
            Probe::Match,
            "unknown methods still go to the HTTP parser"
        );
        assert_eq!(http(b"CONNECT\n"), Probe::NoMatch, "that is STOMP");
        assert_eq!(http(b"CONNECT"), Probe::NeedMore);
        assert_eq!(http(b" GET"), Probe::NoMatch);
        assert_eq!(http(b"get "), Probe::NoMatch);
        assert_eq!(http(b"ABCDEFGHIJKLMNOPQRSTUV "), Probe::NoMatch);
    }

    #[test]
    fn msgpack_needs_type_byte() {
        assert_eq!(msgpack_rpc(&[0x94]), Probe::NeedMore);
        assert_eq!(msgpack_rpc(&[0x94, 0x00]), Probe::Match);
        assert_eq!(msgpack_rpc(&[0x93, 0x02]), Probe::Match);
        assert_eq!(
            msgpack_rpc(&[0x94, 0x01]),
            Probe::NoMatch,
            "a response is not a client's first message"
        );
        assert_eq!(msgpack_rpc(&[0x92]), Probe::NoMatch);
    }

    #[test]
    fn stomp_maps_verdicts() {
        assert_eq!(stomp(b"STOMP\n"), Probe::Match);
        assert_eq!(stomp(b"\nSUBSCRIBE\r\n"), Probe::Match);
        assert_eq!(stomp(b"CONN"), Probe::NeedMore);
        assert_eq!(stomp(b"CONNECTED\n"), Probe::NoMatch);
        assert_eq!(stomp(b"{"), Probe::NoMatch);
    }
}
