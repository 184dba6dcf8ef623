//! Giving the binary's idle memory back to the system.
//!
//! The binary allocates with mimalloc (v3, see `main.rs`). mimalloc keeps blocks that
//! one thread frees in another thread's pages until the owning thread collects them,
//! and gives emptied pages back to the system (purges them) only some time after they
//! emptied, when some thread next collects. A tokio worker that goes quiet after a burst
//! does neither: 10,000 connections that each made one call and then idled kept the
//! resident size at the burst's peak (20 KiB per HTTP connection) although every one of
//! them had released its buffers; collected, it is 7 KiB (`benches/idle_memory.py`).
//! So:
//!
//! - each worker collects its own heap when it parks with nothing to do, at most ten
//!   times a second (a collect walks the heap's pages: about 2,000 of them with 10,000
//!   connections open, tens of microseconds). At once a second, what a worker freed
//!   after its last collect before going quiet stayed resident: it then sleeps until
//!   its next timer, minutes away for idle connections (3.6 KiB of the 13.2 of each
//!   idle HTTP connection was such blocks);
//! - a thread of its own ([`janitor`]) purges twice a second. mimalloc v3 gives an
//!   emptied page back a second after it emptied (`MIMALLOC_PURGE_DELAY`), but only when
//!   some thread collects after that, and after a burst none did (an idle HTTP
//!   connection kept 7.2 KiB resident, 3.3 once purged: hyper's buffers, given back when
//!   it idles, are most of a page each). The delay itself is left alone: with it at
//!   100 ms the debug server, reallocating 6 MiB requests and replies, fell behind in
//!   `tests/hostile/memory.rs` (pages given back and faulted in again; one run each way),
//!   for no gain in `benches/idle_memory.py` once the janitor purges.

// quanta's clock (the CPU's time-stamp counter): a worker under light load parks tens of
// thousands of times a second, and the OS clock was most of this hook's cost.
use quanta::Instant;
use std::cell::Cell;
use std::sync::Once;
use std::time::Duration;

/// How often a parking worker may collect its heap.
const EVERY: Duration = Duration::from_millis(100);

/// How often the janitor purges the pages whose delay has passed.
const PURGE_EVERY: Duration = Duration::from_millis(500);

thread_local! {
    static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// For `tokio::runtime::Builder::on_thread_park`.
pub fn collect_when_parked() {
    static START: Once = Once::new();
    START.call_once(start_purging);
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

/// Start the [`janitor`].
fn start_purging() {
    let spawned = std::thread::Builder::new()
        .name("mimalloc-purge".into())
        .spawn(janitor);
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the allocator's purge thread; idle memory is given back later");
    }
}

/// Purge emptied pages whose delay has passed, forever. Purging is process-wide (any
/// thread's collect does it) but happens only when some thread collects; this one has
/// an empty heap of its own, so its collect is only that.
fn janitor() {
    // SAFETY: neither takes pointers. A collect on a thread whose heap was never
    // initialized returns before purging, hence the init.
    unsafe { libmimalloc_sys::mi_thread_init() };
    loop {
        std::thread::sleep(PURGE_EVERY);
        // SAFETY: as above.
        unsafe { libmimalloc_sys::mi_collect(false) };
    }
}
