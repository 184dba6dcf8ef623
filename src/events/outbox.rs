//! One session's queue of events waiting to be written, bounded by count and by bytes.
//!
//! The hub never waits for a subscriber: it offers each event, and a subscriber whose
//! outbox is full is too slow: it gets an "events lost" notice ([`Lost`]) and is
//! dropped. "Full" counts bytes, not only events: an outbox of 4,096 events each 15 MiB
//! held 3.8 GB for one subscriber that never read (and killed the server). Each event
//! is counted by the memory it holds ([`Event::size`]) while it waits here, and a big
//! event is charged once to the process's output budget while any outbox holds it
//! (`EventHub::deliver`). An outbox that holds nothing always takes the next event,
//! however big: a subscriber that keeps up receives every event the server publishes.
//!
//! A replay (`subscribe` with `since`) is queued whole, beside these bounds: it is
//! bounded by the hub's retention window, which it is a copy of (the events are
//! shared), and counted apart from live events, so live events published while a big
//! replay is still unread queue behind it under the outbox's own bounds (counted
//! together, a 30,000-event resume was killed by the first live event: issue 46). Only
//! one replay at a time may wait past the bounds ([`Outbox::past_bounds`]): a session
//! asking for another before reading the first is refused.
//!
//! **Reply first** (the delivery model's I3, `events` module doc): a subscription made
//! by a call *holds* its session's outbox ([`Outbox::hold`]) until the driver has
//! written that call's reply ([`OutboxRx::release`]); events queue meanwhile but none is
//! taken, so no event of a subscription precedes the reply that names it, and a publish
//! pipelined right behind a `subscribe` is still delivered to it (after the reply).
//!
//! **An overflow names its true first loss** (I4): when the hub finds an outbox full,
//! what still waits in it is dropped with it (it will not be written), and the
//! `events.lost` notice names the first of *those*, not the event that did not fit:
//! everything before `first_lost` was taken by the session and is written before the
//! notice.
//!
//! The queue is a deque under a lock with a waker, not a channel: every stream
//! connection and WebSocket session has an outbox, subscribed or not, and tokio's
//! unbounded channel allocated 1.8 KiB for each up front (its first block of slots), a
//! third of an idle connection's heap (`benches/idle_memory.py`). This one holds about
//! a hundred bytes until events arrive, and gives back the room a burst took once read.

use crate::conn::budget::Budget;
pub(crate) use crate::events::event::Delivery;
use crate::events::{Event, EventId};
use futures_util::task::AtomicWaker;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;

/// Bytes of events an outbox holds at most by default (`[events] outbox_bytes`), beyond
/// the one it always takes: a reader keeping up needs far less (the connection's own
/// output cap, 4 MiB, is written first).
#[cfg(test)]
pub(crate) const MAX_BYTES: usize = 16 << 20;

/// What waits for a session: an event, or the notice that events were lost.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// An event, and how to write it.
    Event(Arc<Event>, Delivery),
    /// An event of a replay (counted apart from the live ones: see the module doc).
    Replayed(Arc<Event>, Delivery),
    /// Events were lost for this session (it is closed after this notice).
    Lost(Lost),
}

/// Why a session lost events, and the first one it did not get: it should subscribe
/// again with `since` set to the last id it received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// `"outbox overflow"`: the subscriber did not keep up.
    pub reason: &'static str,
    /// The first event not delivered.
    pub first_lost: EventId,
}

impl Lost {
    /// The notification's method (JSON-RPC, msgpack-rpc).
    pub const METHOD: &'static str = "events.lost";

    /// The notification's params: `{"reason": ..., "first_lost": ID}`.
    pub(crate) fn params(&self) -> rpcmux_value::Value {
        let mut m = rpcmux_value::Map::default();
        m.insert("reason", self.reason.into());
        m.insert("first_lost", self.first_lost.to_string().into());
        rpcmux_value::Value::Struct(Box::new(m))
    }

    /// The JSON-RPC notification (no line end).
    pub(crate) fn json(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(128);
        rpcmux_jsonrpc::write_notification(&mut body, Self::METHOD, &self.params());
        body
    }
}

