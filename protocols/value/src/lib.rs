//! The one data model every rpcmux protocol speaks.
//!
//! A [`Value`] is what XML-RPC, JSON-RPC and MessagePack-RPC can all carry; an
//! [`RpcError`] is the one error shape that each protocol maps into its own
//! (XML-RPC fault, JSON-RPC error object, msgpack-rpc error field, STOMP ERROR).
//! Protocol crates depend only on this crate, so each stays usable on its own.

mod datetime;
mod de;
mod error;
mod from;
mod ser;
mod serde_impl;

pub use datetime::DateTime;
pub use de::{from_value, ValueError};
pub use error::RpcError;
pub use ser::to_value;

/// A struct's members, in the order they arrived (so echo round trips keep order).
///
/// Hashed with foldhash, randomly seeded per process: SipHash (std's default) cost
/// 5-10% of decoding a struct-heavy request, and a per-process seed still keeps
/// attacker-chosen keys from being made to collide. Build one with `Map::default()`.
pub type Map = indexmap::IndexMap<String, Value, foldhash::fast::RandomState>;

/// A dynamically typed RPC value.
///
/// 32 bytes: a struct's map is boxed, because an `IndexMap` inline made every value
/// 64 bytes, and a decoded request is mostly small values (a 16 MiB JSON array of small
/// integers is 8 million of them: 512 MiB at 64 bytes, 256 MiB at 32).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Nil,
    Bool(bool),
    Int(i64),
    Double(f64),
    String(String),
    Bytes(Vec<u8>),
    DateTime(DateTime),
    Array(Vec<Value>),
    Struct(Box<Map>),
}

impl Value {
    /// A short name of the type, for error messages ("expected int, got string").
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Double(_) => "double",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::DateTime(_) => "dateTime",
            Value::Array(_) => "array",
            Value::Struct(_) => "struct",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_struct(&self) -> Option<&Map> {
        match self {
            Value::Struct(m) => Some(m),
            _ => None,
        }
    }

    /// Member `key` of a struct, if this is a struct that has it.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_struct().and_then(|m| m.get(key))
    }
}

/// Build a [`Value::Struct`] from `key => value` pairs.
#[macro_export]
macro_rules! vstruct {
    ($($k:expr => $v:expr),* $(,)?) => {{
        let mut m = $crate::Map::default();
        $( m.insert(::std::string::String::from($k), $crate::Value::from($v)); )*
        $crate::Value::Struct(::std::boxed::Box::new(m))
    }};
}

/// Call parameters as a protocol delivers them: by position (XML-RPC, msgpack-rpc,
/// JSON arrays) or by name (JSON objects, `k=v` on the command line).
#[derive(Debug, Clone, PartialEq)]
pub enum Params {
    Positional(Vec<Value>),
    Named(Map),
}

impl Default for Params {
    fn default() -> Self {
        Params::Positional(Vec::new())
    }
}

impl Params {
    pub fn len(&self) -> usize {
        match self {
            Params::Positional(v) => v.len(),
            Params::Named(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
