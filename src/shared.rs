//! What every connection task shares: the settings, the verb table, the events hub,
//! the process-wide caps and budgets, the front layers, the metrics and the shutdown
//! signals. Built once by [`crate::server::Server`]; the framers (http, stream) read it,
//! the front layers and the verbs never do (they take narrow arguments).

use crate::config::Config;
use crate::conn::refusals::{Refusal, Refusals};
use crate::conn::reply_cap::ReplyCap;
use crate::conn::ConnInfo;
use crate::events::EventHub;
use crate::sniff::Probes;
use crate::verbs::{CallContext, VerbTable};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// State every connection task shares.
pub struct Shared {
    pub config: Config,
    pub verbs: Arc<VerbTable>,
    pub events: Arc<EventHub>,
    pub probes: Probes,
    /// One permit per open socket.
    pub conns: Arc<Semaphore>,
    /// One permit per connection still being sniffed.
    pub sniffing: Arc<Semaphore>,
    /// Per-client-address caps on connections and sniffing.
    pub(crate) per_ip: Arc<crate::conn::per_ip::PerIp>,
    /// Refused connections, counted, their logging throttled.
    pub refusals: Refusals,
    /// Bytes of requests being read or run, process-wide (`max_total_in_flight_bytes`).
    pub(crate) budget: Arc<crate::conn::budget::Budget>,
    /// Bytes queued for clients, process-wide (`max_total_output`).
    pub(crate) out_budget: Arc<crate::conn::budget::Budget>,
    /// Turns at inflating a compressed HTTP body and charging it: one at a time, fair
    /// among client addresses.
    pub(crate) inflating: crate::conn::turns::Turns,
    pub shutdown: CancellationToken,
    /// Cancelled when the shutdown deadline passes: calls still running end with an
    /// error reply (-32001) in their protocol instead of a bare close.
    pub(crate) abort_calls: Arc<crate::verbs::Abort>,
    pub next_conn: AtomicU64,
    /// PROXY trust and TLS, in front of the protocols.
    pub(crate) front: crate::front::Front,
    /// The metrics (`[ops] metrics`), `None` when off.
    pub(crate) metrics: Option<Arc<crate::observe::Metrics>>,
    /// Set when shutdown begins: `GET /ready` answers 503 from then on.
    pub(crate) draining: std::sync::atomic::AtomicBool,
    /// Who may call what (`--auth`); `None`: everyone may call everything.
    pub(crate) auth: Option<Arc<rpcmux_auth::Auth>>,
    /// The gateway's upstreams, when `config.upstream` names any.
    #[cfg(feature = "gateway")]
    pub(crate) upstreams: Option<crate::gateway::UpstreamRefresher>,
}

impl Shared {
    /// A new number for a connection or a session, never given out before in this
    /// process (connections and sessions share the count, so a session's events can
    /// never be addressed to another connection's).
    pub(crate) fn next_id(&self) -> u64 {
        self.next_conn
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1
    }

    /// The call context for one session (a stream connection, a WebSocket, each
    /// HTTP/2 stream's) or one HTTP request, arriving on what `info` describes.
    ///
    /// With `--auth` this is the one place a caller is made: each context gets its own,
    /// starting as `info`'s proven principal (a certificate, a uid, the request's
    /// `Authorization`) or anonymous. `rpc.login` and STOMP `CONNECT` bind that caller
    /// only, shared by the calls of its session (they clone the context) and by no
    /// other session or request, whatever connection carries them.
    pub fn call_context(&self, info: &ConnInfo, protocol: &'static str) -> CallContext {
        let mut ctx = CallContext::new(protocol, self.events.clone());
        ctx.peer = info.peer.addr();
        ctx.peer_cred = info.peer.cred();
        ctx.peer_identity = info.peer_identity.clone();
        ctx.flow_id = info.flow_id.clone();
        ctx.abort = Some(self.abort_calls.clone());
        ctx.caller = self
            .auth
            .as_ref()
            .map(|auth| crate::conn::Caller::new(auth.clone(), info.principal.clone()));
        ctx
    }

    /// The reply bounds: `max_reply`, and the output budget's room for big replies.
    pub fn reply_cap(&self) -> ReplyCap {
        ReplyCap::new(self.config.limits.max_reply, self.out_budget.clone())
    }

    /// A JSON-RPC request's bounds: batch members at once, batch size, calls per
    /// request, and the reply cap.
    pub fn json_bounds(&self) -> crate::rpc::jsonrpc::Bounds {
        let limits = &self.config.limits;
        crate::rpc::jsonrpc::Bounds {
            parallel: limits.max_in_flight,
            max_batch: limits.max_batch,
            max_calls: limits.max_calls_per_request,
            cap: self.reply_cap(),
            shape: crate::rpc::jsonrpc::Shape {
                v1_error: self.config.jsonrpc.v1_error,
                legacy: false,
            },
        }
    }

    /// The `/metrics` exposition, with what other parts count copied in now rather than
    /// counted twice (refusals, budgets, the events hub, the gateway's upstreams).
    /// `None` when metrics are off.
    pub fn scrape(&self, openmetrics: bool) -> Option<String> {
        let m = self.metrics.as_ref()?;
        for why in Refusal::ALL {
            m.copy_refusals(why, self.refusals.count(why));
        }
        for (budget, b) in [("input", &self.budget), ("output", &self.out_budget)] {
            m.set_budget_used(budget, b.used());
        }
        m.copy_events(&self.events);
        #[cfg(feature = "gateway")]
        if let Some(up) = &self.upstreams {
            m.upstreams.update(up.failures(), up.addresses());
        }
        Some(m.render(openmetrics))
    }
}
