//! Any `Serialize` type → msgpack, straight into the output buffer.
//!
//! Written by hand rather than taken from rmp-serde because it is a typed verb's hot path:
//! rmp-serde writes each marker and length through `io::Write` (a `BufMut` writer here)
//! with an error to check per call, which was a tenth of the server's time on a typed
//! call. This one uses the same infallible `BufMut` writes as
//! [`write_value`](crate::write_value), so a typed result and the value tree of the same
//! data encode to the same bytes: structs as maps with str keys, ints in their smallest
//! form (non-negative ones as uint), f32 widened to f64, bytes as bin, `None` and `()` as
//! nil, enums externally tagged (`"Unit"`, `{"Variant": value}`).

use super::error::Error;
use crate::encode::{
    put_array_len, put_bin, put_bool, put_f64, put_int, put_map_len, put_nil, put_str, put_uint,
};
use bytes::{BufMut, BytesMut};
use serde::ser::{self, Serialize};

/// Append `value` to `out` as msgpack. On error `out` holds a partial value; the caller
/// cuts it back.
pub fn write<T: Serialize + ?Sized>(out: &mut BytesMut, value: &T) -> Result<(), Error> {
    value.serialize(&mut Serializer { out })
}

/// A serde serializer appending msgpack to a buffer.
pub struct Serializer<'a> {
    out: &'a mut BytesMut,
}

impl<'a> Serializer<'a> {
    /// A serializer appending to `out`.
    pub fn new(out: &'a mut BytesMut) -> Self {
        Serializer { out }
    }
}

fn too_wide(v: impl std::fmt::Display) -> Error {
    Error::new(format!("integer {v} is beyond 64 bits"))
}

impl<'s, 'a> ser::Serializer for &'s mut Serializer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'s, 'a>;
    type SerializeTuple = Compound<'s, 'a>;
    type SerializeTupleStruct = Compound<'s, 'a>;
    type SerializeTupleVariant = Compound<'s, 'a>;
    type SerializeMap = Compound<'s, 'a>;
    type SerializeStruct = Compound<'s, 'a>;
    type SerializeStructVariant = Compound<'s, 'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        put_bool(self.out, v);
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        put_int(self.out, v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        match (i64::try_from(v), u64::try_from(v)) {
            (Ok(i), _) => self.serialize_i64(i),
            (_, Ok(u)) => self.serialize_u64(u),
            _ => Err(too_wide(v)),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        put_uint(self.out, v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.serialize_u64(u64::try_from(v).map_err(|_| too_wide(v))?)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.serialize_f64(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        put_f64(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        Ok(put_str(self.out, v)?)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        Ok(put_bin(self.out, v)?)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        put_nil(self.out);
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        put_map_len(self.out, 1)?;
        put_str(self.out, variant)?;
        v.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'s, 'a>, Error> {
        Compound::open(self, len, Kind::Array)
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'s, 'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Compound<'s, 'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'s, 'a>, Error> {
        put_map_len(self.out, 1)?;
        put_str(self.out, variant)?;
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'s, 'a>, Error> {
        Compound::open(self, len, Kind::Map)
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Compound<'s, 'a>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'s, 'a>, Error> {
        put_map_len(self.out, 1)?;
        put_str(self.out, variant)?;
        self.serialize_map(Some(len))
    }
    fn is_human_readable(&self) -> bool {
        false
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Array,
    Map,
}

/// An array or map being written. Its length is written first when serde knows it; when
/// it does not (`collect_seq` over a filter, `#[serde(flatten)]`), a 32-bit header is
/// reserved, the items counted, and the header written in its smallest form at the end.
pub struct Compound<'s, 'a> {
    ser: &'s mut Serializer<'a>,
    /// For an unknown length: where the reserved header starts, and the items so far.
    counting: Option<(usize, usize)>,
    kind: Kind,
}

/// Bytes reserved for a header whose length is not known yet (marker + u32).
const RESERVED_HEADER: usize = 5;

impl<'s, 'a> Compound<'s, 'a> {
    fn open(ser: &'s mut Serializer<'a>, len: Option<usize>, kind: Kind) -> Result<Self, Error> {
        let counting = match len {
            Some(n) if kind == Kind::Array => {
                put_array_len(ser.out, n)?;
                None
            }
            Some(n) => {
                put_map_len(ser.out, n)?;
                None
            }
            None => {
                let at = ser.out.len();
                ser.out.put_bytes(0, RESERVED_HEADER);
                Some((at, 0))
            }
        };
        Ok(Compound {
            ser,
            counting,
            kind,
        })
    }

    fn count(&mut self) {
        if let Some((_, n)) = &mut self.counting {
            *n += 1;
        }
    }

    fn close(self) -> Result<(), Error> {
        let Some((at, n)) = self.counting else {
            return Ok(());
        };
        let mut header = [0u8; RESERVED_HEADER];
        let mut free = &mut header[..];
        match self.kind {
            Kind::Array => put_array_len(&mut free, n)?,
            Kind::Map => put_map_len(&mut free, n)?,
        }
        let written = RESERVED_HEADER - free.len();
        let out = &mut *self.ser.out;
        let body = at + RESERVED_HEADER;
        let start = at + written;
        out[at..start].copy_from_slice(&header[..written]);
        out.copy_within(body.., start);
        out.truncate(out.len() - (body - start));
        Ok(())
    }
}

impl ser::SerializeSeq for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.count();
        v.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTuple for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Error> {
        self.count();
        k.serialize(&mut *self.ser)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        v.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.count();
        put_str(self.ser.out, key)?;
        v.serialize(&mut *self.ser)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(self, key, v)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}
