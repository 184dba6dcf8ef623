//! The Prometheus metrics, with `prometheus-client` doing the exposition.
//!
//! Names follow go-grpc-prometheus (`*_started_total`, `*_handled_total` with a `code`
//! label, `*_handling_seconds`) and OpenTelemetry's RPC conventions for the labels
//! (`protocol` is `rpc.system` with its transport, `method` is `rpc.method`); the
//! mapping is in docs/operations.md. Label values are bounded: `method` is a registered
//! verb's name or `unknown`, never what a client sent; `protocol` is one of a fixed set.

use crate::conn::refusals::Refusal;
use crate::events::EventHub;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use std::sync::atomic::Ordering;

/// OpenTelemetry's default explicit histogram buckets (0 .. 10 s), in seconds.
pub(crate) const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// How an event reached a subscriber.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HowLabel {
    how: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CallLabels {
    pub protocol: &'static str,
    pub method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HandledLabels {
    pub protocol: &'static str,
    pub method: String,
    /// `ok`, or the error code the caller got.
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ProtocolLabel {
    pub protocol: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OutcomeLabel {
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct LimitLabel {
    pub limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct LoginLabels {
    /// `password`, `token`, `certificate`, `custom`.
    pub via: &'static str,
    /// `ok`, `rejected`, `throttled`, `busy`, `unsupported`.
    pub outcome: &'static str,
}

/// Verbs counted under a `method` label of their own; later ones count as `other`.
pub(crate) const MAX_METHOD_LABELS: usize = 1000;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BudgetLabel {
    budget: &'static str,
}

fn histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// Every metric the server exports.
#[derive(Debug)]
pub(crate) struct Metrics {
    registry: Registry,
    pub started: Family<CallLabels, Counter>,
    pub handled: Family<HandledLabels, Counter>,
    pub duration: Family<CallLabels, Histogram, fn() -> Histogram>,
    pub connections_open: Family<ProtocolLabel, Gauge>,
    pub connections_accepted: Counter,
    pub sniffed: Family<OutcomeLabel, Counter>,
    /// Requests refused by a per-request limit (body, frame, batch, reply); connection
    /// refusals are copied in from [`crate::conn::refusals::Refusals`] at scrape time.
    pub limits: Family<LimitLabel, Counter>,
    pub tls_failed: Counter,
    /// Credentials checked (`--auth`), by kind and outcome.
    pub logins: Family<LoginLabels, Counter>,
    subscribers: Gauge,
    /// Bytes of requests in flight and of output queued for clients, process-wide.
    budgets: Family<BudgetLabel, Gauge>,
    events_published: Counter,
    subscribers_dropped: Counter,
    /// Events queued to subscribers, by how (`live`, `replayed`).
    events_delivered: Family<HowLabel, Counter>,
    events_retained: Gauge,
    events_retained_bytes: Gauge,
    /// Events gone from the retention window by its bounds.
    events_expired: Counter,
    /// Events across instances (`[events] url`), copied from the fan-out at scrape time.
    fanout: Family<OutcomeLabel, Counter>,
    backend_connects: Counter,
    backend_up: Gauge,
    fanout_waiting: Gauge,
    stream_lag: Gauge,
    pub bytes_in: Family<ProtocolLabel, Counter>,
    pub bytes_out: Family<ProtocolLabel, Counter>,
    /// The `code` label values in use.
    pub codes: std::sync::Arc<Codes>,
    /// Verbs that have a `method` label value of their own (see [`Metrics::method_label`]).
    method_labels: std::sync::atomic::AtomicUsize,
    /// The gateway's upstreams (refreshes, address health).
    pub(crate) upstreams: crate::observe::upstream::UpstreamMetrics,
    /// The heap's counts, copied in at scrape time (feature `count-allocs`).
    #[cfg(feature = "count-allocs")]
    allocs: [Counter; 4],
    #[cfg(feature = "count-allocs")]
    live: Gauge,
}

/// Distinct error codes get a label value each up to [`Codes::MAX`]; past that they
/// count as `other`. A verb's codes are its own, but a gateway's upstream, or a handler
/// that passes on a code it was given, could otherwise grow the label set without end.
#[derive(Debug, Default)]
pub(crate) struct Codes(std::sync::Mutex<std::collections::HashSet<i64>>);

impl Codes {
    /// Distinct codes with a label value of their own.
    pub const MAX: usize = 64;

    /// The label value for `code`.
    pub fn label(&self, code: i64) -> String {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if seen.contains(&code) || seen.len() < Self::MAX {
            seen.insert(code);
            code.to_string()
        } else {
            "other".into()
        }
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("rpcmux"),
            started: Family::default(),
            handled: Family::default(),
            duration: Family::new_with_constructor(histogram),
            connections_open: Family::default(),
            connections_accepted: Counter::default(),
            sniffed: Family::default(),
            limits: Family::default(),
            tls_failed: Counter::default(),
            subscribers: Gauge::default(),
            budgets: Family::default(),
            events_published: Counter::default(),
            subscribers_dropped: Counter::default(),
            events_delivered: Family::default(),
            events_retained: Gauge::default(),
            events_retained_bytes: Gauge::default(),
            events_expired: Counter::default(),
            fanout: Family::default(),
            backend_connects: Counter::default(),
            backend_up: Gauge::default(),
            fanout_waiting: Gauge::default(),
            stream_lag: Gauge::default(),
            bytes_in: Family::default(),
            bytes_out: Family::default(),
            codes: Default::default(),
            logins: Family::default(),
            method_labels: Default::default(),
            upstreams: Default::default(),
            #[cfg(feature = "count-allocs")]
            allocs: Default::default(),
            #[cfg(feature = "count-allocs")]
            live: Default::default(),
        };
        m.upstreams.register(&mut m.registry);
        let r = &mut m.registry;
        #[cfg(feature = "count-allocs")]
        for (c, (name, help, _)) in m.allocs.iter().zip(super::alloc_count::counts()) {
            r.register(name, help, c.clone());
        }
        #[cfg(feature = "count-allocs")]
        {
            let (name, help, _) = super::alloc_count::live();
            r.register(name, help, m.live.clone());
        }
        r.register(
            "calls_started",
            "Calls started, by protocol and method",
            m.started.clone(),
        );
        r.register(
            "calls_handled",
            "Calls finished, by protocol, method and code (ok or the error code returned)",
            m.handled.clone(),
        );
        r.register_with_unit(
            "call_duration",
            "Time from a call's start to its result, by protocol and method",
            Unit::Seconds,
            m.duration.clone(),
        );
        r.register(
            "connections_open",
            "Open connections, by the protocol sniffed",
            m.connections_open.clone(),
        );
        r.register(
            "connections_accepted",
            "Connections accepted (before any limit or sniffing)",
            m.connections_accepted.clone(),
        );
        r.register(
            "sniff",
            "Sniffing outcomes: a protocol (or front layer) detected, deadline, unknown, refused",
            m.sniffed.clone(),
        );
        r.register(
            "limit_refusals",
            "Connections and requests refused by a limit, by limit",
            m.limits.clone(),
        );
        r.register(
            "tls_handshake_failures",
            "TLS handshakes that failed or timed out",
            m.tls_failed.clone(),
        );
        r.register(
            "logins",
            "Credentials checked (--auth), by kind (password, token, certificate, custom) and outcome (ok, rejected, throttled, busy, unsupported); refused calls are calls_handled with code -32020 or -32021",
            m.logins.clone(),
        );
        r.register(
            "event_subscriptions",
            "Event subscriptions held by connections",
            m.subscribers.clone(),
        );
        r.register_with_unit(
            "budget_used",
            "Bytes charged to a process-wide budget now: requests read or running (input, max_total_in_flight_bytes), replies and events queued for clients (output, max_total_output)",
            Unit::Bytes,
            m.budgets.clone(),
        );
        r.register(
            "events_published",
            "Events published by verbs",
            m.events_published.clone(),
        );
        r.register(
            "event_subscribers_dropped",
            "Subscriber sessions told what they lost (events.lost) and closed because they could not keep up (the events lost to them: outbox overflow)",
            m.subscribers_dropped.clone(),
        );
        r.register(
            "events_delivered",
            "Events queued to subscribers, live or replayed (subscribe with since)",
            m.events_delivered.clone(),
        );
        r.register(
            "events_retained",
            "Recent events kept for subscribers that resume",
            m.events_retained.clone(),
        );
        r.register_with_unit(
            "events_retained",
            "Memory the recent events kept for resuming subscribers hold",
            Unit::Bytes,
            m.events_retained_bytes.clone(),
        );
        r.register(
            "events_expired",
            "Events gone from the retention window by its count, bytes or age bounds (a since older than them is refused, -32007)",
            m.events_expired.clone(),
        );
        r.register(
            "events_fanout",
            "Events across instances ([events] url): sent to the engine, resent (to an engine that lost them, or after a lost answer), not_sent (queue full during an outage, too big), not_resent (lost by the engine, past the queue caps), unflushed (unsent when the fan-out stopped at shutdown), history (another instance's copy re-sent to an engine that lost it, from before this instance read it: skipped), received from other instances, duplicate (received again, skipped), refused (not a valid envelope), missed (gaps in another instance's sequence)",
            m.fanout.clone(),
        );
        r.register(
            "events_backend_connects",
            "Connections made to the events engine, the first included",
            m.backend_connects.clone(),
        );
        r.register(
            "events_backend_up",
            "1 while connected and subscribed to the events engine",
            m.backend_up.clone(),
        );
        r.register(
            "events_fanout_waiting",
            "Events published here waiting to be sent to the events engine",
            m.fanout_waiting.clone(),
        );
        r.register(
            "events_stream_lag",
            "Entries of the fleet's event stream this instance has not read yet",
            m.stream_lag.clone(),
        );
        r.register_with_unit(
            "received",
            "Bytes read from clients, by protocol",
            Unit::Bytes,
            m.bytes_in.clone(),
        );
        r.register_with_unit(
            "sent",
            "Bytes written to clients, by protocol",
            Unit::Bytes,
            m.bytes_out.clone(),
        );
        m
    }

    /// A connection starts speaking `protocol`: counted open until the guard drops,
    /// with the counters its bytes go to.
    pub fn connection(&self, protocol: &'static str) -> OpenConnection {
        let label = ProtocolLabel { protocol };
        let open = self.connections_open.get_or_create_owned(&label);
        open.inc();
        OpenConnection {
            open,
            received: self.bytes_in.get_or_create_owned(&label),
            sent: self.bytes_out.get_or_create_owned(&label),
        }
    }

    /// The `method` label value a verb's calls are counted under: its name, for the
    /// first [`MAX_METHOD_LABELS`] verbs called; `other` past them. An upstream listing
    /// thousands of verbs must not put hundreds of thousands of series into `/metrics`.
    pub fn method_label(&self, name: &str) -> std::sync::Arc<str> {
        let n = self
            .method_labels
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if n < MAX_METHOD_LABELS {
            name.into()
        } else {
            "other".into()
        }
    }

    /// Count one request refused by a per-request limit (`max_body`, `max_frame`, ...).
    pub fn refused(&self, limit: &'static str) {
        self.limits.get_or_create(&LimitLabel { limit }).inc();
    }

    /// Copy in the refusals of kind `why` counted so far (by [`crate::conn::refusals`]).
    pub fn copy_refusals(&self, why: Refusal, total: u64) {
        let c = match why {
            Refusal::SniffTimeout => self.sniffed.get_or_create_owned(&OutcomeLabel {
                outcome: "deadline",
            }),
            Refusal::UnknownProtocol => self
                .sniffed
                .get_or_create_owned(&OutcomeLabel { outcome: "unknown" }),
            Refusal::Front => self
                .sniffed
                .get_or_create_owned(&OutcomeLabel { outcome: "refused" }),
            _ => self
                .limits
                .get_or_create_owned(&LimitLabel { limit: why.name() }),
        };
        c.inner().store(total, Ordering::Relaxed);
    }

    /// Set the bytes a process-wide budget (`input`, `output`) holds now.
    pub fn set_budget_used(&self, budget: &'static str, used: usize) {
        self.budgets
            .get_or_create(&BudgetLabel { budget })
            .set(used as i64);
    }

    /// Copy in the events hub's counts and its fan-out backend's.
    pub fn copy_events(&self, hub: &EventHub) {
        self.subscribers.set(hub.subscriber_count() as i64);
        let (published, dropped) = hub.counts();
        self.events_published
            .inner()
            .store(published, Ordering::Relaxed);
        self.subscribers_dropped
            .inner()
            .store(dropped, Ordering::Relaxed);
        let (live, replayed) = hub.deliveries();
        for (how, n) in [("live", live), ("replayed", replayed)] {
            self.events_delivered
                .get_or_create(&HowLabel { how })
                .inner()
                .store(n, Ordering::Relaxed);
        }
        let (retained, bytes, expired) = hub.retained();
        self.events_retained.set(retained as i64);
        self.events_retained_bytes.set(bytes as i64);
        self.events_expired
            .inner()
            .store(expired, Ordering::Relaxed);
        if let Some(f) = hub.fanout_stats() {
            for (outcome, n) in [
                ("sent", &f.sent),
                ("resent", &f.resent),
                ("not_sent", &f.not_sent),
                ("not_resent", &f.not_resent),
                ("unflushed", &f.unflushed),
                ("history", &f.history),
                ("received", &f.received),
                ("duplicate", &f.duplicate),
                ("refused", &f.refused),
                ("missed", &f.missed),
            ] {
                self.fanout
                    .get_or_create(&OutcomeLabel { outcome })
                    .inner()
                    .store(n.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            self.backend_connects
                .inner()
                .store(f.connects.load(Ordering::Relaxed), Ordering::Relaxed);
            self.backend_up.set(f.up.load(Ordering::Relaxed) as i64);
            self.fanout_waiting
                .set(f.waiting.load(Ordering::Relaxed) as i64);
            self.stream_lag.set(f.lag.load(Ordering::Relaxed) as i64);
        }
    }

    /// The exposition: OpenMetrics text (what Prometheus asks for), or when
    /// `openmetrics` is false the classic Prometheus text format (what `curl`,
    /// `promtool` and older scrapers read).
    pub fn render(&self, openmetrics: bool) -> String {
        #[cfg(feature = "count-allocs")]
        for (c, (_, _, n)) in self.allocs.iter().zip(super::alloc_count::counts()) {
            c.inner().store(n, Ordering::Relaxed);
        }
        #[cfg(feature = "count-allocs")]
        self.live.set(super::alloc_count::live().2 as i64);
        let mut out = String::with_capacity(16 << 10);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        if openmetrics {
            out
        } else {
            classic(&out)
        }
    }
}

/// An open connection's gauge (decremented on drop) and byte counters.
pub(crate) struct OpenConnection {
    open: Gauge,
    pub received: Counter,
    pub sent: Counter,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.open.dec();
    }
}

/// OpenMetrics text as the classic Prometheus text format (0.0.4): a counter family is
/// named with its `_total` suffix in `# HELP`/`# TYPE`, and `# UNIT` and `# EOF` go.
/// `prometheus-client` writes only OpenMetrics; the samples are the same in both.
fn classic(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                out.push_str(prefix);
                out.push_str(name);
                if counters.contains(name) {
                    out.push_str("_total");
                }
                out.push(' ');
                out.push_str(tail);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_code_labels_are_bounded() {
        let codes = super::Codes::default();
        for c in 0..super::Codes::MAX as i64 {
            assert_eq!(codes.label(c), c.to_string());
        }
        assert_eq!(codes.label(1_000), "other");
        assert_eq!(codes.label(5), "5", "a code already seen keeps its label");
    }

    #[test]
    fn classic_format_names_counters_with_total_and_drops_openmetrics_lines() {
        let om = "# HELP rpcmux_x Calls.\n# TYPE rpcmux_x counter\nrpcmux_x_total 3\n# HELP rpcmux_d Time.\n# TYPE rpcmux_d histogram\n# UNIT rpcmux_d seconds\nrpcmux_d_count 1\n# EOF\n";
        assert_eq!(
            super::classic(om),
            "# HELP rpcmux_x_total Calls.\n# TYPE rpcmux_x_total counter\nrpcmux_x_total 3\n# HELP rpcmux_d Time.\n# TYPE rpcmux_d histogram\nrpcmux_d_count 1\n"
        );
    }
}
