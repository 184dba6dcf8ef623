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

use crate::verbs::Verb;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

/// The changing verbs, by name.
pub(crate) type VerbSet = crate::verbs::table::Names<Arc<Verb>>;

/// A swappable set of verbs, shared by the table (which reads it) and whoever replaces
/// it (the gateway's refresher).
#[derive(Default)]
pub(crate) struct Extra {
    set: RwLock<Arc<VerbSet>>,
}

impl Extra {
    /// The verb `name`, if the set has it now.
    pub fn get(&self, name: &str) -> Option<Arc<Verb>> {
        let set = self.set.read().unwrap_or_else(|e| e.into_inner());
        set.get(name).cloned()
    }

    /// The whole set as it is now; later changes do not show in it.
    pub fn snapshot(&self) -> Arc<VerbSet> {
        self.set.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Serve `set` from now on, instead of the previous one.
    #[cfg(feature = "gateway")]
    pub fn replace(&self, set: VerbSet) {
        *self.set.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(set);
    }
}

/// `name` as a `&'static str`, leaked once per distinct name for the life of the
/// process: the access log and metrics name a call's verb without a refcount per call.
/// Interned rather than leaked per registration, so re-learning an upstream's verbs
/// again and again leaks nothing more than the names it ever had.
pub(crate) fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(n) = names.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(n);
    n
}
