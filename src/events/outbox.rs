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
//! A replay (`subscribe` with `since`) is queued whole, past these bounds: it is bounded
//! by the hub's retention window, which it is a copy of (the events are shared). Only
//! one replay at a time may wait past them ([`Outbox::past_bounds`]): a session asking
//! for another before reading the first is refused.
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

/// Bytes of events an outbox holds at most, beyond the one it always takes: a reader
/// keeping up needs far less (the connection's own output cap, 4 MiB, is written first).
pub(crate) const MAX_BYTES: usize = 16 << 20;

/// What waits for a session: an event, or the notice that events were lost.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// An event, and how to write it.
    Event(Arc<Event>, Delivery),
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
        m.insert("reason".into(), self.reason.into());
        m.insert("first_lost".into(), self.first_lost.to_string().into());
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
        if let Outgoing::Event(event, _) = out {
            self.held.let_go(event);
        }
    }
}

/// Slots an emptied outbox keeps (a few events at a time is the common case).
const ROOM_KEPT: usize = 16;

/// What an outbox holds now.
#[derive(Debug, Default)]
struct Held {
    events: AtomicUsize,
    bytes: AtomicUsize,
}

impl Held {
    /// `event` has left the outbox's count (it still holds the event's encodings until
    /// it has written it: [`Outgoing::written`]).
    fn let_go(&self, event: &Event) {
        self.events.fetch_sub(1, Ordering::Relaxed);
        self.bytes.fetch_sub(event.size(), Ordering::Relaxed);
    }
}

impl Outgoing {
    /// Taken from the outbox and written: the event may let its encodings go.
    pub(crate) fn written(self) {
        if let Outgoing::Event(event, _) = self {
            event.leave_outbox();
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
    /// already waiting.
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
        self.push(event, how)
    }

    /// Queue `event` whatever the bounds (a replay: see the module doc).
    pub(crate) fn replay(&self, event: &Arc<Event>, how: Delivery) -> Offer {
        self.push(event, how)
    }

    fn push(&self, event: &Arc<Event>, how: Delivery) -> Offer {
        let held = &self.queue.held;
        {
            let mut w = self.queue.lock();
            if w.session_gone {
                return Offer::Closed;
            }
            // Counted before the session can take it (and uncount it).
            held.events.fetch_add(1, Ordering::Relaxed);
            held.bytes.fetch_add(event.size(), Ordering::Relaxed);
            event.enter_outbox(&self.budget);
            w.items.push_back(Outgoing::Event(event.clone(), how));
        }
        self.queue.reader.wake();
        Offer::Queued
    }

    /// Tell the session it lost events (the last thing it is sent).
    pub(crate) fn lost(&self, notice: Lost) {
        {
            let mut w = self.queue.lock();
            if w.session_gone {
                return;
            }
            w.items.push_back(Outgoing::Lost(notice));
        }
        self.queue.reader.wake();
    }

    /// Does any event wait in this outbox?
    pub(crate) fn is_empty(&self) -> bool {
        self.queue.held.events.load(Ordering::Relaxed) == 0
    }

    /// Does it hold more than its bounds (only a replay puts it there)? Then it takes
    /// no further replay until it has been read below them: each replay is bounded by
    /// the retention window, but a session replaying again and again (`subscribe` with
    /// `since` and `unsubscribe` in a loop, or STOMP `SUBSCRIBE` with `since`) would
    /// otherwise queue a window's worth per call, without bound.
    pub(crate) fn past_bounds(&self) -> bool {
        let held = &self.queue.held;
        let events = held.events.load(Ordering::Relaxed);
        events > 0
            && (events >= self.max_events || held.bytes.load(Ordering::Relaxed) > self.max_bytes)
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
        match out {
            Outgoing::Event(e, _) => e.size(),
            Outgoing::Lost(_) => 0,
        }
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
}
