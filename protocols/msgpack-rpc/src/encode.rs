//! [`Value`] → msgpack, written straight into the caller's buffer.
//!
//! rmp's `encode::write_*` functions go through its fallible `RmpWrite` trait, whose
//! errors cannot happen on a growable buffer but would still have to be handled at every
//! call. We take rmp's [`Marker`] as the authority for the format's tag bytes and write the
//! big-endian payloads with [`BufMut`], which is infallible and works for both `Vec<u8>` and
//! `BytesMut` without an `io::Write` adapter. Every form is the smallest that fits, as
//! Python's `msgpack.packb` writes it, so our output is byte-identical to Python's.

use crate::error::EncodeError;
use crate::short::copy_short;
use crate::timestamp;
use bytes::BufMut;
use rmp::Marker;
use rpcmux_value::Value;

/// Append `v` to `out` in its smallest msgpack form: ints as the narrowest (u)int, doubles
/// as f64, strings as str, bytes as bin, dateTimes as the timestamp extension, structs as
/// maps with str keys.
///
/// On error (a length over `u32::MAX`) `out` holds a partial value; callers that care cut
/// it back (as [`encode_response`](crate::encode_response) does).
pub fn write_value<B: BufMut>(out: &mut B, v: &Value) -> Result<(), EncodeError> {
    match v {
        Value::Nil => put_nil(out),
        Value::Bool(b) => put_bool(out, *b),
        Value::Int(i) => put_int(out, *i),
        Value::Double(d) => put_f64(out, *d),
        Value::String(s) => put_str(out, s)?,
        Value::Bytes(b) => put_bin(out, b)?,
        Value::DateTime(d) => timestamp::put_timestamp(out, d),
        Value::Array(items) => {
            put_array_len(out, items.len())?;
            for item in items {
                write_value(out, item)?;
            }
        }
        Value::Struct(map) => {
            put_map_len(out, map.len())?;
            for (k, item) in map.iter() {
                put_str(out, k)?;
                write_value(out, item)?;
            }
        }
    }
    Ok(())
}

#[inline]
pub(crate) fn put_nil<B: BufMut>(out: &mut B) {
    out.put_u8(Marker::Null.to_u8());
}

#[inline]
pub(crate) fn put_bool<B: BufMut>(out: &mut B, b: bool) {
    out.put_u8(if b { Marker::True } else { Marker::False }.to_u8());
}

#[inline]
pub(crate) fn put_uint<B: BufMut>(out: &mut B, v: u64) {
    if v < 0x80 {
        out.put_u8(v as u8); // positive fixint: the value is the marker
    } else if v <= u8::MAX as u64 {
        out.put_u8(Marker::U8.to_u8());
        out.put_u8(v as u8);
    } else if v <= u16::MAX as u64 {
        out.put_u8(Marker::U16.to_u8());
        out.put_u16(v as u16);
    } else if v <= u32::MAX as u64 {
        out.put_u8(Marker::U32.to_u8());
        out.put_u32(v as u32);
    } else {
        out.put_u8(Marker::U64.to_u8());
        out.put_u64(v);
    }
}

/// Non-negative ints go out as unsigned forms (as Python and rmp write them), so a reader
/// that only knows uints for positives is served too.
#[inline]
pub(crate) fn put_int<B: BufMut>(out: &mut B, v: i64) {
    if v >= 0 {
        put_uint(out, v as u64);
    } else if v >= -32 {
        out.put_u8(Marker::FixNeg(v as i8).to_u8());
    } else if v >= i8::MIN as i64 {
        out.put_u8(Marker::I8.to_u8());
        out.put_i8(v as i8);
    } else if v >= i16::MIN as i64 {
        out.put_u8(Marker::I16.to_u8());
        out.put_i16(v as i16);
    } else if v >= i32::MIN as i64 {
        out.put_u8(Marker::I32.to_u8());
        out.put_i32(v as i32);
    } else {
        out.put_u8(Marker::I64.to_u8());
        out.put_i64(v);
    }
}

/// Always f64: the model's double is an f64 and f32 would lose precision.
#[inline]
pub(crate) fn put_f64<B: BufMut>(out: &mut B, d: f64) {
    out.put_u8(Marker::F64.to_u8());
    out.put_f64(d);
}

fn len_u32(what: &'static str, len: usize) -> Result<u32, EncodeError> {
    u32::try_from(len).map_err(|_| EncodeError { what, len })
}

#[inline(always)]
pub(crate) fn put_str<B: BufMut>(out: &mut B, s: &str) -> Result<(), EncodeError> {
    // Most strings (struct keys, short values) are fixstrs: tag and bytes go in one
    // write when the buffer has the room, with no bounds check or `memcpy` call per
    // piece. These writes were half a typed reply's encoding time, and a libc `memcpy`
    // call costs more than the few bytes it copies.
    let n = s.len();
    if n < 32 {
        let dst = out.chunk_mut();
        if dst.len() > n {
            let p = dst.as_mut_ptr();
            // SAFETY: `dst` has room for the tag and `n` bytes after it, all written
            // here before they are counted in.
            unsafe {
                p.write(Marker::FixStr(n as u8).to_u8());
                copy_short(s.as_ptr(), p.add(1), n);
                out.advance_mut(n + 1);
            }
            return Ok(());
        }
    }
    put_str_slow(out, s)
}