/// The hub's end of an outbox (one per session: dropping it tells the session the hub
/// has let go).
#[derive(Debug)]
pub struct Outbox {
    queue: Arc<Queue>,
    max_events: usize,
    max_bytes: usize,
    /// The output budget big events are charged to while held here.
    budget: Arc<Budget>,
}

/// What both ends share.
#[derive(Debug, Default)]
struct Queue {
    waiting: Mutex<Waiting>,
    /// The session's task, waiting in [`OutboxRx::recv`].
    reader: AtomicWaker,
    held: Held,
    /// Holds taken by calls whose replies are not written yet: nothing is taken while
    /// any is open (see "Reply first" in the module doc).
    holds: AtomicUsize,
    /// Holds taken and not yet claimed by a call: the driver claims them right after
    /// polling the call that took them ([`HoldProbe::claim`]), and releases them once
    /// that call's reply is written.
    unclaimed: AtomicUsize,
}

#[derive(Debug, Default)]
struct Waiting {
    items: VecDeque<Outgoing>,
    /// The hub's end is gone: nothing more will come.
    hub_gone: bool,
    /// The session's end is gone: nothing more is taken.
    session_gone: bool,
}

impl Queue {
    /// The lock, whatever a panic elsewhere left: the deque is consistent at every
    /// point a holder can panic (it only pushes and pops).
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next item, uncounted, or else whether the hub has let go (nothing more will
    /// come); the room a burst took is given back once it is read.
    fn pop(&self) -> Result<Outgoing, bool> {
        if self.holds.load(Ordering::Acquire) > 0 {
            return Err(false);
        }
        self.pop_any()
    }

    /// [`Queue::pop`] whatever the holds (a session closing writes what it owes).
    fn pop_any(&self) -> Result<Outgoing, bool> {
        let mut w = self.lock();
        let Some(out) = w.items.pop_front() else {
            return Err(w.hub_gone);
        };
        if w.items.is_empty() && w.items.capacity() > ROOM_KEPT {
            w.items = VecDeque::new();
        }
        drop(w);
        self.uncount(&out);
        Ok(out)
    }

    /// `out` has left the queue: it no longer counts against the bounds.
    fn uncount(&self, out: &Outgoing) {
        match out {
            Outgoing::Event(event, _) => self.held.let_go(event, false),
            Outgoing::Replayed(event, _) => self.held.let_go(event, true),
            Outgoing::Lost(_) => {}
        }
    }
}

/// Slots an emptied outbox keeps (a few events at a time is the common case).
const ROOM_KEPT: usize = 16;

/// What an outbox holds now.
#[derive(Debug, Default)]
struct Held {
    /// Live events and the bytes they hold.
    events: AtomicUsize,
    bytes: AtomicUsize,
    /// Replayed events and the bytes they hold.
    replay_events: AtomicUsize,
    replay_bytes: AtomicUsize,
}

impl Held {
    fn counters(&self, replayed: bool) -> (&AtomicUsize, &AtomicUsize) {
        match replayed {
            false => (&self.events, &self.bytes),
            true => (&self.replay_events, &self.replay_bytes),
        }
    }

    fn count(&self, event: &Event, replayed: bool) {
        let (events, bytes) = self.counters(replayed);
        events.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add(event.size(), Ordering::Relaxed);
    }

    /// `event` has left the outbox's count (it still holds the event's encodings until
    /// it has written it: [`Outgoing::written`]).
    fn let_go(&self, event: &Event, replayed: bool) {
        let (events, bytes) = self.counters(replayed);
        events.fetch_sub(1, Ordering::Relaxed);
        bytes.fetch_sub(event.size(), Ordering::Relaxed);
    }
}

impl Outgoing {
    /// Taken from the outbox and written: the event may let its encodings go.
    pub(crate) fn written(self) {
        if let Outgoing::Event(event, _) | Outgoing::Replayed(event, _) = self {
            event.leave_outbox();
        }
    }

    /// The event, if this is one.
    fn event(&self) -> Option<&Arc<Event>> {
        match self {
            Outgoing::Event(e, _) | Outgoing::Replayed(e, _) => Some(e),
            Outgoing::Lost(_) => None,
        }
    }
}

/// The session's end: what waits, in the order offered.
#[derive(Debug)]
pub(crate) struct OutboxRx {
    queue: Arc<Queue>,
}

/// What became of an event offered to an outbox.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Offer {
    Queued,
    /// Over the outbox's bounds (or the output budget's): the subscriber is too slow.
    Full,
    /// The session is gone.
    Closed,
}

