//! One event, and its encodings made once and shared by every subscriber.

use crate::conn::budget::{Budget, Charge};
use bytes::Bytes;
use rpcmux_value::Value;
use std::sync::{Arc, OnceLock};

/// One event, shared by every subscriber that receives it.
#[derive(Debug, Clone)]
pub struct Event {
    /// VDSM-style name, e.g. `|virt|VM_status|<vmID>`.
    pub name: String,
    /// A struct of event data; carries `notify_time` (ms since epoch), as VDSM sends.
    pub params: Value,
    /// The event as each wire format sends it: encoded by the first subscriber that
    /// needs it and shared by the rest (256 subscribers of an 8 MiB event hold one
    /// copy, not 256).
    encoded: Encoded,
    /// The memory the event holds, about (see [`weight`]).
    size: usize,
    /// Its charge to the output budget while outboxes hold it (a big event: see
    /// `events::outbox`); shared by clones, given back when the last goes.
    held: Arc<OnceLock<Charge>>,
}

#[derive(Debug, Clone, Default)]
struct Encoded {
    json: OnceLock<Bytes>,
    msgpack: OnceLock<Option<Bytes>>,
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.name == other.name && self.params == other.params
    }
}

impl Event {
    /// An event named `name` carrying `params`.
    pub fn new(name: impl Into<String>, params: Value) -> Event {
        let name = name.into();
        let size = name.len() + weight(&params);
        Event {
            name,
            params,
            encoded: Encoded::default(),
            size,
            held: Arc::default(),
        }
    }

    /// About how many bytes of memory the event holds (its name and params).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Charge a big event to `budget` (once, whoever asks first), for as long as it
    /// lives; small ones are not charged (see [`crate::conn::budget::SMALL`]).
    pub(crate) fn charge_to(&self, budget: &Arc<Budget>) {
        if self.size > crate::conn::budget::SMALL {
            self.held.get_or_init(|| budget.charge(self.size));
        }
    }

    /// The JSON-RPC notification for this event (no line end), encoded once; a big
    /// one is charged to `budget` while any connection holds it.
    pub(crate) fn json(&self, budget: &Arc<Budget>) -> Bytes {
        self.encoded
            .json
            .get_or_init(|| {
                let mut body = Vec::with_capacity(128);
                rpcmux_jsonrpc::write_notification(&mut body, &self.name, &self.params);
                crate::conn::out::shared(body, budget)
            })
            .clone()
    }

    /// The msgpack-rpc notification for this event, encoded once (see [`Event::json`]);
    /// `None` when its params cannot be encoded (logged once).
    pub(crate) fn msgpack(&self, budget: &Arc<Budget>) -> Option<Bytes> {
        self.encoded
            .msgpack
            .get_or_init(|| {
                let mut body = bytes::BytesMut::with_capacity(128);
                let params = std::slice::from_ref(&self.params);
                match rpcmux_msgpack_rpc::encode_notification(&mut body, &self.name, params) {
                    Ok(()) => Some(crate::conn::out::shared(body, budget)),
                    Err(e) => {
                        tracing::warn!(error = %e, event = %self.name, "event not encodable as msgpack");
                        None
                    }
                }
            })
            .clone()
    }
}

/// About how many bytes of memory a value tree holds: each value's slot, and what its
/// strings, bytes, lists and maps hold on the heap. Walked without recursion, so no
/// nesting can overflow the stack.
pub(crate) fn weight(value: &Value) -> usize {
    const SLOT: usize = std::mem::size_of::<Value>();
    // A map entry: its key's `String`, its value's slot and the index's share.
    const ENTRY: usize = SLOT + std::mem::size_of::<String>() + 16;
    let mut total = SLOT;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => total += s.capacity(),
            Value::Bytes(b) => total += b.capacity(),
            Value::Array(items) => {
                total += items.capacity() * SLOT;
                stack.extend(items.iter());
            }
            Value::Struct(map) => {
                for (k, v) in map.iter() {
                    total += ENTRY + k.capacity();
                    stack.push(v);
                }
            }
            _ => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_counts_what_a_tree_holds() {
        let leaf = weight(&Value::Int(1));
        assert_eq!(leaf, std::mem::size_of::<Value>());
        let s = weight(&Value::String("x".repeat(1000)));
        assert!(s >= 1000, "{s}");
        let nested = Value::Array(vec![Value::String("y".repeat(500)); 100]);
        assert!(weight(&nested) >= 50_000);
        let mut m = rpcmux_value::Map::default();
        m.insert("k".into(), Value::Bytes(vec![0; 2000]));
        assert!(weight(&Value::Struct(Box::new(m))) >= 2000);
    }

    #[test]
    fn a_big_event_is_charged_once_while_it_lives() {
        let budget = Budget::new(1 << 30);
        let e = Arc::new(Event::new("e", Value::Bytes(vec![0; 1 << 20])));
        e.charge_to(&budget);
        e.charge_to(&budget);
        assert_eq!(budget.used(), e.size());
        let copy = e.clone();
        drop(e);
        assert_eq!(budget.used(), copy.size());
        drop(copy);
        assert_eq!(budget.used(), 0);
        let small = Event::new("s", Value::Int(1));
        small.charge_to(&budget);
        assert_eq!(budget.used(), 0);
    }
}