/// [`put_str`] for a long string or a full buffer: out of line, so the short path
/// inlined at every caller stays small (it saved and restored registers for this one).
#[inline(never)]
fn put_str_slow<B: BufMut>(out: &mut B, s: &str) -> Result<(), EncodeError> {
    let len = len_u32("string", s.len())?;
    if len < 32 {
        out.put_u8(Marker::FixStr(len as u8).to_u8());
    } else if len <= u8::MAX as u32 {
        out.put_u8(Marker::Str8.to_u8());
        out.put_u8(len as u8);
    } else if len <= u16::MAX as u32 {
        out.put_u8(Marker::Str16.to_u8());
        out.put_u16(len as u16);
    } else {
        out.put_u8(Marker::Str32.to_u8());
        out.put_u32(len);
    }
    out.put_slice(s.as_bytes());
    Ok(())
}

#[inline]
pub(crate) fn put_bin<B: BufMut>(out: &mut B, b: &[u8]) -> Result<(), EncodeError> {
    let len = len_u32("binary", b.len())?;
    if len <= u8::MAX as u32 {
        out.put_u8(Marker::Bin8.to_u8());
        out.put_u8(len as u8);
    } else if len <= u16::MAX as u32 {
        out.put_u8(Marker::Bin16.to_u8());
        out.put_u16(len as u16);
    } else {
        out.put_u8(Marker::Bin32.to_u8());
        out.put_u32(len);
    }
    out.put_slice(b);
    Ok(())
}

#[inline]
pub(crate) fn put_array_len<B: BufMut>(out: &mut B, len: usize) -> Result<(), EncodeError> {
    let len = len_u32("array", len)?;
    if len < 16 {
        out.put_u8(Marker::FixArray(len as u8).to_u8());
    } else if len <= u16::MAX as u32 {
        out.put_u8(Marker::Array16.to_u8());
        out.put_u16(len as u16);
    } else {
        out.put_u8(Marker::Array32.to_u8());
        out.put_u32(len);
    }
    Ok(())
}

#[inline]
pub(crate) fn put_map_len<B: BufMut>(out: &mut B, len: usize) -> Result<(), EncodeError> {
    let len = len_u32("map", len)?;
    if len < 16 {
        out.put_u8(Marker::FixMap(len as u8).to_u8());
    } else if len <= u16::MAX as u32 {
        out.put_u8(Marker::Map16.to_u8());
        out.put_u16(len as u16);
    } else {
        out.put_u8(Marker::Map32.to_u8());
        out.put_u32(len);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use rpcmux_value::{vstruct, DateTime};

    fn enc(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        write_value(&mut out, v).unwrap();
        out
    }

    #[test]
    fn strings_of_every_short_length_are_written_whole() {
        let text: String = ('a'..='z').chain('A'..='Z').collect();
        for n in 0..=40 {
            let s = &text[..n];
            let mut want = Vec::new();
            rmp::encode::write_str(&mut want, s).unwrap();
            // After other bytes, into a buffer one byte short of the room (the slow
            // path), with exactly the room, full (it grows first), and roomy.
            for spare in [n, n + 1, 0, 64] {
                let mut out = BytesMut::with_capacity(2 + spare);
                out.extend_from_slice(b"xy");
                put_str(&mut out, s).unwrap();
                assert_eq!(&out[..2], b"xy", "n={n}");
                assert_eq!(&out[2..], &want[..], "n={n} spare={spare}");
            }
        }
    }

    #[test]
    fn scalars_take_their_smallest_form() {
        assert_eq!(enc(&Value::Nil), [0xc0]);
        assert_eq!(enc(&Value::Bool(true)), [0xc3]);
        assert_eq!(enc(&Value::Bool(false)), [0xc2]);
        let ints: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (127, &[0x7f]),
            (128, &[0xcc, 0x80]),
            (255, &[0xcc, 0xff]),
            (256, &[0xcd, 0x01, 0x00]),
            (65536, &[0xce, 0, 1, 0, 0]),
            (1 << 32, &[0xcf, 0, 0, 0, 1, 0, 0, 0, 0]),
            (-1, &[0xff]),
            (-32, &[0xe0]),
            (-33, &[0xd0, 0xdf]),
            (-129, &[0xd1, 0xff, 0x7f]),
            (-32769, &[0xd2, 0xff, 0xff, 0x7f, 0xff]),
            (i64::MIN, &[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0]),
        ];
        for (i, want) in ints {
            assert_eq!(enc(&Value::Int(*i)), *want, "{i}");
        }
        assert_eq!(
            enc(&Value::Double(1.5)),
            [0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn strings_bytes_and_containers() {
        assert_eq!(enc(&Value::from("hi")), [0xa2, b'h', b'i']);
        let s31 = "x".repeat(31);
        assert_eq!(enc(&Value::from(s31.as_str()))[0], 0xbf);
        let s32 = "x".repeat(32);
        assert_eq!(enc(&Value::from(s32.as_str()))[..2], [0xd9, 32]);
        let s256 = "x".repeat(256);
        assert_eq!(enc(&Value::from(s256.as_str()))[..3], [0xda, 1, 0]);
        assert_eq!(enc(&Value::Bytes(vec![1, 2])), [0xc4, 2, 1, 2]);
        assert_eq!(enc(&Value::Bytes(vec![0; 256]))[..3], [0xc5, 1, 0]);
        assert_eq!(enc(&Value::Array(vec![])), [0x90]);
        assert_eq!(enc(&Value::Array(vec![Value::Nil; 16]))[..3], [0xdc, 0, 16]);
        assert_eq!(
            enc(&vstruct! {"a" => 1}),
            [0x81, 0xa1, b'a', 0x01],
            "struct keys are str"
        );
    }

    #[test]
    fn datetime_is_the_timestamp_extension() {
        let d = DateTime::from_unix(1, 0).unwrap();
        assert_eq!(enc(&Value::DateTime(d)), [0xd6, 0xff, 0, 0, 0, 1]);
    }
}
