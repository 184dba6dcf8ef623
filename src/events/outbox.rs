//! One session's queue of events waiting to be written, bounded by count and by bytes.
//!
//! The hub never waits for a subscriber: it offers each event, and a subscriber whose
//! outbox is full is too slow and is dropped. "Full" counts bytes, not only events: an
//! outbox of 4,096 events each 15 MiB held 3.8 GB for one subscriber that never read
//! (and killed the server). Each event is counted by the memory it holds
//! ([`Event::size`]) while it waits here, and a big event is charged once to the
//! process's output budget while any outbox holds it (`EventHub::deliver`). An outbox
//! that holds nothing always takes the next event, however big: a subscriber that
//! keeps up receives every event the server publishes.

use crate::events::Event;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::{self, error::TryRecvError, error::TrySendError};

/// Bytes of events an outbox holds at most, beyond the one it always takes: a reader
/// keeping up needs far less (the connection's own output cap, 4 MiB, is written first).
pub(crate) const MAX_BYTES: usize = 16 << 20;

/// The hub's end of an outbox.
#[derive(Debug)]
pub struct Outbox {
    tx: mpsc::Sender<Arc<Event>>,
    queued: Arc<AtomicUsize>,
    max_bytes: usize,
}

/// The session's end: events in the order offered.
#[derive(Debug)]
pub(crate) struct OutboxRx {
    rx: mpsc::Receiver<Arc<Event>>,
    queued: Arc<AtomicUsize>,
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

/// An outbox of at most `max_events` events and [`MAX_BYTES`] bytes.
pub(crate) fn outbox(max_events: usize) -> (Outbox, OutboxRx) {
    bounded(max_events, MAX_BYTES)
}

pub(crate) fn bounded(max_events: usize, max_bytes: usize) -> (Outbox, OutboxRx) {
    let (tx, rx) = mpsc::channel(max_events.max(1));
    let queued = Arc::new(AtomicUsize::new(0));
    (
        Outbox {
            tx,
            queued: queued.clone(),
            max_bytes,
        },
        OutboxRx { rx, queued },
    )
}

impl Outbox {
    /// Queue `event` unless the outbox is past its bounds: its bytes, or, while the
    /// process's output budget is spent (`budget_full`), anything at all already waiting.
    pub(crate) fn offer(&self, event: &Arc<Event>, budget_full: bool) -> Offer {
        let size = event.size();
        let queued = self.queued.load(Ordering::Relaxed);
        if queued > 0 && (budget_full || queued + size > self.max_bytes) {
            return Offer::Full;
        }
        self.queued.fetch_add(size, Ordering::Relaxed);
        match self.tx.try_send(event.clone()) {
            Ok(()) => Offer::Queued,
            Err(e) => {
                self.queued.fetch_sub(size, Ordering::Relaxed);
                match e {
                    TrySendError::Full(_) => Offer::Full,
                    TrySendError::Closed(_) => Offer::Closed,
                }
            }
        }
    }

    /// Does any event wait in this outbox?
    pub(crate) fn is_empty(&self) -> bool {
        self.tx.capacity() == self.tx.max_capacity()
    }
}

impl OutboxRx {
    fn taken(&self, event: &Arc<Event>) {
        self.queued.fetch_sub(event.size(), Ordering::Relaxed);
    }

    /// The next event; `None` once the hub has let go of the session.
    pub(crate) async fn recv(&mut self) -> Option<Arc<Event>> {
        let event = self.rx.recv().await?;
        self.taken(&event);
        Some(event)
    }

    /// The next event if one waits.
    pub(crate) fn try_recv(&mut self) -> Result<Arc<Event>, TryRecvError> {
        let event = self.rx.try_recv()?;
        self.taken(&event);
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::Value;

    fn event(bytes: usize) -> Arc<Event> {
        Arc::new(Event::new("e", Value::Bytes(vec![0; bytes])))
    }

    #[tokio::test]
    async fn bytes_bound_an_outbox_but_an_empty_one_takes_anything() {
        let (tx, mut rx) = bounded(100, 1000);
        let huge = event(5000);
        assert_eq!(tx.offer(&huge, false), Offer::Queued, "empty: always");
        assert_eq!(tx.offer(&event(10), false), Offer::Full, "past its bytes");
        assert!(!tx.is_empty());
        assert_eq!(rx.recv().await.unwrap().size(), huge.size());
        assert!(tx.is_empty());
        assert_eq!(tx.offer(&event(10), false), Offer::Queued);
        assert_eq!(tx.offer(&event(10), false), Offer::Queued);
        assert_eq!(
            tx.offer(&event(10), true),
            Offer::Full,
            "while the output budget is spent, only an empty outbox takes more"
        );
        rx.try_recv().unwrap();
        rx.try_recv().unwrap();
        assert_eq!(
            tx.queued.load(Ordering::Relaxed),
            0,
            "taken events are uncounted"
        );
        drop(rx);
        assert_eq!(tx.offer(&event(10), false), Offer::Closed);
        assert_eq!(tx.queued.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn count_bounds_an_outbox_too() {
        let (tx, _rx) = bounded(2, usize::MAX);
        assert_eq!(tx.offer(&event(1), false), Offer::Queued);
        assert_eq!(tx.offer(&event(1), false), Offer::Queued);
        assert_eq!(tx.offer(&event(1), false), Offer::Full);
    }
}
