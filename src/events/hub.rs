//! The events hub: verbs publish, subscribed sessions receive.
//!
//! With a backend set ([`crate::events::fanout`]), each event published here is also queued to
//! be sent to the other instances, and what they publish is delivered here through
//! [`EventHub::deliver`], by the same rules.
//!
//! Each subscriber has a bounded outbox. Publishing never waits: a subscriber whose
//! outbox is full cannot keep up, so it is told which events it lost (an `events.lost`
//! notice), dropped and closed (logged) rather than slowing the publisher or the other
//! subscribers; it can come back and ask for them (`since`).
//!
//! Every event gets an id ([`EventId`]: this instance and its place in its publishes)
//! and is kept for a while in a bounded window ([`Retention`]), so a subscriber that
//! reconnects subscribes with `since` (an id it received, or `"0"`) and gets, in order,
//! the retained events after it that it may see, then the live ones: with no gap and no
//! duplicate at the seam, because a delivery (window and outboxes) and a subscription
//! never overlap (both hold the subscriber table's lock, a delivery also the window's).
//!
//! Subscriptions are kept per connection (at most `max_subscriptions` each), so a
//! publish visits each subscribed connection once and a closing connection is removed
//! in one step: with one flat list, a million subscriptions from one connection made
//! every publish take 14 ms and every close 1.8 ms. A subscription belongs to its
//! connection: only that connection can cancel it.

