//! Turning any `serde::Serialize` type into a [`Value`] ([`to_value`]): how a typed
//! verb's result reaches protocols that write from a tree (XML-RPC, `system.multicall`).
//! JSON and msgpack write typed results straight from the type instead.

use crate::de::ValueError;
use crate::{Map, Str, Value};
use serde::ser::{self, Serialize};

/// Serialize `t` into a value tree. Integers above `i64::MAX` become the double that
/// holds them exactly, or an error if none does (never a silently different number).
///
/// ```
/// use rpcmux_value::{to_value, Value};
/// #[derive(serde::Serialize)]
/// struct Vm { id: &'static str, mem: Option<i64> }
/// let v = to_value(&Vm { id: "a", mem: None }).unwrap();
/// assert_eq!(v.get("id"), Some(&Value::from("a")));
/// assert_eq!(v.get("mem"), Some(&Value::Nil));
/// ```
pub fn to_value<T: Serialize + ?Sized>(t: &T) -> Result<Value, ValueError> {
    t.serialize(ValueSerializer)
}

struct ValueSerializer;

type R = Result<Value, ValueError>;

fn u64_value(v: u64) -> R {
    if let Ok(i) = i64::try_from(v) {
        return Ok(Value::Int(i));
    }
    let d = v as f64;
    if d < 18_446_744_073_709_551_616.0 && d as u64 == v {
        Ok(Value::Double(d))
    } else {
        Err(ValueError(format!(
            "integer {v} is beyond the 64-bit signed range and no double holds it exactly"
        )))
    }
}

impl ser::Serializer for ValueSerializer {
    type Ok = Value;
    type Error = ValueError;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Variant<Seq>;
    type SerializeMap = MapSer;
    type SerializeStruct = MapSer;
    type SerializeStructVariant = Variant<MapSer>;

    fn serialize_bool(self, v: bool) -> R {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> R {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> R {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> R {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> R {
        Ok(Value::Int(v))
    }
    fn serialize_i128(self, v: i128) -> R {
        match i64::try_from(v) {
            Ok(i) => Ok(Value::Int(i)),
            Err(_) => u64::try_from(v)
                .map_err(|_| ValueError(format!("integer {v} is beyond 64 bits")))
                .and_then(u64_value),
        }
    }
    fn serialize_u8(self, v: u8) -> R {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> R {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> R {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> R {
        u64_value(v)
    }
    fn serialize_u128(self, v: u128) -> R {
        u64::try_from(v)
            .map_err(|_| ValueError(format!("integer {v} is beyond 64 bits")))
            .and_then(u64_value)
    }
    fn serialize_f32(self, v: f32) -> R {
        Ok(Value::Double(v.into()))
    }
    fn serialize_f64(self, v: f64) -> R {
        Ok(Value::Double(v))
    }
    fn serialize_char(self, v: char) -> R {
        Ok(Value::String(Str::from(v)))
    }
    fn serialize_str(self, v: &str) -> R {
        Ok(Value::String(Str::new(v)))
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        Ok(Value::Bytes(v.to_vec()))
    }
    fn serialize_none(self) -> R {
        Ok(Value::Nil)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_unit(self) -> R {
        Ok(Value::Nil)
    }
    fn serialize_unit_struct(self, _: &'static str) -> R {
        Ok(Value::Nil)
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> R {
        Ok(Value::String(Str::new(variant)))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> R {
        Ok(one_member(variant, v.serialize(self)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq, ValueError> {
        Ok(Seq(Vec::with_capacity(len.unwrap_or(0).min(1024))))
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq, ValueError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq, ValueError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Seq>, ValueError> {
        Ok(Variant(variant, self.serialize_seq(Some(len))?))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapSer, ValueError> {
        let cap = len.unwrap_or(0).min(1024);
        Ok(MapSer(Map::with_capacity(cap), None))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<MapSer, ValueError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<MapSer>, ValueError> {
        Ok(Variant(variant, self.serialize_map(Some(len))?))
    }
}

fn one_member(key: &str, v: Value) -> Value {
    let mut m = Map::default();
    m.insert(key.to_owned(), v);
    Value::Struct(Box::new(m))
}

/// An array being built.
struct Seq(Vec<Value>);

impl ser::SerializeSeq for Seq {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), ValueError> {
        self.0.push(v.serialize(ValueSerializer)?);
        Ok(())
    }
    fn end(self) -> R {
        Ok(Value::Array(self.0))
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), ValueError> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> R {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Seq {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), ValueError> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> R {
        ser::SerializeSeq::end(self)
    }
}

/// A struct being built, and the key whose value comes next.
struct MapSer(Map, Option<Str>);

impl ser::SerializeMap for MapSer {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), ValueError> {
        self.1 = Some(match k.serialize(ValueSerializer)? {
            Value::String(s) => s,
            Value::Int(i) => Str::from(i.to_string()),
            Value::Bool(b) => Str::new(if b { "true" } else { "false" }),
            other => {
                return Err(ValueError(format!(
                    "a struct key must be a string, not {}",
                    other.type_name()
                )))
            }
        });
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), ValueError> {
        let k = self.1.take().unwrap_or_default();
        self.0.insert(k, v.serialize(ValueSerializer)?);
        Ok(())
    }
    fn end(self) -> R {
        Ok(Value::Struct(Box::new(self.0)))
    }
}

impl ser::SerializeStruct for MapSer {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        k: &'static str,
        v: &T,
    ) -> Result<(), ValueError> {
        self.0.insert(k, v.serialize(ValueSerializer)?);
        Ok(())
    }
    fn end(self) -> R {
        ser::SerializeMap::end(self)
    }
}

/// An enum variant's content, wrapped as `{variant: content}` when done.
struct Variant<S>(&'static str, S);

impl ser::SerializeTupleVariant for Variant<Seq> {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), ValueError> {
        ser::SerializeSeq::serialize_element(&mut self.1, v)
    }
    fn end(self) -> R {
        Ok(one_member(self.0, ser::SerializeSeq::end(self.1)?))
    }
}

impl ser::SerializeStructVariant for Variant<MapSer> {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        k: &'static str,
        v: &T,
    ) -> Result<(), ValueError> {
        ser::SerializeStruct::serialize_field(&mut self.1, k, v)
    }
    fn end(self) -> R {
        Ok(one_member(self.0, ser::SerializeMap::end(self.1)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::from_value;

    #[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
    enum Shape {
        Dot,
        Line(i64, i64),
        Box { w: u32 },
    }

    #[test]
    fn round_trips_through_from_value() {
        for s in [Shape::Dot, Shape::Line(1, -2), Shape::Box { w: 3 }] {
            let v = to_value(&s).unwrap();
            assert_eq!(from_value::<Shape>(v).unwrap(), s);
        }
        assert!(to_value(&u64::MAX).unwrap_err().0.contains("exactly"));
        assert_eq!(
            to_value(&(1u64 << 63)).unwrap(),
            Value::Double(9.223372036854776e18)
        );
        assert_eq!(to_value(&Some(5u8)).unwrap(), Value::Int(5));
    }
}
