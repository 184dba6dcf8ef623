//! Verbs that may change while serving: the gateway's upstream verbs, re-learned when an
//! upstream is asked for its list again (periodically, on SIGHUP).
//!
//! The table's own verbs (Rust handlers, built-ins, the demo) are fixed once serving,
//! which lets dispatch find them without a lock. Changing verbs live beside them in one
//! swappable set, consulted only for names the table itself does not own: a Rust verb
//! costs nothing more, an upstream verb one uncontended read lock and a refcount. A call
//! holds its verb (an `Arc`), so a verb dropped from the set still finishes the calls
//! that started on it; later calls get -32601.
//!
//! A `std` `RwLock` around an `Arc`, rather than a lock-free swap crate: writes are rare
//! (a refresh) and a read holds the lock only to clone one `Arc`.

use crate::verbs::names::Names;
use std::sync::{Arc, RwLock};

/// The changing verbs, by name.
/// Verbs by name (the table's `VerbSet` is this with `V = Verb`).
pub(crate) type Set<V> = Names<Arc<V>>;

/// A swappable set of verbs, shared by the table (which reads it) and whoever replaces
/// it (the gateway's refresher).
pub(crate) struct UpstreamVerbs<V> {
    set: RwLock<Arc<Set<V>>>,
}

impl<V> Default for UpstreamVerbs<V> {
    fn default() -> Self {
        UpstreamVerbs {
            set: RwLock::new(Arc::new(Set::default())),
        }
    }
}

impl<V> UpstreamVerbs<V> {
    /// The verb `name`, if the set has it now.
    pub fn get(&self, name: &str) -> Option<Arc<V>> {
        let set = self.set.read().unwrap_or_else(|e| e.into_inner());
        set.get(name).cloned()
    }

    /// The whole set as it is now; later changes do not show in it.
    pub fn snapshot(&self) -> Arc<Set<V>> {
        self.set.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Serve `set` from now on, instead of the previous one.
    #[cfg(feature = "gateway")]
    pub fn replace(&self, set: Set<V>) {
        *self.set.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(set);
    }
}
