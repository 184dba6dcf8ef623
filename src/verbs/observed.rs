//! One call's observation: counted when it starts, timed, counted and logged by outcome
//! when it ends. Started from `VerbTable::dispatch`, finished where its reply is ready.

use crate::conn::Peer;
use crate::observe::access::AccessLog;
use crate::observe::metrics::{CallLabels, HandledLabels, Metrics};
use crate::verbs::{CallContext, Output};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
/// A call is timed with quanta's clock: the CPU's time-stamp counter, read without a
/// system call or the vDSO's conversions (two `std::time::Instant::now()` per call were 4 %
/// of a typed call's time); it falls back to the OS clock where the counter is not
/// invariant.
use quanta::Instant;
use rpcmux_value::RpcError;
use std::sync::{Arc, OnceLock, RwLock};

/// The name `method` carries for a verb that does not exist: metric labels stay
/// bounded whatever clients send.
pub(crate) const UNKNOWN: &str = "unknown";

/// What the server does for every call: metrics (when on) and the access log.
#[derive(Debug)]
pub(crate) struct Observer {
    pub metrics: Option<Arc<Metrics>>,
    pub access: AccessLog,
    /// Handles for `method="unknown"`, per protocol.
    unknown: StatsCache,
}

/// One verb's metric handles per protocol, made on first use: a call then touches its
/// counters without building a label set, hashing one, or taking a lock or a refcount
/// (the server's own protocols have a slot each; an embedder's own go in a list). The
/// handles are leaked: a verb's live as long as the process, a few per verb.
#[derive(Debug, Default)]
pub(crate) struct StatsCache {
    known: [OnceLock<&'static CallStats>; PROTOCOLS.len()],
    other: RwLock<Vec<(&'static str, &'static CallStats)>>,
    /// The verb's `method` label value, chosen on first use (bounded: see
    /// [`Metrics::method_label`]).
    label: OnceLock<Arc<str>>,
}

/// The protocols the server's framers name in `CallContext::protocol`.
const PROTOCOLS: [&str; 13] = [
    "xmlrpc",
    "xmlrpc-h2",
    "jsonrpc-http",
    "jsonrpc-h2",
    "jsonrpc-tcp",
    "msgpack-rpc",
    "msgpack-rpc-http",
    "msgpack-rpc-h2",
    "stomp",
    "jsonrpc-ws",
    "jsonrpc-ws-h2",
    "stomp-ws",
    "stomp-ws-h2",
];

#[derive(Debug)]
pub(crate) struct CallStats {
    method: Arc<str>,
    /// The family errors are counted in, by code (rare: looked up when it happens).
    handled: Family<HandledLabels, Counter>,
    /// The error codes seen so far, shared by every verb: bounded.
    codes: Arc<crate::observe::metrics::Codes>,
    started: Counter,
    ok: Counter,
    duration: Histogram,
}

impl StatsCache {
    fn get(&self, metrics: &Metrics, protocol: &'static str, method: &str) -> &'static CallStats {
        let method = &**self.label.get_or_init(|| {
            if method == UNKNOWN {
                method.into()
            } else {
                metrics.method_label(method)
            }
        });
        if let Some(slot) = PROTOCOLS.iter().position(|p| *p == protocol) {
            return self.known[slot].get_or_init(|| make(metrics, protocol, method));
        }
        let found = self
            .other
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(p, _)| *p == protocol)
            .map(|(_, s)| *s);
        if let Some(s) = found {
            return s;
        }
        let mut w = self.other.write().unwrap_or_else(|e| e.into_inner());
        // Looked for again under the write lock: another call may have made it meanwhile.
        if let Some((_, s)) = w.iter().find(|(p, _)| *p == protocol) {
            return s;
        }
        let stats = make(metrics, protocol, method);
        w.push((protocol, stats));
        stats
    }
}

/// The handles for `method` over `protocol`, leaked (see [`StatsCache`]).
fn make(metrics: &Metrics, protocol: &'static str, method: &str) -> &'static CallStats {
    let labels = CallLabels {
        protocol,
        method: method.to_owned(),
    };
    Box::leak(Box::new(CallStats {
        method: method.into(),
        handled: metrics.handled.clone(),
        codes: metrics.codes.clone(),
        started: metrics.started.get_or_create_owned(&labels),
        ok: metrics.handled.get_or_create_owned(&HandledLabels {
            protocol,
            method: method.to_owned(),
            code: "ok".into(),
        }),
        duration: metrics.duration.get_or_create_owned(&labels),
    }))
}

impl Observer {
    pub fn new(metrics: Option<Arc<Metrics>>, access: AccessLog) -> Self {
        // The clock calibrates on its first reading (up to 200 ms): here, at startup,
        // not in the first call.
        let _ = Instant::now();
        Observer {
            metrics,
            access,
            unknown: StatsCache::default(),
        }
    }

    /// A call of `requested` starts; `verb` is what it names, by its registered name
    /// and its metric handles (`None`: no such verb).
    pub fn begin(
        &self,
        requested: &str,
        verb: Option<(&'static str, &StatsCache)>,
        ctx: &CallContext,
    ) -> Call {
        let stats = self.metrics.as_ref().map(|m| {
            let s = match verb {
                Some((name, stats)) => stats.get(m, ctx.protocol, name),
                None => self.unknown.get(m, ctx.protocol, UNKNOWN),
            };
            s.started.inc();
            s
        });
        Call {
            stats,
            started: Instant::now(),
            protocol: ctx.protocol,
            method: match verb {
                Some((name, _)) => Method::Verb(name),
                // Only the log shows what was asked for, cut short.
                None => Method::Unknown(requested.chars().take(64).collect()),
            },
            peer: ctx.client(),
            identity: match &ctx.caller {
                Some(c) => Identity::Caller(c.clone()),
                None => Identity::Name(ctx.peer_identity.clone()),
            },
            flow_id: ctx.flow_id.clone(),
            access: self.access,
        }
    }
}

enum Method {
    /// A registered verb's name (they live as long as the process).
    Verb(&'static str),
    Unknown(String),
}

/// Who made a call, for its log line: the caller (`--auth`), whose principal is read
/// only if the line is written (reading it for every call cost a lock and three
/// reference counts: 2 % of a msgpack-rpc ping), or the verified TLS client name.
enum Identity {
    Caller(Arc<crate::conn::Caller>),
    Name(Option<Arc<str>>),
}

impl Identity {
    fn name(&self) -> Option<Arc<str>> {
        match self {
            Identity::Caller(c) => c.principal().map(|p| p.name_arc().clone()),
            Identity::Name(n) => n.clone(),
        }
    }
}

/// A call under way.
pub(crate) struct Call {
    stats: Option<&'static CallStats>,
    started: Instant,
    protocol: &'static str,
    method: Method,
    peer: Option<Peer>,
    identity: Identity,
    flow_id: Option<String>,
    access: AccessLog,
}

impl Call {
    /// The call ended with `result`.
    pub fn finish(self, result: &Result<Output, RpcError>) {
        let elapsed = self.started.elapsed();
        if let Some(s) = &self.stats {
            s.duration.observe(elapsed.as_secs_f64());
            match result {
                Ok(_) => {
                    s.ok.inc();
                }
                Err(e) => {
                    s.handled
                        .get_or_create(&HandledLabels {
                            protocol: self.protocol,
                            method: s.method.to_string(),
                            code: s.codes.label(e.code),
                        })
                        .inc();
                }
            }
        }
        if !self.access.logs(elapsed) {
            return;
        }
        let identity = self.identity.name();
        self.access.log(&crate::observe::access::Line {
            protocol: self.protocol,
            method: match &self.method {
                Method::Verb(v) => v,
                Method::Unknown(_) => UNKNOWN,
            },
            requested: match &self.method {
                Method::Verb(_) => None,
                Method::Unknown(asked) => Some(asked),
            },
            peer: self.peer,
            identity: identity.as_deref(),
            flow_id: self.flow_id.as_deref(),
            elapsed,
            code: result.as_ref().err().map(|e| e.code),
        });
    }
}
