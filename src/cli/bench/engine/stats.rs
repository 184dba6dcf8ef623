//! What each bench task records: latencies in a histogram, and counts by outcome.
//! Every task keeps its own (no sharing on the hot path); they are merged at the end.

use hdrhistogram::Histogram;
use std::time::Duration;

/// Latencies are recorded in nanoseconds from 1 µs to 60 s, to 2 significant digits
/// (1 % resolution): about 20 KiB per task, so thousands of tasks stay cheap.
const LOWEST_NS: u64 = 1_000;
const HIGHEST_NS: u64 = 60_000_000_000;
const SIGFIG: u8 = 2;

/// Outcomes of measured calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Calls answered with the expected result.
    pub ok: u64,
    /// Calls answered with an error reply.
    pub error_replies: u64,
    /// Calls answered with a result other than the expected one.
    pub wrong_results: u64,
    /// Calls with no reply (timeout, connection lost).
    pub transport_errors: u64,
}

impl Counts {
    pub fn errors(&self) -> u64 {
        self.error_replies + self.wrong_results + self.transport_errors
    }

    pub fn calls(&self) -> u64 {
        self.ok + self.errors()
    }

    pub fn add(&mut self, o: &Counts) {
        self.ok += o.ok;
        self.error_replies += o.error_replies;
        self.wrong_results += o.wrong_results;
        self.transport_errors += o.transport_errors;
    }
}

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    ErrorReply,
    WrongResult,
    Transport,
}

/// One task's record.
pub struct Recorder {
    pub hist: Histogram<u64>,
    pub counts: Counts,
    /// The first failure seen, to show the user what went wrong.
    pub first_error: Option<String>,
}

impl Recorder {
    pub fn new() -> Recorder {
        Recorder {
            hist: Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGFIG)
                .expect("valid histogram bounds"),
            counts: Counts::default(),
            first_error: None,
        }
    }

    /// Record one measured call. Latency is recorded for every outcome, as wrk does.
    pub fn record(&mut self, latency: Duration, outcome: Outcome, detail: impl FnOnce() -> String) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.hist.saturating_record(ns.clamp(LOWEST_NS, HIGHEST_NS));
        let c = &mut self.counts;
        match outcome {
            Outcome::Ok => c.ok += 1,
            Outcome::ErrorReply => c.error_replies += 1,
            Outcome::WrongResult => c.wrong_results += 1,
            Outcome::Transport => c.transport_errors += 1,
        }
        if outcome != Outcome::Ok && self.first_error.is_none() {
            self.first_error = Some(detail());
        }
    }

    pub fn merge(&mut self, other: &Recorder) {
        // Same bounds everywhere, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.counts.add(&other.counts);
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_counts_and_latencies() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        for ms in 1..=100 {
            a.record(Duration::from_millis(ms), Outcome::Ok, String::new);
        }
        b.record(Duration::from_secs(3600), Outcome::Transport, || {
            "lost".into()
        });
        b.record(Duration::from_nanos(5), Outcome::WrongResult, || {
            "wrong".into()
        });
        a.merge(&b);
        assert_eq!(a.counts.calls(), 102);
        assert_eq!(a.counts.errors(), 2);
        assert_eq!(a.first_error.as_deref(), Some("lost"));
        let p50 = a.hist.value_at_quantile(0.5) as f64 / 1e6;
        assert!((49.0..=52.0).contains(&p50), "p50 {p50} ms");
        assert!(a.hist.max() >= 59_000_000_000, "clamped to the top bound");
    }
}
