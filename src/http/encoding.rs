//! Compressed HTTP bodies: `Content-Encoding: gzip` (every member of a multi-member
//! body) and `deflate` (zlib, as Perl's RPC::XML sends it; raw deflate accepted too)
//! requests are inflated, bounded so a small bomb cannot inflate past the body cap;
//! replies are gzipped when the client accepts it and the body is big enough to gain
//! (Python's xmlrpc server uses ~1.4 KB).

use flate2::read::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::{Read, Write};

/// Replies at least this long are compressed for clients that accept gzip.
pub(crate) const GZIP_MIN: usize = 1400;

#[derive(Debug)]
pub(crate) enum InflateError {
    TooLarge,
    Corrupt(std::io::Error),
}

/// A request body's `Content-Encoding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coding {
    Identity,
    Gzip,
    Deflate,
}

impl Coding {
    /// The coding a header names; `None` for one we cannot read.
    pub(crate) fn parse(header: Option<&str>) -> Option<Coding> {
        match header.map(str::trim) {
            None | Some("") => Some(Coding::Identity),
            Some(v) if v.eq_ignore_ascii_case("identity") => Some(Coding::Identity),
            Some(v) if v.eq_ignore_ascii_case("gzip") || v.eq_ignore_ascii_case("x-gzip") => {
                Some(Coding::Gzip)
            }
            Some(v) if v.eq_ignore_ascii_case("deflate") => Some(Coding::Deflate),
            Some(_) => None,
        }
    }
}

/// Inflate a body, refusing to produce more than `max` bytes.
pub(crate) fn inflate(coding: Coding, body: &[u8], max: usize) -> Result<Vec<u8>, InflateError> {
    match coding {
        Coding::Identity => Ok(body.to_vec()),
        Coding::Gzip => read_capped(MultiGzDecoder::new(body), body.len(), max),
        // RFC 9110's deflate is zlib-wrapped; some clients send raw deflate. Only a body
        // that is not zlib is tried as raw: a zlib bomb is too large, not corrupt.
        Coding::Deflate => match read_capped(ZlibDecoder::new(body), body.len(), max) {
            Err(InflateError::Corrupt(_)) => {
                read_capped(DeflateDecoder::new(body), body.len(), max)
            }
            zlib => zlib,
        },
    }
}

fn read_capped(dec: impl Read, len: usize, max: usize) -> Result<Vec<u8>, InflateError> {
    let mut out = Vec::with_capacity((len * 4).min(max));
    dec.take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(InflateError::Corrupt)?;
    if out.len() > max {
        return Err(InflateError::TooLarge);
    }
    // Grown by doubling: cut to its length, which is what the budget is charged (an
    // inflated body held up to twice its charge while its call ran).
    Ok(crate::conn::out::cut_to_length(out))
}

/// Gzip a reply body. Level 1: on a 2-core box the CPU matters more than the last bytes.
pub(crate) fn gzip(body: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::with_capacity(body.len() / 3 + 64), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(body);
    enc.finish().unwrap_or_default()
}

/// Does an `Accept-Encoding` value allow gzip (and not with q=0)?
pub(crate) fn accepts_gzip(header: &str) -> bool {
    header.split(',').any(|part| {
        let mut it = part.split(';');
        let coding = it.next().unwrap_or("").trim();
        let q_zero = it.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=")
                .is_some_and(|q| q.trim().parse::<f32>().ok() == Some(0.0))
        });
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !q_zero
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inflated_body_holds_about_its_length() {
        let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let out = inflate(Coding::Gzip, &gzip(&body), 16 << 20).unwrap();
        assert_eq!(out.len(), body.len());
        assert!(
            out.capacity() <= out.len() + out.len() / 16,
            "{} bytes held for {}",
            out.capacity(),
            out.len()
        );
    }

    #[test]
    fn round_trip_and_bomb_cap() {
        let body = vec![b'a'; 100_000];
        let z = gzip(&body);
        assert!(z.len() < 1000);
        assert_eq!(inflate(Coding::Gzip, &z, 100_000).unwrap(), body);
        assert!(matches!(
            inflate(Coding::Gzip, &z, 99_999),
            Err(InflateError::TooLarge)
        ));
        assert!(matches!(
            inflate(Coding::Gzip, b"not gzip", 10),
            Err(InflateError::Corrupt(_))
        ));
    }

    #[test]
    fn a_zlib_bomb_is_too_large_not_corrupt() {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), Compression::best());
        z.write_all(&vec![0u8; 1 << 20]).unwrap();
        let bomb = z.finish().unwrap();
        assert!(matches!(
            inflate(Coding::Deflate, &bomb, 1000),
            Err(InflateError::TooLarge)
        ));
    }

    #[test]
    fn every_gzip_member_and_both_deflate_forms() {
        let mut two = gzip(b"hello ");
        two.extend(gzip(b"world"));
        assert_eq!(inflate(Coding::Gzip, &two, 100).unwrap(), b"hello world");
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), Compression::fast());
        z.write_all(b"zlib body").unwrap();
        let z = z.finish().unwrap();
        assert_eq!(inflate(Coding::Deflate, &z, 100).unwrap(), b"zlib body");
        let mut d = flate2::write::DeflateEncoder::new(Vec::new(), Compression::fast());
        d.write_all(b"raw body").unwrap();
        let d = d.finish().unwrap();
        assert_eq!(inflate(Coding::Deflate, &d, 100).unwrap(), b"raw body");
        assert_eq!(Coding::parse(Some("DEFLATE")), Some(Coding::Deflate));
        assert_eq!(Coding::parse(Some("br")), None);
    }

    #[test]
    fn accept_encoding_forms() {
        assert!(accepts_gzip("gzip"));
        assert!(accepts_gzip("deflate, gzip;q=0.5"));
        assert!(accepts_gzip("*"));
        assert!(!accepts_gzip("gzip;q=0"));
        assert!(!accepts_gzip("identity"));
    }
}
