//! msgpack → [`Value`], from a slice that holds the whole value.
//!
//! The codec only calls this once the [scanner](crate::scan) has seen a complete message,
//! so it parses each message exactly once. It is still written for hostile input (it is
//! also the entry point for msgpack HTTP bodies and for [`read_value`]): every read is
//! bounds-checked, nesting is capped, and no length from the wire sizes an allocation
//! beyond the bytes actually present.
//!
//! Type mapping (see the crate docs for why):
//! - nil, bool, f64 as themselves; f32 widens to f64;
//! - every int width to i64; a u64 above `i64::MAX` becomes a double (as the JSON side does);
//! - str to string, or to bytes if it is not UTF-8 (old-spec "raw" carries bytes);
//! - bin to bytes; timestamp extension (-1) to dateTime; other extensions are refused;
//! - array to array; map to struct, with str keys, UTF-8 bin keys, and int/bool keys
//!   written in decimal / `true` / `false`; other key types are refused.

use crate::error::CodecError;
use crate::timestamp::{read_timestamp, TIMESTAMP_EXT};
use rmp::Marker;
use rpcmux_value::{Map, Str, Value};

/// Why a value could not be read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReadError {
    /// The slice ends inside the value.
    Truncated,
    /// More nested containers than allowed.
    TooDeep,
    /// Valid msgpack that the data model cannot hold, or the reserved byte.
    Unsupported(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Truncated => f.write_str("value truncated"),
            ReadError::TooDeep => f.write_str("value nested too deep"),
            ReadError::Unsupported(why) => f.write_str(why),
        }
    }
}

/// Read one value from the start of `buf`, opening at most `max_depth` nested containers.
/// Returns the value and the number of bytes it took.
pub fn read_value(buf: &[u8], max_depth: usize) -> Result<(Value, usize), CodecError> {
    let mut r = Reader::new(buf);
    match r.value(max_depth) {
        Ok(v) => Ok((v, r.pos())),
        Err(ReadError::TooDeep) => Err(CodecError::TooDeep { limit: max_depth }),
        Err(ReadError::Truncated) => Err(CodecError::Truncated {
            buffered: buf.len(),
        }),
        Err(ReadError::Unsupported(why)) => Err(CodecError::Malformed(why)),
    }
}

