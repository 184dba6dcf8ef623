//! gzip on HTTP bodies: `Content-Encoding: gzip` requests are inflated (bounded, so a
//! small bomb cannot inflate past the body cap), and replies are gzipped when the client
//! accepts it and the body is big enough to gain (Python's xmlrpc server uses ~1.4 KB).

use flate2::read::GzDecoder;
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

/// Inflate a gzip body, refusing to produce more than `max` bytes.
pub(crate) fn gunzip(body: &[u8], max: usize) -> Result<Vec<u8>, InflateError> {
    let mut out = Vec::with_capacity((body.len() * 4).min(max));
    let mut dec = GzDecoder::new(body).take(max as u64 + 1);
    dec.read_to_end(&mut out).map_err(InflateError::Corrupt)?;
    if out.len() > max {
        return Err(InflateError::TooLarge);
    }
    Ok(out)
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
    fn round_trip_and_bomb_cap() {
        let body = vec![b'a'; 100_000];
        let z = gzip(&body);
        assert!(z.len() < 1000);
        assert_eq!(gunzip(&z, 100_000).unwrap(), body);
        assert!(matches!(gunzip(&z, 99_999), Err(InflateError::TooLarge)));
        assert!(matches!(
            gunzip(b"not gzip", 10),
            Err(InflateError::Corrupt(_))
        ));
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
