//! msgpack → any `Deserialize` type, straight from the wire bytes.
//!
//! Written by hand rather than taken from rmp-serde because it is a typed verb's hot path:
//! rmp-serde reads through its `ReadSlice` abstraction with a marker cache and a generic
//! `any_inner`, and it was a third of the server's time on a typed call. This one matches
//! on the tag byte over a slice, hands out borrowed strings and bytes, and checks nothing
//! the frame scanner already checked except what keeps it safe on its own (bounds,
//! nesting).
//!
//! Types as [`read_value`](crate::read_value) reads them: every int width to
//! `visit_u64`/`visit_i64` (so a u64 field gets all 64 bits), f32 and f64, str as a
//! borrowed str (a str that is not UTF-8 as bytes, as the value path does), bin as
//! borrowed bytes, arrays as sequences, maps as maps, nil as unit / `None`. Enums are
//! externally tagged (`"Unit"` or `{"Variant": value}`), as serde_json has them; a
//! variant may also be given by its index (`0`, `{1: value}`), as rmp-serde reads it
//! (found by the `msgpack_typed_oracle` fuzz target: the unit form took only the name).
//! Extension types (the timestamp) are refused here: the caller reads those params
//! through the value path.

use super::error::Error;
use crate::limits::Limits;
use crate::short::utf8;
use serde::de::{self, DeserializeSeed, Visitor};
use serde::forward_to_deserialize_any;

/// A serde deserializer over one msgpack item at the start of a slice.
pub struct Deserializer<'de> {
    buf: &'de [u8],
    pos: usize,
    /// Containers that may still be opened.
    depth: usize,
    /// Whether an item was skipped unread (an ignored field): its nesting was not
    /// counted against `depth`.
    skipped: bool,
}

impl<'de> Deserializer<'de> {
    /// A deserializer reading from the start of `buf`, opening at most
    /// [`Limits::DEFAULT_MAX_DEPTH`] nested containers.
    pub fn new(buf: &'de [u8]) -> Self {
        Self::with_depth(buf, Limits::DEFAULT_MAX_DEPTH)
    }

    /// A deserializer opening at most `depth` nested containers.
    pub fn with_depth(buf: &'de [u8], depth: usize) -> Self {
        Deserializer {
            buf,
            pos: 0,
            depth,
            skipped: false,
        }
    }

    /// Whether an item was skipped without being read (a field the type ignores):
    /// how deep it was nested was not checked.
    pub fn skipped(&self) -> bool {
        self.skipped
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'de [u8], Error> {
        let end = self.pos.checked_add(n).ok_or_else(truncated)?;
        let s = self.buf.get(self.pos..end).ok_or_else(truncated)?;
        self.pos = end;
        Ok(s)
    }

    #[inline]
    fn peek(&self) -> Result<u8, Error> {
        self.buf.get(self.pos).copied().ok_or_else(truncated)
    }

    #[inline]
    fn u8(&mut self) -> Result<u8, Error> {
        let b = self.peek()?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn be<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    #[inline]
    fn u16(&mut self) -> Result<usize, Error> {
        self.be().map(|b| u16::from_be_bytes(b) as usize)
    }

    #[inline]
    fn u32(&mut self) -> Result<usize, Error> {
        self.be().map(|b| u32::from_be_bytes(b) as usize)
    }

    #[inline]
    fn str<V: Visitor<'de>>(&mut self, n: usize, v: V) -> Result<V::Value, Error> {
        let raw = self.take(n)?;
        match utf8(raw) {
            Some(s) => v.visit_borrowed_str(s),
            None => v.visit_borrowed_bytes(raw),
        }
    }

