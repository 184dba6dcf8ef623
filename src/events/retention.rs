//! The window of recent events an instance keeps, so a subscriber that reconnects can
//! ask for what it missed (`subscribe` with `since`): every event delivered here, local
//! or from another instance, in delivery order, bounded by count, bytes and age.

use crate::events::{Event, EventId, Since};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The bounds of the window (`[events]` `retain_events`, `retain_bytes`, `retain_secs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub events: usize,
    pub bytes: usize,
    pub age: Duration,
}

/// Recent events, oldest first.
#[derive(Debug)]
pub(crate) struct Retention {
    events: VecDeque<(Arc<Event>, Instant)>,
    bytes: usize,
    bounds: Bounds,
    /// Events that left the window by a bound, counted.
    pub evicted: u64,
}

/// `since` names an event the window no longer holds (or never did).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooOld {
    /// The oldest event still retained, if any.
    pub oldest: Option<EventId>,
}

impl Retention {
    pub fn new(bounds: Bounds) -> Self {
        Retention {
            events: VecDeque::new(),
            bytes: 0,
            bounds,
            evicted: 0,
        }
    }

    /// Keep `event`, then let the oldest go past any bound.
    pub fn push(&mut self, event: Arc<Event>) {
        if self.bounds.events == 0 {
            return;
        }
        self.bytes += event.size();
        self.events.push_back((event, Instant::now()));
        self.trim();
    }

    fn trim(&mut self) {
        let now = Instant::now();
        while let Some((e, at)) = self.events.front() {
            let over = self.events.len() > self.bounds.events
                || self.bytes > self.bounds.bytes
                || now.duration_since(*at) > self.bounds.age;
            if !over {
                break;
            }
            self.bytes -= e.size();
            self.events.pop_front();
            self.evicted += 1;
        }
    }

    /// Events retained and the bytes they hold.
    pub fn len_and_bytes(&self) -> (usize, usize) {
        (self.events.len(), self.bytes)
    }

    /// The events after `since`, oldest first. `Since::After(id)` is found by its
    /// origin's place: the events after the last one of that origin at or before `id`'s
    /// sequence number (a gap in that origin's numbers is not an error). An id whose
    /// origin has nothing retained at or before it is too old: what followed it may have
    /// left the window, and a partial replay would be a silent gap.
    pub fn after(&mut self, since: Since) -> Result<Vec<Arc<Event>>, TooOld> {
        let start = self.start(since)?;
        Ok(self.events.range(start..).map(|(e, _)| e.clone()).collect())
    }

    /// Where the events after `since` start in the window (see [`Retention::after`]).
    fn start(&mut self, since: Since) -> Result<usize, TooOld> {
        self.trim();
        Ok(match since {
            Since::Oldest => 0,
            Since::After(id) => {
                let at = self
                    .events
                    .iter()
                    .rposition(|(e, _)| e.id().origin == id.origin && e.id().seq <= id.seq);
                match at {
                    Some(i) => i + 1,
                    None => {
                        return Err(TooOld {
                            oldest: self.events.front().map(|(e, _)| e.id()),
                        })
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::Value;

    fn ev(origin: u64, seq: u64, bytes: usize) -> Arc<Event> {
        Arc::new(Event::new("e", Value::Bytes(vec![0; bytes])).with_id(EventId { origin, seq }))
    }

    fn seqs(v: &[Arc<Event>]) -> Vec<u64> {
        v.iter().map(|e| e.id().seq).collect()
    }

    fn bounds(events: usize, bytes: usize) -> Bounds {
        Bounds {
            events,
            bytes,
            age: Duration::from_secs(3600),
        }
    }

    #[test]
    fn replays_after_an_id_or_says_it_is_too_old() {
        let mut r = Retention::new(bounds(3, usize::MAX));
        for seq in 1..=5 {
            r.push(ev(9, seq, 1));
        }
        assert_eq!(r.len_and_bytes().0, 3, "count bound");
        assert_eq!(seqs(&r.after(Since::Oldest).unwrap()), [3, 4, 5]);
        assert_eq!(
            seqs(
                &r.after(Since::After(EventId { origin: 9, seq: 3 }))
                    .unwrap()
            ),
            [4, 5]
        );
        assert_eq!(
            seqs(
                &r.after(Since::After(EventId { origin: 9, seq: 5 }))
                    .unwrap()
            ),
            [] as [u64; 0]
        );
        let old = r
            .after(Since::After(EventId { origin: 9, seq: 1 }))
            .unwrap_err();
        assert_eq!(old.oldest, Some(EventId { origin: 9, seq: 3 }));
        assert!(
            r.after(Since::After(EventId { origin: 8, seq: 1 }))
                .is_err(),
            "an unknown origin"
        );
    }

    #[test]
    fn other_origins_interleave_and_bytes_bound_too() {
        let mut r = Retention::new(bounds(100, 3200));
        r.push(ev(1, 1, 1000));
        r.push(ev(2, 1, 1000));
        r.push(ev(1, 2, 1000));
        let after = r
            .after(Since::After(EventId { origin: 1, seq: 1 }))
            .unwrap();
        assert_eq!(
            after.iter().map(|e| e.id().origin).collect::<Vec<_>>(),
            [2, 1]
        );
        r.push(ev(2, 2, 1000));
        assert_eq!(
            r.len_and_bytes().0,
            3,
            "bytes bound: {:?}",
            r.len_and_bytes()
        );
    }

    #[test]
    fn nothing_is_kept_with_a_zero_window() {
        let mut r = Retention::new(bounds(0, 0));
        r.push(ev(1, 1, 1));
        assert_eq!(r.after(Since::Oldest).unwrap().len(), 0);
    }
}
