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
//!
//! # TLVs
//!
//! A v2 `PROXY` header may carry TLVs after its addresses. Their framing is checked the
//! way HAProxy's own receiver (`conn_recv_proxy`) checks it: a TLV whose 3-byte head or
//! value runs past the header's length makes the whole header [`Parsed::Malformed`], as
//! does a `PP2_TYPE_CRC32C` TLV that is not 4 bytes or does not match the header's
//! checksum. TLV types this parser does not know are skipped, as the spec requires. The
//! TLVs of a `LOCAL` header are not looked at (HAProxy does not either: nothing there
//! speaks for a client), nor are those of a `PROXY` header of the unspecified family,
//! whose whole payload `ppp` takes as its (empty) addresses (HAProxy itself sends
//! `LOCAL` for client families it cannot name).
//!
//! Of the known types, `PP2_TYPE_SSL` (what HAProxy's `send-proxy-v2-ssl` and
//! `send-proxy-v2-ssl-cn` send) is read into an [`SslInfo`], got with [`Header::ssl`].
//! HAProxy does not itself decode that TLV when it receives one, so the rules for its
//! inside are this parser's, and strict: an SSL TLV shorter than its 5 fixed bytes, a
//! sub-TLV running past the SSL TLV, two SSL TLVs, or two sub-TLVs of the same known
//! subtype make the header malformed (a proxy sending them is broken, and an identity
//! must never be read out of ambiguous bytes). A text sub-TLV (version, CN, cipher,
//! algorithms) that is empty, not UTF-8, longer than [`MAX_TLV_TEXT`] bytes or holding a
//! control character is taken as absent, the header otherwise standing.
//!
//! ```
//! use rpcmux_sniff::proxy_header::{parse, Parsed};
//!
//! // What HAProxy's `send-proxy-v2-ssl-cn` sends for a client that showed a verified
//! // certificate for "alice" over TLSv1.3.
//! let mut tlv = vec![0x07, 0, 0, 0, 0]; // client: SSL | CERT_CONN | CERT_SESS; verify: 0
//! tlv.extend([0x21, 0, 7]);
//! tlv.extend(b"TLSv1.3");
//! tlv.extend([0x22, 0, 5]);
//! tlv.extend(b"alice");
//! let mut wire = b"\r\n\r\n\0\r\nQUIT\n\x21\x11".to_vec();
//! wire.extend((12 + 3 + tlv.len() as u16).to_be_bytes());
//! wire.extend([192, 0, 2, 7, 10, 0, 0, 1, 0x15, 0xb3, 0x01, 0xbb]);
//! wire.extend([0x20, 0, tlv.len() as u8]);
//! wire.extend(&tlv);
//!
//! let Parsed::Header(h) = parse(&wire) else { panic!() };
//! let ssl = h.ssl(&wire).unwrap();
//! assert_eq!(ssl.version.as_deref(), Some("TLSv1.3"));
//! assert_eq!(ssl.verified_cn(), Some("alice"));
//! ```

use ppp::v2::Command;
use ppp::{v1, v2, HeaderResult, PartialResult};
use std::net::SocketAddr;

/// The longest header we wait for: v2's 16 fixed bytes plus the largest length its
/// 16-bit field can announce (v1 is bounded at 107 bytes by the parser).
pub const MAX_HEADER: usize = 16 + u16::MAX as usize;

/// The longest text a PROXY v2 SSL sub-TLV may hold (CN, version, cipher,
/// algorithms) to be taken; a longer one is taken as absent.
pub const MAX_TLV_TEXT: usize = 1024;

/// The longest v1 header, CRLF included (the spec's 107 bytes).
const V1_MAX: usize = 107;

/// TLV types and SSL subtypes (proxy-protocol.txt, section 2.2).
const PP2_TYPE_CRC32C: u8 = 0x03;
const PP2_TYPE_SSL: u8 = 0x20;
const PP2_SUBTYPE_SSL_VERSION: u8 = 0x21;
const PP2_SUBTYPE_SSL_CN: u8 = 0x22;
const PP2_SUBTYPE_SSL_CIPHER: u8 = 0x23;
const PP2_SUBTYPE_SSL_SIG_ALG: u8 = 0x24;
const PP2_SUBTYPE_SSL_KEY_ALG: u8 = 0x25;