/// An outbox of at most `max_events` events and [`MAX_BYTES`] bytes, whose big events
/// are charged to `budget` while they wait.
#[cfg(test)]
pub(crate) fn outbox(max_events: usize, budget: Arc<Budget>) -> (Outbox, OutboxRx) {
    bounded(max_events, MAX_BYTES, budget)
}

pub(crate) fn bounded(
    max_events: usize,
    max_bytes: usize,
    budget: Arc<Budget>,
) -> (Outbox, OutboxRx) {
    let queue = Arc::new(Queue::default());
    (
        Outbox {
            queue: queue.clone(),
            max_events: max_events.max(1),
            max_bytes,
            budget,
        },
        OutboxRx { queue },
    )
}

impl Outbox {
    /// Queue `event` unless the outbox is past its bounds: its count, its bytes, or,
    /// while the process's output budget is spent (`budget_full`), anything at all
    /// already waiting. Live events only count here: a replay waiting beside them is
    /// bounded by the retention window (see the module doc).
    pub(crate) fn offer(&self, event: &Arc<Event>, how: Delivery, budget_full: bool) -> Offer {
        let held = &self.queue.held;
        let (events, bytes) = (
            held.events.load(Ordering::Relaxed),
            held.bytes.load(Ordering::Relaxed),
        );
        if events > 0
            && (budget_full || events >= self.max_events || bytes + event.size() > self.max_bytes)
        {
            return Offer::Full;
        }
        self.push(event, how, false)
    }

    /// Queue `event` whatever the bounds (a replay: see the module doc).
    pub(crate) fn replay(&self, event: &Arc<Event>, how: Delivery) -> Offer {
        self.push(event, how, true)
    }

    fn push(&self, event: &Arc<Event>, how: Delivery, replayed: bool) -> Offer {
        {
            let mut w = self.queue.lock();
            if w.session_gone {
                return Offer::Closed;
            }
            // Counted before the session can take it (and uncount it).
            self.queue.held.count(event, replayed);
            event.enter_outbox(&self.budget);
            w.items.push_back(match replayed {
                false => Outgoing::Event(event.clone(), how),
                true => Outgoing::Replayed(event.clone(), how),
            });
        }
        self.queue.reader.wake();
        Offer::Queued
    }

    /// Tell the session it lost events, from `offered` on (the event that did not fit):
    /// what still waits is dropped (it will not be written), and the notice, the last
    /// thing the session is sent, names the first event dropped, the true first loss.
    /// Returns the notice.
    pub(crate) fn lost(&self, reason: &'static str, offered: EventId) -> Lost {
        let (notice, dropped) = {
            let mut w = self.queue.lock();
            let dropped = std::mem::take(&mut w.items);
            let first_lost = dropped
                .iter()
                .find_map(|o| o.event().map(|e| e.id()))
                .unwrap_or(offered);
            let notice = Lost { reason, first_lost };
            if !w.session_gone {
                w.items.push_back(Outgoing::Lost(notice.clone()));
            }
            (notice, dropped)
        };
        for out in dropped {
            self.queue.uncount(&out);
            out.written();
        }
        self.queue.reader.wake();
        notice
    }

    /// A call made a subscription on this session: take nothing from the outbox until
    /// its reply is written ([`OutboxRx::release`]; see "Reply first" in the module doc).
    pub(crate) fn hold(&self) {
        self.queue.holds.fetch_add(1, Ordering::AcqRel);
        self.queue.unclaimed.fetch_add(1, Ordering::AcqRel);
    }

    /// Does any event wait in this outbox?
    pub(crate) fn is_empty(&self) -> bool {
        let held = &self.queue.held;
        held.events.load(Ordering::Relaxed) == 0 && held.replay_events.load(Ordering::Relaxed) == 0
    }

