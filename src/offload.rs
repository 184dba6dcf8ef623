//! Parsing and encoding big messages off the async workers.
//!
//! Decoding a 16 MiB body takes a worker for a second or more; on a 2-core machine two
//! such clients left every other connection waiting (a bystander's ping took 1.5 s).
//! Work on messages of at least [`OFFLOAD_AT`] bytes runs on tokio's blocking pool
//! instead, at most one job per core at a time, so the async workers keep serving.
//! Small messages, the common case, stay inline: a thread hop costs more than they do.

use std::sync::OnceLock;
use tokio::sync::Semaphore;

/// Messages from this size up are parsed and encoded on the blocking pool.
pub(crate) const OFFLOAD_AT: usize = 64 * 1024;

fn slots() -> &'static Semaphore {
    static SLOTS: OnceLock<Semaphore> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Semaphore::new(cores)
    })
}

/// Run `job` (whose input is `size` bytes) inline when small, else on the blocking pool.
pub(crate) async fn run<T, F>(size: usize, job: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if size < OFFLOAD_AT {
        return job();
    }
    let _slot = slots().acquire().await;
    match tokio::task::spawn_blocking(job).await {
        Ok(t) => t,
        // The job panicked: the caller's task sees it as its own panic (the connection
        // ends; the server lives). Cancelled: only when the runtime is going away.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => std::panic::resume_unwind(Box::new(e.to_string())),
    }
}