    // `seq`, `map` and the accessors they hand out are inlined into each visitor's
    // instance: a struct read through them was copied once more per call level that
    // stayed out of line (measured: 2 copies of a 700-byte parameter struct a call).
    #[inline(always)]
    fn seq<V: Visitor<'de>>(&mut self, n: usize, v: V) -> Result<V::Value, Error> {
        self.enter()?;
        let mut access = Items { de: self, left: n };
        // The visitor's result is returned as it is, not unwrapped and wrapped again:
        // a struct's value would be copied once more per level (a big parameter struct
        // was copied a dozen times on its way to the handler).
        let out = v.visit_seq(&mut access);
        let left = access.left;
        self.depth += 1;
        if left != 0 && out.is_ok() {
            return Err(Error::new(format!("{left} array item(s) left unread")));
        }
        out
    }

    #[inline(always)]
    fn map<V: Visitor<'de>>(&mut self, n: usize, v: V) -> Result<V::Value, Error> {
        self.enter()?;
        let mut access = Entries { de: self, left: n };
        let out = v.visit_map(&mut access);
        let left = access.left;
        self.depth += 1;
        if left != 0 && out.is_ok() {
            return Err(Error::new(format!("{left} map entries left unread")));
        }
        out
    }

    fn enter(&mut self) -> Result<(), Error> {
        self.depth = self.depth.checked_sub(1).ok_or_else(|| {
            Error::new(format!(
                "value nested deeper than {} levels",
                Limits::DEFAULT_MAX_DEPTH
            ))
        })?;
        Ok(())
    }

    /// Skip one item without visiting it, iteratively: every item takes at least one
    /// byte, so a declared length past the bytes present ends in "truncated".
    fn skip(&mut self) -> Result<(), Error> {
        let mut left: u64 = 1;
        while left > 0 {
            left -= 1;
            let m = self.u8()?;
            let (len, children) = match m {
                0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
                0x80..=0x8f => (0, 2 * u64::from(m & 0x0f)),
                0x90..=0x9f => (0, u64::from(m & 0x0f)),
                0xa0..=0xbf => (usize::from(m & 0x1f), 0),
                0xc4 | 0xd9 => (usize::from(self.u8()?), 0),
                0xc5 | 0xda => (self.u16()?, 0),
                0xc6 | 0xdb => (self.u32()?, 0),
                0xc7 => (usize::from(self.u8()?) + 1, 0),
                0xc8 => (self.u16()? + 1, 0),
                0xc9 => (self.u32()? + 1, 0),
                0xcc | 0xd0 => (1, 0),
                0xcd | 0xd1 => (2, 0),
                0xca | 0xce | 0xd2 => (4, 0),
                0xcb | 0xcf | 0xd3 => (8, 0),
                0xd4 => (2, 0),
                0xd5 => (3, 0),
                0xd6 => (5, 0),
                0xd7 => (9, 0),
                0xd8 => (17, 0),
                0xdc => (0, self.u16()? as u64),
                0xdd => (0, self.u32()? as u64),
                0xde => (0, 2 * self.u16()? as u64),
                0xdf => (0, 2 * self.u32()? as u64),
                0xc1 => return Err(reserved()),
            };
            self.take(len)?;
            left += children;
        }
        Ok(())
    }
}

fn truncated() -> Error {
    Error::new("msgpack value truncated")
}

fn reserved() -> Error {
    Error::new("the reserved msgpack byte 0xc1")
}

