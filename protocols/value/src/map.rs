//! [`Map`]: a struct's members.

use crate::Value;
use std::fmt;
use std::ops::{Deref, DerefMut};

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
