//! The result of a bench run, as text for people and CSV / JSON for scripts.

use super::stats::{Counts, Recorder};
use serde::Serialize;
use std::time::Duration;

/// Latency figures in milliseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub proto: String,
    pub addr: String,
    pub payload: String,
    pub connections: usize,
    pub pipeline: usize,
    /// Measured seconds (after warmup).
    pub duration_s: f64,
    pub calls: u64,
    pub calls_per_sec: f64,
    pub errors: u64,
    pub error_replies: u64,
    pub wrong_results: u64,
    pub transport_errors: u64,
    pub latency_ms: Latency,
    /// The first failure seen, if any.
    pub first_error: Option<String>,
}

/// Columns of the CSV form, in order (the header line).
pub const CSV_HEADER: &str = "proto,addr,payload,connections,pipeline,duration_s,calls,calls_per_sec,errors,error_replies,wrong_results,transport_errors,p50_ms,p90_ms,p99_ms,max_ms,mean_ms";

impl Report {
    pub(crate) fn new(
        cfg: &super::config::BenchConfig,
        rec: &Recorder,
        measured: Duration,
    ) -> Report {
        let secs = measured.as_secs_f64().max(1e-9);
        let Counts {
            error_replies,
            wrong_results,
            transport_errors,
            ..
        } = rec.counts;
        let ms = |ns: u64| ns as f64 / 1e6;
        let h = &rec.hist;
        let empty = h.is_empty();
        let q = |q: f64| {
            if empty {
                0.0
            } else {
                ms(h.value_at_quantile(q))
            }
        };
        Report {
            proto: cfg.proto.name().into(),
            addr: cfg.addr.clone(),
            payload: cfg.payload.name.clone(),
            connections: cfg.connections,
            pipeline: cfg.pipeline,
            duration_s: secs,
            calls: rec.counts.calls(),
            calls_per_sec: rec.counts.calls() as f64 / secs,
            errors: rec.counts.errors(),
            error_replies,
            wrong_results,
            transport_errors,
            latency_ms: Latency {
                p50: q(0.5),
                p90: q(0.9),
                p99: q(0.99),
                max: if empty { 0.0 } else { ms(h.max()) },
                mean: if empty { 0.0 } else { h.mean() / 1e6 },
            },
            first_error: rec.first_error.clone(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// One CSV row matching [`CSV_HEADER`].
    pub fn to_csv_row(&self) -> String {
        let l = &self.latency_ms;
        format!(
            "{},{},{},{},{},{:.3},{},{:.1},{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3}",
            self.proto,
            self.addr,
            csv_field(&self.payload),
            self.connections,
            self.pipeline,
            self.duration_s,
            self.calls,
            self.calls_per_sec,
            self.errors,
            self.error_replies,
            self.wrong_results,
            self.transport_errors,
            l.p50,
            l.p90,
            l.p99,
            l.max,
            l.mean
        )
    }

    pub fn to_text(&self) -> String {
        let l = &self.latency_ms;
        let mut s = format!(
            "{} {} payload {}: {} connection(s) x {} in flight, {:.1} s\n\
             calls      {} ({:.0} calls/s)\n\
             errors     {} (error replies {}, wrong results {}, no reply {})\n\
             latency    p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms  mean {:.3} ms\n",
            self.proto,
            self.addr,
            self.payload,
            self.connections,
            self.pipeline,
            self.duration_s,
            self.calls,
            self.calls_per_sec,
            self.errors,
            self.error_replies,
            self.wrong_results,
            self.transport_errors,
            l.p50,
            l.p90,
            l.p99,
            l.max,
            l.mean,
        );
        if let Some(e) = &self.first_error {
            s.push_str(&format!("first error: {e}\n"));
        }
        s
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
