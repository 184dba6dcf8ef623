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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
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
}

/// Bytes charged to the budget; given back on drop.
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
        })
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
        used <= own || used < self.total || (bytes <= SMALL && used < self.total + self.reserve)
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
    pub async fn take(self: &Arc<Self>, bytes: usize) -> Charge {
        loop {
            let freed = self.freed.notified();
            if self.room_for(bytes, 0) {
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

    /// Bytes charged now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
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