/// Bits of the SSL TLV's `client` field.
const PP2_CLIENT_SSL: u8 = 0x01;
const PP2_CLIENT_CERT_CONN: u8 = 0x02;
const PP2_CLIENT_CERT_SESS: u8 = 0x04;

/// A complete header.
///
/// It stays a small `Copy` value: the TLVs of a v2 header are read from the header's
/// bytes on demand ([`Header::ssl`]), their framing having been checked by [`parse`].
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

/// What a PROXY v2 `PP2_TYPE_SSL` TLV says about the client's side of the proxy: the
/// facts as sent, for the caller's policy to judge (and only from proxies it trusts:
/// anyone can write these bytes).
///
/// HAProxy sends the TLV on every connection of a server line with
/// `send-proxy-v2-ssl`/`-ssl-cn`, with all flags clear when the client did not speak
/// TLS, and `verify` left 0 when the client showed no certificate: `verified` alone
/// means nothing, which is why [`SslInfo::verified_cn`] also asks for a certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SslInfo {
    /// `PP2_CLIENT_SSL`: the client spoke TLS to the proxy.
    pub client_ssl: bool,
    /// `PP2_CLIENT_CERT_CONN`: the client showed a certificate on this connection.
    pub cert_in_connection: bool,
    /// `PP2_CLIENT_CERT_SESS`: the client showed a certificate in this TLS session
    /// (this connection or the one the session was resumed from).
    pub cert_in_session: bool,
    /// The `verify` field as sent: the proxy's certificate verification result
    /// (OpenSSL's `X509_V_*` code; 0 is success, and 0 too when no certificate).
    pub verify: u32,
    /// `verify == 0`.
    pub verified: bool,
    /// `PP2_SUBTYPE_SSL_VERSION`: the TLS version, e.g. `TLSv1.3`.
    pub version: Option<String>,
    /// `PP2_SUBTYPE_SSL_CN`: the Common Name of the client certificate's subject.
    pub cn: Option<String>,
    /// `PP2_SUBTYPE_SSL_CIPHER`: the cipher, e.g. `TLS_AES_256_GCM_SHA384`.
    pub cipher: Option<String>,
    /// `PP2_SUBTYPE_SSL_SIG_ALG`: the algorithm the proxy's own certificate was
    /// signed with (HAProxy's `ssl_fc_*`), e.g. `SHA256`.
    pub sig_alg: Option<String>,
    /// `PP2_SUBTYPE_SSL_KEY_ALG`: the proxy's certificate key, e.g. `RSA2048`.
    pub key_alg: Option<String>,
}

impl SslInfo {
    /// The CN, only when the client showed a certificate (on this connection or in
    /// its session) and the proxy verified it (`verify == 0`).
    pub fn verified_cn(&self) -> Option<&str> {
        if (self.cert_in_connection || self.cert_in_session) && self.verified {
            self.cn.as_deref()
        } else {
            None
        }
    }
}

impl Header {
    /// The `PP2_TYPE_SSL` TLV of this v2 header, read from `buf`: the bytes [`parse`]
    /// returned this header for (or any buffer starting with the header's `len`
    /// bytes). `None` for a v1 header, a v2 `LOCAL` one, one without the TLV, or when
    /// `buf` does not start with this very header.
    pub fn ssl(&self, buf: &[u8]) -> Option<SslInfo> {
        let bytes = buf.get(..self.len)?;
        match HeaderResult::parse(bytes) {
            HeaderResult::V2(Ok(h)) => match from_v2(&h) {
                Ok((header, ssl)) if header == *self => ssl,
                _ => None,
            },
            _ => None,
        }
    }
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
        HeaderResult::V2(Ok(h)) => match from_v2(&h) {
            Ok((header, _)) => Parsed::Header(header),
            Err(e) => Parsed::Malformed(format!("v2: {e}")),
        },
        HeaderResult::V1(Err(e)) => Parsed::Malformed(format!("v1: {e}")),
        HeaderResult::V2(Err(e)) => Parsed::Malformed(format!("v2: {e}")),
    }
}

