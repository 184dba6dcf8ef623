//! The front-layer probes: a TLS ClientHello and a PROXY protocol header. Behind either,
//! the connection is sniffed again (once decrypted, or after the header).

use crate::verdict::Probe;

/// The first byte of a TLS record carrying a handshake message (the ClientHello).
/// No plaintext protocol we serve starts with it, so one byte decides.
const HANDSHAKE_RECORD: u8 = 0x16;

/// A TLS ClientHello: the first byte is a handshake record's (0x16).
pub fn tls(p: &[u8]) -> Probe {
    match p.first() {
        None => Probe::NeedMore,
        Some(&HANDSHAKE_RECORD) => Probe::Match,
        Some(_) => Probe::NoMatch,
    }
}

/// The v1 text header's start.
const V1_PREFIX: &[u8] = b"PROXY ";
/// The v2 binary header's 12-byte signature.
const V2_SIGNATURE: &[u8] = b"\r\n\r\n\0\r\nQUIT\n";

/// The start of a PROXY protocol v1 or v2 header (its signature; the header itself is
/// read with [`proxy_header::parse`](crate::proxy_header::parse)). It must be asked
/// before [`http`](crate::http), which would take `PROXY ` for a request method.
pub fn proxy(p: &[u8]) -> Probe {
    for sig in [V1_PREFIX, V2_SIGNATURE] {
        let n = p.len().min(sig.len());
        if p[..n] == sig[..n] {
            return if n == sig.len() {
                Probe::Match
            } else {
                Probe::NeedMore
            };
        }
    }
    Probe::NoMatch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_one_byte_decides() {
        assert_eq!(tls(b""), Probe::NeedMore);
        assert_eq!(tls(&[0x16]), Probe::Match);
        assert_eq!(tls(&[0x16, 0x03, 0x01]), Probe::Match);
        assert_eq!(tls(b"POST "), Probe::NoMatch);
        assert_eq!(tls(&[0x94, 0x00]), Probe::NoMatch);
    }

    #[test]
    fn proxy_decides_on_the_signature() {
        assert_eq!(proxy(b""), Probe::NeedMore);
        assert_eq!(proxy(b"PRO"), Probe::NeedMore);
        assert_eq!(proxy(b"PROXY "), Probe::Match);
        assert_eq!(proxy(b"PROXY TCP4"), Probe::Match);
        assert_eq!(proxy(b"PROXYX"), Probe::NoMatch);
        assert_eq!(proxy(b"POST "), Probe::NoMatch);
        assert_eq!(proxy(b"\r\n\r\n\0"), Probe::NeedMore);
        assert_eq!(proxy(V2_SIGNATURE), Probe::Match);
        assert_eq!(proxy(b"\r\n\r\nX"), Probe::NoMatch);
        assert_eq!(proxy(b"{"), Probe::NoMatch);
    }
}
