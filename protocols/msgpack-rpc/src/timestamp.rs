//! The msgpack timestamp extension (type -1) ↔ [`DateTime`].
//!
//! Three sizes exist (spec "Timestamp extension type"):
//! - 4 bytes: u32 seconds since the epoch, no nanoseconds (1970..2106);
//! - 8 bytes: u64 = nanoseconds (30 bits) << 34 | seconds (34 bits) (1970..2514);
//! - 12 bytes: u32 nanoseconds then i64 seconds (any time, before 1970 too).
//!
//! We read all three and write the smallest that holds the instant, as Python's
//! `msgpack.Timestamp.to_bytes` does.

use bytes::BufMut;
use rmp::Marker;
use rpcmux_value::DateTime;

/// The extension type number of timestamps.
pub const TIMESTAMP_EXT: i8 = -1;

pub(crate) fn put_timestamp<B: BufMut>(out: &mut B, d: &DateTime) {
    let (secs, nanos) = d.to_unix();
    if secs >> 34 == 0 {
        if nanos == 0 && secs >> 32 == 0 {
            out.put_u8(Marker::FixExt4.to_u8());
            out.put_i8(TIMESTAMP_EXT);
            out.put_u32(secs as u32);
        } else {
            out.put_u8(Marker::FixExt8.to_u8());
            out.put_i8(TIMESTAMP_EXT);
            out.put_u64((u64::from(nanos) << 34) | secs as u64);
        }
    } else {
        out.put_u8(Marker::Ext8.to_u8());
        out.put_u8(12);
        out.put_i8(TIMESTAMP_EXT);
        out.put_u32(nanos);
        out.put_i64(secs);
    }
}

/// Decode a timestamp's payload (the bytes after the ext header and type).
pub(crate) fn read_timestamp(data: &[u8]) -> Result<DateTime, String> {
    let (secs, nanos) = match *data {
        [a, b, c, d] => (i64::from(u32::from_be_bytes([a, b, c, d])), 0),
        [a, b, c, d, e, f, g, h] => {
            let v = u64::from_be_bytes([a, b, c, d, e, f, g, h]);
            ((v & 0x3_ffff_ffff) as i64, (v >> 34) as u32)
        }
        [a, b, c, d, ref rest @ ..] if rest.len() == 8 => {
            let mut s = [0u8; 8];
            s.copy_from_slice(rest);
            (i64::from_be_bytes(s), u32::from_be_bytes([a, b, c, d]))
        }
        _ => {
            return Err(format!(
                "timestamp extension of {} bytes (must be 4, 8 or 12)",
                data.len()
            ))
        }
    };
    if nanos >= 1_000_000_000 {
        return Err(format!("timestamp nanoseconds {nanos} out of range"));
    }
    DateTime::from_unix(secs, nanos).ok_or_else(|| format!("timestamp {secs} s out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(secs: i64, nanos: u32) -> Vec<u8> {
        let d = DateTime::from_unix(secs, nanos).unwrap();
        let mut out = Vec::new();
        put_timestamp(&mut out, &d);
        // ext header is 2 bytes for fixext, 3 for ext8
        let payload = if out[0] == Marker::Ext8.to_u8() {
            &out[3..]
        } else {
            &out[2..]
        };
        assert_eq!(read_timestamp(payload), Ok(d), "{secs}.{nanos}");
        out
    }

    #[test]
    fn smallest_form_that_fits() {
        assert_eq!(round_trip(0, 0)[..2], [0xd6, 0xff]);
        assert_eq!(round_trip(u32::MAX as i64, 0)[..2], [0xd6, 0xff]);
        assert_eq!(round_trip(1, 1)[..2], [0xd7, 0xff]);
        assert_eq!(round_trip(u32::MAX as i64 + 1, 0)[..2], [0xd7, 0xff]);
        assert_eq!(round_trip((1 << 34) - 1, 999_999_999)[..2], [0xd7, 0xff]);
        assert_eq!(round_trip(1 << 34, 0)[..3], [0xc7, 12, 0xff]);
        assert_eq!(round_trip(-1, 0)[..3], [0xc7, 12, 0xff]);
        assert_eq!(round_trip(-1, 500)[..3], [0xc7, 12, 0xff]);
    }

    #[test]
    fn rejects_bad_payloads() {
        assert!(read_timestamp(&[0; 5]).is_err());
        // 8-byte form with nanoseconds 2^30-1 (> 999 999 999)
        assert!(read_timestamp(&[0xff; 8]).is_err());
        // 12-byte form with i64::MAX seconds: outside chrono's range
        let mut b = vec![0, 0, 0, 0];
        b.extend_from_slice(&i64::MAX.to_be_bytes());
        assert!(read_timestamp(&b).is_err());
    }
}