fn extension() -> Error {
    Error::new("a msgpack extension type, which is read as a value, not into a Rust type")
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        let m = self.u8()?;
        match m {
            0x00..=0x7f => v.visit_u64(u64::from(m)),
            0x80..=0x8f => self.map(usize::from(m & 0x0f), v),
            0x90..=0x9f => self.seq(usize::from(m & 0x0f), v),
            0xa0..=0xbf => self.str(usize::from(m & 0x1f), v),
            0xc0 => v.visit_unit(),
            0xc2 => v.visit_bool(false),
            0xc3 => v.visit_bool(true),
            0xc4 => {
                let n = usize::from(self.u8()?);
                v.visit_borrowed_bytes(self.take(n)?)
            }
            0xc5 => {
                let n = self.u16()?;
                v.visit_borrowed_bytes(self.take(n)?)
            }
            0xc6 => {
                let n = self.u32()?;
                v.visit_borrowed_bytes(self.take(n)?)
            }
            0xca => v.visit_f32(f32::from_be_bytes(self.be()?)),
            0xcb => v.visit_f64(f64::from_be_bytes(self.be()?)),
            0xcc => v.visit_u64(u64::from(self.u8()?)),
            0xcd => v.visit_u64(u64::from(u16::from_be_bytes(self.be()?))),
            0xce => v.visit_u64(u64::from(u32::from_be_bytes(self.be()?))),
            0xcf => v.visit_u64(u64::from_be_bytes(self.be()?)),
            0xd0 => v.visit_i64(i64::from(self.u8()? as i8)),
            0xd1 => v.visit_i64(i64::from(i16::from_be_bytes(self.be()?))),
            0xd2 => v.visit_i64(i64::from(i32::from_be_bytes(self.be()?))),
            0xd3 => v.visit_i64(i64::from_be_bytes(self.be()?)),
            0xd9 => {
                let n = usize::from(self.u8()?);
                self.str(n, v)
            }
            0xda => {
                let n = self.u16()?;
                self.str(n, v)
            }
            0xdb => {
                let n = self.u32()?;
                self.str(n, v)
            }
            0xdc => {
                let n = self.u16()?;
                self.seq(n, v)
            }
            0xdd => {
                let n = self.u32()?;
                self.seq(n, v)
            }
            0xde => {
                let n = self.u16()?;
                self.map(n, v)
            }
            0xdf => {
                let n = self.u32()?;
                self.map(n, v)
            }
            0xe0..=0xff => v.visit_i64(i64::from(m as i8)),
            0xc7..=0xc9 | 0xd4..=0xd8 => Err(extension()),
            0xc1 => Err(reserved()),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        if self.peek()? == 0xc0 {
            self.pos += 1;
            v.visit_none()
        } else {
            v.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        let m = self.peek()?;
        if m == 0x81 {
            // {"Variant": value}
            self.pos += 1;
            self.enter()?;
            let out = v.visit_enum(Variant { de: self })?;
            self.depth += 1;
            return Ok(out);
        }
        // "Unit": the variant alone, by name or (as rmp-serde and the map form take it)
        // by index.
        v.visit_enum(UnitVariant { de: self })
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        self.skipped = true;
        self.skip()?;
        v.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        false
    }

    // A struct's keys and string fields, its sequences and nested structs: the tag they
    // are nearly always sent with is tested first, a branch the CPU predicts, before
    // the 256-way dispatch of `deserialize_any` (an indirect jump per item).
    fn deserialize_str<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.peek()? {
            m @ 0xa0..=0xbf => {
                self.pos += 1;
                self.str(usize::from(m & 0x1f), v)
            }
            _ => self.deserialize_any(v),
        }
    }

    // A type asking for a string it will own (a `String` field) gets one made here,
    // the bytes copied inline: `to_owned` in serde's visitor paid a `memcpy` call, with
    // its length dispatch, for each few-byte string.
    fn deserialize_string<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.peek()? {
            m @ 0xa0..=0xbf => {
                self.pos += 1;
                let raw = self.take(usize::from(m & 0x1f))?;
                match utf8(raw) {
                    Some(s) => v.visit_string(crate::short::short_string(s)),
                    None => v.visit_borrowed_bytes(raw),
                }
            }
            _ => self.deserialize_any(v),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        self.deserialize_str(v)
    }

    #[inline(always)]
    fn deserialize_seq<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.peek()? {
            m @ 0x90..=0x9f => {
                self.pos += 1;
                self.seq(usize::from(m & 0x0f), v)
            }
            _ => self.deserialize_any(v),
        }
    }

    #[inline(always)]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        match self.peek()? {
            m @ 0x80..=0x8f => {
                self.pos += 1;
                self.map(usize::from(m & 0x0f), v)
            }
            0xde => {
                self.pos += 1;
                let n = self.u16()?;
                self.map(n, v)
            }
            _ => self.deserialize_any(v),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char
        bytes byte_buf unit unit_struct tuple tuple_struct map
    }
}

/// The items of an array whose header was read.
struct Items<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Items<'_, 'de> {
    type Error = Error;

    #[inline(always)]
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        // Each item takes a byte at least: a declared length never sizes more than that.
        Some(self.left.min(self.de.buf.len() - self.de.pos))
    }
}

/// The entries of a map whose header was read.
struct Entries<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    left: usize,
}

impl<'de> de::MapAccess<'de> for Entries<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }

    #[inline(always)]
    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        seed.deserialize(&mut *self.de)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.left.min((self.de.buf.len() - self.de.pos) / 2))
    }
}

/// An enum given as its variant alone (`"Dot"`, or its index `0`): a unit variant.
struct UnitVariant<'a, 'de> {
    de: &'a mut Deserializer<'de>,
}

impl<'de> de::EnumAccess<'de> for UnitVariant<'_, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), Error> {
        let key = seed.deserialize(&mut *self.de)?;
        Ok((key, self))
    }
}

impl<'de> de::VariantAccess<'de> for UnitVariant<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, _: S) -> Result<S::Value, Error> {
        Err(unit_only("newtype variant"))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _: V) -> Result<V::Value, Error> {
        Err(unit_only("tuple variant"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Error> {
        Err(unit_only("struct variant"))
    }
}

fn unit_only(expected: &str) -> Error {
    de::Error::invalid_type(de::Unexpected::UnitVariant, &expected)
}

/// An enum as a one-entry map: the key names the variant, the value is its content.
struct Variant<'a, 'de> {
    de: &'a mut Deserializer<'de>,
}

impl<'de> de::EnumAccess<'de> for Variant<'_, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), Error> {
        let key = seed.deserialize(&mut *self.de)?;
        Ok((key, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        de::Deserialize::deserialize(&mut *self.de)
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, Error> {
        seed.deserialize(&mut *self.de)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_any(&mut *self.de, v)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_any(&mut *self.de, v)
    }
}
