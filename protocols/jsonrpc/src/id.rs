//! The request id: a string, a number or null. Kept as sent, so it echoes back byte-exact.

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Default)]
pub enum Id {
    #[default]
    Null,
    Number(serde_json::Number),
    String(String),
}

impl From<u64> for Id {
    fn from(n: u64) -> Self {
        Id::Number(n.into())
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Null => f.write_str("null"),
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Null => s.serialize_unit(),
            Id::Number(n) => n.serialize(s),
            Id::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, number or null id")
            }
            fn visit_unit<E>(self) -> Result<Id, E> {
                Ok(Id::Null)
            }
            fn visit_i64<E>(self, v: i64) -> Result<Id, E> {
                Ok(Id::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Id, E> {
                Ok(Id::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
                serde_json::Number::from_f64(v)
                    .map(Id::Number)
                    .ok_or_else(|| E::custom("id is not a finite number"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Id, E> {
                Ok(Id::String(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Deserialize a member that is present (even as `null`) as `Some`, so that an absent
/// `id` (a notification) differs from `"id": null` (a request with a null id).
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Id>, D::Error> {
    Id::deserialize(d).map(Some)
}
