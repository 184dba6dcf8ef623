//! serde support for [`Value`], so serde formats (serde_json above all) read and write it.
//!
//! Human-readable formats get bytes as a base64 string and dateTime as an ISO 8601
//! string (what JSON clients expect); binary formats get raw bytes.

use crate::{DateTime, Gather, Str, Value};
use base64::Engine as _;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Nil => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Double(d) => s.serialize_f64(*d),
            Value::String(v) => s.serialize_str(v),
            Value::Bytes(b) if s.is_human_readable() => {
                s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(b))
            }
            Value::Bytes(b) => s.serialize_bytes(b),
            Value::DateTime(d) => s.serialize_str(&d.to_iso8601()),
            Value::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Struct(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m.iter() {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an RPC value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    /// Values above i64::MAX do not fit the model's int. One that a double holds exactly
    /// (2^63, 2^64 - 2^11, ...) becomes that double; any other is an error rather than a
    /// silently different number.
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        if let Ok(i) = i64::try_from(v) {
            return Ok(Value::Int(i));
        }
        u64_as_exact_f64(v).map(Value::Double).ok_or_else(|| {
            E::custom(format_args!(
                "integer {v} is beyond the 64-bit signed range and no double holds it exactly"
            ))
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Double(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(Str::new(v)))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(Str::from(v)))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Value, E> {
        Ok(Value::Bytes(v.to_vec()))
    }
    fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Value, E> {
        Ok(Value::Bytes(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // Cap the pre-allocation: a hostile size hint must not reserve gigabytes.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        // Most formats (JSON above all) give no size hint: gathered, then made into a
        // map of their number, as rpcmux's own readers do (`Gather`).
        let mut members = Gather::new();
        while let Some(k) = map.next_key::<Str>()? {
            let v = map.next_value()?;
            members.push(k, v);
        }
        Ok(Value::Struct(Box::new(members.into_map())))
    }
}

/// `v` as a double, if the double is exactly `v`. (`v as f64` rounds; converting back
/// with `as u64` saturates at u64::MAX, so 2^64 must be ruled out first.)
pub(crate) fn u64_as_exact_f64(v: u64) -> Option<f64> {
    let d = v as f64;
    (d < 18_446_744_073_709_551_616.0 && d as u64 == v).then_some(d)
}

/// Parse a dateTime from its ISO 8601 string (for protocols that carry it as text).
impl std::str::FromStr for DateTime {
    type Err = de::value::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateTime::parse(s).ok_or_else(|| de::Error::custom(format!("bad dateTime {s:?}")))
    }
}

impl<'de> serde::Deserialize<'de> for crate::Map {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<crate::Map, D::Error> {
        match Value::deserialize(d)? {
            Value::Struct(m) => Ok(*m),
            other => Err(serde::de::Error::invalid_type(
                crate::de::unexpected(&other),
                &"a map",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vstruct;

    #[test]
    fn json_round_trip_keeps_order_and_types() {
        let text = r#"{"z":1,"a":[true,null,2.5,"s"],"big":9223372036854775808}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        let keys: Vec<_> = v.as_struct().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "a", "big"]);
        assert_eq!(v.get("big"), Some(&Value::Double(9223372036854775808.0)));
        let back = serde_json::to_string(&v).unwrap();
        assert!(
            back.starts_with(r#"{"z":1,"a":[true,null,2.5,"s"]"#),
            "{back}"
        );
    }

    #[test]
    fn u64_beyond_i64_is_an_exact_double_or_an_error() {
        let v: Value = serde_json::from_str("18446744073709549568").unwrap();
        assert_eq!(v, Value::Double(18446744073709549568.0));
        for inexact in ["18446744073709551615", "9223372036854775809"] {
            let err = serde_json::from_str::<Value>(inexact).unwrap_err();
            assert!(
                err.to_string().contains("no double holds it exactly"),
                "{err}"
            );
        }
        assert_eq!(u64_as_exact_f64(u64::MAX), None);
        assert_eq!(u64_as_exact_f64(1 << 63), Some(9223372036854775808.0));
    }

    #[test]
    fn bytes_and_datetime_become_strings_in_json() {
        let v = vstruct! {
            "b" => Value::Bytes(b"hi".to_vec()),
            "d" => DateTime::from_ymd_hms(2002, 1, 26, 7, 30, 0).unwrap(),
        };
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"b":"aGk=","d":"2002-01-26T07:30:00Z"}"#
        );
    }
}
