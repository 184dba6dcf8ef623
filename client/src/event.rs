//! Events a server sends on a subscription, as the client hands them on: the name, the
//! params as the publisher gave them, and the id the server gave the event (issue 40:
//! `ORIGIN-SEQ`, from STOMP's `event-id` header or the `event_id` member the server puts
//! in a resumable subscription's params).

use rpcmux_value::{Params, Value};

/// One event received on a subscription.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Its name, e.g. `|virt|VM_status|42`.
    pub name: String,
    /// Its params as published (without the `event_id` member the server added).
    pub params: Value,
    /// Its id (`ORIGIN-SEQ`), when the server sent one: STOMP always does, the other
    /// protocols on a subscription made with [`Client::subscribe`](crate::Client::subscribe)
    /// when the params are a struct.
    pub id: Option<String>,
}

impl Event {
    /// The notice a server sends before closing a subscriber that fell behind:
    /// params `{"reason": ..., "first_lost": ID}`.
    pub const LOST: &'static str = "events.lost";

    /// An event from a notification's name and params (a msgpack-rpc notification's one
    /// argument, a JSON-RPC notification's params), `event_id` moved out of them.
    pub(crate) fn from_notification(name: String, params: Value) -> Event {
        let mut params = params;
        let id = match &mut params {
            Value::Struct(m) => match m.remove("event_id") {
                Some(Value::String(id)) => Some(id.into_string()),
                Some(other) => {
                    m.insert("event_id", other);
                    None
                }
                None => None,
            },
            _ => None,
        };
        Event { name, params, id }
    }

    /// A JSON-RPC notification's params as one value (an array or a struct).
    pub(crate) fn params_value(params: Params) -> Value {
        match params {
            Params::Positional(a) => Value::Array(a),
            Params::Named(m) => Value::Struct(Box::new(m)),
        }
    }

    /// Whether this is the server's [`Event::LOST`] notice (not an event).
    pub fn is_lost_notice(&self) -> bool {
        self.name == Event::LOST
    }

    /// The id split into its publishing instance and sequence number, when it has the
    /// server's `ORIGIN-SEQ` form.
    pub fn origin_seq(&self) -> Option<(u64, u64)> {
        let (origin, seq) = self.id.as_deref()?.split_once('-')?;
        Some((u64::from_str_radix(origin, 16).ok()?, seq.parse().ok()?))
    }
}

/// Does an event name match a subscription pattern, as the server decides it: `*` (or
/// an empty pattern) matches all; otherwise the pattern equals the name or is a prefix
/// of it that ends at a separator (`|` or `.`). STOMP subscribes to every event, so the
/// client filters there.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    if pattern.is_empty() || pattern == "*" || pattern == name {
        return true;
    }
    match name.strip_prefix(pattern) {
        Some(rest) => pattern.ends_with(['|', '.']) || rest.starts_with(['|', '.']),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_id_moves_out_of_the_params() {
        let mut m = rpcmux_value::Map::default();
        m.insert("n", 1.into());
        m.insert("event_id", "00000000000000ff-7".into());
        let e = Event::from_notification("|t|1".into(), Value::Struct(Box::new(m)));
        assert_eq!(e.id.as_deref(), Some("00000000000000ff-7"));
        assert_eq!(e.origin_seq(), Some((255, 7)));
        let Value::Struct(m) = &e.params else {
            panic!()
        };
        assert_eq!(m.len(), 1);
        let plain = Event::from_notification("x".into(), Value::Array(vec![]));
        assert_eq!((plain.origin_seq(), plain.id), (None, None));
    }

    #[test]
    fn patterns_as_the_server_has_them() {
        assert!(pattern_matches("*", "a"));
        assert!(pattern_matches("|virt", "|virt|VM_status|1"));
        assert!(pattern_matches("|virt|", "|virt|VM_status|1"));
        assert!(!pattern_matches("|vi", "|virt|VM_status|1"));
        assert!(!pattern_matches("|t", "|other|1"));
    }
}
