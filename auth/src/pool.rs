//! Slow verifications (argon2, an embedder's user store) on tokio's blocking pool: a
//! bounded number at once, a bounded number waiting, refused at once past that.
//!
//! Unbounded, a burst of logins would queue argon2 runs (19 MiB and tens of ms each)
//! without limit: memory and latency for everyone. Bounded, the burst gets
//! [`Failure::Busy`](crate::Failure::Busy) and the server stays responsive.
//!
//! Bounded alone, a flood from many addresses would fill the queue and leave real users
//! only "busy". So the queue is shared fairly: one source may hold at most
//! [`PER_SOURCE`] of its places; and a source in good standing (its last login
//! succeeded, see `throttle.rs`) has a slot and a queue of its own besides, which no
//! flood of failures can fill.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

/// Places in the queue one source may hold at once.
const PER_SOURCE: usize = 2;
/// Jobs waiting for the trusted slot at most.
const TRUSTED_QUEUE: usize = 16;

/// Runs jobs on the blocking pool, `parallel` at once, `queue` more waiting.
pub(crate) struct Pool {
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    queue: usize,
    /// The slot only sources in good standing use (when the others are all taken).
    trusted: Arc<Semaphore>,
    trusted_waiting: AtomicUsize,
    /// Places in the queue each source holds now (only sources holding some).
    per_source: Mutex<HashMap<IpAddr, usize>>,
}

/// Which slots a job may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lane {
    /// The shared slots, behind whoever waits already.
    Any,
    /// The shared slots or the trusted one, whichever frees first.
    Trusted,
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
            trusted: Arc::new(Semaphore::new(1)),
            trusted_waiting: AtomicUsize::new(0),
            per_source: Mutex::new(HashMap::new()),
        }
    }

    /// [`Pool::run`] for a job on behalf of `source` (the throttle's key of it): past
    /// [`PER_SOURCE`] of its jobs waiting, refused; in the [`Lane::Trusted`] lane, the
    /// trusted slot too.
    pub(crate) async fn run_for<T: Send + 'static>(
        &self,
        source: IpAddr,
        lane: Lane,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Refused> {
        if let Ok(permit) = self.permits.clone().try_acquire_owned() {
            return spawn(permit, job).await;
        }
        if lane == Lane::Trusted {
            let ahead = self.trusted_waiting.fetch_add(1, Ordering::SeqCst);
            let _waiting = Waiting(&self.trusted_waiting);
            if ahead < TRUSTED_QUEUE {
                // Neither semaphore is ever closed.
                let permit = tokio::select! {
                    p = self.permits.clone().acquire_owned() => p,
                    p = self.trusted.clone().acquire_owned() => p,
                };
                return spawn(permit.map_err(|_| Refused::Busy)?, job).await;
            }
        }
        let Some(_place) = Place::take(&self.per_source, source) else {
            return Err(Refused::Busy);
        };
        self.run(job).await
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
        spawn(permit, job).await
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

/// Run `job` on the blocking pool holding `permit` until it ends.
async fn spawn<T: Send + 'static>(
    permit: tokio::sync::OwnedSemaphorePermit,
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Refused> {
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        job()
    })
    .await
    .map_err(|_| Refused::Panicked)
}

/// One source's place in the queue, given back however its wait ends.
struct Place<'a> {
    table: &'a Mutex<HashMap<IpAddr, usize>>,
    source: IpAddr,
}

impl<'a> Place<'a> {
    /// A place for `source`, unless it holds [`PER_SOURCE`] already.
    fn take(table: &'a Mutex<HashMap<IpAddr, usize>>, source: IpAddr) -> Option<Self> {
        let mut t = table.lock().unwrap_or_else(|e| e.into_inner());
        let held = t.entry(source).or_insert(0);
        if *held >= PER_SOURCE {
            return None;
        }
        *held += 1;
        Some(Place { table, source })
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = t.get_mut(&self.source) {
            *held -= 1;
            if *held == 0 {
                t.remove(&self.source);
            }
        }
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
