//! The process-wide budget of request bytes being read or run
//! (`max_total_in_flight_bytes`).
//!
//! A decoded request costs several times its wire size while its call runs (a JSON
//! array of small integers becomes a tree ~16x its text), so the bytes of requests in
//! flight are what bound the server's memory. Every HTTP body being read and every
//! stream call in flight is charged here.
//!
//! Two lanes keep one client's large requests from stalling everyone's small ones:
//! requests of any size may charge up to `total`; requests of at most [`SMALL`] bytes
//! may go on up to `total + total / 4` (the reserve). So while large requests hold the
//! whole budget, large requests wait, and pings, small calls and small HTTP bodies go
//! on; the memory bound is `total * 5 / 4` of request bytes.
//!
//! Charges are taken after a frame is seen (its size is known only then), so the budget
//! can be overdrawn by at most one frame per connection decoding at that instant; the
//! check that stops reading runs before every decode.
//!
//! Requests are charged while they are read too (an HTTP body, a stream frame past
//! [`SMALL`]), so several half-read large requests could together hold the budget with
//! none able to finish. A [`Ticket`] breaks the tie: each large request being read holds
//! one, and the oldest may always go on reading, so one of them always completes, runs
//! and gives its charge back. What the oldest reads past the budget is its overdraft,
//! counted apart ([`Overdraft`]): it does not eat the small requests' reserve (a frame
//! that never ends would otherwise starve them until its timeout). The memory bound grows
//! by one request at most.
//!
//! A compressed HTTP body is work that waits: once read it waits its turn to be
//! inflated (`http/inflate.rs`), and inflating needs room in the budget. While it waits
//! its bytes are [`Parked`]: still counted (new large requests wait for them), but not in
//! the room that running work, small requests and inflation itself are judged by, so
//! bodies that wait can never keep each other, or anyone else, waiting for good (999
//! parked gzip bodies once pinned the budget at its cap and every later call waited
//! forever). Parked bytes are bounded by the large lane (`total`, plus the oldest
//! reader's overdraft); the memory bound is then `2 * total + total / 4` of request
//! bytes at worst: `total` parked besides `total + reserve` running.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;

/// Requests up to this size use the reserve (the same size above which decoding moves
/// off the I/O threads: see `heavy`).
pub(crate) const SMALL: usize = 64 * 1024;

#[derive(Debug)]
pub(crate) struct Budget {
    used: AtomicUsize,
    total: usize,
    reserve: usize,
    freed: Notify,
    /// Large requests being read, by arrival: the first may always go on.
    readers: Mutex<BTreeSet<u64>>,
    next_reader: AtomicU64,
    /// Bytes the oldest large request read past the budget (see [`Overdraft`]).
    over: AtomicUsize,
    /// Of `used`, the bytes of requests that wait their turn (see [`Parked`]).
    parked: AtomicUsize,
}

/// A request's charge while it waits its turn (a compressed body waiting to be
/// inflated): counted in [`Budget::used`] and against new large requests, but not in
/// the room running work is judged by. [`Parked::resume`] makes it a charge again;
/// dropped, it is given back.
pub(crate) struct Parked {
    /// Always `Some` until [`Parked::resume`] takes it.
    charge: Option<Charge>,
}

impl Parked {
    /// The charge again, counted as running work.
    pub fn resume(mut self) -> Charge {
        let charge = self.charge.take().expect("a parked charge resumes once");
        charge
            .budget
            .parked
            .fetch_sub(charge.bytes, Ordering::Relaxed);
        charge
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        if let Some(c) = &self.charge {
            c.budget.parked.fetch_sub(c.bytes, Ordering::Relaxed);
        }
    }
}

