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
//! - emptied pages are purged [`PURGE_DELAY_MS`] after they emptied, not mimalloc v3's
//!   default second, and a thread of its own ([`janitor`]) runs the purge twice a
//!   second: a purge only happens when some thread collects after the delay, and after
//!   a burst none did (an idle HTTP connection kept 7.2 KiB resident, 3.3 once purged:
//!   hyper's buffers, given back when it idles, are most of a page each).
//!
//! `MIMALLOC_PURGE_DELAY` in the environment still wins over [`PURGE_DELAY_MS`].

// quanta's clock (the CPU's time-stamp counter): a worker under light load parks tens of
// thousands of times a second, and the OS clock was most of this hook's cost.
use quanta::Instant;
use std::cell::Cell;
use std::sync::Once;
use std::time::Duration;

/// How often a parking worker may collect its heap.
const EVERY: Duration = Duration::from_millis(100);

/// How long an emptied page stays committed before it is given back (mimalloc v3: 1000;
/// v2's was 10): long enough that a busy server reuses pages rather than returning and
/// faulting them in again, short enough that a burst's pages are gone within a second.
const PURGE_DELAY_MS: std::os::raw::c_long = 100;

/// How often the janitor purges the pages whose delay has passed.
const PURGE_EVERY: Duration = Duration::from_millis(500);

/// `mi_option_purge_delay` (the same in mimalloc v2 and v3: retired options keep their
/// numbers as `mi_option_deprecated_*`). libmimalloc-sys names only older options.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

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

/// Set the purge delay (unless the environment set one) and start the [`janitor`].
fn start_purging() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets one of mimalloc's option values (an atomic); no pointers.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
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
