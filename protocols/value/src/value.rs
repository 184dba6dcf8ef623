//! [`Value`], the data model, and [`Params`], a call's parameters.

use crate::map::Members;
use crate::{DateTime, Str};

/// A struct's members: names and values in the order they came (see [`Members`], the
/// representation, generic only so that it needs no `Value` of its own).
pub type Map = Members<Value>;

/// A dynamically typed RPC value.
///
/// 32 bytes: a struct's map is boxed, because an `IndexMap` inline made every value
/// 64 bytes, and a decoded request is mostly small values (a 16 MiB JSON array of small
/// integers is 8 million of them: 512 MiB at 64 bytes, 256 MiB at 32).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    /// No value (XML-RPC `<nil/>`, JSON `null`, msgpack nil).
    #[default]
    Nil,
    /// A boolean.
    Bool(bool),
    /// An integer (XML-RPC `i4`/`i8`; JSON and msgpack integers that fit in i64).
    Int(i64),
    /// A double.
    Double(f64),
    /// A UTF-8 string (inline up to 24 bytes: [`Str`]).
    String(Str),
    /// Raw bytes (XML-RPC base64; msgpack bin; a base64 string in JSON).
    Bytes(Vec<u8>),
    /// A date and time (XML-RPC `dateTime.iso8601`, msgpack timestamp).
    DateTime(DateTime),
    /// An ordered list.
    Array(Vec<Value>),
    /// Named members, in order; boxed to keep `Value` at 32 bytes.
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

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if this is one (a double is not converted).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The members, if this is a struct.
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
///
/// ```
/// use rpcmux_value::{vstruct, Value};
/// let vm = vstruct! { "vmId" => "vm1", "memSize" => 1024 };
/// assert_eq!(vm.get("memSize"), Some(&Value::Int(1024)));
/// ```
#[macro_export]
macro_rules! vstruct {
    ($($k:expr => $v:expr),* $(,)?) => {{
        let mut m = $crate::Map::new();
        $( m.insert($k, $crate::Value::from($v)); )*
        $crate::Value::Struct(::std::boxed::Box::new(m))
    }};
}

/// Call parameters as a protocol delivers them: by position (XML-RPC, msgpack-rpc,
/// JSON arrays) or by name (JSON objects, `k=v` on the command line).
#[derive(Debug, Clone, PartialEq)]
pub enum Params {
    /// In order, matched to the verb's declared parameters by position.
    Positional(Vec<Value>),
    /// By name, matched to the declared parameters' names.
    Named(Map),
}

impl Default for Params {
    fn default() -> Self {
        Params::Positional(Vec::new())
    }
}

impl Params {
    /// How many parameters were given.
    pub fn len(&self) -> usize {
        match self {
            Params::Positional(v) => v.len(),
            Params::Named(m) => m.len(),
        }
    }

    /// True when no parameter was given.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