use crate::codes::{ERR_OUTPUT_FULL, ERR_SINCE_TOO_OLD, ERR_TOO_MANY_SUBSCRIPTIONS};
use crate::conn::budget::Budget;
pub(crate) use crate::events::options::Options;
use crate::events::outbox::{Delivery, Offer};
use crate::events::retention::{self, Retention};
use crate::events::{Event, EventId, Session, Since};
use rpcmux_value::{Map, RpcError, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// The longest subscription pattern, in bytes: a connection's subscriptions then hold
/// at most `max_subscriptions` x this (64 KiB by default), freed when it closes.
pub const MAX_PATTERN: usize = 1024;

/// One connection's subscriptions and the outbox they deliver to.
struct Subscriber {
    session: Session,
    /// (subscription id, pattern, how its events are written), in the order made.
    patterns: Vec<(u64, String, Options)>,
    /// The id the next subscription of this connection gets, less one.
    next_id: u64,
}

/// A session leaving the table, by whatever path (closed, dropped as too slow), gives
/// its subscriptions back to its connection's and address's counts (`conn_subs`).
impl Drop for Subscriber {
    fn drop(&mut self) {
        self.session.give_subs(self.patterns.len());
    }
}

/// Publish/subscribe for server events.
pub struct EventHub {
    conns: RwLock<HashMap<u64, Subscriber>>,
    max_per_conn: usize,
    /// Events published, subscribers dropped as too slow (for `/metrics`).
    published: AtomicU64,
    dropped: AtomicU64,
    /// Events queued to subscribers, live and replayed (for `/metrics`).
    delivered: AtomicU64,
    replayed: AtomicU64,
    /// This instance's id in every event id it assigns.
    instance: u64,
    /// The window of recent events and the last sequence number given out; locked for a
    /// whole delivery, so events reach the window, the outboxes and the other instances
    /// in the order of their ids.
    order: Mutex<Order>,
    /// The queue to the other instances, when a backend is configured.
    forward: OnceLock<crate::events::forward::Forward>,
    /// The process's output budget: big events are charged to it while outboxes hold
    /// them (set by the server; a hub alone, in tests, charges nothing).
    out_budget: OnceLock<Arc<Budget>>,
}

/// -32602 for a pattern over [`MAX_PATTERN`] bytes.
fn check_pattern(pattern: &str) -> Result<(), RpcError> {
    if pattern.len() > MAX_PATTERN {
        // Event names are short; 384 subscriptions of 2 MiB patterns held 914 MiB.
        return Err(RpcError::invalid_params(format!(
            "pattern of {} bytes; at most {MAX_PATTERN}",
            pattern.len()
        )));
    }
    Ok(())
}

/// -32007 for a `since` the window does not cover: which case (the message starts with
/// it, and `data.reason` names it: `unknown instance`, `restarted instance`, `too old`),
/// and the oldest retained event (`data.oldest`, null when none). A follower tells a
/// restart from its own fault by the case (client/src/follow.rs).
fn too_old(old: retention::TooOld) -> RpcError {
    use retention::Why;
    let oldest = old.oldest.map(|id| id.to_string());
    let (reason, detail) = match old.why {
        Why::Unknown => (
            "unknown instance",
            "since is from an instance this one has never heard of",
        ),
        Why::Restarted => (
            "restarted instance",
            "since is from an earlier run of a restarted instance, which kept none of its events \
             (no [events] dir)",
        ),
        Why::TooOld => ("too old", "since is older than the events retained here"),
    };
    let shown = oldest.as_deref().unwrap_or("none");
    let mut data = Map::default();
    data.insert("reason", Value::from(reason));
    data.insert("oldest", oldest.clone().map_or(Value::Nil, Value::from));
    RpcError::new(
        ERR_SINCE_TOO_OLD,
        format!("{reason}: {detail} (oldest retained: {shown}); subscribe with since \"0\" for all that is retained"),
    )
    .with_data(Value::Struct(Box::new(data)))
}

/// -32002 past the per-session cap.
fn too_many(max: usize) -> RpcError {
    RpcError::new(
        ERR_TOO_MANY_SUBSCRIPTIONS,
        format!("too many subscriptions on this connection (max_subscriptions = {max})"),
    )
}

/// -32006 while an earlier replay still waits past the outbox's bounds.
fn replay_waits() -> RpcError {
    RpcError::new(
        ERR_OUTPUT_FULL,
        "an earlier replay still waits to be sent on this session: read it, then subscribe with since again",
    )
}

/// What a delivery holds locked (see [`EventHub`]'s `order`).
struct Order {
    seq: u64,
    window: Retention,
}

/// The retention window of a hub made with [`EventHub::new`] (`[events]`'s defaults):
/// minutes of the demo's events, tens of seconds of a busy fleet's.
pub(crate) const DEFAULT_RETENTION: retention::Bounds = retention::Bounds {
    events: 65_536,
    bytes: 64 << 20,
    age: std::time::Duration::from_secs(300),
};

impl Default for EventHub {
    fn default() -> Self {
        EventHub::new(crate::Limits::default().max_subscriptions)
    }
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
    /// A hub allowing `max_per_conn` subscriptions per connection.
    pub fn new(max_per_conn: usize) -> Self {
        Self::with_retention(max_per_conn, DEFAULT_RETENTION)
    }

    /// A hub keeping a window of recent events within `bounds`, in memory only (a new
    /// origin: src/events/id.rs).
    pub(crate) fn with_retention(max_per_conn: usize, bounds: retention::Bounds) -> Self {
        let own = crate::events::id::new_origin(crate::events::id::node_part(""));
        Self::with_window(max_per_conn, Retention::new(bounds).owned_by(own))
    }

    /// A hub whose window, origin and last seq are kept as `place` says: with a
    /// directory, loaded from its event log and appended to it from now on
    /// (src/events/log.rs). An error when the log cannot be opened or created.
    pub(crate) fn with_log(
        max_per_conn: usize,
        bounds: retention::Bounds,
        place: &crate::events::log::Place,
    ) -> std::io::Result<Self> {
        Ok(Self::with_window(
            max_per_conn,
            Retention::open(bounds, place)?,
        ))
    }

    /// A hub around `window`, continuing its origin's sequence.
    fn with_window(max_per_conn: usize, window: Retention) -> Self {
        let (instance, seq) = window.own();
        EventHub {
            conns: RwLock::new(HashMap::new()),
            max_per_conn,
            published: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            replayed: AtomicU64::new(0),
            instance,
            order: Mutex::new(Order { seq, window }),
            forward: OnceLock::new(),
            out_budget: OnceLock::new(),
        }
    }

    /// This instance's id, the origin of every event it publishes.
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// Charge events held in outboxes to `budget` from now on (once).
    pub(crate) fn set_out_budget(&self, budget: Arc<Budget>) {
        let _ = self.out_budget.set(budget);
    }

    /// Fan events out through a backend from now on (once; a second call is ignored).
    pub(crate) fn set_forward(&self, forward: crate::events::forward::Forward) {
        let _ = self.forward.set(forward);
    }

    /// The fan-out's counters, when a backend is configured.
    pub(crate) fn fanout_stats(&self) -> Option<&crate::events::forward::Stats> {
        self.forward.get().map(|f| &*f.stats)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<u64, Subscriber>> {
        self.conns.write().unwrap_or_else(|e| e.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<u64, Subscriber>> {
        self.conns.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Subscribe a session to events whose name matches `pattern`; returns the
    /// subscription id, error -32002 past the per-connection cap, or -32602 for a
    /// pattern over 1,024 bytes (`MAX_PATTERN`).
    #[cfg(test)]
    pub(crate) fn subscribe(&self, pattern: &str, session: Session) -> Result<u64, RpcError> {
        self.subscribe_since(pattern, session, None, false)
    }

    /// Subscribe a session to events whose name matches `pattern` (the subscription id,
    /// error -32002 past the per-connection cap, -32602 for a pattern over 1,024 bytes),
    /// first replaying the retained events after `since` that match and the session may
    /// see (in order, before any live one); `resumable`: its notifications carry
    /// `event_id`. A `since` the window no longer covers is refused
    /// (-32007, naming the oldest retained id), and nothing is subscribed.
    pub(crate) fn subscribe_since(
        &self,
        pattern: &str,
        session: Session,
        since: Option<Since>,
        resumable: bool,
    ) -> Result<u64, RpcError> {
        let options = Options {
            since,
            resumable,
            notify: None,
        };
        self.subscribe_with(pattern, session, options)
    }

    /// Subscribe with `options` (see [`Options`] and [`EventHub::subscribe_since`]).
    pub(crate) fn subscribe_with(
        &self,
        pattern: &str,
        session: Session,
        options: Options,
    ) -> Result<u64, RpcError> {
        self.subscribe_as(pattern, session, options)
    }

    /// Subscribe for a call (the `subscribe` verb): as [`EventHub::subscribe_with`], and
    /// the session's outbox is held until the call's reply is written (the driver
    /// releases it), so the subscription's events, replayed and live, come after the
    /// reply that gives their subscription's id (jsonrpsee drops notifications for an
    /// id it does not know yet; the delivery model's I3).
    pub(crate) fn subscribe_call(
        &self,
        pattern: &str,
        session: Session,
        options: Options,
    ) -> Result<u64, RpcError> {
        let outbox_holder = session.clone();
        let id = self.subscribe_as(pattern, session, options)?;
        outbox_holder.link.outbox.hold();
        Ok(id)
    }

    /// Make a subscription (the connection's next id), replaying `since` first.
    fn subscribe_as(
        &self,
        pattern: &str,
        session: Session,
        options: Options,
    ) -> Result<u64, RpcError> {
        check_pattern(pattern)?;
        let mut conns = self.write();
        if conns
            .get(&session.conn_id)
            .is_some_and(|sub| sub.patterns.len() >= self.max_per_conn)
        {
            return Err(too_many(self.max_per_conn));
        }
        // No delivery runs while the table is locked for writing: the window holds
        // exactly the events delivered before this subscription exists.
        let replay = match options.since {
            None => Vec::new(),
            // A replay is queued whole, past the outbox's bounds: one at a time.
            Some(_) if session.link.outbox.past_bounds() => {
                return Err(replay_waits());
            }
            Some(since) => {
                let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
                order.window.after(since).map_err(too_old)?
            }
        };
        // Counted against the connection's and address's caps (given back when it
        // leaves the hub: `Drop for Subscriber`, `unsubscribe`).
        session.take_sub()?;
        let sub = conns.entry(session.conn_id).or_insert_with(|| Subscriber {
            session,
            patterns: Vec::new(),
            next_id: 0,
        });
        // Ids count per connection: one connection learns nothing of another's.
        sub.next_id += 1;
        let id = sub.next_id;
        let how = options.delivery(id);
        let mut n = 0;
        for event in replay {
            if matches(pattern, &event.name) && sub.session.sees(&event.name) {
                sub.session.link.outbox.replay(&event, how.clone());
                n += 1;
            }
        }
        self.replayed.fetch_add(n, Ordering::Relaxed);
        sub.patterns.push((id, pattern.to_owned(), options));
        Ok(id)
    }

    /// Remove subscription `id` of connection `conn_id`; false if that connection
    /// has no such subscription (another connection's id included).
    pub(crate) fn unsubscribe(&self, conn_id: u64, id: u64) -> bool {
        let mut conns = self.write();
        let Some(sub) = conns.get_mut(&conn_id) else {
            return false;
        };
        let before = sub.patterns.len();
        sub.patterns.retain(|(i, _, _)| *i != id);
        let removed = sub.patterns.len() != before;
        if removed {
            sub.session.give_subs(1);
        }
        if sub.patterns.is_empty() {
            conns.remove(&conn_id);
        }
        removed
    }

    /// Remove every subscription of a connection (when it closes).
    pub(crate) fn drop_connection(&self, conn_id: u64) {
        self.write().remove(&conn_id);
    }

    /// Does this connection hold any subscription?
    pub(crate) fn is_subscribed(&self, conn_id: u64) -> bool {
        self.read().contains_key(&conn_id)
    }

    /// Events published and subscriber connections dropped as too slow, since start.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.published.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
        )
    }

    /// Events queued to subscribers live, and replayed, since start.
    pub(crate) fn deliveries(&self) -> (u64, u64) {
        (
            self.delivered.load(Ordering::Relaxed),
            self.replayed.load(Ordering::Relaxed),
        )
    }

    /// Events and bytes retained now, and events that left the window, since start.
    pub(crate) fn retained(&self) -> (usize, usize, u64) {
        let order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let (n, bytes) = order.window.len_and_bytes();
        (n, bytes, order.window.evicted)
    }

    /// Subscriptions held, over all connections.
    pub fn subscriber_count(&self) -> usize {
        self.read().values().map(|s| s.patterns.len()).sum()
    }

    /// Publish an event to every matching subscriber; returns how many connections
    /// received it (one copy per connection, however many of its patterns match).
    pub fn publish(&self, name: &str, mut params: Map) -> usize {
        self.published.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        params.insert("notify_time", Value::Int(now));
        let event = Event::new(name, Value::Struct(Box::new(params)));
        self.deliver_in_order(Err(event))
    }

    /// Hand an event another instance published to every matching subscriber of this
    /// instance (see [`EventHub::publish`]). Returns how many connections received it.
    pub(crate) fn deliver(&self, event: &Arc<Event>) -> usize {
        self.deliver_in_order(Ok(event.clone()))
    }

    /// Deliver an event from elsewhere (`Ok`, with its id) or one published here
    /// (`Err`, given the next id and forwarded to the other instances): into the
    /// window, then one copy per matching connection; a subscriber whose outbox is full
    /// is told what it lost and dropped.
    fn deliver_in_order(&self, event: Result<Arc<Event>, Event>) -> usize {
        let conns = self.read();
        let mut order = self.order.lock().unwrap_or_else(|e| e.into_inner());
        let (event, local) = match event {
            Ok(remote) => (remote, false),
            Err(new) => {
                order.seq += 1;
                let id = EventId {
                    origin: self.instance,
                    seq: order.seq,
                };
                (Arc::new(new.with_id(id)), true)
            }
        };
        order.window.push(event.clone());
        let name = event.name.as_str();
        let mut delivered = 0;
        let mut too_slow = Vec::new();
        // While the output budget is spent, only subscribers with nothing waiting take
        // a big event (see `outbox`).
        let budget_full = self
            .out_budget
            .get()
            .is_some_and(|budget| !budget.admits_reply(event.size()));
        for (conn, sub) in conns.iter() {
            let mut plain: Option<Delivery> = None;
            let mut shaped = Vec::new();
            for (id, _, options) in sub.patterns.iter().filter(|(_, p, _)| matches(p, name)) {
                match &options.notify {
                    // Each subscription in the subscription shape is told on its own.
                    Some(_) => shaped.push(options.delivery(*id)),
                    // The others share one copy per session (VDSM's shape).
                    None => {
                        plain.get_or_insert_with(Delivery::default).resumable |= options.resumable
                    }
                }
            }
            if (plain.is_none() && shaped.is_empty()) || !sub.session.sees(name) {
                continue;
            }
            let mut queued = false;
            for how in plain.into_iter().chain(shaped) {
                match sub.session.link.outbox.offer(&event, how, budget_full) {
                    Offer::Queued => queued = true,
                    Offer::Full => {
                        let notice = sub.session.link.outbox.lost("outbox overflow", event.id());
                        sub.session.link.kill.cancel();
                        too_slow.push((*conn, notice.first_lost));
                        queued = false;
                        break;
                    }
                    Offer::Closed => break,
                }
            }
            delivered += usize::from(queued);
        }
        if local {
            if let Some(forward) = self.forward.get() {
                forward.send(event.clone());
            }
        }
        drop(order);
        drop(conns);
        self.delivered
            .fetch_add(delivered as u64, Ordering::Relaxed);
        if !too_slow.is_empty() {
            self.dropped
                .fetch_add(too_slow.len() as u64, Ordering::Relaxed);
            let mut conns = self.write();
            for (conn, first_lost) in too_slow {
                tracing::warn!(
                    conn,
                    event = name,
                    first_lost = %first_lost,
                    "event subscriber cannot keep up; told what it lost and dropped"
                );
                conns.remove(&conn);
            }
        }
        delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::outbox::{self, OutboxRx};
    use tokio_util::sync::CancellationToken;

    /// The next event queued, if any.
    fn next(rx: &mut OutboxRx) -> Option<Arc<Event>> {
        match rx.try_recv()? {
            crate::events::outbox::Outgoing::Event(e, _)
            | crate::events::outbox::Outgoing::Replayed(e, _) => Some(e),
            crate::events::outbox::Outgoing::Lost(_) => None,
        }
    }

    fn session(conn_id: u64, cap: usize) -> (Session, OutboxRx) {
        let (tx, rx) = outbox::outbox(cap, Budget::new(1 << 30));
        let s = Session::new(conn_id, tx, CancellationToken::new(), None);
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
        let kill = slow.link.kill.clone();
        let (fast, mut fast_rx) = session(2, 16);
        hub.subscribe("*", slow).unwrap();
        hub.subscribe("|virt", fast).unwrap();
        assert_eq!(hub.publish("|virt|a", Map::default()), 2);
        assert_eq!(
            hub.publish("|virt|b", Map::default()),
            1,
            "slow one is full"
        );
        assert!(kill.is_cancelled());
        assert_eq!(hub.subscriber_count(), 1);
        assert_eq!(next(&mut fast_rx).unwrap().name, "|virt|a");
        let b = next(&mut fast_rx).unwrap();
        assert_eq!(b.name, "|virt|b");
        assert!(b.params.get("notify_time").and_then(Value::as_i64).unwrap() > 0);
    }

    #[test]
    fn events_held_for_a_non_reader_are_charged_and_bounded_by_bytes() {
        let hub = EventHub::default();
        let budget = Budget::new(64 << 20);
        hub.set_out_budget(budget.clone());
        let (idle, idle_rx) = session(1, 4096);
        let kill = idle.link.kill.clone();
        hub.subscribe("*", idle).unwrap();
        let big = |n: u8| {
            let mut m = Map::default();
            m.insert("blob", Value::Bytes(vec![n; 6 << 20]));
            m
        };
        let mut delivered = 0;
        for n in 0..10 {
            delivered += hub.publish("|big", big(n));
            assert!(
                budget.used() <= outbox::MAX_BYTES + (8 << 20),
                "{}",
                budget.used()
            );
        }
        assert!((1..5).contains(&delivered), "{delivered}");
        assert!(kill.is_cancelled(), "dropped as too slow");
        assert_eq!(hub.subscriber_count(), 0);
        drop(idle_rx);
        assert_eq!(
            budget.used(),
            0,
            "its events are given back with its outbox"
        );
    }

    #[test]
    fn since_replays_in_order_without_gap_or_duplicate() {
        let hub = EventHub::default();
        for n in 0..5 {
            hub.publish(&format!("|t|{n}"), Map::default());
        }
        let (a, mut a_rx) = session(1, 16);
        // A subscriber that saw up to the 2nd event resumes after it.
        let second = EventId {
            origin: hub.instance(),
            seq: 2,
        };
        hub.subscribe_since("|t", a, Some(Since::After(second)), true)
            .unwrap();
        hub.publish("|t|5", Map::default());
        let names: Vec<String> = std::iter::from_fn(|| next(&mut a_rx))
            .map(|e| e.name.clone())
            .collect();
        assert_eq!(names, ["|t|2", "|t|3", "|t|4", "|t|5"]);
        let (b, _b_rx) = session(2, 16);
        let old = EventId {
            origin: hub.instance() ^ 1,
            seq: 1,
        };
        let e = hub
            .subscribe_since("*", b, Some(Since::After(old)), true)
            .unwrap_err();
        assert_eq!(e.code, ERR_SINCE_TOO_OLD);
        assert!(
            e.message.contains(&format!("{:016x}-1", hub.instance())),
            "{}",
            e.message
        );
        assert!(!hub.is_subscribed(2), "nothing subscribed");
    }

    #[test]
    fn a_session_replays_one_window_at_a_time() {
        let hub = EventHub::default();
        for n in 0..10 {
            hub.publish(&format!("|t|{n}"), Map::default());
        }
        // An outbox of 4 events: a replay of 10 goes past it, whole.
        let (a, mut rx) = session(1, 4);
        let first = hub
            .subscribe_since("*", a.clone(), Some(Since::Oldest), true)
            .unwrap();
        // Replaying again and again without reading (unsubscribe in between keeps the
        // subscription count down) queued a window per call, without bound.
        assert!(hub.unsubscribe(1, first));
        for _ in 0..3 {
            let e = hub
                .subscribe_since("*", a.clone(), Some(Since::Oldest), true)
                .unwrap_err();
            assert_eq!(e.code, ERR_OUTPUT_FULL, "{}", e.message);
        }
        assert_eq!(
            std::iter::from_fn(|| next(&mut rx)).count(),
            10,
            "one window"
        );
        hub.subscribe_since("*", a, Some(Since::Oldest), true)
            .expect("read: it may replay again");
        assert_eq!(std::iter::from_fn(|| next(&mut rx)).count(), 10);
    }

    #[test]
    fn a_full_outbox_is_told_what_it_lost() {
        let hub = EventHub::default();
        let (slow, mut rx) = session(1, 1);
        hub.subscribe("*", slow).unwrap();
        hub.publish("|a", Map::default());
        hub.publish("|b", Map::default());
        // |a was never taken: it is dropped with the session, and the notice names it,
        // the true first loss (naming |b, the one that did not fit, hid it).
        match rx.try_recv().unwrap() {
            crate::events::outbox::Outgoing::Lost(l) => {
                assert_eq!(l.first_lost.seq, 1);
                assert_eq!(l.reason, "outbox overflow");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_call_subscription_holds_its_events_until_its_reply_is_written() {
        let hub = EventHub::default();
        hub.publish("|t|1", Map::default());
        let (a, mut rx) = session(1, 16);
        let since = |s: Since| crate::events::SubOptions {
            since: Some(s),
            resumable: true,
            notify: None,
        };
        let id = hub
            .subscribe_call("|t", a.clone(), since(Since::Oldest))
            .unwrap();
        assert_eq!(rx.probe().claim(), 1, "the call took a hold");
        hub.publish("|t|2", Map::default());
        assert!(
            next(&mut rx).is_none(),
            "nothing taken before the reply is written"
        );
        // The reply is written: the driver releases the call's hold.
        rx.release(1);
        let names: Vec<String> = std::iter::from_fn(|| next(&mut rx))
            .map(|e| e.name.clone())
            .collect();
        assert_eq!(names, ["|t|1", "|t|2"], "the window, then live, no gap");
        hub.publish("|t|3", Map::default());
        assert_eq!(next(&mut rx).unwrap().name, "|t|3");
        assert!(hub.unsubscribe(1, id));
    }

    #[test]
    fn long_patterns_are_refused() {
        let hub = EventHub::default();
        let (a, _a_rx) = session(1, 16);
        let e = hub
            .subscribe(&"x".repeat(MAX_PATTERN + 1), a.clone())
            .unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(!hub.is_subscribed(1), "nothing held for a refused pattern");
        hub.subscribe(&"x".repeat(MAX_PATTERN), a).unwrap();
    }

    #[test]
    fn capped_per_connection_and_owned_by_it() {
        let hub = EventHub::new(2);
        let (a, mut a_rx) = session(1, 16);
        let (b, _b_rx) = session(2, 16);
        let a1 = hub.subscribe("|virt", a.clone()).unwrap();
        let a2 = hub.subscribe("*", a.clone()).unwrap();
        let e = hub.subscribe("|net", a.clone()).unwrap_err();
        assert_eq!(e.code, ERR_TOO_MANY_SUBSCRIPTIONS);
        assert_eq!(
            hub.subscribe("*", b).unwrap(),
            a1,
            "ids count per connection"
        );
        assert_eq!(
            hub.publish("|virt|x", Map::default()),
            2,
            "one copy per connection"
        );
        assert_eq!(next(&mut a_rx).unwrap().name, "|virt|x");
        assert!(a_rx.try_recv().is_none(), "two matching patterns, one copy");
        assert!(
            !hub.unsubscribe(2, a2),
            "another connection cannot cancel it"
        );
        assert!(hub.unsubscribe(1, a2));
        assert!(hub.unsubscribe(1, a1));
        hub.drop_connection(1);
        assert!(!hub.is_subscribed(1));
        assert_eq!(hub.subscriber_count(), 1);
    }
}
