//! serde_json's value tree → rpcmux's [`Value`], by the JSON-RPC crate's documented
//! number rules (`rpcmux-jsonrpc` crate docs, "Exactness"): the oracle of
//! `json_value_oracle`. serde_json is built with `float_roundtrip` (as the workspace
//! has it) and without `arbitrary_precision`, which cargo would unify into rpcmux's own
//! serde_json and so change the code under test. Without it an integer literal beyond
//! u64 reaches the tree as a (rounded) double, so the reference cannot tell `1e20`
//! from `100000000000000000000`, nor an exact literal from an inexact one: it marks
//! such doubles as a [`Read::doubt`].
use rpcmux_value::{Map, Value};
use serde_json::Value as Json;

/// 2^63: from here up an integral double may be an integer literal beyond u64 that
/// serde_json rounded.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// A tree read as rpcmux must read it.
#[derive(Debug, Default)]
pub struct Read {
    pub value: Value,
    /// An integral double of magnitude 2^63 or more: maybe a rounded integer literal,
    /// which rpcmux refuses (-32602) unless the double is exactly it.
    pub doubt: bool,
    /// A u64 beyond i64 that no double holds: rpcmux must refuse it (-32602).
    pub inexact: bool,
}

impl Read {
    /// An integer serde_json read as a u64 past i64: inexact unless a double holds it.
    fn see_u64(&mut self, u: u64) {
        if i64::try_from(u).is_err() {
            self.inexact |= u as f64 as u128 != u128::from(u);
        }
    }

    /// A double: a doubt when it is integral and at least 2^63.
    fn see_f64(&mut self, d: f64) {
        self.doubt |= d.fract() == 0.0 && d.abs() >= TWO_63;
    }
}

pub fn read(j: &Json) -> Read {
    let mut r = Read::default();
    r.value = convert(j, &mut r);
    r
}

fn convert(j: &Json, r: &mut Read) -> Value {
    match j {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::Int(i),
            (None, Some(u), _) => {
                r.see_u64(u);
                Value::Double(u as f64)
            }
            (_, _, Some(d)) => {
                r.see_f64(d);
                Value::Double(d)
            }
            _ => unreachable!("a serde_json number is an i64, u64 or f64"),
        },
        Json::String(s) => Value::from(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(|v| convert(v, r)).collect()),
        Json::Object(o) => {
            let mut m = Map::new();
            for (k, v) in o {
                let v = convert(v, r);
                m.insert(k.clone(), v);
            }
            Value::Struct(Box::new(m))
        }
    }
}

/// [`Read::doubt`] and [`Read::inexact`] over every number in `text` (one JSON value),
/// including a member that a later member of the same name overrides: rpcmux judges
/// the params' numbers as they are written, so a repeated name does not hide one (the
/// tree keeps only the last).
pub fn every_number(text: &str) -> Read {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
    struct Walk<'r>(&'r mut Read);
    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, u: u64) -> Result<(), E> {
            self.0.see_u64(u);
            Ok(())
        }
        fn visit_f64<E>(self, d: f64) -> Result<(), E> {
            self.0.see_f64(d);
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element_seed(Seed(&mut *self.0))?.is_some() {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while map.next_key::<IgnoredAny>()?.is_some() {
                map.next_value_seed(Seed(&mut *self.0))?;
            }
            Ok(())
        }
    }
    struct Seed<'r>(&'r mut Read);
    impl<'de> serde::de::DeserializeSeed<'de> for Seed<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(Walk(self.0))
        }
    }
    let mut r = Read::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let _ = (&mut de).deserialize_any(Walk(&mut r));
    r
}

/// What a `Value` becomes once written as JSON and read back, by the documented
/// mapping: NaN and ±infinity have no JSON spelling (`null`), bytes are a base64
/// string, a dateTime its ISO 8601 string.
pub fn as_written(v: &Value) -> Value {
    use base64::Engine as _;
    match v {
        Value::Double(d) if !d.is_finite() => Value::Nil,
        Value::Bytes(b) => Value::from(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::DateTime(d) => Value::from(d.to_iso8601()),
        Value::Array(items) => Value::Array(items.iter().map(as_written).collect()),
        Value::Struct(m) => {
            let m = m.iter().map(|(k, v)| (k.clone(), as_written(v)));
            Value::Struct(Box::new(m.collect()))
        }
        other => other.clone(),
    }
}

/// [`crate::same_value`], but struct members in any order: serde_json's tree (without
/// `preserve_order`, which would change rpcmux's serde_json too) sorts them.
pub fn same_unordered(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_unordered(x, y))
        }
        (Value::Struct(x), Value::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_unordered(v, w)))
        }
        _ => crate::same_value(a, b),
    }
}
