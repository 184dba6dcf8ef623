//! Slow verifications (argon2, an embedder's user store) on tokio's blocking pool: a
//! bounded number at once, a bounded number waiting, refused at once past that.
//!
//! Unbounded, a burst of logins would queue argon2 runs (19 MiB and tens of ms each)
//! without limit: memory and latency for everyone. Bounded, the burst gets
//! [`Failure::Busy`](crate::Failure::Busy) and the server stays responsive.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Runs jobs on the blocking pool, `parallel` at once, `queue` more waiting.
pub(crate) struct Pool {
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
}

/// Why a job did not run to its end.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The queue was full: the job did not run.
    Busy,
    /// The job panicked.
    Panicked,
}

impl Pool {
    /// One job per core at once (argon2 is CPU-bound), and 64 waiting.
    pub(crate) fn per_core() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::new(cores, 64)
    }

    pub(crate) fn new(parallel: usize, queue: usize) -> Self {
        let parallel = parallel.max(1);
        Pool {
            permits: Arc::new(Semaphore::new(parallel)),
            waiting: AtomicUsize::new(0),
            queue,
        }
    }

    /// Run `job` on the blocking pool once a slot is free, or [`Refused::Busy`] at once
    /// if `queue` jobs wait already. Dropping the future while the job runs lets it
    /// finish, still holding its slot (the bound counts running jobs, not callers).
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Refused> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let ahead = self.waiting.fetch_add(1, Ordering::SeqCst);
                let _waiting = Waiting(&self.waiting);
                if ahead >= self.queue {
                    return Err(Refused::Busy);
                }
                // The semaphore is never closed.
                self.permits
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| Refused::Busy)?
            }
        };
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            job()
        })
        .await
        .map_err(|_| Refused::Panicked)
    }

    /// How many jobs wait for a slot now.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Take every slot (a test's way to make jobs wait).
    #[cfg(test)]
    pub(crate) fn hold_all(&self) -> tokio::sync::OwnedSemaphorePermit {
        let n = u32::try_from(self.permits.available_permits()).expect("few slots");
        self.permits
            .clone()
            .try_acquire_many_owned(n)
            .expect("all slots free")
    }
}

/// Counts a waiting job out again however its wait ends (a slot, or the caller gone).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_and_refuses_past_the_queue() {
        let pool = Arc::new(Pool::new(1, 1));
        assert_eq!(pool.run(|| 7).await, Ok(7));
        let held = pool.hold_all();
        let waiter = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run(|| 8).await })
        };
        while pool.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(pool.run(|| 9).await, Err(Refused::Busy));
        drop(held);
        assert_eq!(waiter.await.unwrap(), Ok(8));
        assert_eq!(pool.waiting(), 0);
        assert_eq!(pool.run(|| 10).await, Ok(10));
    }

    #[tokio::test]
    async fn a_panic_is_reported() {
        let pool = Pool::new(1, 1);
        assert_eq!(
            pool.run(|| panic!("boom")).await,
            Err::<(), _>(Refused::Panicked)
        );
        assert_eq!(pool.run(|| 1).await, Ok(1), "the slot came back");
    }
}
