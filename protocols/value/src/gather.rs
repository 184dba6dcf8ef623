//! A struct's members gathered as they are read, then made into a [`Map`] at its final
//! size.
//!
//! Neither JSON nor XML-RPC says how many members a struct has before they come, and a
//! map grown one member at a time reallocates and rehashes at every doubling (a fifth of
//! decoding a 28-member struct from JSON). The members wait in a buffer instead, reused
//! from a small per-thread pool, so gathering costs no allocation once warm and the map
//! is allocated once, at exactly its size.

use crate::{Map, Str, Value};
use std::cell::RefCell;

/// Buffers kept per thread (one per nesting level in use), and the largest one kept.
const POOL: usize = 8;
const KEEP_CAPACITY: usize = 256;

thread_local! {
    static FREE: RefCell<Vec<Vec<(Str, Value)>>> = const { RefCell::new(Vec::new()) };
}

/// Members read one at a time, for [`Gather::into_map`]. Its buffer goes back to the
/// pool when it is dropped, whether or not the map was made (a read that fails midway).
///
/// ```
/// use rpcmux_value::{Gather, Value};
/// let mut g = Gather::new();
/// g.push("a".into(), Value::from(1));
/// g.push("b".into(), Value::from(2));
/// g.push("a".into(), Value::from(3));
/// let m = g.into_map();
/// // A repeated name keeps its first place and its last value, as `insert` does.
/// assert_eq!(m.iter().collect::<Vec<_>>().len(), 2);
/// assert_eq!(m.get("a"), Some(&Value::from(3)));
/// assert_eq!(m.get_index(0).map(|(k, _)| k.as_str()), Some("a"));
/// ```
pub struct Gather(Vec<(Str, Value)>);

impl Gather {
    /// An empty gathering, on a pooled buffer when the thread has one.
    #[inline]
    pub fn new() -> Gather {
        Gather(FREE.with(|f| f.borrow_mut().pop()).unwrap_or_default())
    }

    /// One member, in the order read.
    #[inline]
    pub fn push(&mut self, name: Str, value: Value) {
        self.0.push((name, value));
    }

    /// The map, allocated once at the number of members read (a repeated name keeps
    /// its first place and its last value, as `Map::insert` does).
    pub fn into_map(mut self) -> Map {
        let mut pairs = Vec::with_capacity(self.0.len());
        pairs.append(&mut self.0);
        Map::from_pairs(pairs)
    }
}

impl Default for Gather {
    fn default() -> Self {
        Gather::new()
    }
}

impl Drop for Gather {
    fn drop(&mut self) {
        let mut v = std::mem::take(&mut self.0);
        if v.capacity() > KEEP_CAPACITY || v.capacity() == 0 {
            return;
        }
        v.clear();
        // `try_with`: a thread being torn down has no pool left to return to.
        let _ = FREE.try_with(|f| {
            let mut f = f.borrow_mut();
            if f.len() < POOL {
                f.push(v);
            }
        });
    }
}

impl std::fmt::Debug for Gather {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_and_big_ones_freed() {
        let mut g = Gather::new();
        g.push("x".into(), Value::Nil);
        let ptr = g.0.as_ptr();
        drop(g.into_map());
        // The buffer went back to the pool and is handed out again.
        assert_eq!(Gather::new().0.as_ptr(), ptr);
        let mut big = Gather::new();
        for i in 0..=KEEP_CAPACITY {
            big.push(Str::from(i.to_string()), Value::Nil);
        }
        assert_eq!(big.into_map().len(), KEEP_CAPACITY + 1);
        assert!(FREE.with(|f| f.borrow().iter().all(|v| v.capacity() <= KEEP_CAPACITY)));
    }

    #[test]
    fn an_abandoned_gathering_goes_back_empty() {
        let mut g = Gather::new();
        g.push("a".into(), Value::from("x"));
        drop(g);
        assert!(FREE.with(|f| f.borrow().iter().all(Vec::is_empty)));
    }
}
