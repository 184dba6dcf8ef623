//! The window of recent events an instance keeps, so a subscriber that reconnects can
//! ask for what it missed (`subscribe` with `since`): every event delivered here, local
//! or from another instance, in delivery order, bounded by count, bytes and age.
//!
//! What a resuming client may rely on (I5 in the delivery model, docs/events.md):
//! `Since::After(O-n)` is answered from the window, or refused with the reason, never
//! with a silent gap. It is covered when
//!
//! 1. the window holds an event of origin `O` with seq at or before `n`: the replay is
//!    what was delivered here after the last such one;
//! 2. or `O`'s oldest retained event is `O-(n+1)` (a fleet instance that restarted, or
//!    whose window dropped `O-n` already, still holds everything of `O` after `n`);
//! 3. or `O` is this instance's own origin, nothing of it is retained and `n` is at or
//!    past the last seq it gave out (nothing of it came since).
//!
//! In cases 2 and 3 the replay is the whole window: nothing of `O` after `n` is missing,
//! and an event of another origin is either one delivered here after `O-n` left the
//! window or one the client may have had, which it drops by id (at-least-once on the
//! wire, exactly once after dedupe). Anything else is [`TooOld`] with its reason:
//! `O` is retained but not back to `n` (too old), `O` is an earlier run of this
//! instance or of one whose events are retained here (restarted: same node part of the
//! origin, src/events/id.rs), or `O` is an instance never heard of (unknown).
//!
//! The start is found by a per-origin index of (seq, position) in delivery order, by
//! binary search: O(log n) under the hub's lock, where a scan of 65,536 retained events
//! per `subscribe` held every publish for milliseconds (issue 46, case 10). Each
//! origin's entries are kept in increasing seq (an event delivered out of its origin's
//! order, which the fan-out does not do, is retained and replayed but not indexed).
//!
//! With an event log ([`crate::events::log`], `[events] dir`), every push is appended
//! before the hub goes on (so before the publish is answered), the log keeps exactly the
//! window's events, and [`Retention::open`] loads them back within today's bounds.

use crate::events::{id, Event, EventId, Since};
use std::collections::{HashMap, VecDeque};
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
    /// The position (in all events ever pushed) of the window's front.
    base: u64,
    /// Per origin, (seq, position) of its retained events, in increasing seq.
    index: HashMap<u64, VecDeque<(u64, u64)>>,
    /// This instance's origin, and the last seq it gave out (case 3 of the module doc).
    own: u64,
    own_last: u64,
    /// Where the window is kept across restarts, when it is.
    log: Option<crate::events::log::EventLog>,
}

/// `since` names an event the window no longer holds (or never did).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooOld {
    /// Why (what -32007 says).
    pub why: Why,
    /// The oldest event still retained, if any.
    pub oldest: Option<EventId>,
}

/// Why a `since` is not covered (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// Its origin is retained here, but not back to it.
    TooOld,
    /// Its origin is an earlier run of this instance, or of an instance whose events are
    /// retained here: a restart, the events between lost with it.
    Restarted,
    /// Its origin is no instance this one has heard of.
    Unknown,
}

impl Retention {
    /// An empty window, for an origin of its own (set by [`Retention::owned_by`]).
    pub fn new(bounds: Bounds) -> Self {
        Retention {
            events: VecDeque::new(),
            bytes: 0,
            bounds,
            evicted: 0,
            base: 0,
            index: HashMap::new(),
            own: 0,
            own_last: 0,
            log: None,
        }
    }

    /// The window of the instance whose origin is `own`.
    pub fn owned_by(mut self, own: u64) -> Self {
        self.own = own;
        self
    }

    /// The window of an instance kept as `place` says: with a directory, its origin,
    /// last seq and retained events as the log holds them (within `bounds`), and every
    /// later push appended; without, a new origin and an empty window.
    pub fn open(bounds: Bounds, place: &crate::events::log::Place) -> std::io::Result<Self> {
        let node = id::node_part(&place.node);
        let Some(dir) = &place.dir else {
            return Ok(Retention::new(bounds).owned_by(id::new_origin(node)));
        };
        let within = crate::events::log::Within {
            events: bounds.events,
            bytes: bounds.bytes,
            age: bounds.age,
        };
        let (log, loaded) = crate::events::log::EventLog::open(dir, node, place.fsync, within)?;
        let mut r = Retention::new(bounds).owned_by(loaded.origin);
        r.own_last = loaded.seq;
        for (event, at) in loaded.events {
            r.push_at(event, at);
        }
        r.log = Some(log);
        Ok(r)
    }

