//! [`Map`](crate::Map), a struct's members: a vector of `(name, value)` pairs in the order they
//! came, looked up by a linear scan, with a hash index only past [`INDEX_AT`] members.
//!
//! Why not a hash map: an RPC struct has a handful to a few dozen members, read once in
//! order and written back in order. A hash map paid a hash per member name on every
//! insert and a table allocation per struct (`IndexMap::insert_full` was 9 % of a msgpack
//! echo of a 28-member struct), for lookups a verb makes a few of. A scan over 5-30 names
//! compares lengths first and rarely touches the text. Past [`INDEX_AT`] members (a
//! hostile or unusual struct with thousands) a hash index is built, so inserting and
//! looking up stay O(1) and a 100,000-member struct is no quadratic trap.
//!
//! What a user may rely on, as with the `IndexMap` it replaces:
//! - members iterate in insertion order;
//! - a repeated name keeps its first place and takes its last value (`insert`);
//! - two maps are equal when they hold the same names with equal values, in any order.

use crate::Str;
use std::fmt;
use std::hash::BuildHasher;

/// From this many members on, a map keeps a hash index of its names. Measured with
/// `benches/map.rs` (docs/benchmarks.md, "Map index threshold"): building a map from
/// decoded pairs, the index pays for itself from 16-20 members (the scan for repeated
/// names is quadratic); building it and reading every member back, from 20-24. 24 is
/// where both agree the index costs no more than the scan.
pub(crate) const INDEX_AT: usize = 24;

/// A struct's members, in the order they arrived (so echo round trips keep order).
///
/// ```
/// use rpcmux_value::{Map, Value};
/// let mut m = Map::new();
/// m.insert("name", Value::from("web"));
/// m.insert("memSize", Value::from(1024));
/// assert_eq!(m.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["name", "memSize"]);
/// let v = Value::from(m);
/// assert_eq!(v.get("memSize"), Some(&Value::Int(1024)));
/// ```
#[derive(Clone)]
pub struct Members<V> {
    entries: Vec<(Str, V)>,
    /// Positions in `entries`, by name; built when the map reaches [`INDEX_AT`].
    index: Option<Box<Index>>,
}

/// The hash index of a large map. Seeded per process (foldhash): attacker-chosen names
/// cannot be made to collide.
#[derive(Clone)]
struct Index {
    table: hashbrown::HashTable<usize>,
    state: foldhash::fast::RandomState,
}

impl<V> Default for Members<V> {
    fn default() -> Self {
        Members {
            entries: Vec::new(),
            index: None,
        }
    }
}

impl Index {
    fn build<V>(entries: &[(Str, V)]) -> Box<Index> {
        let mut ix = Box::new(Index {
            table: hashbrown::HashTable::with_capacity(entries.len()),
            state: foldhash::fast::RandomState::default(),
        });
        for (i, (k, _)) in entries.iter().enumerate() {
            let h = ix.state.hash_one(k.as_str());
            ix.table
                .insert_unique(h, i, |&j| ix.state.hash_one(entries[j].0.as_str()));
        }
        ix
    }

    /// The index of `entries` if no name repeats in them; `None` at the first repeat.
    fn build_unique<V>(entries: &[(Str, V)]) -> Option<Box<Index>> {
        let mut ix = Box::new(Index {
            table: hashbrown::HashTable::with_capacity(entries.len()),
            state: foldhash::fast::RandomState::default(),
        });
        for (i, (k, _)) in entries.iter().enumerate() {
            let h = ix.state.hash_one(k.as_str());
            if ix.table.find(h, |&j| entries[j].0 == *k).is_some() {
                return None;
            }
            ix.table
                .insert_unique(h, i, |&j| ix.state.hash_one(entries[j].0.as_str()));
        }
        Some(ix)
    }

    fn find<V>(&self, entries: &[(Str, V)], key: &str) -> Option<usize> {
        let h = self.state.hash_one(key);
        self.table
            .find(h, |&i| entries[i].0.as_str() == key)
            .copied()
    }
}

