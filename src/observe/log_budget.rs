//! At most [`BURST`] log lines a second for one kind of event, the rest only counted:
//! a flood of refusals (a password guesser's 117k failed logins a minute) must not
//! become a flood of log lines. The next line logged says how many were not.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Lines a second at most (the connection refusals' budget too).
pub(crate) const BURST: u64 = 10;

/// The budget of one kind of line.
pub(crate) struct LogBudget {
    start: Instant,
    /// The second (since `start`) the window is in.
    window: AtomicU64,
    /// Lines logged in the window.
    logged: AtomicU64,
    /// Lines not logged since the last one that was.
    suppressed: AtomicU64,
}

impl LogBudget {
    pub(crate) fn new() -> Self {
        LogBudget {
            start: Instant::now(),
            window: AtomicU64::new(0),
            logged: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// `Some(n)`: log this line, and say `n` were not since the last one; `None`: over
    /// budget this second, do not log it (it is counted).
    pub(crate) fn admit(&self) -> Option<u64> {
        let second = self.start.elapsed().as_secs();
        if self.window.swap(second, Ordering::Relaxed) != second {
            self.logged.store(0, Ordering::Relaxed);
        }
        if self.logged.fetch_add(1, Ordering::Relaxed) >= BURST {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(self.suppressed.swap(0, Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_only_counts() {
        let b = LogBudget::new();
        let admitted = (0..1000).filter(|_| b.admit().is_some()).count() as u64;
        // Within one second, BURST; across a second boundary, at most twice that.
        assert!((BURST..=2 * BURST).contains(&admitted), "{admitted}");
        let not = b.suppressed.load(Ordering::Relaxed);
        assert_eq!(admitted + not, 1000);
    }
}