/// The header of a complete v2 `h`, and its SSL TLV; `Err` when its TLVs are malformed.
fn from_v2(h: &v2::Header<'_>) -> Result<(Header, Option<SslInfo>), String> {
    let source = match (h.command, h.addresses) {
        (Command::Local, _) => None,
        (Command::Proxy, v2::Addresses::IPv4(a)) => Some((a.source_address, a.source_port).into()),
        (Command::Proxy, v2::Addresses::IPv6(a)) => Some((a.source_address, a.source_port).into()),
        (Command::Proxy, v2::Addresses::Unspecified | v2::Addresses::Unix(_)) => None,
    };
    let header = Header {
        len: h.len(),
        source,
        version: 2,
    };
    let ssl = match h.command {
        Command::Local => None,
        Command::Proxy => read_tlvs(h.as_bytes(), h.tlv_bytes())?,
    };
    Ok((header, ssl))
}

/// The TLVs in `bytes`, as (type, value): an `Err` item, and nothing after it, where a
/// TLV's head or value runs past the end of `bytes`.
struct Tlvs<'a>(&'a [u8]);

impl<'a> Iterator for Tlvs<'a> {
    type Item = Result<(u8, &'a [u8]), String>;

    fn next(&mut self) -> Option<Self::Item> {
        let bytes = std::mem::take(&mut self.0);
        if bytes.is_empty() {
            return None;
        }
        let Some((&[kind, hi, lo], rest)) = bytes.split_first_chunk::<3>() else {
            return Some(Err(format!(
                "a TLV head cut short: {} of its 3 bytes",
                bytes.len()
            )));
        };
        let len = usize::from(u16::from_be_bytes([hi, lo]));
        let Some((value, rest)) = rest.split_at_checked(len) else {
            return Some(Err(format!(
                "TLV {kind:#04x} announces {len} bytes, {} remain",
                rest.len()
            )));
        };
        self.0 = rest;
        Some(Ok((kind, value)))
    }
}

/// Check the TLVs `tlvs` of the v2 header `header` (all its bytes) and read its SSL
/// TLV. Framing errors, a bad CRC32C and a malformed SSL TLV are errors; other types
/// are skipped.
fn read_tlvs(header: &[u8], tlvs: &[u8]) -> Result<Option<SslInfo>, String> {
    let mut ssl = None;
    // Where `tlvs` starts in `header` (it is its tail), for the CRC32C's offset.
    let mut at = header.len() - tlvs.len();
    for tlv in Tlvs(tlvs) {
        let (kind, value) = tlv?;
        match kind {
            PP2_TYPE_CRC32C => {
                let Ok(sent) = <[u8; 4]>::try_from(value) else {
                    return Err(format!("a CRC32C TLV of {} bytes, not 4", value.len()));
                };
                let field = at + 3;
                let crc = crc32c(
                    crc32c(crc32c(!0, &header[..field]), &[0; 4]),
                    &header[field + 4..],
                );
                if !crc != u32::from_be_bytes(sent) {
                    return Err("the CRC32C does not match the header".to_owned());
                }
            }
            PP2_TYPE_SSL if ssl.is_some() => return Err("two SSL TLVs".to_owned()),
            PP2_TYPE_SSL => ssl = Some(read_ssl(value)?),
            _ => {}
        }
        at += 3 + value.len();
    }
    Ok(ssl)
}

/// The value of a `PP2_TYPE_SSL` TLV: `client` (1 byte), `verify` (4), sub-TLVs.
fn read_ssl(value: &[u8]) -> Result<SslInfo, String> {
    let Some((&[client, v0, v1, v2, v3], subs)) = value.split_first_chunk::<5>() else {
        return Err(format!(
            "an SSL TLV of {} bytes, under its 5 fixed ones",
            value.len()
        ));
    };
    let verify = u32::from_be_bytes([v0, v1, v2, v3]);
    let mut info = SslInfo {
        client_ssl: client & PP2_CLIENT_SSL != 0,
        cert_in_connection: client & PP2_CLIENT_CERT_CONN != 0,
        cert_in_session: client & PP2_CLIENT_CERT_SESS != 0,
        verify,
        verified: verify == 0,
        ..SslInfo::default()
    };
    let mut seen = [false; 5];
    for sub in Tlvs(subs) {
        let (kind, value) = sub.map_err(|e| format!("in the SSL TLV: {e}"))?;
        let field = match kind {
            PP2_SUBTYPE_SSL_VERSION => &mut info.version,
            PP2_SUBTYPE_SSL_CN => &mut info.cn,
            PP2_SUBTYPE_SSL_CIPHER => &mut info.cipher,
            PP2_SUBTYPE_SSL_SIG_ALG => &mut info.sig_alg,
            PP2_SUBTYPE_SSL_KEY_ALG => &mut info.key_alg,
            _ => continue,
        };
        let seen = &mut seen[usize::from(kind - PP2_SUBTYPE_SSL_VERSION)];
        if std::mem::replace(seen, true) {
            return Err(format!("two SSL sub-TLVs {kind:#04x}"));
        }
        *field = text(value);
    }
    Ok(info)
}

/// `bytes` as text when it is 1 to [`MAX_TLV_TEXT`] bytes of UTF-8 without control
/// characters.
fn text(bytes: &[u8]) -> Option<String> {
    if bytes.is_empty() || bytes.len() > MAX_TLV_TEXT {
        return None;
    }
    let s = std::str::from_utf8(bytes).ok()?;
    (!s.chars().any(char::is_control)).then(|| s.to_owned())
}

/// CRC32C (Castagnoli, reflected polynomial 0x82F63B78) of `bytes` continuing from
/// the register `crc`: start with `!0`, finish with `!`.
fn crc32c(mut crc: u32, bytes: &[u8]) -> u32 {
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0x82F6_3B78 & (crc & 1).wrapping_neg());
        }
    }
    crc
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

    /// A TLV.
    fn tlv(kind: u8, value: &[u8]) -> Vec<u8> {
        let mut t = vec![kind];
        t.extend((value.len() as u16).to_be_bytes());
        t.extend(value);
        t
    }

    /// A `PP2_TYPE_SSL` TLV.
    fn ssl_tlv(client: u8, verify: u32, subs: &[(u8, &[u8])]) -> Vec<u8> {
        let mut value = vec![client];
        value.extend(verify.to_be_bytes());
        for (kind, v) in subs {
            value.extend(tlv(*kind, v));
        }
        tlv(0x20, &value)
    }

    /// A v2 PROXY TCP4 header from 192.0.2.7:5555 with `tlvs` after the addresses.
    fn tcp4(tlvs: &[u8]) -> Vec<u8> {
        let mut addr = vec![192, 0, 2, 7, 10, 0, 0, 1];
        addr.extend(5555u16.to_be_bytes());
        addr.extend(443u16.to_be_bytes());
        addr.extend(tlvs);
        v2(1, 0x11, &addr)
    }

    /// The header in `wire`, which must parse, and its SSL TLV.
    fn ssl_of(wire: &[u8]) -> Option<SslInfo> {
        let Parsed::Header(h) = parse(wire) else {
            panic!("{:?}", parse(wire));
        };
        assert_eq!(h.len, wire.len());
        assert_eq!(h.source, Some("192.0.2.7:5555".parse().unwrap()));
        h.ssl(wire)
    }

    fn malformed(wire: &[u8]) -> String {
        match parse(wire) {
            Parsed::Malformed(e) => e,
            other => panic!("{other:?}"),
        }
    }

    const ALL_CERT: u8 = 0x07; // SSL | CERT_CONN | CERT_SESS

    #[test]
    fn ssl_tlv_with_a_verified_cn() {
        let wire = tcp4(&ssl_tlv(
            ALL_CERT,
            0,
            &[
                (0x21, b"TLSv1.3"),
                (0x22, b"alice.example"),
                (0x23, b"TLS_AES_256_GCM_SHA384"),
                (0x24, b"SHA256"),
                (0x25, b"EC256"),
            ],
        ));
        let ssl = ssl_of(&wire).unwrap();
        assert_eq!(
            ssl,
            SslInfo {
                client_ssl: true,
                cert_in_connection: true,
                cert_in_session: true,
                verify: 0,
                verified: true,
                version: Some("TLSv1.3".into()),
                cn: Some("alice.example".into()),
                cipher: Some("TLS_AES_256_GCM_SHA384".into()),
                sig_alg: Some("SHA256".into()),
                key_alg: Some("EC256".into()),
            }
        );
        assert_eq!(ssl.verified_cn(), Some("alice.example"));
        // The bytes after the header are not the header's.
        let mut longer = wire.clone();
        longer.extend(b"{\"jsonrpc\"");
        assert_eq!(parse(&longer), parse(&wire));
        let Parsed::Header(h) = parse(&longer) else {
            panic!()
        };
        assert_eq!(h.ssl(&longer), Some(ssl));
    }

    #[test]
    fn a_cn_counts_only_with_a_certificate_and_verify_0() {
        let cn: &[(u8, &[u8])] = &[(0x22, b"alice")];
        for (client, verify, verified_cn) in [
            (0x07, 0, Some("alice")),
            (0x03, 0, Some("alice")), // this connection only
            (0x05, 0, Some("alice")), // a resumed session's certificate
            (0x01, 0, None),          // TLS, no certificate: verify is 0 by default
            (0x00, 0, None),          // not even TLS
            (0x07, 20, None),         // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
            (0x07, 1 << 24, None),    // big-endian: a low byte of 0 is not 0
        ] {
            let ssl = ssl_of(&tcp4(&ssl_tlv(client, verify, cn))).unwrap();
            assert_eq!(ssl.client_ssl, client & 1 != 0);
            assert_eq!(ssl.cert_in_connection, client & 2 != 0);
            assert_eq!(ssl.cert_in_session, client & 4 != 0);
            assert_eq!((ssl.verify, ssl.verified), (verify, verify == 0));
            assert_eq!(ssl.cn.as_deref(), Some("alice"));
            assert_eq!(
                ssl.verified_cn(),
                verified_cn,
                "client {client:#x} verify {verify}"
            );
        }
    }

    #[test]
    fn ssl_tlv_without_cn_or_subtlvs() {
        let ssl = ssl_of(&tcp4(&ssl_tlv(ALL_CERT, 0, &[(0x21, b"TLSv1.2")]))).unwrap();
        assert_eq!(ssl.version.as_deref(), Some("TLSv1.2"));
        assert_eq!((ssl.cn.as_deref(), ssl.verified_cn()), (None, None));
        let ssl = ssl_of(&tcp4(&ssl_tlv(0, 0, &[]))).unwrap();
        assert_eq!(
            ssl,
            SslInfo {
                verified: true,
                ..SslInfo::default()
            }
        );
        // No SSL TLV at all, with or without other TLVs.
        assert_eq!(ssl_of(&tcp4(&[])), None);
        assert_eq!(ssl_of(&tcp4(&tlv(0x01, b"h2"))), None);
    }

    #[test]
    fn unknown_tlvs_and_subtlvs_are_skipped() {
        let mut tlvs = tlv(0x01, b"h2"); // ALPN
        tlvs.extend(tlv(0x04, &[])); // NOOP
        tlvs.extend(tlv(0xe0, &[0xff; 300])); // custom
        tlvs.extend(ssl_tlv(
            ALL_CERT,
            0,
            &[(0x26, &[0; 2]), (0x22, b"bob"), (0xff, b"")],
        ));
        tlvs.extend(tlv(0x30, b"netns"));
        let ssl = ssl_of(&tcp4(&tlvs)).unwrap();
        assert_eq!(ssl.verified_cn(), Some("bob"));
        assert_eq!(ssl.version, None);
    }

    #[test]
    fn a_cn_not_clean_text_is_absent() {
        let long = "a".repeat(MAX_TLV_TEXT + 1);
        for bad in [
            &b""[..],
            b"alice\xff",
            b"\xc3",
            b"alice\nadmin",
            b"alice\0",
            b"\x1b[31malice",
            b"alice\x7f",
            "alice\u{85}".as_bytes(),
            long.as_bytes(),
        ] {
            let ssl = ssl_of(&tcp4(&ssl_tlv(ALL_CERT, 0, &[(0x22, bad), (0x21, bad)]))).unwrap();
            assert_eq!((&ssl.cn, &ssl.version), (&None, &None), "{bad:?}");
            assert_eq!(ssl.verified_cn(), None);
            // The rest of the TLV stands.
            assert!(ssl.cert_in_connection && ssl.verified);
        }
        let longest = "é".repeat(MAX_TLV_TEXT / 2);
        let ssl = ssl_of(&tcp4(&ssl_tlv(ALL_CERT, 0, &[(0x22, longest.as_bytes())]))).unwrap();
        assert_eq!(ssl.verified_cn(), Some(&*longest));
        let ssl = ssl_of(&tcp4(&ssl_tlv(
            ALL_CERT,
            0,
            &[(0x22, "Zoë Ü 名".as_bytes())],
        )))
        .unwrap();
        assert_eq!(ssl.verified_cn(), Some("Zoë Ü 名"));
    }

    #[test]
    fn malformed_tlvs_refuse_the_header() {
        // A TLV value past the header's length (the header's own length field grown to
        // keep the header complete: only the TLV is wrong).
        let mut wire = tcp4(&tlv(0x01, b"h2"));
        let n = wire.len();
        wire[n - 3..n - 2].copy_from_slice(&[3]);
        assert!(malformed(&wire).contains("announces 3 bytes, 2 remain"));
        // A TLV head cut short, after a good TLV.
        let mut tlvs = tlv(0x04, &[]);
        tlvs.extend([0x20, 0x00]);
        assert!(malformed(&tcp4(&tlvs)).contains("head cut short"));
        // An SSL TLV under its 5 fixed bytes.
        for short in 0..5 {
            let e = malformed(&tcp4(&tlv(0x20, &[0x07, 0, 0, 0, 0][..short])));
            assert!(e.contains("under its 5 fixed ones"), "{e}");
        }
        // A sub-TLV running past the SSL TLV (though not past the header: the bytes
        // after the SSL TLV are a good NOOP TLV they would swallow).
        let mut ssl = ssl_tlv(ALL_CERT, 0, &[(0x22, b"alice")]);
        let n = ssl.len();
        ssl[n - 7..n - 5].copy_from_slice(&8u16.to_be_bytes());
        ssl.extend(tlv(0x04, &[]));
        let e = malformed(&tcp4(&ssl));
        assert!(
            e.contains("in the SSL TLV") && e.contains("announces 8 bytes"),
            "{e}"
        );
        // A sub-TLV head cut short inside the SSL TLV.
        let mut value = vec![ALL_CERT, 0, 0, 0, 0, 0x22, 0];
        let e = malformed(&tcp4(&tlv(0x20, &value)));
        assert!(e.contains("in the SSL TLV"), "{e}");
        value.push(0);
        assert!(ssl_of(&tcp4(&tlv(0x20, &value))).unwrap().cn.is_none());
        // Two SSL TLVs, or two CNs (whichever is believed, the other was sent).
        let mut two = ssl_tlv(ALL_CERT, 0, &[(0x22, b"alice")]);
        two.extend(ssl_tlv(ALL_CERT, 0, &[(0x22, b"admin")]));
        assert!(malformed(&tcp4(&two)).contains("two SSL TLVs"));
        let two = ssl_tlv(ALL_CERT, 0, &[(0x22, b"alice"), (0x22, b"admin")]);
        assert!(malformed(&tcp4(&two)).contains("two SSL sub-TLVs 0x22"));
        // Even when the first one is not clean text.
        let two = ssl_tlv(ALL_CERT, 0, &[(0x22, b"\n"), (0x22, b"admin")]);
        assert!(matches!(parse(&tcp4(&two)), Parsed::Malformed(_)));
        // TLVs after IPv6 addresses are checked too.
        let mut addr = [0u8; 36].to_vec();
        addr.extend([0x20, 0x00, 0x09]);
        assert!(matches!(parse(&v2(1, 0x21, &addr)), Parsed::Malformed(_)));
    }

    #[test]
    fn tlvs_of_a_local_header_are_not_read() {
        // HAProxy ignores them: a LOCAL header speaks for no client.
        let mut addr = [0u8; 12].to_vec();
        addr.extend(ssl_tlv(ALL_CERT, 0, &[(0x22, b"alice")]));
        let wire = v2(0, 0x11, &addr);
        assert_eq!(parse(&wire), header(wire.len(), None, 2));
        let Parsed::Header(h) = parse(&wire) else {
            panic!()
        };
        assert_eq!(h.ssl(&wire), None);
        addr.extend([0x20, 0xff]);
        assert!(matches!(parse(&v2(0, 0x11, &addr)), Parsed::Header(_)));
    }

    #[test]
    fn ssl_reads_only_the_header_it_was_parsed_from() {
        let alice = tcp4(&ssl_tlv(ALL_CERT, 0, &[(0x22, b"alice")]));
        let bob = tcp4(&ssl_tlv(ALL_CERT, 0, &[(0x22, b"bobby")]));
        let Parsed::Header(h) = parse(&alice) else {
            panic!()
        };
        assert_eq!(h.ssl(&alice).unwrap().verified_cn(), Some("alice"));
        // Same length and source: still another header's TLV, but the buffer is the
        // caller's to keep right; a different header is refused.
        assert_eq!(h.ssl(&bob).unwrap().verified_cn(), Some("bobby"));
        let mut other = bob.clone();
        other[16] = 198;
        assert_eq!(h.ssl(&other), None);
        assert_eq!(h.ssl(&alice[..alice.len() - 1]), None);
        assert_eq!(h.ssl(&[]), None);
        let v1 = b"PROXY TCP4 192.0.2.7 10.0.0.1 5555 443\r\n";
        let Parsed::Header(h1) = parse(v1) else {
            panic!()
        };
        assert_eq!(h1.ssl(v1), None);
        assert_eq!(h1.ssl(&alice), None);
    }

    #[test]
    fn crc32c_is_checked() {
        // RFC 3720 B.4 / the usual check value.
        assert_eq!(!crc32c(!0, b"123456789"), 0xe306_9283);
        assert_eq!(!crc32c(!0, &[0; 32]), 0x8a91_36aa);
        let mut tlvs = ssl_tlv(ALL_CERT, 0, &[(0x22, b"alice")]);
        let at = 16 + 12 + tlvs.len() + 3;
        tlvs.extend(tlv(0x03, &[0; 4]));
        tlvs.extend(tlv(0x04, b"pad"));
        let mut wire = tcp4(&tlvs);
        let crc = !crc32c(!0, &wire);
        wire[at..at + 4].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(ssl_of(&wire).unwrap().verified_cn(), Some("alice"));
        // Any flipped bit in the header, the checksum included, refuses it; but for
        // the length field (the header would need more), the CRC32C TLV's type
        // (another type, skipped: a checksum only guards what it is sent with) and
        // the family (0x01, unspecified: no addresses, no TLVs, nothing to believe).
        for i in (0..wire.len()).filter(|&i| !(14..16).contains(&i) && i != at - 3) {
            let mut bad = wire.clone();
            bad[i] ^= 0x10;
            match parse(&bad) {
                Parsed::Header(h) if i == 13 => {
                    assert_eq!((h.source, h.ssl(&bad)), (None, None));
                }
                Parsed::Header(h) => panic!("byte {i} flipped: {h:?}"),
                _ => {}
            }
        }
        let e = malformed(&tcp4(&tlv(0x03, &[0; 5])));
        assert!(e.contains("CRC32C TLV of 5 bytes"), "{e}");
    }

    #[test]
    fn every_prefix_of_a_header_with_tlvs_needs_more() {
        let whole = tcp4(&ssl_tlv(
            ALL_CERT,
            0,
            &[(0x21, b"TLSv1.3"), (0x22, b"alice")],
        ));
        for cut in 0..whole.len() {
            assert_eq!(parse(&whole[..cut]), Parsed::NeedMore, "{cut}");
        }
    }

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Headers HAProxy 2.6.12 sent, captured by tests/haproxy_ssl.rs (which checks the
    /// same against whatever haproxy is installed).
    #[test]
    fn headers_captured_from_haproxy() {
        // `send-proxy-v2-ssl-cn`, client certificate for alice.example verified.
        let wire = unhex(concat!(
            "0d0a0d0a000d0a515549540a2111002e7f0000017f0000019ebeaaa920001f07000000",
            "00210007544c5376312e3322000d616c6963652e6578616d706c65",
        ));
        let Parsed::Header(h) = parse(&wire) else {
            panic!()
        };
        assert_eq!(parse(&wire), header(wire.len(), Some("127.0.0.1:40638"), 2));
        let ssl = h.ssl(&wire).unwrap();
        assert_eq!(ssl.version.as_deref(), Some("TLSv1.3"));
        assert_eq!(ssl.verified_cn(), Some("alice.example"));
        // `send-proxy-v2` with `proxy-v2-options ssl,cert-cn,ssl-cipher,cert-sig,
        // cert-key,crc32c` (the CRC32C TLV first).
        let wire = unhex(concat!(
            "0d0a0d0a000d0a515549540a2111006a7f0000017f000001ab4ea249030004a5bbbb85",
            "2000540700000000210007544c5376312e3322000d616c6963652e6578616d706c6525",
            "0005454332353624001165636473612d776974682d5348413235362300165",
            "44c535f4145535f3235365f47434d5f534841333834",
        ));
        let Parsed::Header(h) = parse(&wire) else {
            panic!()
        };
        assert_eq!(
            h.ssl(&wire).unwrap(),
            SslInfo {
                client_ssl: true,
                cert_in_connection: true,
                cert_in_session: true,
                verify: 0,
                verified: true,
                version: Some("TLSv1.3".into()),
                cn: Some("alice.example".into()),
                cipher: Some("TLS_AES_256_GCM_SHA384".into()),
                sig_alg: Some("ecdsa-with-SHA256".into()),
                key_alg: Some("EC256".into()),
            }
        );
        let mut bad = wire.clone();
        bad[24] ^= 1;
        assert!(malformed(&bad).contains("CRC32C"));
        // The same, a self-signed certificate let through by `crt-ignore-err all`:
        // verify 18 (X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT).
        let wire = unhex(concat!(
            "0d0a0d0a000d0a515549540a2111006c7f0000017f000001ab60a2490300044d43d375",
            "2000560700000012210007544c5376312e3322000f6d616c6c6f72792e6578616d706c",
            "65250005454332353624001165636473612d776974682d534841323536230016544c53",
            "5f4145535f3235365f47434d5f534841333834",
        ));
        let Parsed::Header(h) = parse(&wire) else {
            panic!()
        };
        let ssl = h.ssl(&wire).unwrap();
        assert_eq!((ssl.verify, ssl.verified), (18, false));
        assert_eq!(ssl.cn.as_deref(), Some("mallory.example"));
        assert_eq!(ssl.verified_cn(), None);
    }
}
