//! Parse a PROXY protocol v1 or v2 header (with `ppp`) from the front of a buffer,
//! telling how many bytes it takes so the bytes after it stay with the connection.
//!
//! ```
//! use rpcmux_sniff::proxy_header::{parse, Parsed};
//!
//! let wire = b"PROXY TCP4 192.0.2.7 10.0.0.1 5555 443\r\n{\"jsonrpc\"";
//! let Parsed::Header(h) = parse(wire) else { panic!() };
//! assert_eq!(h.source, Some("192.0.2.7:5555".parse().unwrap()));
//! assert_eq!(&wire[h.len..], b"{\"jsonrpc\"");
//! assert_eq!(parse(&wire[..20]), Parsed::NeedMore);
//! ```

use ppp::v2::Command;
use ppp::{v1, v2, HeaderResult, PartialResult};
use std::net::SocketAddr;

/// The longest header we wait for: v2's 16 fixed bytes plus the largest length its
/// 16-bit field can announce (v1 is bounded at 107 bytes by the parser).
pub const MAX_HEADER: usize = 16 + u16::MAX as usize;

/// The longest v1 header, CRLF included (the spec's 107 bytes).
const V1_MAX: usize = 107;

/// A complete header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Bytes the header occupies at the front of the buffer.
    pub len: usize,
    /// The client the proxy speaks for; `None` when the header carries no address
    /// (v1 `UNKNOWN`, v2 `LOCAL` health checks, v2 unspecified or unix families),
    /// in which case the socket peer stands.
    pub source: Option<SocketAddr>,
    /// The protocol version the header is in: 1 (text) or 2 (binary).
    pub version: u8,
}

/// The outcome of looking at the bytes so far.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A complete header at the front of the buffer.
    Header(Header),
    /// A header may still come: read more (up to [`MAX_HEADER`] bytes in all).
    NeedMore,
    /// No header can start with these bytes; why.
    Malformed(String),
}

