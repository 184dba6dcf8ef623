//! One event, and its encodings made once and shared by every subscriber.

use crate::conn::budget::{Budget, Charge};
use crate::events::EventId;
use bytes::Bytes;
use rpcmux_value::Value;
use std::sync::{Arc, Mutex, MutexGuard};

/// One event, shared by every subscriber that receives it.
#[derive(Debug, Clone)]
pub struct Event {
    /// VDSM-style name, e.g. `|virt|VM_status|<vmID>`.
    pub name: String,
    /// A struct of event data; carries `notify_time` (ms since epoch), as VDSM sends.
    pub params: Value,
    /// Its id, once published (the default, zero, before).
    id: EventId,
    /// The memory the event holds, about (see [`weight`]).
    size: usize,
    /// While outboxes hold it: its encodings and its charge. Shared by clones.
    held: Arc<Mutex<Hold>>,
}

/// How one event is to be written for a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Delivery {
    /// The subscription asked for `event_id` in its notifications.
    pub resumable: bool,
    /// The subscription asked for the `{"subscription": ID, "result": ...}` shape
    /// (jsonrpsee's, Ethereum's): its id and the notification's method.
    pub shape: Option<(u64, Arc<str>)>,
}

/// What an event holds while it waits in outboxes (see `events::outbox`), given back
/// when the last lets go: the retention window keeps only the event itself (its own
/// bound counts that), not its encodings nor a share of the output budget.
#[derive(Debug, Default)]
struct Hold {
    outboxes: usize,
    /// A big event's charge to the output budget.
    charge: Option<Charge>,
    /// The event as each wire format sends it: encoded by the first subscriber that
    /// needs it and shared by the rest (256 subscribers of an 8 MiB event hold one
    /// copy, not 256).
    encoded: Encoded,
}

#[derive(Debug, Default)]
struct Encoded {
    json: Option<Bytes>,
    msgpack: Option<Option<Bytes>>,
    /// The same with `event_id` in the params, for resumable subscriptions.
    json_with_id: Option<Bytes>,
    msgpack_with_id: Option<Option<Bytes>>,
    /// The subscription shape's `result` (`{"name", "params"}`), without and with
    /// `event_id`: shared by every subscription in that shape, each adding its own id
    /// and method around it ([`Notification`]).
    json_result: [Option<Bytes>; 2],
    msgpack_result: [Option<Option<Bytes>>; 2],
}

/// One notification as a session writes it: a few bytes of its own (`head`, `tail`)
/// around bytes every subscriber shares (`body`, charged once).
#[derive(Debug)]
pub(crate) struct Notification {
    pub head: Vec<u8>,
    pub body: Bytes,
    pub tail: &'static [u8],
}

impl Notification {
    /// A notification every subscriber sends alike, whole.
    fn whole(body: Bytes) -> Notification {
        Notification {
            head: Vec::new(),
            body,
            tail: b"",
        }
    }

    /// Its length on the wire.
    pub(crate) fn len(&self) -> usize {
        self.head.len() + self.body.len() + self.tail.len()
    }