/// Bytes the oldest large request being read holds past the budget: counted (in
/// [`Budget::used`]) but not in the room other requests are judged by. Given back on drop.
#[derive(Debug)]
pub(crate) struct Overdraft {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Overdraft {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Make this overdraft exactly `bytes`.
    pub fn set(&mut self, bytes: usize) {
        if bytes >= self.bytes {
            self.budget
                .over
                .fetch_add(bytes - self.bytes, Ordering::Relaxed);
        } else {
            self.budget
                .over
                .fetch_sub(self.bytes - bytes, Ordering::Relaxed);
        }
        self.bytes = bytes;
    }
}

impl Drop for Overdraft {
    fn drop(&mut self) {
        self.budget.over.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A large request being read (see the module doc); gives its place up on drop.
#[derive(Debug)]
pub(crate) struct Ticket {
    budget: Arc<Budget>,
    n: u64,
}

impl Ticket {
    /// Is this the oldest large request being read? It may go on whatever the balance.
    pub fn is_first(&self) -> bool {
        let readers = self
            .budget
            .readers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        readers.first() == Some(&self.n)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut readers = self
            .budget
            .readers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        readers.remove(&self.n);
        drop(readers);
        self.budget.freed.notify_waiters();
    }
}

/// Bytes charged to the budget; given back on drop.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Budget {
    pub fn new(total: usize) -> Arc<Budget> {
        let total = total.max(1);
        Arc::new(Budget {
            used: AtomicUsize::new(0),
            total,
            reserve: total / 4,
            freed: Notify::new(),
            readers: Mutex::new(BTreeSet::new()),
            next_reader: AtomicU64::new(0),
            over: AtomicUsize::new(0),
            parked: AtomicUsize::new(0),
        })
    }

    /// An empty overdraft on this budget.
    pub fn overdraft(self: &Arc<Self>) -> Overdraft {
        Overdraft {
            budget: self.clone(),
            bytes: 0,
        }
    }

    /// A place in line for a large request about to be read.
    pub fn ticket(self: &Arc<Self>) -> Ticket {
        let n = self.next_reader.fetch_add(1, Ordering::Relaxed);
        self.readers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(n);
        Ticket {
            budget: self.clone(),
            n,
        }
    }

    /// Is there room for a request of any size? An empty budget always has room, so a
    /// single request larger than the whole budget still runs (alone).
    pub fn has_room(&self) -> bool {
        self.room_for(usize::MAX, 0)
    }

    /// Is there room for a request of `bytes` bytes, `own` of which it already holds?
    /// (A request that holds everything charged has room, as if alone.)
    pub fn room_for(&self, bytes: usize, own: usize) -> bool {
        let used = self.used.load(Ordering::Relaxed);
        used <= own
            || used < self.total
            || (bytes <= SMALL && self.running(used) < self.total + self.reserve)
    }

    /// Of `used`, the bytes not parked: running work and requests being read.
    fn running(&self, used: usize) -> usize {
        used.saturating_sub(self.parked.load(Ordering::Relaxed))
    }

    /// May a request that waited its turn (parked) run now? While running work holds
    /// less than the budget, whatever waits beside it. Parked bytes never keep a parked
    /// request waiting, so the oldest turn always comes.
    pub fn room_to_resume(&self) -> bool {
        self.running(self.used.load(Ordering::Relaxed)) < self.total
    }

    /// Park `charge` while its request waits its turn (see [`Parked`]).
    pub fn park(&self, charge: Charge) -> Parked {
        self.parked.fetch_add(charge.bytes, Ordering::Relaxed);
        self.freed.notify_waiters();
        Parked {
            charge: Some(charge),
        }
    }

    /// Grow `charge` to `bytes` if the budget has room for the difference (or the charge
    /// already holds everything charged: a request alone may always go on); false, and
    /// nothing charged, otherwise.
    pub fn try_grow(&self, charge: &mut Charge, bytes: usize) -> bool {
        let Some(delta) = bytes.checked_sub(charge.bytes) else {
            return true;
        };
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            if used > charge.bytes && used + delta > self.total {
                return false;
            }
            match self.used.compare_exchange_weak(
                used,
                used + delta,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    charge.bytes = bytes;
                    return true;
                }
                Err(now) => used = now,
            }
        }
    }

    /// Charge `bytes` now, whatever the balance (see the module doc).
    pub fn charge(self: &Arc<Self>, bytes: usize) -> Charge {
        self.used.fetch_add(bytes, Ordering::Relaxed);
        Charge {
            budget: self.clone(),
            bytes,
        }
    }

    /// Wait until some charge is given back (then check the room again). Returns after
    /// at most 50 ms regardless: a waiter that checked the balance just before the
    /// last charge was given back would otherwise miss its wake-up.
    pub async fn freed(&self) {
        let _ = tokio::time::timeout(Duration::from_millis(50), self.freed.notified()).await;
    }

    /// Wait for room for `bytes`, then charge them.
    #[cfg(test)]
    pub async fn take(self: &Arc<Self>, bytes: usize) -> Charge {
        self.take_judged(bytes, bytes).await
    }

    /// Wait for room for a request judged `judged` bytes (its lane: see the module
    /// doc), then charge `bytes`.
    pub async fn take_judged(self: &Arc<Self>, bytes: usize, judged: usize) -> Charge {
        loop {
            let freed = self.freed.notified();
            if self.room_for(judged, 0) {
                return self.charge(bytes);
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), freed).await;
        }
    }

    /// May a reply of `bytes` bytes be queued for a client now? Small ones always may
    /// (a bystander's answer); a big one only while the budget is not spent.
    pub fn admits_reply(&self, bytes: usize) -> bool {
        bytes <= SMALL || self.used.load(Ordering::Relaxed) < self.total
    }

    /// Bytes charged now, overdraft included.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed) + self.over.load(Ordering::Relaxed)
    }
}