/// Parse the header at the front of `buf`. The header's length never depends on the
/// bytes after it: the same header parses from any extension of its bytes.
pub fn parse(mut buf: &[u8]) -> Parsed {
    // ppp judges a v1 prefix cut inside a token ("PROXY TC") as invalid, so a v1
    // header is handed to it only once its line is complete.
    if buf.starts_with(b"PROXY") {
        let Some(lf) = buf.iter().take(V1_MAX).position(|&b| b == b'\n') else {
            return if buf.len() < V1_MAX {
                Parsed::NeedMore
            } else {
                Parsed::Malformed(format!("v1: no line end within {V1_MAX} bytes"))
            };
        };
        // Only the CRLF-ended line goes to ppp: given a line without CR it takes the
        // whole buffer as the header (for UNKNOWN), so its length would depend on how
        // many bytes had arrived (found by fuzzing, fuzz/corpus regression
        // tests/fuzz_regressions/proxy_header, replayed by tests/protocols/fuzz_regressions.rs).
        if lf == 0 || buf[lf - 1] != b'\r' {
            return Parsed::Malformed("v1: the header line does not end in CRLF".to_owned());
        }
        buf = &buf[..=lf];
    }
    let result = HeaderResult::parse(buf);
    if result.is_incomplete() {
        return Parsed::NeedMore;
    }
    match result {
        HeaderResult::V1(Ok(h)) => Parsed::Header(Header {
            len: h.header.len(),
            source: match h.addresses {
                v1::Addresses::Tcp4(a) => Some((a.source_address, a.source_port).into()),
                v1::Addresses::Tcp6(a) => Some((a.source_address, a.source_port).into()),
                v1::Addresses::Unknown => None,
            },
            version: 1,
        }),
        HeaderResult::V2(Ok(h)) => Parsed::Header(Header {
            len: h.len(),
            source: match (h.command, h.addresses) {
                (Command::Local, _) => None,
                (Command::Proxy, v2::Addresses::IPv4(a)) => {
                    Some((a.source_address, a.source_port).into())
                }
                (Command::Proxy, v2::Addresses::IPv6(a)) => {
                    Some((a.source_address, a.source_port).into())
                }
                (Command::Proxy, v2::Addresses::Unspecified | v2::Addresses::Unix(_)) => None,
            },
            version: 2,
        }),
        HeaderResult::V1(Err(e)) => Parsed::Malformed(format!("v1: {e}")),
        HeaderResult::V2(Err(e)) => Parsed::Malformed(format!("v2: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2_SIG: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

    fn v2(cmd: u8, fam: u8, addr: &[u8]) -> Vec<u8> {
        let mut h = V2_SIG.to_vec();
        h.extend([0x20 | cmd, fam]);
        h.extend((addr.len() as u16).to_be_bytes());
        h.extend(addr);
        h
    }

    fn header(len: usize, source: Option<&str>, version: u8) -> Parsed {
        Parsed::Header(Header {
            len,
            source: source.map(|s| s.parse().unwrap()),
            version,
        })
    }

    #[test]
    fn v1_tcp4_tcp6_unknown_keep_the_bytes_after() {
        let h = b"PROXY TCP4 192.0.2.7 10.0.0.1 5555 443\r\n";
        let mut buf = h.to_vec();
        buf.extend(b"{\"jsonrpc\"");
        assert_eq!(parse(&buf), header(h.len(), Some("192.0.2.7:5555"), 1));
        let h = b"PROXY TCP6 2001:db8::9 2001:db8::1 6000 443\r\n";
        assert_eq!(parse(h), header(h.len(), Some("[2001:db8::9]:6000"), 1));
        assert_eq!(parse(b"PROXY UNKNOWN\r\nGET"), header(15, None, 1));
    }

    #[test]
    fn v2_proxy_and_local() {
        let mut addr = vec![198, 51, 100, 9, 10, 0, 0, 1];
        addr.extend(7000u16.to_be_bytes());
        addr.extend(443u16.to_be_bytes());
        let mut buf = v2(1, 0x11, &addr);
        let len = buf.len();
        buf.extend([0x94, 0x00]);
        assert_eq!(parse(&buf), header(len, Some("198.51.100.9:7000"), 2));
        // LOCAL (a proxy's own health check): the socket peer stands.
        let local = v2(0, 0x00, &[]);
        assert_eq!(parse(&local), header(16, None, 2));
    }

    #[test]
    fn every_prefix_of_a_header_needs_more() {
        let whole_v2 = v2(
            1,
            0x11,
            &[198, 51, 100, 9, 10, 0, 0, 1, 0x1b, 0x58, 0x01, 0xbb],
        );
        for whole in [
            &b"PROXY TCP4 192.0.2.7 10.0.0.1 5555 443\r\n"[..],
            b"PROXY TCP6 2001:db8::9 2001:db8::1 6000 443\r\n",
            b"PROXY UNKNOWN\r\n",
            &whole_v2,
        ] {
            for cut in 0..whole.len() {
                assert_eq!(
                    parse(&whole[..cut]),
                    Parsed::NeedMore,
                    "{:?}",
                    String::from_utf8_lossy(&whole[..cut])
                );
            }
            assert!(matches!(parse(whole), Parsed::Header(h) if h.len == whole.len()));
        }
    }

    #[test]
    fn partial_headers_need_more() {
        assert_eq!(parse(b"PROXY TCP4 192.0.2.7"), Parsed::NeedMore);
        assert_eq!(
            parse(b"PROXY TCP4 192.0.2.7 10.0.0.1 5555 443\r"),
            Parsed::NeedMore
        );
        assert_eq!(parse(&V2_SIG[..7]), Parsed::NeedMore);
        let full = v2(1, 0x11, &[1; 12]);
        assert_eq!(parse(&full[..20]), Parsed::NeedMore);
    }

    #[test]
    fn malformed_headers_are_errors() {
        for bad in [
            &b"PROXY TCP4 not-an-ip 10.0.0.1 1 2\r\n"[..],
            b"PROXY TCP9 1.2.3.4 1.2.3.4 1 2\r\n",
            b"PROXY TCP4 1.2.3.4 1.2.3.4 99999 2\r\n",
        ] {
            assert!(
                matches!(parse(bad), Parsed::Malformed(_)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        // v2 with version 3
        let mut bad = v2(1, 0x11, &[1; 12]);
        bad[12] = 0x31;
        assert!(matches!(parse(&bad), Parsed::Malformed(_)));
        // v1 that never ends within its 107 bytes
        let long = [b"PROXY TCP4 ".as_slice(), &[b'1'; 120]].concat();
        assert!(matches!(parse(&long), Parsed::Malformed(_)));
        // v1 ending in a bare LF (ppp would take every byte read so far as the header)
        for bad in [
            &b"PROXY UNKNOWN\n"[..],
            b"PROXY UNKNOWN\nGET / HTTP/1.1\r\n",
        ] {
            assert!(matches!(parse(bad), Parsed::Malformed(_)));
        }
    }
}
