//! Reading a [`Value`] into any `serde::Deserialize` type ([`from_value`]): how typed
//! verbs take parameters that arrived as a tree (XML-RPC, `system.multicall`, the CLI).

use crate::{Map, Str, Value};
use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use std::fmt;

/// Why a value could not become (or be made from) a Rust type: serde's message, e.g.
/// `invalid type: string "x", expected i64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError(pub String);

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ValueError {}

impl de::Error for ValueError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ValueError(msg.to_string())
    }
}

impl serde::ser::Error for ValueError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        ValueError(msg.to_string())
    }
}

/// Deserialize `T` from a value tree.
///
/// ```
/// use rpcmux_value::{from_value, vstruct};
/// #[derive(serde::Deserialize)]
/// struct Vm { id: String, mem: Option<i64> }
/// let vm: Vm = from_value(vstruct! { "id" => "a" }).unwrap();
/// assert_eq!((vm.id.as_str(), vm.mem), ("a", None));
/// ```
pub fn from_value<T: DeserializeOwned>(v: Value) -> Result<T, ValueError> {
    T::deserialize(v)
}

impl<'de> IntoDeserializer<'de, ValueError> for Value {
    type Deserializer = Value;
    fn into_deserializer(self) -> Value {
        self
    }
}

/// A member name as a deserializer: read as a borrowed `&str` (a field name needs no
/// copy), or handed over whole when it is a heap string.
impl<'de> IntoDeserializer<'de, ValueError> for Str {
    type Deserializer = NameDeserializer;
    fn into_deserializer(self) -> NameDeserializer {
        NameDeserializer(self)
    }
}

/// See `IntoDeserializer for Str`.
pub struct NameDeserializer(Str);

impl<'de> de::Deserializer<'de> for NameDeserializer {
    type Error = ValueError;
    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ValueError> {
        self.0.visit(v)
    }
    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
        struct enum identifier ignored_any
    }
}

impl Str {
    /// Hand the text to a visitor: a long one as the `String` it already is, a short one
    /// as `&str` (so a visitor that borrows or copies it allocates nothing).
    fn visit<'de, V: Visitor<'de>, E: de::Error>(self, v: V) -> Result<V::Value, E> {
        if self.is_heap() {
            v.visit_string(self.into_string())
        } else {
            v.visit_str(&self)
        }
    }
}

fn visit_map<'de, V: Visitor<'de>>(m: Map, v: V) -> Result<V::Value, ValueError> {
    let mut access = MapDeserializer::new(m.into_iter());
    let out = v.visit_map(&mut access)?;
    access.end()?;
    Ok(out)
}

fn visit_seq<'de, V: Visitor<'de>>(a: Vec<Value>, v: V) -> Result<V::Value, ValueError> {
    let mut access = SeqDeserializer::new(a.into_iter());
    let out = v.visit_seq(&mut access)?;
    access.end()?;
    Ok(out)
}

impl<'de> de::Deserializer<'de> for Value {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ValueError> {
        match self {
            Value::Nil => v.visit_unit(),
            Value::Bool(b) => v.visit_bool(b),
            Value::Int(i) => v.visit_i64(i),
            Value::Double(d) => v.visit_f64(d),
            Value::String(s) => s.visit(v),
            Value::Bytes(b) => v.visit_byte_buf(b),
            Value::DateTime(d) => v.visit_string(d.to_iso8601()),
            Value::Array(a) => visit_seq(a, v),
            Value::Struct(m) => visit_map(*m, v),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, ValueError> {
        match self {
            Value::Nil => v.visit_none(),
            other => v.visit_some(other),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, ValueError> {
        v.visit_newtype_struct(self)
    }

    /// An enum is a string (unit variant) or a one-member struct `{variant: value}`,
    /// as serde_json writes them.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, ValueError> {
        match self {
            Value::String(s) => v.visit_enum(s.into_string().into_deserializer()),
            Value::Struct(m) if m.len() == 1 => match m.into_iter().next() {
                Some((variant, content)) => v.visit_enum(OneMember(variant, content)),
                None => Err(de::Error::custom("an enum needs its variant")),
            },
            other => Err(de::Error::invalid_type(unexpected(&other), &"an enum")),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

/// `{variant: content}`.
struct OneMember(Str, Value);

impl<'de> de::EnumAccess<'de> for OneMember {
    type Error = ValueError;
    type Variant = Value;
    fn variant_seed<S: de::DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Value), ValueError> {
        let variant = seed.deserialize(self.0.into_string().into_deserializer())?;
        Ok((variant, self.1))
    }
}

impl<'de> de::VariantAccess<'de> for Value {
    type Error = ValueError;
    fn unit_variant(self) -> Result<(), ValueError> {
        match self {
            Value::Nil => Ok(()),
            other => Err(de::Error::invalid_type(
                unexpected(&other),
                &"a unit variant",
            )),
        }
    }
    fn newtype_variant_seed<S: de::DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<S::Value, ValueError> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, ValueError> {
        de::Deserializer::deserialize_seq(self, v)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, ValueError> {
        de::Deserializer::deserialize_map(self, v)
    }
}

pub(crate) fn unexpected(v: &Value) -> de::Unexpected<'_> {
    match v {
        Value::Nil => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Int(i) => de::Unexpected::Signed(*i),
        Value::Double(d) => de::Unexpected::Float(*d),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Bytes(b) => de::Unexpected::Bytes(b),
        Value::DateTime(_) => de::Unexpected::Other("dateTime"),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Struct(_) => de::Unexpected::Map,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vstruct;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    enum Kind {
        Small,
        Sized(i64),
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Vm {
        id: String,
        mem: Option<u32>,
        tags: Vec<String>,
        kind: Kind,
        #[serde(default)]
        extra: bool,
    }

    #[test]
    fn structs_options_enums_and_range_checks() {
        let v = vstruct! {
            "id" => "a", "tags" => Value::Array(vec!["x".into()]), "kind" => "Small",
        };
        let vm: Vm = from_value(v).unwrap();
        assert_eq!(vm.mem, None);
        assert_eq!(vm.kind, Kind::Small);
        let v = vstruct! { "id" => "a", "mem" => 5, "tags" => Value::Array(vec![]),
        "kind" => vstruct! { "Sized" => 3 } };
        assert_eq!(from_value::<Vm>(v).unwrap().kind, Kind::Sized(3));
        let e = from_value::<u8>(Value::Int(300)).unwrap_err();
        assert!(e.0.contains("300"), "{e}");
        let e = from_value::<String>(Value::Int(3)).unwrap_err();
        assert!(e.0.contains("expected a string"), "{e}");
    }
}