    /// This instance's origin and the last seq it gave out (0: none yet).
    pub fn own(&self) -> (u64, u64) {
        (self.own, self.own_last)
    }

    /// Keep `event`, then let the oldest go past any bound; with a log, append it there
    /// (and forget there what left the window) before returning.
    pub fn push(&mut self, event: Arc<Event>) {
        let id = event.id();
        let own_seq = (id.origin == self.own).then_some(id.seq);
        if let Some(seq) = own_seq {
            self.own_last = self.own_last.max(seq);
        }
        if self.bounds.events > 0 {
            self.push_at(event.clone(), Instant::now());
        }
        if let Some(log) = &mut self.log {
            log.append(&event, own_seq, self.events.len());
        }
    }

    /// Keep `event` as having arrived `at`, indexed, then trim.
    fn push_at(&mut self, event: Arc<Event>, at: Instant) {
        let id = event.id();
        let position = self.base + self.events.len() as u64;
        let entries = self.index.entry(id.origin).or_default();
        if entries.back().is_none_or(|&(seq, _)| seq < id.seq) {
            entries.push_back((id.seq, position));
        }
        self.bytes += event.size();
        self.events.push_back((event, at));
        self.trim();
    }

    fn trim(&mut self) {
        let now = Instant::now();
        while let Some((e, at)) = self.events.front() {
            let over = self.events.len() > self.bounds.events
                || self.bytes > self.bounds.bytes
                || now.saturating_duration_since(*at) > self.bounds.age;
            if !over {
                break;
            }
            let origin = e.id().origin;
            if let Some(entries) = self.index.get_mut(&origin) {
                if entries.front().is_some_and(|&(_, p)| p == self.base) {
                    entries.pop_front();
                }
                if entries.is_empty() {
                    self.index.remove(&origin);
                }
            }
            self.bytes -= e.size();
            self.events.pop_front();
            self.base += 1;
            self.evicted += 1;
        }
    }

    /// Events retained and the bytes they hold.
    pub fn len_and_bytes(&self) -> (usize, usize) {
        (self.events.len(), self.bytes)
    }

    /// The events after `since`, oldest first (the rules: the module doc).
    pub fn after(&mut self, since: Since) -> Result<Vec<Arc<Event>>, TooOld> {
        let start = self.start(since)?;
        Ok(self.events.range(start..).map(|(e, _)| e.clone()).collect())
    }

