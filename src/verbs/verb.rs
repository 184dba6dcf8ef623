//! A registered verb, and the table that holds verbs by name (the data; lookup is in
//! `table.rs`, registration in `builder.rs`, calls in `dispatch.rs`).

use crate::verbs::dispatched::Reply;
use crate::verbs::names::Names;
use crate::verbs::policy::Policy;
use crate::verbs::typed::TypedRun;
use crate::verbs::{Args, CallContext};
use rpcmux_value::Params;
use std::sync::Arc;

type Handler = dyn Fn(Args, CallContext) -> Reply + Send + Sync;
type Passthrough = dyn Fn(Params, CallContext) -> Reply + Send + Sync;
/// A fallback's handler: told the method name it was called by (`fallback.rs`).
pub(crate) type AnyName = dyn Fn(&str, Params, CallContext) -> Reply + Send + Sync;
/// A verb built into the table, which needs the table itself (introspection, multicall).
pub(crate) type Builtin = fn(&VerbTable, Args, CallContext) -> Reply;

pub(crate) enum Run {
    Handler(Arc<Handler>),
    Passthrough(Arc<Passthrough>),
    /// The table's fallback: any name no verb has (see `fallback.rs`).
    AnyName(Arc<AnyName>),
    Typed(Arc<dyn TypedRun>),
    Builtin(Builtin),
}

/// One parameter of a verb, as introspection shows it.
#[derive(Debug, Clone)]
pub struct ParamSpec {
    /// The name callers use for it by name (JSON objects, STOMP, `k=v`).
    pub name: &'static str,
    /// XML-RPC type name for `system.methodSignature` ("int", "string", "struct", ...).
    pub kind: &'static str,
    /// Whether a caller may leave it out.
    pub optional: bool,
    /// Its JSON Schema (from the type, for typed verbs; from `kind` otherwise).
    pub schema: serde_json::Value,
}

/// A registered verb.
pub struct Verb {
    /// The name it is called by.
    pub(crate) name: String,
    /// Its parameters, in positional order.
    pub(crate) params: Vec<ParamSpec>,
    /// XML-RPC type name of its result.
    pub(crate) returns: &'static str,
    /// JSON Schema of its result.
    pub(crate) result: serde_json::Value,
    /// What it does, for `system.methodHelp` and `rpc.discover`.
    pub(crate) help: String,
    /// Signatures given at registration ([`crate::VerbBuilder::signatures`]), shown by
    /// `system.methodSignature` instead of the one derived from `params`/`returns`:
    /// a verb forwarded to another server has that server's signatures, which may be
    /// several and use type names of its own.
    pub(crate) signatures: Option<Vec<Vec<String>>>,
    pub(crate) policy: Policy,
    /// Its metric handles, per protocol.
    pub(crate) stats: crate::verbs::StatsCache,
    /// `name`, leaked once at registration: the access log names a call's verb without
    /// a refcount per call.
    pub(crate) static_name: &'static str,
    /// Where several of its calls can go in one request (a forwarded verb whose
    /// upstream has `system.multicall`; see `batch.rs`).
    pub(crate) group: Option<crate::verbs::group::Group>,
    pub(crate) names: &'static [&'static str],
    pub(crate) run: Run,
}

impl Verb {
    /// Whether it takes its parameters as sent, unchecked (a verb forwarded upstream).
    pub(crate) fn is_passthrough(&self) -> bool {
        matches!(self.run, Run::Passthrough(_) | Run::AnyName(_))
    }

    /// The name it is called by.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its parameters, in positional order.
    pub fn params(&self) -> &[ParamSpec] {
        &self.params
    }
    /// XML-RPC type name of its result.
    pub fn returns(&self) -> &'static str {
        self.returns
    }
    /// JSON Schema of its result.
    pub fn result_schema(&self) -> &serde_json::Value {
        &self.result
    }
    /// What it does, for `system.methodHelp` and `rpc.discover`.
    pub fn help(&self) -> &str {
        &self.help
    }
    /// Signatures given at registration ([`crate::VerbBuilder::signatures`]), if any.
    ///
    /// [`VerbBuilder::signatures`]: crate::VerbBuilder::signatures
    pub fn signatures(&self) -> Option<&[Vec<String>]> {
        self.signatures.as_deref()
    }

    /// What the call observer needs of it: its name and its metric handles.
    pub(crate) fn observed(&self) -> (&'static str, &crate::verbs::StatsCache) {
        (self.static_name, &self.stats)
    }
}

impl std::fmt::Debug for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verb").field("name", &self.name).finish()
    }
}

/// Verbs by name.
#[cfg(feature = "gateway")]
pub(crate) type VerbSet = Names<Arc<Verb>>;

/// The dispatch table: verbs by name, plus aliases (old flat names to namespaced ones).
pub struct VerbTable {
    pub(crate) verbs: Names<Arc<Verb>>,
    pub(crate) aliases: Names<String>,
    /// Verbs that may change while serving (upstream verbs), consulted only for names
    /// the table does not own (see `extra.rs`).
    pub(crate) extra: Arc<crate::verbs::upstream::UpstreamVerbs<Verb>>,
    /// Calls per `system.multicall` (the server sets it from `max_batch`).
    pub(crate) max_batch: usize,
    /// What answers a name no verb has ([`crate::VerbBuilder::fallback`]); `None`:
    /// error -32601.
    pub(crate) fallback: Option<Arc<Verb>>,
    /// Metrics and access log, set by the server (none for a table called directly).
    pub(crate) observer: Option<Arc<crate::verbs::Observer>>,
}

impl Default for VerbTable {
    fn default() -> Self {
        VerbTable {
            verbs: Names::default(),
            aliases: Names::default(),
            extra: Default::default(),
            max_batch: crate::Limits::default().max_batch,
            fallback: None,
            observer: None,
        }
    }
}
