//! Giving the binary's idle memory back to the system.
//!
//! The binary allocates with mimalloc (see `main.rs`). mimalloc keeps blocks that one
//! thread frees in another thread's pages until the owning thread collects them, and
//! purges emptied pages only when the owner next runs its allocator. A tokio worker
//! that goes quiet after a burst never does: 10,000 connections that each made one call
//! and then idled kept the resident size at the burst's peak (20 KiB per HTTP
//! connection) although every one of them had released its buffers; collected, it is
//! 7 KiB (`benches/idle_memory.py`). So each worker collects its own heap when it
//! parks with nothing to do, at most once a second (a collect walks the heap's pages).

// quanta's clock (the CPU's time-stamp counter): a worker under light load parks tens of
// thousands of times a second, and the OS clock was most of this hook's cost.
use quanta::Instant;
use std::cell::Cell;
use std::time::Duration;

/// How often a parking worker may collect its heap.
const EVERY: Duration = Duration::from_secs(1);

thread_local! {
    static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// For `tokio::runtime::Builder::on_thread_park`.
pub fn collect_when_parked() {
    let now = Instant::now();
    let due = LAST.with(|last| match last.get() {
        Some(t) if now.duration_since(t) < EVERY => false,
        _ => {
            last.set(Some(now));
            true
        }
    });
    if due {
        // SAFETY: mi_collect takes no pointers; it only walks the calling thread's heap.
        unsafe { libmimalloc_sys::mi_collect(false) };
    }
}