impl<V> Members<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty map with room for `n` members.
    pub fn with_capacity(n: usize) -> Self {
        Members {
            entries: Vec::with_capacity(n),
            index: None,
        }
    }

    /// How many members.
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no members.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The position of member `key`.
    #[inline]
    pub fn get_index_of(&self, key: &str) -> Option<usize> {
        match &self.index {
            Some(ix) => ix.find(&self.entries, key),
            None => self.entries.iter().position(|(k, _)| k.as_str() == key),
        }
    }

    /// Member `key`'s value.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&V> {
        self.get_index_of(key).map(|i| &self.entries[i].1)
    }

    /// Member `key`'s value, to change it.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.get_index_of(key).map(|i| &mut self.entries[i].1)
    }

    /// Member `key`'s name and value.
    pub fn get_key_value(&self, key: &str) -> Option<(&Str, &V)> {
        self.get_index_of(key).map(|i| {
            let (k, v) = &self.entries[i];
            (k, v)
        })
    }

    /// Whether member `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get_index_of(key).is_some()
    }

    /// The member at position `i`.
    pub fn get_index(&self, i: usize) -> Option<(&Str, &V)> {
        self.entries.get(i).map(|(k, v)| (k, v))
    }

    /// The first member.
    pub fn first(&self) -> Option<(&Str, &V)> {
        self.get_index(0)
    }

    /// Set member `key` to `value`. A new name goes last; a name already there keeps
    /// its place and the old value is returned.
    pub fn insert(&mut self, key: impl Into<Str>, value: V) -> Option<V> {
        let key = key.into();
        match self.get_index_of(&key) {
            Some(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            None => {
                self.push_new(key, value);
                None
            }
        }
    }

    /// Append a member known not to be there yet (checked by the caller).
    fn push_new(&mut self, key: Str, value: V) {
        let i = self.entries.len();
        if let Some(ix) = &mut self.index {
            let h = ix.state.hash_one(key.as_str());
            let entries = &self.entries;
            let state = &ix.state;
            ix.table
                .insert_unique(h, i, |&j| state.hash_one(entries[j].0.as_str()));
        }
        self.entries.push((key, value));
        if self.index.is_none() && self.entries.len() >= INDEX_AT {
            self.index = Some(Index::build(&self.entries));
        }
    }

    /// Take member `key` out, keeping the others in order (O(n)).
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let i = self.get_index_of(key)?;
        let (_, v) = self.entries.remove(i);
        self.reindex();
        Some(v)
    }

    /// Take member `key` out, putting the last member in its place (O(1) without an
    /// index; use it when order no longer matters).
    pub fn swap_remove(&mut self, key: &str) -> Option<V> {
        let i = self.get_index_of(key)?;
        let (_, v) = self.entries.swap_remove(i);
        self.reindex();
        Some(v)
    }

    /// Keep only the members `f` says yes to, in order.
    pub fn retain(&mut self, mut f: impl FnMut(&Str, &mut V) -> bool) {
        self.entries.retain_mut(|(k, v)| f(k, v));
        self.reindex();
    }

    /// Positions moved: the index (if the map still needs one) is built again.
    fn reindex(&mut self) {
        if self.index.is_some() {
            self.index = (self.entries.len() >= INDEX_AT).then(|| Index::build(&self.entries));
        }
    }

    /// The members, in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_, V> {
        Iter(self.entries.iter())
    }

    /// The members, in order, values changeable.
    pub fn iter_mut(&mut self) -> IterMut<'_, V> {
        IterMut(self.entries.iter_mut())
    }

    /// The names, in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &Str> + DoubleEndedIterator {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values, in order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &V> + DoubleEndedIterator {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values, in order, changeable.
    pub fn values_mut(&mut self) -> impl ExactSizeIterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// The members as a slice of pairs, in order: the cheapest way to walk them.
    #[inline]
    pub fn as_slice(&self) -> &[(Str, V)] {
        &self.entries
    }

    /// Build from pairs read in order, a repeated name keeping its first place and its
    /// last value. The vector becomes the map's storage when no name repeats.
    pub fn from_pairs(pairs: Vec<(Str, V)>) -> Self {
        // The common case, names all different: the decoder's vector becomes the map
        // as it is (no second vector), with an index when it is long enough.
        if pairs.len() < INDEX_AT {
            if !has_repeat_small(&pairs) {
                return Members {
                    entries: pairs,
                    index: None,
                };
            }
        } else if let Some(index) = Index::build_unique(&pairs) {
            return Members {
                entries: pairs,
                index: Some(index),
            };
        }
        // A name repeats: one pass through a hash table, a repeat keeping its first
        // place and taking the last value, as `insert` does.
        let state = foldhash::fast::RandomState::default();
        let mut table = hashbrown::HashTable::with_capacity(pairs.len());
        let mut entries: Vec<(Str, V)> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            let h = state.hash_one(k.as_str());
            match table.find(h, |&i: &usize| entries[i].0 == k) {
                Some(&i) => entries[i].1 = v,
                None => {
                    table.insert_unique(h, entries.len(), |&j| {
                        state.hash_one(entries[j].0.as_str())
                    });
                    entries.push((k, v));
                }
            }
        }
        let index = (entries.len() >= INDEX_AT).then(|| Box::new(Index { table, state }));
        Members { entries, index }
    }
}

/// Whether a name repeats among fewer than [`INDEX_AT`] pairs (lengths compared first).
fn has_repeat_small<V>(pairs: &[(Str, V)]) -> bool {
    pairs
        .iter()
        .enumerate()
        .any(|(i, (k, _))| pairs[..i].iter().any(|(p, _)| p.as_str() == k.as_str()))
}

/// Equal when both hold the same names with equal values, in any order (as `IndexMap`).
impl<V: PartialEq> PartialEq for Members<V> {
    fn eq(&self, other: &Members<V>) -> bool {
        self.len() == other.len()
            && self
                .entries
                .iter()
                .all(|(k, v)| other.get(k).is_some_and(|o| o == v))
    }
}

