//! The events hub: verbs publish, subscribed sessions receive.
//!
//! Each subscriber has a bounded outbox. Publishing never waits: a subscriber whose
//! outbox is full cannot keep up, so it is dropped (its connection is closed and
//! the fact logged) rather than slowing the publisher or the other subscribers.

use crate::verbs::Session;
use rpcmux_value::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc::error::TrySendError;

/// One event, shared by every subscriber that receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// VDSM-style name, e.g. `|virt|VM_status|<vmID>`.
    pub name: String,
    /// A struct of event data; carries `notify_time` (ms since epoch), as VDSM sends.
    pub params: Value,
}

struct Subscription {
    id: u64,
    pattern: String,
    session: Session,
}

/// Publish/subscribe for server events.
#[derive(Default)]
pub struct EventHub {
    subs: RwLock<Vec<Subscription>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for EventHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventHub").finish_non_exhaustive()
    }
}

/// Does an event name match a subscription pattern? `*` (or an empty pattern) matches
/// all; otherwise the pattern must equal the name or be a prefix of it that ends at a
/// separator (`|` or `.`), so `|virt|` and `|virt` both match `|virt|VM_status|42`.
pub fn matches(pattern: &str, name: &str) -> bool {
    if pattern.is_empty() || pattern == "*" || pattern == name {
        return true;
    }
    match name.strip_prefix(pattern) {
        Some(rest) => pattern.ends_with(['|', '.']) || rest.starts_with(['|', '.']),
        None => false,
    }
}

impl EventHub {
    /// Subscribe a session to events whose name matches `pattern`; returns the subscription id.
    pub fn subscribe(&self, pattern: &str, session: Session) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let mut subs = self.subs.write().unwrap_or_else(|e| e.into_inner());
        subs.push(Subscription {
            id,
            pattern: pattern.to_owned(),
            session,
        });
        id
    }

    /// Remove one subscription; false if it was not there.
    pub fn unsubscribe(&self, id: u64) -> bool {
        let mut subs = self.subs.write().unwrap_or_else(|e| e.into_inner());
        let before = subs.len();
        subs.retain(|s| s.id != id);
        subs.len() != before
    }

    /// Remove every subscription of a connection (when it closes).
    pub fn drop_connection(&self, conn_id: u64) {
        let mut subs = self.subs.write().unwrap_or_else(|e| e.into_inner());
        subs.retain(|s| s.session.conn_id != conn_id);
    }

    /// Does this connection hold any subscription?
    pub fn is_subscribed(&self, conn_id: u64) -> bool {
        let subs = self.subs.read().unwrap_or_else(|e| e.into_inner());
        subs.iter().any(|s| s.session.conn_id == conn_id)
    }

    pub fn subscriber_count(&self) -> usize {
        self.subs.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Publish an event to every matching subscriber; returns how many received it.
    pub fn publish(&self, name: &str, mut params: Map) -> usize {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        params.insert("notify_time".into(), Value::Int(now));
        let event = Arc::new(Event {
            name: name.to_owned(),
            params: Value::Struct(params),
        });
        let mut delivered = 0;
        let mut too_slow = Vec::new();
        {
            let subs = self.subs.read().unwrap_or_else(|e| e.into_inner());
            // One connection subscribed twice still gets one copy.
            let mut seen = std::collections::HashSet::new();
            for s in subs.iter().filter(|s| matches(&s.pattern, name)) {
                if !seen.insert(s.session.conn_id) {
                    continue;
                }
                match s.session.outbox.try_send(event.clone()) {
                    Ok(()) => delivered += 1,
                    Err(TrySendError::Full(_)) => too_slow.push(s.session.conn_id),
                    Err(TrySendError::Closed(_)) => {}
                }
            }
        }
        for conn in too_slow {
            tracing::warn!(
                conn,
                event = name,
                "event subscriber cannot keep up; dropping it"
            );
            let subs = self.subs.read().unwrap_or_else(|e| e.into_inner());
            if let Some(s) = subs.iter().find(|s| s.session.conn_id == conn) {
                s.session.kill.cancel();
            }
            drop(subs);
            self.drop_connection(conn);
        }
        delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    fn session(conn_id: u64, cap: usize) -> (Session, mpsc::Receiver<Arc<Event>>) {
        let (tx, rx) = mpsc::channel(cap);
        let s = Session {
            conn_id,
            outbox: tx,
            kill: CancellationToken::new(),
        };
        (s, rx)
    }

    #[test]
    fn pattern_matching_is_segment_wise() {
        assert!(matches("*", "|virt|VM_status|1"));
        assert!(matches("|virt", "|virt|VM_status|1"));
        assert!(matches("|virt|", "|virt|VM_status|1"));
        assert!(matches("|virt|VM_status|1", "|virt|VM_status|1"));
        assert!(!matches("|vi", "|virt|VM_status|1"));
        assert!(!matches("|net", "|virt|VM_status|1"));
        assert!(matches("jms.queue", "jms.queue.events"));
        assert!(!matches("jms.que", "jms.queue.events"));
    }

    #[test]
    fn slow_subscriber_is_dropped_others_still_served() {
        let hub = EventHub::default();
        let (slow, _slow_rx) = session(1, 1);
        let kill = slow.kill.clone();
        let (fast, mut fast_rx) = session(2, 16);
        hub.subscribe("*", slow);
        hub.subscribe("|virt", fast);
        assert_eq!(hub.publish("|virt|a", Map::default()), 2);
        assert_eq!(
            hub.publish("|virt|b", Map::default()),
            1,
            "slow one is full"
        );
        assert!(kill.is_cancelled());
        assert_eq!(hub.subscriber_count(), 1);
        assert_eq!(fast_rx.try_recv().unwrap().name, "|virt|a");
        let b = fast_rx.try_recv().unwrap();
        assert_eq!(b.name, "|virt|b");
        assert!(b.params.get("notify_time").and_then(Value::as_i64).unwrap() > 0);
    }
}