/// A cursor over a slice of msgpack.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        let end = self.pos.checked_add(n).ok_or(ReadError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(ReadError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    #[inline]
    fn u8(&mut self) -> Result<u8, ReadError> {
        let b = *self.buf.get(self.pos).ok_or(ReadError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }
    #[inline]
    fn u16(&mut self) -> Result<u16, ReadError> {
        self.array().map(u16::from_be_bytes)
    }
    #[inline]
    fn u32(&mut self) -> Result<u32, ReadError> {
        self.array().map(u32::from_be_bytes)
    }
    #[inline]
    fn u64(&mut self) -> Result<u64, ReadError> {
        self.array().map(u64::from_be_bytes)
    }

    /// Read the header of an array, if the next item is one: its length.
    pub(crate) fn array_len(&mut self) -> Result<Option<u32>, ReadError> {
        let start = self.pos;
        let n = match Marker::from_u8(self.u8()?) {
            Marker::FixArray(n) => u32::from(n),
            Marker::Array16 => u32::from(self.u16()?),
            Marker::Array32 => self.u32()?,
            _ => {
                self.pos = start;
                return Ok(None);
            }
        };
        Ok(Some(n))
    }

    /// Read `n` values as a Vec (the items of an array whose header was read).
    pub(crate) fn items(&mut self, n: u32, depth: usize) -> Result<Vec<Value>, ReadError> {
        // Every item takes at least one byte: never reserve more than the bytes left.
        let cap = (n as usize).min(self.buf.len() - self.pos);
        let mut out = Vec::with_capacity(cap);
        for _ in 0..n {
            out.push(self.value(depth)?);
        }
        Ok(out)
    }

    /// Read one value; `depth` is how many more containers may be opened.
    pub(crate) fn value(&mut self, depth: usize) -> Result<Value, ReadError> {
        Ok(match Marker::from_u8(self.u8()?) {
            Marker::FixPos(n) => Value::Int(i64::from(n)),
            Marker::FixNeg(n) => Value::Int(i64::from(n)),
            Marker::Null => Value::Nil,
            Marker::True => Value::Bool(true),
            Marker::False => Value::Bool(false),
            Marker::U8 => Value::Int(i64::from(self.u8()?)),
            Marker::U16 => Value::Int(i64::from(self.u16()?)),
            Marker::U32 => Value::Int(i64::from(self.u32()?)),
            Marker::U64 => {
                let u = self.u64()?;
                // Above i64::MAX the model has no int: a double, as JSON-RPC's side does.
                i64::try_from(u).map_or(Value::Double(u as f64), Value::Int)
            }
            Marker::I8 => Value::Int(i64::from(self.u8()? as i8)),
            Marker::I16 => Value::Int(i64::from(self.u16()? as i16)),
            Marker::I32 => Value::Int(i64::from(self.u32()? as i32)),
            Marker::I64 => Value::Int(self.u64()? as i64),
            Marker::F32 => Value::Double(f64::from(f32::from_bits(self.u32()?))),
            Marker::F64 => Value::Double(f64::from_bits(self.u64()?)),
            Marker::FixStr(n) => self.str(n as usize)?,
            Marker::Str8 => {
                let n = self.u8()? as usize;
                self.str(n)?
            }
            Marker::Str16 => {
                let n = self.u16()? as usize;
                self.str(n)?
            }
            Marker::Str32 => {
                let n = self.u32()? as usize;
                self.str(n)?
            }
            Marker::Bin8 => {
                let n = self.u8()? as usize;
                Value::Bytes(self.take(n)?.to_vec())
            }
            Marker::Bin16 => {
                let n = self.u16()? as usize;
                Value::Bytes(self.take(n)?.to_vec())
            }
            Marker::Bin32 => {
                let n = self.u32()? as usize;
                Value::Bytes(self.take(n)?.to_vec())
            }
            Marker::FixArray(n) => self.nested_array(u32::from(n), depth)?,
            Marker::Array16 => {
                let n = self.u16()?;
                self.nested_array(u32::from(n), depth)?
            }
            Marker::Array32 => {
                let n = self.u32()?;
                self.nested_array(n, depth)?
            }
            Marker::FixMap(n) => self.map(u32::from(n), depth)?,
            Marker::Map16 => {
                let n = self.u16()?;
                self.map(u32::from(n), depth)?
            }
            Marker::Map32 => {
                let n = self.u32()?;
                self.map(n, depth)?
            }
            Marker::FixExt1 => self.ext(1)?,
            Marker::FixExt2 => self.ext(2)?,
            Marker::FixExt4 => self.ext(4)?,
            Marker::FixExt8 => self.ext(8)?,
            Marker::FixExt16 => self.ext(16)?,
            Marker::Ext8 => {
                let n = self.u8()? as usize;
                self.ext(n)?
            }
            Marker::Ext16 => {
                let n = self.u16()? as usize;
                self.ext(n)?
            }
            Marker::Ext32 => {
                let n = self.u32()? as usize;
                self.ext(n)?
            }
            Marker::Reserved => {
                return Err(ReadError::Unsupported(
                    "reserved byte 0xc1 is not msgpack".into(),
                ))
            }
        })
    }

    /// A str that is valid UTF-8 is a string; one that is not is kept as bytes, since
    /// old-spec packers (msgpack-python 0.5 with use_bin_type=False, as msgpack-rpc-python
    /// uses) send Python bytes as str.
    fn str(&mut self, n: usize) -> Result<Value, ReadError> {
        let raw = self.take(n)?;
        Ok(match crate::short::utf8(raw) {
            Some(s) => Value::String(Str::new(s)),
            None => Value::Bytes(raw.to_vec()),
        })
    }

    fn nested_array(&mut self, n: u32, depth: usize) -> Result<Value, ReadError> {
        let depth = depth.checked_sub(1).ok_or(ReadError::TooDeep)?;
        self.items(n, depth).map(Value::Array)
    }

    fn map(&mut self, n: u32, depth: usize) -> Result<Value, ReadError> {
        let depth = depth.checked_sub(1).ok_or(ReadError::TooDeep)?;
        // Each entry takes at least two bytes.
        let cap = (n as usize).min((self.buf.len() - self.pos) / 2);
        let mut pairs = Vec::with_capacity(cap);
        for _ in 0..n {
            let k = self.key()?;
            let v = self.value(depth)?;
            pairs.push((k, v));
        }
        // A repeated key keeps its first position and takes the last value; the vector
        // becomes the map's storage when none repeats.
        Ok(Value::Struct(Box::new(Map::from_pairs(pairs))))
    }

    /// A map key as a struct member name. Python dicts often have int keys; those and
    /// bools are written out in text. Keys that are nil, floats, containers or
    /// extensions have no sensible name and are refused.
    fn key(&mut self) -> Result<Str, ReadError> {
        let start = self.pos;
        let marker = Marker::from_u8(self.u8()?);
        match marker {
            Marker::FixStr(n) => {
                // The common case, without building a Value first.
                let raw = self.take(n as usize)?;
                return crate::short::utf8(raw)
                    .map(Str::new)
                    .ok_or_else(|| ReadError::Unsupported("map key is not UTF-8".into()));
            }
            // As a Value this would be a (rounded) double: print the exact integer.
            Marker::U64 => return Ok(Str::from(self.u64()?.to_string())),
            _ => {}
        }
        self.pos = start;
        // Any key container is refused below, so depth 0 is enough to read scalars.
        match self.value(0) {
            Ok(Value::String(s)) => Ok(s),
            Ok(Value::Bytes(b)) => String::from_utf8(b)
                .map(Str::from)
                .map_err(|_| ReadError::Unsupported("map key is not UTF-8".into())),
            Ok(Value::Int(i)) => Ok(Str::from(i.to_string())),
            Ok(Value::Bool(b)) => Ok(Str::new(if b { "true" } else { "false" })),
            Ok(other) => Err(ReadError::Unsupported(format!(
                "map key of type {} is not supported (keys must be strings, ints or bools)",
                other.type_name()
            ))),
            Err(ReadError::TooDeep) => Err(ReadError::Unsupported(
                "map key of type array or map is not supported (keys must be strings, ints or bools)"
                    .into(),
            )),
            Err(e) => Err(e),
        }
    }

    /// An extension value: only the timestamp (-1) maps to the model.
    fn ext(&mut self, len: usize) -> Result<Value, ReadError> {
        let ty = self.u8()? as i8;
        let data = self.take(len)?;
        if ty != TIMESTAMP_EXT {
            return Err(ReadError::Unsupported(format!(
                "msgpack extension type {ty} is not supported (only the timestamp, -1)"
            )));
        }
        read_timestamp(data)
            .map(Value::DateTime)
            .map_err(ReadError::Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::{vstruct, DateTime};

    fn dec(b: &[u8]) -> Value {
        let (v, n) = read_value(b, 64).unwrap();
        assert_eq!(n, b.len(), "whole input consumed");
        v
    }

    fn round_trip(v: Value) {
        let mut out = Vec::new();
        crate::write_value(&mut out, &v).unwrap();
        assert_eq!(dec(&out), v);
    }

    #[test]
    fn every_type_round_trips() {
        for v in [
            Value::Nil,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(0),
            Value::Int(-1),
            Value::Int(i64::MAX),
            Value::Int(i64::MIN),
            Value::Int(-40000),
            Value::Int(70000),
            Value::Double(-0.5),
            Value::Double(f64::INFINITY),
            Value::from("héllo"),
            Value::from("x".repeat(70000)),
            Value::Bytes(vec![0, 255, 7]),
            Value::Bytes(vec![9; 70000]),
            Value::DateTime(DateTime::from_unix(1_012_030_200, 123_456_789).unwrap()),
            Value::DateTime(DateTime::from_unix(-86_400, 0).unwrap()),
            Value::Array(vec![Value::Int(1), Value::Array(vec![]), Value::Nil]),
            Value::Array(vec![Value::Int(3); 70000]),
            vstruct! {"z" => 1, "a" => vstruct!{"b" => vec![Value::Nil]}, "" => ""},
        ] {
            round_trip(v);
        }
    }

    #[test]
    fn every_int_width_reads() {
        assert_eq!(dec(&[0xcc, 0xff]), Value::Int(255));
        assert_eq!(dec(&[0xcd, 0xff, 0xff]), Value::Int(65535));
        assert_eq!(
            dec(&[0xce, 0xff, 0xff, 0xff, 0xff]),
            Value::Int(u32::MAX as i64)
        );
        assert_eq!(
            dec(&[0xcf, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Value::Int(i64::MAX)
        );
        assert_eq!(dec(&[0xd0, 0x80]), Value::Int(-128));
        assert_eq!(dec(&[0xd1, 0x80, 0]), Value::Int(-32768));
        assert_eq!(dec(&[0xd2, 0x80, 0, 0, 0]), Value::Int(i32::MIN as i64));
        assert_eq!(
            dec(&[0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]),
            Value::Int(-2)
        );
        // Non-canonical but legal: a small value in a wide form.
        assert_eq!(dec(&[0xd3, 0, 0, 0, 0, 0, 0, 0, 5]), Value::Int(5));
    }

    #[test]
    fn u64_above_i64_max_becomes_double() {
        assert_eq!(
            dec(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Value::Double(u64::MAX as f64)
        );
    }

    #[test]
    fn f32_widens() {
        assert_eq!(dec(&[0xca, 0x3e, 0x80, 0, 0]), Value::Double(0.25));
    }

    #[test]
    fn invalid_utf8_str_is_bytes() {
        assert_eq!(dec(&[0xa2, 0xff, 0xfe]), Value::Bytes(vec![0xff, 0xfe]));
        assert_eq!(dec(&[0xd9, 1, b'a']), Value::from("a"));
    }

    #[test]
    fn map_keys_ints_and_bools_are_stringified() {
        // {1: "a", -2: "b", true: "c", b"k": "d", 2^63+1: "e"}
        let mut b = vec![
            0x85, 0x01, 0xa1, b'a', 0xfe, 0xa1, b'b', 0xc3, 0xa1, b'c', 0xc4, 1, b'k', 0xa1, b'd',
        ];
        b.extend_from_slice(&[0xcf, 0x80, 0, 0, 0, 0, 0, 0, 1, 0xa1, b'e']);
        assert_eq!(
            dec(&b),
            vstruct! {"1" => "a", "-2" => "b", "true" => "c", "k" => "d", "9223372036854775809" => "e"}
        );
    }

    #[test]
    fn other_map_keys_are_refused() {
        for (b, what) in [
            (&[0x81, 0xc0, 0x01][..], "nil"),
            (&[0x81, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x01][..], "double"),
            (&[0x81, 0x90, 0x01][..], "array"),
            (&[0x81, 0x80, 0x01][..], "map"),
            (&[0x81, 0xa1, 0xff, 0x01][..], "UTF-8"),
            (&[0x81, 0xc4, 1, 0xff, 0x01][..], "UTF-8"),
        ] {
            let err = read_value(b, 64).unwrap_err().to_string();
            assert!(err.contains(what), "{err}");
        }
    }

    #[test]
    fn duplicate_keys_last_value_wins() {
        let b = [0x82, 0xa1, b'k', 1, 0xa1, b'k', 2];
        assert_eq!(dec(&b), vstruct! {"k" => 2});
    }

    #[test]
    fn other_extensions_are_refused() {
        let err = read_value(&[0xd4, 0x05, 0x00], 64).unwrap_err().to_string();
        assert!(err.contains("extension type 5"), "{err}");
    }

    #[test]
    fn reserved_byte_and_truncation_are_errors() {
        assert!(matches!(
            read_value(&[0xc1], 64),
            Err(CodecError::Malformed(_))
        ));
        for b in [
            &[0xcd, 0x01][..],
            &[0xa3, b'a'],
            &[0x92, 0x01],
            &[0xdb, 0xff, 0xff, 0xff, 0xff],
        ] {
            assert!(
                matches!(read_value(b, 64), Err(CodecError::Truncated { .. })),
                "{b:?}"
            );
        }
    }

    #[test]
    fn depth_is_capped() {
        let deep = [0x91u8; 10];
        assert!(matches!(
            read_value(&deep, 5),
            Err(CodecError::TooDeep { limit: 5 })
        ));
        let mut ok = vec![0x91u8; 4];
        ok.push(0xc0);
        assert!(read_value(&ok, 4).is_ok());
        assert!(read_value(&ok, 3).is_err());
    }

    #[test]
    fn hostile_lengths_do_not_allocate() {
        // array32 claiming 4 billion items, map32 likewise: fail fast as truncated.
        assert!(read_value(&[0xdd, 0xff, 0xff, 0xff, 0xff], 64).is_err());
        assert!(read_value(&[0xdf, 0xff, 0xff, 0xff, 0xff], 64).is_err());
    }
}
