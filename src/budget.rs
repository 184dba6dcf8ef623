//! The process-wide budget of request bytes being read or run
//! (`max_total_in_flight_bytes`).
//!
//! A decoded request costs several times its wire size while its call runs (a JSON
//! array of small integers becomes a tree ~30x its text), so the bytes of requests in
//! flight are what bound the server's memory. Every HTTP body being read and every
//! stream call in flight is charged here; while the budget is spent, HTTP bodies stop
//! being read and stream connections stop being decoded, until calls finish.
//!
//! Charges are taken after a frame is seen (its size is known only then), so the budget
//! can be overdrawn by at most one frame per connection decoding at that instant; the
//! check that stops reading runs before every decode.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

pub(crate) struct Budget {
    used: AtomicUsize,
    total: usize,
    freed: Notify,
}

/// Bytes charged to the budget; given back on drop.
pub(crate) struct Charge {
    budget: Arc<Budget>,
    bytes: usize,
}

impl Budget {
    pub fn new(total: usize) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicUsize::new(0),
            total: total.max(1),
            freed: Notify::new(),
        })
    }

    /// Is there room for more work? An empty budget always has room, so a single
    /// request larger than the whole budget still runs (alone).
    pub fn has_room(&self) -> bool {
        let used = self.used.load(Ordering::Relaxed);
        used == 0 || used < self.total
    }

    /// Charge `bytes` now, whatever the balance (see the module doc).
    pub fn charge(self: &Arc<Self>, bytes: usize) -> Charge {
        self.used.fetch_add(bytes, Ordering::Relaxed);
        Charge {
            budget: self.clone(),
            bytes,
        }
    }

    /// Wait until some charge is given back (then check [`Budget::has_room`] again).
    pub async fn freed(&self) {
        self.freed.notified().await
    }

    /// Wait for room, then charge `bytes`.
    pub async fn take(self: &Arc<Self>, bytes: usize) -> Charge {
        loop {
            let freed = self.freed.notified();
            if self.has_room() {
                return self.charge(bytes);
            }
            freed.await;
        }
    }

    #[cfg(test)]
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
}
