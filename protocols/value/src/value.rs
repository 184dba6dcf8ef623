//! [`Value`], the data model; [`Map`], a struct's members (the two hold each other, so
//! they live in one file); [`Params`], a call's parameters.

use crate::DateTime;
use std::fmt;
use std::ops::{Deref, DerefMut};

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
    /// A UTF-8 string.
    String(String),
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
        $( m.insert(::std::string::String::from($k), $crate::Value::from($v)); )*
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

/// The ordered map inside a [`Map`], with its hasher.
type Inner = indexmap::IndexMap<String, Value, foldhash::fast::RandomState>;

/// A struct's members, in the order they arrived (so echo round trips keep order).
///
/// Hashed with foldhash, randomly seeded per process: SipHash (std's default) cost
/// 5-10% of decoding a struct-heavy request, and a per-process seed still keeps
/// attacker-chosen keys from being made to collide. A newtype rather than an alias of
/// `IndexMap` so that `Map::new()` exists (`IndexMap::new` is only for std's hasher);
/// every `IndexMap` method is reached through `Deref`, at no cost.
///
/// ```
/// use rpcmux_value::{Map, Value};
/// let mut m = Map::new();
/// m.insert("name".into(), Value::from("web"));
/// m.insert("memSize".into(), Value::from(1024));
/// assert_eq!(m.keys().collect::<Vec<_>>(), ["name", "memSize"]);
/// let v = Value::from(m);
/// assert_eq!(v.get("memSize"), Some(&Value::Int(1024)));
/// ```
#[derive(Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Map(Inner);

impl Map {
    /// An empty map.
    pub fn new() -> Self {
        Map::default()
    }

    /// An empty map with room for `n` members.
    pub fn with_capacity(n: usize) -> Self {
        Map(Inner::with_capacity_and_hasher(n, Default::default()))
    }

    /// The `IndexMap` itself.
    pub fn into_inner(self) -> Inner {
        self.0
    }
}

impl Deref for Map {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl DerefMut for Map {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.0
    }
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<Inner> for Map {
    fn from(m: Inner) -> Self {
        Map(m)
    }
}

impl<K: Into<String>, V: Into<Value>> FromIterator<(K, V)> for Map {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Map(iter
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect())
    }
}

impl<K: Into<String>, V: Into<Value>> Extend<(K, V)> for Map {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        self.0
            .extend(iter.into_iter().map(|(k, v)| (k.into(), v.into())))
    }
}

impl IntoIterator for Map {
    type Item = (String, Value);
    type IntoIter = indexmap::map::IntoIter<String, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a String, &'a Value);
    type IntoIter = indexmap::map::Iter<'a, String, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Map {
    type Item = (&'a String, &'a mut Value);
    type IntoIter = indexmap::map::IterMut<'a, String, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}