impl<V: fmt::Debug> fmt::Debug for Members<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.entries.iter().map(|(k, v)| (k, v)))
            .finish()
    }
}

/// The members of a [`Map`](crate::Map) by reference, in order.
#[derive(Clone)]
pub struct Iter<'a, V>(std::slice::Iter<'a, (Str, V)>);

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a Str, &'a V);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k, v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<V> ExactSizeIterator for Iter<'_, V> {}

impl<V> DoubleEndedIterator for Iter<'_, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}

/// The members of a [`Map`](crate::Map), values changeable, in order.
pub struct IterMut<'a, V>(std::slice::IterMut<'a, (Str, V)>);

impl<'a, V> Iterator for IterMut<'a, V> {
    type Item = (&'a Str, &'a mut V);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (&*k, v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<V> ExactSizeIterator for IterMut<'_, V> {}

impl<V> IntoIterator for Members<V> {
    type Item = (Str, V);
    type IntoIter = std::vec::IntoIter<(Str, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a, V> IntoIterator for &'a Members<V> {
    type Item = (&'a Str, &'a V);
    type IntoIter = Iter<'a, V>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, V> IntoIterator for &'a mut Members<V> {
    type Item = (&'a Str, &'a mut V);
    type IntoIter = IterMut<'a, V>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

impl<V: serde::Serialize> serde::Serialize for Members<V> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Map, Value};

    fn names(m: &Map) -> Vec<&str> {
        m.keys().map(|k| k.as_str()).collect()
    }

    #[test]
    fn repeated_names_keep_first_place_and_last_value_at_every_size() {
        for n in [2, INDEX_AT - 1, INDEX_AT, 3 * INDEX_AT] {
            let mut pairs: Vec<(Str, Value)> = (0..n)
                .map(|i| (Str::from(format!("k{i}")), Value::Int(i as i64)))
                .collect();
            pairs.push(("k0".into(), Value::from("last")));
            let from_pairs = Map::from_pairs(pairs.clone());
            let mut inserted = Map::new();
            for (k, v) in pairs {
                inserted.insert(k, v);
            }
            for m in [&from_pairs, &inserted] {
                assert_eq!(m.len(), n);
                assert_eq!(m.get_index(0).map(|(k, _)| k.as_str()), Some("k0"));
                assert_eq!(m.get("k0"), Some(&Value::from("last")));
                assert_eq!(
                    m.get(&format!("k{}", n - 1)),
                    Some(&Value::Int(n as i64 - 1))
                );
                assert_eq!(m.get("absent"), None);
            }
            assert_eq!(from_pairs.index.is_some(), n >= INDEX_AT);
        }
    }

    #[test]
    fn many_repeats_of_few_names_make_few_members_and_no_index() {
        let pairs: Vec<(Str, Value)> = (0..4 * INDEX_AT)
            .map(|i| (Str::from(["a", "b"][i % 2]), Value::Int(i as i64)))
            .collect();
        let m = Map::from_pairs(pairs);
        assert_eq!(m.len(), 2);
        assert!(m.index.is_none());
        assert_eq!(m.get("a"), Some(&Value::Int(4 * INDEX_AT as i64 - 2)));
        assert_eq!(m.get("b"), Some(&Value::Int(4 * INDEX_AT as i64 - 1)));
    }

    #[test]
    fn removing_keeps_lookups_right_across_the_index_threshold() {
        let mut m: Map = (0..INDEX_AT + 2)
            .map(|i| (format!("k{i}"), i as i64))
            .collect();
        assert!(m.index.is_some());
        assert_eq!(m.remove("k1"), Some(Value::Int(1)));
        assert_eq!(m.swap_remove("k0"), Some(Value::Int(0)));
        assert_eq!(m.len(), INDEX_AT);
        for i in 2..INDEX_AT + 2 {
            assert_eq!(m.get(&format!("k{i}")), Some(&Value::Int(i as i64)), "k{i}");
        }
        m.retain(|k, _| k.as_str() != "k5");
        assert!(m.index.is_none());
        assert_eq!(m.get("k5"), None);
        assert_eq!(m.get("k7"), Some(&Value::Int(7)));
        assert_eq!(names(&m)[0], format!("k{}", INDEX_AT + 1));
    }

    #[test]
    fn equality_ignores_order_as_a_map_does() {
        let a: Map = [("x", 1), ("y", 2)].into_iter().collect();
        let b: Map = [("y", 2), ("x", 1)].into_iter().collect();
        let c: Map = [("y", 2), ("x", 3)].into_iter().collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(names(&b), ["y", "x"]);
    }

    #[test]
    fn a_large_map_is_indexed_and_finds_every_member() {
        // Without the index, inserting these is 5e9 name comparisons.
        let m: Map = (0..100_000)
            .map(|i| (format!("member{i}"), i as i64))
            .collect();
        assert_eq!(m.len(), 100_000);
        assert!(m.index.as_ref().is_some_and(|ix| ix.table.len() == 100_000));
        for i in (0..100_000).step_by(997) {
            assert_eq!(m.get(&format!("member{i}")), Some(&Value::Int(i)));
        }
    }
}
