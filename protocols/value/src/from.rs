//! Conversions between Rust types and [`Value`], both ways.
//!
//! `TryFrom<Value>` is what verb handlers use to take typed parameters; its error
//! names the expected and the actual type, and becomes invalid-params (-32602).

use crate::{DateTime, Map, Str, Value};

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self { Value::Int(v as i64) }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32);

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Double(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::String(Str::new(v))
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::String(Str::from(v))
    }
}
impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::String(Str::new(v))
    }
}
impl From<Str> for Value {
    fn from(v: Str) -> Self {
        Value::String(v)
    }
}
impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value::Bytes(v)
    }
}
impl From<DateTime> for Value {
    fn from(v: DateTime) -> Self {
        Value::DateTime(v)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::Array(v)
    }
}
impl From<Map> for Value {
    fn from(v: Map) -> Self {
        Value::Struct(Box::new(v))
    }
}
impl From<()> for Value {
    fn from(_: ()) -> Self {
        Value::Nil
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Nil, Into::into)
    }
}

/// Why a [`Value`] did not convert: expected type and what came instead.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeMismatch {
    /// The type asked for ("int", "string", ...).
    pub expected: &'static str,
    /// The type the value has ([`Value::type_name`]).
    pub got: &'static str,
}

impl std::fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "expected {}, got {}", self.expected, self.got)
    }
}

impl std::error::Error for TypeMismatch {}

fn mismatch(expected: &'static str, v: &Value) -> TypeMismatch {
    TypeMismatch {
        expected,
        got: v.type_name(),
    }
}

impl TryFrom<Value> for i64 {
    type Error = TypeMismatch;
    fn try_from(v: Value) -> Result<Self, Self::Error> {
        match v {
            Value::Int(i) => Ok(i),
            other => Err(mismatch("int", &other)),
        }
    }
}

impl TryFrom<Value> for f64 {
    type Error = TypeMismatch;
    /// Ints widen to double: clients often send `1` where a double is meant.
    fn try_from(v: Value) -> Result<Self, Self::Error> {
        match v {
            Value::Double(d) => Ok(d),
            Value::Int(i) => Ok(i as f64),
            other => Err(mismatch("double", &other)),
        }
    }
}

impl TryFrom<Value> for bool {
    type Error = TypeMismatch;
    fn try_from(v: Value) -> Result<Self, Self::Error> {
        match v {
            Value::Bool(b) => Ok(b),
            other => Err(mismatch("bool", &other)),
        }
    }
}

impl TryFrom<Value> for String {
    type Error = TypeMismatch;
    fn try_from(v: Value) -> Result<Self, Self::Error> {
        match v {
            Value::String(s) => Ok(s.into_string()),
            other => Err(mismatch("string", &other)),
        }
    }
}

impl TryFrom<Value> for Str {
    type Error = TypeMismatch;
    fn try_from(v: Value) -> Result<Self, Self::Error> {
        match v {
            Value::String(s) => Ok(s),
            other => Err(mismatch("string", &other)),
        }
    }
}

impl TryFrom<Value> for Vec<Value> {
    type Error = TypeMismatch;
    fn try_from(v: Value) -> Result<Self, Self::Error> {
        match v {
            Value::Array(a) => Ok(a),
            other => Err(mismatch("array", &other)),
        }
    }
}

impl TryFrom<Value> for Map {
    type Error = TypeMismatch;
    fn try_from(v: Value) -> Result<Self, Self::Error> {
        match v {
            Value::Struct(m) => Ok(*m),
            other => Err(mismatch("struct", &other)),
        }
    }
}

impl<K: Into<Str>, V: Into<Value>> FromIterator<(K, V)> for Map {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = Map::new();
        m.extend(iter);
        m
    }
}

impl<K: Into<Str>, V: Into<Value>> Extend<(K, V)> for Map {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_conversions_name_the_mismatch() {
        assert_eq!(i64::try_from(Value::Int(7)), Ok(7));
        assert_eq!(f64::try_from(Value::Int(2)), Ok(2.0));
        let err = i64::try_from(Value::from("7")).unwrap_err();
        assert_eq!(err.to_string(), "expected int, got string");
        assert_eq!(Value::from(Some(3u8)), Value::Int(3));
        assert_eq!(Value::from(None::<bool>), Value::Nil);
    }
}