impl Charge {
    /// Add `bytes` more to this charge.
    pub fn grow(&mut self, bytes: usize) {
        self.budget.used.fetch_add(bytes, Ordering::Relaxed);
        self.bytes += bytes;
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Move `bytes` of this charge (at most all of it) into a charge of their own.
    pub fn split(&mut self, bytes: usize) -> Charge {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        Charge {
            budget: self.budget.clone(),
            bytes,
        }
    }

    /// Make this charge exactly `bytes` (grown or given back).
    pub fn set(&mut self, bytes: usize) {
        match bytes.cmp(&self.bytes) {
            std::cmp::Ordering::Greater => self.grow(bytes - self.bytes),
            std::cmp::Ordering::Less => {
                self.budget
                    .used
                    .fetch_sub(self.bytes - bytes, Ordering::Relaxed);
                self.bytes = bytes;
                self.budget.freed.notify_waiters();
            }
            std::cmp::Ordering::Equal => {}
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.used.fetch_sub(self.bytes, Ordering::Relaxed);
            self.budget.freed.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn waits_for_room_and_lets_one_oversized_request_run_alone() {
        let b = Budget::new(100);
        let big = b.take(1000).await;
        assert!(!b.has_room());
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.take(10).await.bytes() });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "no room while the big one runs");
        drop(big);
        assert_eq!(waiter.await.unwrap(), 10);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn reads_reserve_room_before_they_are_made() {
        let b = Budget::new(100);
        let mut a = b.charge(0);
        let mut c = b.charge(0);
        assert!(b.try_grow(&mut a, 60));
        assert!(!b.try_grow(&mut c, 60), "no room for the second");
        assert_eq!(
            (b.used(), c.bytes()),
            (60, 0),
            "nothing charged when refused"
        );
        assert!(
            b.try_grow(&mut a, 150),
            "alone, a request may go past the budget"
        );
        drop(a);
        assert!(b.try_grow(&mut c, 60));
    }

    #[test]
    fn an_overdraft_is_counted_but_leaves_the_room_alone() {
        let b = Budget::new(100);
        let _all = b.charge(100);
        assert!(b.room_for(SMALL, 0), "the reserve is free");
        let mut over = b.overdraft();
        over.set(50);
        assert_eq!(b.used(), 150);
        assert!(
            b.room_for(SMALL, 0),
            "the oldest frame's overdraft leaves the reserve"
        );
        over.set(10);
        assert_eq!(b.used(), 110);
        drop(over);
        assert_eq!(b.used(), 100);
    }

    #[test]
    fn parked_requests_never_keep_each_other_or_small_ones_waiting() {
        let b = Budget::new(100);
        // Compressed bodies read and waiting to be inflated hold the whole budget.
        let waiting: Vec<Parked> = (0..5).map(|_| b.park(b.charge(40))).collect();
        assert_eq!(b.used(), 200);
        assert!(!b.has_room(), "new large requests wait for them");
        assert!(b.room_for(SMALL, 0), "small requests do not");
        assert!(b.room_to_resume(), "and the first in line may run");
        let mut waiting = waiting.into_iter();
        let running = waiting.next().unwrap().resume();
        let mut running = running;
        running.grow(100);
        assert!(!b.room_to_resume(), "while running work holds the budget");
        drop(running);
        assert!(b.room_to_resume());
        drop(waiting);
        assert_eq!(b.used(), 0, "parked bytes are given back on drop");
        assert!(b.room_to_resume() && b.has_room());
    }

    #[test]
    fn the_oldest_large_request_being_read_may_always_go_on() {
        let b = Budget::new(100);
        let first = b.ticket();
        let second = b.ticket();
        let _a = b.charge(60);
        let _b = b.charge(60);
        assert!(
            !b.has_room(),
            "both half-read requests together hold the budget"
        );
        assert!(first.is_first() && !second.is_first());
        drop(first);
        assert!(
            second.is_first(),
            "the next in line goes on once the first is read"
        );
    }

    #[tokio::test]
    async fn small_requests_use_the_reserve_while_large_ones_hold_the_budget() {
        let b = Budget::new(400 * 1024);
        let _large = b.take(400 * 1024).await;
        assert!(!b.has_room(), "large requests wait");
        assert!(b.room_for(SMALL, 0), "a small one goes on");
        let _small = b.take(SMALL).await;
        let _more = b.take(SMALL).await;
        assert!(!b.room_for(SMALL, 0), "the reserve (100 KiB) is spent too");
        assert!(
            b.room_for(usize::MAX, b.used()),
            "a request holding all is alone"
        );
    }
}