    /// Append it to `out`: its own bytes copied, the shared ones not.
    pub(crate) fn put(self, out: &mut crate::conn::out::Out) {
        out.extend_from_slice(&self.head);
        out.put_shared(self.body);
        out.extend_from_slice(self.tail);
    }
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
            id: EventId::default(),
            size,
            held: Arc::default(),
        }
    }

    /// This event with id `id` (as the hub publishes it, or another instance did).
    pub(crate) fn with_id(mut self, id: EventId) -> Event {
        self.id = id;
        self
    }

    /// Its id: unique across a fleet, ordered per publishing instance.
    pub fn id(&self) -> EventId {
        self.id
    }

    /// The params with `event_id` added (a struct's member; other params as they are).
    fn params_with_id(&self) -> Value {
        match &self.params {
            Value::Struct(m) => {
                let mut m = m.clone();
                m.insert("event_id", Value::from(self.id.to_string()));
                Value::Struct(m)
            }
            other => other.clone(),
        }
    }

    /// Room to encode the event in: about what it holds, so a big one is written without
    /// growing its buffer by doubling (which held twice its length, and cutting it to
    /// length then copied it).
    fn encoded_guess(&self) -> usize {
        if self.size > crate::conn::budget::SMALL {
            self.size + 1024
        } else {
            128
        }
    }

    /// About how many bytes of memory the event holds (its name and params).
    pub fn size(&self) -> usize {
        self.size
    }

    fn hold(&self) -> MutexGuard<'_, Hold> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An outbox now holds this event: a big one is charged to `budget` while any does
    /// (small ones are not charged: see [`crate::conn::budget::SMALL`]).
    pub(crate) fn enter_outbox(&self, budget: &Arc<Budget>) {
        let mut hold = self.hold();
        hold.outboxes += 1;
        if self.size > crate::conn::budget::SMALL && hold.charge.is_none() {
            hold.charge = Some(budget.charge(self.size));
        }
    }

    /// An outbox let go of this event, and wrote what it needed (see
    /// [`Event::enter_outbox`]); the last one takes the charge and the encodings along.
    pub(crate) fn leave_outbox(&self) {
        let mut hold = self.hold();
        hold.outboxes = hold.outboxes.saturating_sub(1);
        if hold.outboxes == 0 {
            hold.charge = None;
            hold.encoded = Encoded::default();
        }
    }

    /// The JSON-RPC notification for this event (no line end), encoded once while
    /// outboxes hold it; a big one is charged to `budget` while any connection holds
    /// it. With `with_id`, its params carry `event_id` (a resumable subscription's).
    pub(crate) fn json(&self, budget: &Arc<Budget>, with_id: bool) -> Bytes {
        let mut hold = self.hold();
        let cell = match with_id {
            false => &mut hold.encoded.json,
            true => &mut hold.encoded.json_with_id,
        };
        cell.get_or_insert_with(|| {
            let with = with_id.then(|| self.params_with_id());
            let params = with.as_ref().unwrap_or(&self.params);
            let mut body = Vec::with_capacity(self.encoded_guess());
            rpcmux_jsonrpc::write_notification(&mut body, &self.name, params);
            crate::conn::out::shared(body, budget)
        })
        .clone()
    }

    /// The JSON-RPC notification for a subscription asking `how`: the shared encoding,
    /// or, in the subscription shape
    /// (`{"method": M, "params": {"subscription": ID, "result": {"name", "params"}}}`), a
    /// few bytes of this subscription's own around the shared encoding of `result`: one
    /// publish to 256 such subscribers encoded (and charged) the event 256 times, and a
    /// 15 MiB event killed the server (issue 46).
    pub(crate) fn json_for(&self, budget: &Arc<Budget>, how: &Delivery) -> Notification {
        match &how.shape {
            None => Notification::whole(self.json(budget, how.resumable)),
            Some((id, method)) => {
                let mut head = Vec::with_capacity(64 + method.len());
                head.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
                // A string into a Vec: cannot fail.
                let _ = serde_json::to_writer(&mut head, &**method);
                head.extend_from_slice(br#","params":{"subscription":"#);
                head.extend_from_slice(id.to_string().as_bytes());
                head.extend_from_slice(br#","result":"#);
                let body = self.json_result(budget, how.resumable);
                Notification {
                    head,
                    body,
                    tail: b"}}",
                }
            }
        }
    }

    /// [`Event::json_for`] in msgpack-rpc: `[2, M, [{"subscription": ID, "result": R}]]`
    /// around the shared encoding of `R`.
    pub(crate) fn msgpack_for(&self, budget: &Arc<Budget>, how: &Delivery) -> Option<Notification> {
        match &how.shape {
            None => self.msgpack(budget, how.resumable).map(Notification::whole),
            Some((id, method)) => {
                let body = self.msgpack_result(budget, how.resumable)?;
                let mut head = Vec::with_capacity(32 + method.len());
                // fixarray(3), NOTIFICATION (2), the method, fixarray(1), fixmap(2).
                head.extend_from_slice(&[0x93, 0x02]);
                let _ = rmp::encode::write_str(&mut head, method);
                head.extend_from_slice(&[0x91, 0x82]);
                let _ = rmp::encode::write_str(&mut head, "subscription");
                let _ = rmp::encode::write_uint(&mut head, *id);
                let _ = rmp::encode::write_str(&mut head, "result");
                Some(Notification {
                    head,
                    body,
                    tail: b"",
                })
            }
        }
    }

    /// `{"name": NAME, "params": PARAMS}`, the subscription shape's `result`.
    fn result_value(&self, with_id: bool) -> Value {
        let params = match with_id {
            true => self.params_with_id(),
            false => self.params.clone(),
        };
        let mut result = rpcmux_value::Map::default();
        result.insert("name", Value::from(self.name.clone()));
        result.insert("params", params);
        Value::Struct(Box::new(result))
    }

    /// The subscription shape's `result` in JSON, encoded once while outboxes hold it.
    fn json_result(&self, budget: &Arc<Budget>, with_id: bool) -> Bytes {
        let mut hold = self.hold();
        hold.encoded.json_result[usize::from(with_id)]
            .get_or_insert_with(|| {
                let mut body = Vec::with_capacity(self.encoded_guess());
                // A Value into a Vec: cannot fail (string keys only).
                let _ = serde_json::to_writer(&mut body, &self.result_value(with_id));
                crate::conn::out::shared(body, budget)
            })
            .clone()
    }

    /// The subscription shape's `result` in msgpack, encoded once while outboxes hold it.
    fn msgpack_result(&self, budget: &Arc<Budget>, with_id: bool) -> Option<Bytes> {
        let mut hold = self.hold();
        hold.encoded.msgpack_result[usize::from(with_id)]
            .get_or_insert_with(|| {
                let mut body = Vec::with_capacity(self.encoded_guess());
                match rpcmux_msgpack_rpc::write_value(&mut body, &self.result_value(with_id)) {
                    Ok(()) => Some(crate::conn::out::shared(body, budget)),
                    Err(e) => {
                        tracing::warn!(error = %e, event = %self.name, "event not encodable as msgpack");
                        None
                    }
                }
            })
            .clone()
    }

    /// The msgpack-rpc notification for this event, encoded once (see [`Event::json`]);
    /// `None` when its params cannot be encoded (logged once).
    pub(crate) fn msgpack(&self, budget: &Arc<Budget>, with_id: bool) -> Option<Bytes> {
        let mut hold = self.hold();
        let cell = match with_id {
            false => &mut hold.encoded.msgpack,
            true => &mut hold.encoded.msgpack_with_id,
        };
        cell.get_or_insert_with(|| {
            let mut body = bytes::BytesMut::with_capacity(self.encoded_guess());
            let with = with_id.then(|| self.params_with_id());
            let params = std::slice::from_ref(with.as_ref().unwrap_or(&self.params));
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
    // A map entry: its key's `Str` and its value's slot, plus a word for the hash index
    // a large map keeps.
    const ENTRY: usize = SLOT + std::mem::size_of::<rpcmux_value::Str>() + 8;
    let mut total = SLOT;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => total += s.heap_bytes(),
            Value::Bytes(b) => total += b.capacity(),
            Value::Array(items) => {
                total += items.capacity() * SLOT;
                stack.extend(items.iter());
            }
            Value::Struct(map) => {
                for (k, v) in map.iter() {
                    total += ENTRY + k.heap_bytes();
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
        let s = weight(&Value::from("x".repeat(1000)));
        assert!(s >= 1000, "{s}");
        let nested = Value::Array(vec![Value::from("y".repeat(500)); 100]);
        assert!(weight(&nested) >= 50_000);
        let mut m = rpcmux_value::Map::default();
        m.insert("k", Value::Bytes(vec![0; 2000]));
        assert!(weight(&Value::Struct(Box::new(m))) >= 2000);
    }

    #[test]
    fn a_big_event_is_charged_once_while_outboxes_hold_it() {
        let budget = Budget::new(1 << 30);
        let e = Arc::new(Event::new("e", Value::Bytes(vec![0; 1 << 20])));
        e.enter_outbox(&budget);
        e.enter_outbox(&budget);
        assert_eq!(budget.used(), e.size(), "charged once");
        e.leave_outbox();
        assert_eq!(budget.used(), e.size());
        e.leave_outbox();
        assert_eq!(
            budget.used(),
            0,
            "no outbox holds it: retention alone is not charged"
        );
        let small = Event::new("s", Value::Int(1));
        small.enter_outbox(&budget);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn resumable_encodings_carry_the_id_others_do_not() {
        let budget = Budget::new(1 << 30);
        let mut m = rpcmux_value::Map::default();
        m.insert("vm", Value::from("a"));
        let id = EventId { origin: 1, seq: 7 };
        let e = Event::new("|virt|x", Value::Struct(Box::new(m))).with_id(id);
        let plain = String::from_utf8(e.json(&budget, false).to_vec()).unwrap();
        let with = String::from_utf8(e.json(&budget, true).to_vec()).unwrap();
        assert!(!plain.contains("event_id"), "{plain}");
        assert!(
            with.contains("\"event_id\":\"0000000000000001-7\""),
            "{with}"
        );
        assert!(e.msgpack(&budget, true).unwrap().len() > e.msgpack(&budget, false).unwrap().len());
    }
}