    /// Does it hold more than its bounds (only a replay puts it there)? Then it takes
    /// no further replay until it has been read below them: each replay is bounded by
    /// the retention window, but a session replaying again and again (`subscribe` with
    /// `since` and `unsubscribe` in a loop, or STOMP `SUBSCRIBE` with `since`) would
    /// otherwise queue a window's worth per call, without bound.
    pub(crate) fn past_bounds(&self) -> bool {
        let held = &self.queue.held;
        let events = held.replay_events.load(Ordering::Relaxed);
        events > 0
            && (events >= self.max_events
                || held.replay_bytes.load(Ordering::Relaxed) > self.max_bytes)
    }
}

impl Drop for Outbox {
    /// The hub let go of the session: once it has read what waits, it hears so.
    fn drop(&mut self) {
        self.queue.lock().hub_gone = true;
        self.queue.reader.wake();
    }
}

impl OutboxRx {
    /// The next event or notice; `None` once the hub has let go of the session and
    /// everything it queued was taken.
    pub(crate) async fn recv(&mut self) -> Option<Outgoing> {
        std::future::poll_fn(|cx| {
            // Registered before looking: an item pushed after the look wakes it.
            self.queue.reader.register(cx.waker());
            match self.queue.pop() {
                Ok(out) => Poll::Ready(Some(out)),
                Err(true) => Poll::Ready(None),
                Err(false) => Poll::Pending,
            }
        })
        .await
    }

    /// The next event or notice if one waits.
    pub(crate) fn try_recv(&mut self) -> Option<Outgoing> {
        self.queue.pop().ok()
    }

    /// The next event or notice if one waits, whatever the holds (a session that is
    /// closing writes the notice it owes).
    pub(crate) fn try_recv_any(&mut self) -> Option<Outgoing> {
        self.queue.pop_any().ok()
    }

    /// What tells the driver's calls which of them took holds.
    pub(crate) fn probe(&self) -> HoldProbe {
        HoldProbe(self.queue.clone())
    }

    /// The replies of calls that took `n` holds are written: release them.
    pub(crate) fn release(&self, n: usize) {
        if n == 0 {
            return;
        }
        if self.queue.holds.fetch_sub(n, Ordering::AcqRel) == n {
            self.queue.reader.wake();
        }
    }
}

/// A session's holds as its calls see them (see [`Outbox::hold`]).
#[derive(Debug, Clone)]
pub(crate) struct HoldProbe(Arc<Queue>);

impl HoldProbe {
    /// The holds taken since the last claim: the call just polled took them (one
    /// session's calls are polled by its one task, one at a time).
    pub(crate) fn claim(&self) -> usize {
        if self.0.unclaimed.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.0.unclaimed.swap(0, Ordering::AcqRel)
    }
}

