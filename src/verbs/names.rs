//! Names: the table's hash map, and verb names kept for the life of the process.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// Every call hashes its method name once or twice here. foldhash, seeded per process,
/// not std's SipHash (a visible share of a small call's time): the DoS resistance SipHash
/// buys is for tables clients can insert into, and nothing a client sends is inserted.
pub(crate) type Names<V> = HashMap<String, V, foldhash::fast::RandomState>;

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
