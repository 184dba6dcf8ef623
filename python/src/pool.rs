//! The worker threads plain (`def`) Python functions run on: a fixed number per server.
//!
//! Measured first with tokio's blocking pool (a `spawn_blocking` per call, the GIL taken
//! and a Python thread state made and freed per call): on one core, a quarter of the
//! server's time went to switching threads and the rest of the call waited on wake-ups.
//! Here a worker is a thread of its own that waits for work without the GIL and, once it
//! holds the GIL, runs every call already queued before letting it go: under load, one
//! GIL hand-over (and one thread switch) serves many calls. The number of threads is the bound on functions
//! running at once (`workers`); a call whose caller has gone (its deadline passed
//! before it started) is dropped unrun.

use pyo3::prelude::*;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};

/// One call, run on a worker with the GIL held.
pub type Job = Box<dyn FnOnce(Python<'_>) + Send>;

/// What the workers and the submitters share.
#[derive(Default)]
struct Queue {
    jobs: Mutex<(VecDeque<Job>, bool)>,
    ready: Condvar,
}

impl Queue {
    /// The next job, waiting for one; `None` once the pool is closed and empty.
    fn next_blocking(&self) -> Option<Job> {
        let mut q = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(job) = q.0.pop_front() {
                return Some(job);
            }
            if q.1 {
                return None;
            }
            q = self.ready.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn try_next(&self) -> Option<Job> {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .pop_front()
    }
}

/// A fixed set of Python worker threads.
pub struct Pool {
    queue: Arc<Queue>,
}

impl Pool {
    /// Start `workers` threads.
    pub fn new(workers: usize) -> std::io::Result<Pool> {
        let queue = Arc::new(Queue::default());
        for i in 0..workers {
            let q = queue.clone();
            std::thread::Builder::new()
                .name(format!("rpcmux-python-{i}"))
                .spawn(move || work(&q))?;
        }
        Ok(Pool { queue })
    }

    /// Queue `job` for the next free worker.
    pub fn submit(&self, job: Job) {
        let mut q = self.queue.jobs.lock().unwrap_or_else(|e| e.into_inner());
        q.0.push_back(job);
        drop(q);
        self.queue.ready.notify_one();
    }
}

impl Drop for Pool {
    /// The workers finish what is queued and end.
    fn drop(&mut self) {
        self.queue.jobs.lock().unwrap_or_else(|e| e.into_inner()).1 = true;
        self.queue.ready.notify_all();
    }
}

/// A worker: waits without Python, then holds the GIL for every job queued by then.
/// Waiting outside Python (not in `detach`) lets a worker of a closed pool end without
/// taking the GIL again, which at interpreter exit it could not.
fn work(q: &Queue) {
    while let Some(job) = q.next_blocking() {
        Python::attach(|py| {
            job(py);
            while let Some(job) = q.try_next() {
                job(py);
            }
        })
    }
}