    /// Where the events after `since` start in the window (see the module doc).
    fn start(&mut self, since: Since) -> Result<usize, TooOld> {
        self.trim();
        let Since::After(id) = since else {
            return Ok(0);
        };
        let why = match self.index.get(&id.origin) {
            Some(entries) => {
                // Case 1: after the last of its origin at or before it.
                let k = entries.partition_point(|&(seq, _)| seq <= id.seq);
                if k > 0 {
                    return Ok((entries[k - 1].1 + 1 - self.base) as usize);
                }
                // Case 2: its origin's next event is the oldest of it retained.
                if entries.front().map(|&(seq, _)| seq) == id.seq.checked_add(1) {
                    return Ok(0);
                }
                Why::TooOld
            }
            // Case 3: this instance's own, and nothing of it came since.
            None if id.origin == self.own && id.seq >= self.own_last => return Ok(0),
            None if id.origin == self.own => Why::TooOld,
            None => {
                let node = id::node_of(id.origin);
                let restarted = id::node_of(self.own) == node
                    || self.index.keys().any(|&o| id::node_of(o) == node);
                if restarted {
                    Why::Restarted
                } else {
                    Why::Unknown
                }
            }
        };
        Err(TooOld {
            why,
            oldest: self.events.front().map(|(e, _)| e.id()),
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

    fn after(r: &mut Retention, origin: u64, seq: u64) -> Result<Vec<u64>, TooOld> {
        r.after(Since::After(EventId { origin, seq }))
            .map(|v| seqs(&v))
    }

    #[test]
    fn a_fleet_resume_after_a_restart_is_not_too_old() {
        // Issue 46 case 5: an instance (restarted, or whose window moved on) holds
        // 0xa-305.. of origin 0xa; a client that handled 0xa-304 elsewhere misses
        // nothing of 0xa.
        let own = 0x0000_0001_0000_0001;
        let mut r = Retention::new(bounds(100, usize::MAX)).owned_by(own);
        r.push(ev(0xb, 7, 1));
        for seq in 305..=307 {
            r.push(ev(0xa, seq, 1));
        }
        assert_eq!(
            after(&mut r, 0xa, 304).unwrap(),
            [7, 305, 306, 307],
            "all of 0xa after 304"
        );
        assert_eq!(after(&mut r, 0xa, 305).unwrap(), [306, 307]);
        assert_eq!(
            after(&mut r, 0xa, 400).unwrap(),
            [] as [u64; 0],
            "past the newest"
        );
        let old = after(&mut r, 0xa, 303).unwrap_err();
        assert_eq!(old.why, Why::TooOld, "0xa-304 is missing");
        assert_eq!(
            old.oldest,
            Some(EventId {
                origin: 0xb,
                seq: 7
            })
        );
        assert_eq!(after(&mut r, 0xa, u64::MAX).unwrap(), [] as [u64; 0]);
    }

    #[test]
    fn too_old_says_why() {
        let own = 0x0000_0001_0000_0001;
        let mut r = Retention::new(bounds(2, usize::MAX)).owned_by(own);
        let why = |r: &mut Retention, origin, seq| after(r, origin, seq).unwrap_err().why;
        // Nothing of its own retained yet: an earlier incarnation of its node restarted.
        assert_eq!(why(&mut r, 0x0000_0001_0000_0002, 5), Why::Restarted);
        assert_eq!(why(&mut r, 0x0000_0002_0000_0002, 5), Why::Unknown);
        // Its own origin with nothing given out since: nothing was missed.
        assert_eq!(after(&mut r, own, 0).unwrap(), [] as [u64; 0]);
        for seq in 1..=4 {
            r.push(ev(own, seq, 1));
        }
        assert_eq!(why(&mut r, own, 1), Why::TooOld);
        assert_eq!(
            after(&mut r, own, 2).unwrap(),
            [3, 4],
            "3 is the oldest kept"
        );
        // Another node's instance is retained: a new incarnation of it means a restart.
        r.push(ev(0x0000_0003_0000_0001, 1, 1));
        assert_eq!(why(&mut r, 0x0000_0003_0000_0009, 1), Why::Restarted);
        // Its own events all gone, the seq it gave out last is still known.
        r.push(ev(0x0000_0003_0000_0001, 2, 1));
        assert_eq!(why(&mut r, own, 3), Why::TooOld);
        assert_eq!(
            after(&mut r, own, 4).unwrap(),
            [1, 2],
            "nothing of its own since 4"
        );
    }

    #[test]
    fn the_index_follows_the_window() {
        let mut r = Retention::new(bounds(1000, usize::MAX));
        // Three origins interleaved, 10,000 events through a window of 1,000.
        for n in 0..10_000u64 {
            r.push(ev(n % 3, n / 3 + 1, 1));
        }
        assert_eq!(r.index.values().map(VecDeque::len).sum::<usize>(), 1000);
        assert!(r.index.values().all(|e| e.front().unwrap().1 >= r.base));
        // The start found by the index is where a scan finds it.
        for origin in 0..3 {
            for seq in (3000..3340).step_by(7) {
                let since = Since::After(EventId { origin, seq });
                let scan = r
                    .events
                    .iter()
                    .rposition(|(e, _)| e.id().origin == origin && e.id().seq <= seq)
                    .map(|i| i + 1);
                match (r.start(since), scan) {
                    (Ok(i), Some(j)) => assert_eq!(i, j, "{origin}-{seq}"),
                    (Ok(0), None) => {
                        assert_eq!(r.index[&origin][0].0, seq + 1, "case 2 only")
                    }
                    (got, want) => panic!("{origin}-{seq}: {got:?} vs {want:?}"),
                }
            }
        }
        // Out of its origin's order: retained, not indexed.
        r.push(ev(0, 5, 1));
        assert_eq!(r.len_and_bytes().0, 1000);
        assert_eq!(after(&mut r, 0, 3334).unwrap().last(), Some(&5));
    }

    #[test]
    fn nothing_is_kept_with_a_zero_window() {
        let mut r = Retention::new(bounds(0, 0));
        r.push(ev(1, 1, 1));
        assert_eq!(r.after(Since::Oldest).unwrap().len(), 0);
    }
}