impl Drop for OutboxRx {
    /// What still waits goes with the session (and its charges with it).
    fn drop(&mut self) {
        let left = {
            let mut w = self.queue.lock();
            w.session_gone = true;
            std::mem::take(&mut w.items)
        };
        for out in left {
            self.queue.uncount(&out);
            out.written();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::Value;

    fn bounded(max_events: usize, max_bytes: usize) -> (Outbox, OutboxRx) {
        super::bounded(max_events, max_bytes, Budget::new(1 << 30))
    }

    fn event(bytes: usize) -> Arc<Event> {
        Arc::new(Event::new("e", Value::Bytes(vec![0; bytes])))
    }

    fn size(out: Outgoing) -> usize {
        out.event().map_or(0, |e| e.size())
    }

    #[tokio::test]
    async fn bytes_bound_an_outbox_but_an_empty_one_takes_anything() {
        let (tx, mut rx) = bounded(100, 1000);
        let huge = event(5000);
        assert_eq!(
            tx.offer(&huge, Delivery::default(), false),
            Offer::Queued,
            "empty: always"
        );
        assert_eq!(
            tx.offer(&event(10), Delivery::default(), false),
            Offer::Full,
            "past its bytes"
        );
        assert!(!tx.is_empty());
        assert_eq!(size(rx.recv().await.unwrap()), huge.size());
        assert!(tx.is_empty());
        assert_eq!(
            tx.offer(&event(10), Delivery::default(), false),
            Offer::Queued
        );
        assert_eq!(
            tx.offer(&event(10), Delivery::default(), false),
            Offer::Queued
        );
        assert_eq!(
            tx.offer(&event(10), Delivery::default(), true),
            Offer::Full,
            "while the output budget is spent, only an empty outbox takes more"
        );
        rx.try_recv().unwrap();
        rx.try_recv().unwrap();
        assert_eq!(
            tx.queue.held.bytes.load(Ordering::Relaxed),
            0,
            "taken events are uncounted"
        );
        drop(rx);
        assert_eq!(
            tx.offer(&event(10), Delivery::default(), false),
            Offer::Closed
        );
        assert_eq!(tx.queue.held.bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn count_bounds_an_outbox_too_but_not_a_replay() {
        let (tx, _rx) = bounded(2, usize::MAX);
        assert_eq!(
            tx.offer(&event(1), Delivery::default(), false),
            Offer::Queued
        );
        assert_eq!(
            tx.offer(&event(1), Delivery::default(), false),
            Offer::Queued
        );
        assert_eq!(tx.offer(&event(1), Delivery::default(), false), Offer::Full);
        assert_eq!(tx.replay(&event(1), Delivery::default()), Offer::Queued);
    }

    fn ev(seq: u64) -> Arc<Event> {
        Arc::new(Event::new("e", Value::Int(0)).with_id(EventId { origin: 1, seq }))
    }

    fn id_of(out: Option<Outgoing>) -> Option<u64> {
        match out? {
            Outgoing::Event(e, _) | Outgoing::Replayed(e, _) => Some(e.id().seq),
            Outgoing::Lost(l) => Some(1000 + l.first_lost.seq),
        }
    }

    #[test]
    fn a_replay_bigger_than_the_bounds_is_not_killed_by_a_live_event() {
        let (tx, mut rx) = bounded(4, usize::MAX);
        for seq in 1..=10 {
            tx.replay(&ev(seq), Delivery::default());
        }
        assert!(tx.past_bounds(), "a second replay would wait");
        for seq in 11..=14 {
            assert_eq!(
                tx.offer(&ev(seq), Delivery::default(), false),
                Offer::Queued
            );
        }
        assert_eq!(
            tx.offer(&ev(15), Delivery::default(), false),
            Offer::Full,
            "live events keep their own bound"
        );
        let got: Vec<u64> = std::iter::from_fn(|| id_of(rx.try_recv())).collect();
        assert_eq!(
            got,
            (1..=14).collect::<Vec<_>>(),
            "the replay, then live, in order"
        );
    }

    #[test]
    fn an_overflow_names_the_first_event_it_drops() {
        let (tx, mut rx) = bounded(3, usize::MAX);
        for seq in 1..=3 {
            tx.offer(&ev(seq), Delivery::default(), false);
        }
        // The session took the first; 2 and 3 wait; 4 does not fit.
        assert_eq!(id_of(rx.try_recv()), Some(1));
        tx.offer(&ev(4), Delivery::default(), false);
        let notice = tx.lost("outbox overflow", EventId { origin: 1, seq: 5 });
        assert_eq!(notice.first_lost.seq, 2, "not the one that did not fit");
        assert_eq!(
            id_of(rx.try_recv()),
            Some(1002),
            "the notice is all that is left"
        );
        assert!(rx.try_recv().is_none());
        assert!(tx.is_empty(), "what was dropped is uncounted");
        // With nothing waiting, the offered event is the first lost.
        let notice = tx.lost("outbox overflow", EventId { origin: 1, seq: 9 });
        assert_eq!(notice.first_lost.seq, 9);
    }

    #[test]
    fn a_hold_keeps_events_back_until_released() {
        let (tx, mut rx) = bounded(16, usize::MAX);
        tx.offer(&ev(1), Delivery::default(), false);
        let probe = rx.probe();
        assert_eq!(probe.claim(), 0);
        tx.hold();
        assert_eq!(probe.claim(), 1);
        assert_eq!(probe.claim(), 0, "claimed once");
        tx.offer(&ev(2), Delivery::default(), false);
        assert!(rx.try_recv().is_none(), "held: nothing taken");
        rx.release(1);
        assert_eq!(id_of(rx.try_recv()), Some(1));
        assert_eq!(id_of(rx.try_recv()), Some(2));
        tx.hold();
        tx.lost("outbox overflow", EventId { origin: 1, seq: 3 });
        assert!(rx.try_recv().is_none());
        assert_eq!(
            id_of(rx.try_recv_any()),
            Some(1003),
            "a closing session writes its notice"
        );
    }
}
