//! Counting the process's heap allocations (feature `count-allocs`, off by default).
//!
//! A measuring aid, not for production: with the feature on, this crate sets the
//! process's global allocator to mimalloc (what the `rpcmux` binary uses anyway, see
//! `main.rs`) behind relaxed atomic counters, and `/metrics` shows them as
//! `rpcmux_alloc_*`. `benches/allocs.py` reads them around a run of calls on each
//! protocol path to report allocations and bytes per call. Every allocation then pays
//! an atomic add on a shared cache line, so do not measure speed with this build.
//!
//! The allocator is declared here, in the library, because the counters must be
//! readable where `/metrics` is rendered; `main.rs` leaves out its own when the feature
//! is on. The library's unit tests keep theirs (`lib.rs`), so there it counts nothing.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// `alloc` and `alloc_zeroed` calls.
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// `realloc` calls (not counted as allocations).
static REALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// `dealloc` calls.
static DEALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// Bytes asked for: each allocation's size, and what a `realloc` grows a block by.
static BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes in blocks not yet freed (the sizes asked for, not what the allocator rounds
/// them up to): the heap a set of idle connections holds, free of the page-level noise
/// in the resident size (`benches/idle_memory.py`).
static LIVE: AtomicU64 = AtomicU64::new(0);

/// mimalloc, counted.
struct Counting;

#[cfg(not(test))]
#[global_allocator]
static ALLOC: Counting = Counting;

// SAFETY: every call is passed on unchanged to mimalloc, which upholds GlobalAlloc's
// contract; the counters only add to atomics (they never allocate).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        LIVE.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        BYTES.fetch_add(layout.size() as u64, Relaxed);
        LIVE.fetch_add(layout.size() as u64, Relaxed);
        // SAFETY: as for alloc.
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        DEALLOCATIONS.fetch_add(1, Relaxed);
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        // SAFETY: ptr came from this allocator (that is, mimalloc) with this layout.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        REALLOCATIONS.fetch_add(1, Relaxed);
        BYTES.fetch_add(new_size.saturating_sub(layout.size()) as u64, Relaxed);
        // Wrapping: a shrink subtracts, and the sum stays the live total.
        LIVE.fetch_add(
            (new_size as u64).wrapping_sub(layout.size() as u64),
            Relaxed,
        );
        // SAFETY: ptr came from mimalloc with this layout; new_size is the caller's.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

/// Bytes live now (see [`LIVE`]), for a gauge.
pub(crate) fn live() -> (&'static str, &'static str, u64) {
    (
        "alloc_live_bytes",
        "Heap bytes in blocks not yet freed, as asked for (feature count-allocs)",
        LIVE.load(Relaxed),
    )
}

/// The counts so far: allocations, reallocations, deallocations, bytes asked for.
pub(crate) fn counts() -> [(&'static str, &'static str, u64); 4] {
    [
        (
            "alloc_allocations",
            "Heap allocations since start (alloc and alloc_zeroed calls; feature count-allocs)",
            ALLOCATIONS.load(Relaxed),
        ),
        (
            "alloc_reallocations",
            "Heap reallocations since start (realloc calls; feature count-allocs)",
            REALLOCATIONS.load(Relaxed),
        ),
        (
            "alloc_deallocations",
            "Heap blocks freed since start (feature count-allocs)",
            DEALLOCATIONS.load(Relaxed),
        ),
        (
            "alloc_bytes",
            "Heap bytes asked for since start: allocation sizes plus what reallocations grew blocks by (feature count-allocs)",
            BYTES.load(Relaxed),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::alloc::{GlobalAlloc, Layout};

    /// The counters move by what the wrapper was asked (called directly: in unit tests
    /// the global allocator is lib.rs's, so nothing else moves them).
    #[test]
    fn counts_what_it_is_asked() {
        let (before, live_before) = (super::counts().map(|(_, _, n)| n), super::live().2);
        let a = super::Counting;
        let layout = Layout::from_size_align(100, 8).unwrap();
        // SAFETY: a valid non-zero layout; the block is freed with the layout it has.
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            let p = a.realloc(p, layout, 300);
            assert!(!p.is_null());
            a.dealloc(p, Layout::from_size_align(300, 8).unwrap());
            let q = a.alloc_zeroed(layout);
            assert!(!q.is_null());
            a.dealloc(q, layout);
        }
        let after = super::counts().map(|(_, _, n)| n);
        let d: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
        assert_eq!(d, [2, 1, 2, 100 + 200 + 100]);
        assert_eq!(super::live().2, live_before, "all freed");
    }
}
