//! Registration and dispatch.

use crate::verbs::output::Output;
use crate::verbs::policy::{Policy, WhenBusy};
use crate::verbs::typed::{AsyncHandler, Input, SyncHandler, Typed, TypedRun};
use crate::verbs::{Args, CallContext};
use futures_util::future::{BoxFuture, FutureExt};
use rpcmux_value::{Params, RpcError, Value};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;
use crate::codes::ERR_SHUTTING_DOWN;

pub(crate) type Reply = BoxFuture<'static, Result<Output, RpcError>>;

/// A dispatched call: answered as it started (most are: an echo, a lookup), or still
/// running. Awaiting it gives the answer either way; a stream framer takes
/// [`Dispatched::now`] first, so a call answered at once costs no task and no box.
pub(crate) enum Dispatched {
    /// The answer (`None` once a poll took it).
    Ready(Option<Result<Output, RpcError>>),
    Running(Reply),
    /// Answered, and the answer already written by the framer as the call ran (a sync
    /// typed verb's result, see [`crate::verbs::typed::WriteNow`]): nothing to queue or box.
    Written,
}

impl Dispatched {
    /// The answer if the call has it already, or the call still running.
    pub(crate) fn now(self) -> Result<Result<Output, RpcError>, Reply> {
        match self {
            Dispatched::Ready(Some(r)) => Ok(r),
            Dispatched::Ready(None) | Dispatched::Written => Ok(Err(answered_twice())),
            Dispatched::Running(f) => Err(f),
        }
    }
}

impl Future for Dispatched {
    type Output = Result<Output, RpcError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match &mut *self {
            Dispatched::Ready(r) => {
                std::task::Poll::Ready(r.take().unwrap_or_else(|| Err(answered_twice())))
            }
            Dispatched::Running(f) => f.as_mut().poll(cx),
            Dispatched::Written => std::task::Poll::Ready(Err(answered_twice())),
        }
    }
}

/// A [`Dispatched::Ready`] polled again after it answered (a bug of the caller's).
fn answered_twice() -> RpcError {
    RpcError::internal("call answered twice")
}

type Handler = dyn Fn(Args, CallContext) -> Reply + Send + Sync;
type Passthrough = dyn Fn(Params, CallContext) -> Reply + Send + Sync;
/// A verb built into the table, which needs the table itself (introspection, multicall).
pub(crate) type Builtin = fn(&VerbTable, Args, CallContext) -> Reply;

enum Run {
    Handler(Arc<Handler>),
    Passthrough(Arc<Passthrough>),
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
    pub name: String,
    /// Its parameters, in positional order.
    pub params: Vec<ParamSpec>,
    /// XML-RPC type name of its result.
    pub returns: &'static str,
    /// JSON Schema of its result.
    pub result: serde_json::Value,
    /// What it does, for `system.methodHelp` and `rpc.discover`.
    pub help: String,
    /// Signatures given at registration ([`VerbBuilder::signatures`]), shown by
    /// `system.methodSignature` instead of the one derived from `params`/`returns`:
    /// a verb forwarded to another server has that server's signatures, which may be
    /// several and use type names of its own.
    pub signatures: Option<Vec<Vec<String>>>,
    pub(crate) policy: Policy,
    /// Its metric handles, per protocol.
    pub(crate) stats: crate::verbs::StatsCache,
    /// `name`, leaked once at registration: the access log names a call's verb without
    /// a refcount per call.
    pub(crate) static_name: &'static str,
    /// Where several of its calls can go in one request (a forwarded verb whose
    /// upstream has `system.multicall`; see `batch.rs`).
    pub(crate) group: Option<crate::verbs::batch::Group>,
    names: &'static [&'static str],
    run: Run,
}

impl std::fmt::Debug for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verb").field("name", &self.name).finish()
    }
}

/// Every call hashes its method name once or twice here. foldhash, seeded per process,
/// not std's SipHash (a visible share of a small call's time): the DoS resistance SipHash
/// buys is for tables clients can insert into, and nothing a client sends is inserted.
pub(crate) type Names<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// The dispatch table: verbs by name, plus aliases (old flat names to namespaced ones).
pub struct VerbTable {
    verbs: Names<Arc<Verb>>,
    aliases: Names<String>,
    /// Verbs that may change while serving (upstream verbs), consulted only for names
    /// the table does not own (see `extra.rs`).
    pub(crate) extra: Arc<crate::verbs::extra::Extra>,
    /// Calls per `system.multicall` (the server sets it from `max_batch`).
    pub(crate) max_batch: usize,
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
            observer: None,
        }
    }
}

impl VerbTable {
    /// A table holding only the built-in verbs: introspection (`system.listMethods`,
    /// `system.methodHelp`, `system.methodSignature`, `rpc.discover`),
    /// `system.multicall`, and event subscriptions (`subscribe`, `unsubscribe`).
    pub fn new() -> Self {
        let mut t = VerbTable::default();
        crate::verbs::introspect::register(&mut t);
        crate::verbs::openrpc::register(&mut t);
        crate::verbs::multicall::register(&mut t);
        crate::verbs::subscriptions::register(&mut t);
        t
    }

    /// Start registering `name`; finish with [`VerbBuilder::typed`] or
    /// [`VerbBuilder::handler`].
    pub fn verb(&mut self, name: &str) -> VerbBuilder<'_> {
        VerbBuilder {
            table: self,
            group: None,
            name: name.to_owned(),
            params: Vec::new(),
            returns: "any",
            help: String::new(),
            signatures: None,
            policy: Policy::default(),
        }
    }

    /// Make `alias` call `target`.
    ///
    /// # Panics
    /// If `alias` is already a verb or an alias: a name means one thing.
    pub fn alias(&mut self, alias: &str, target: &str) -> &mut Self {
        self.claim(alias);
        self.aliases.insert(alias.to_owned(), target.to_owned());
        self
    }

    fn claim(&self, name: &str) {
        assert!(
            !self.verbs.contains_key(name) && !self.aliases.contains_key(name),
            "rpcmux: {name:?} is registered twice (a name means one verb; the second registration is refused)"
        );
    }

    /// Whether `name` is taken, as a verb or an alias: a caller registering names it
    /// does not choose (the gateway, from an upstream's list) checks first and skips a
    /// taken one, since registering it again panics.
    pub fn contains(&self, name: &str) -> bool {
        self.verbs.contains_key(name) || self.aliases.contains_key(name)
    }

    /// The verb `name` calls (following aliases), the table's own or, failing that, an
    /// upstream verb served right now.
    pub fn get(&self, name: &str) -> Option<Arc<Verb>> {
        self.own(name).cloned().or_else(|| self.extra.get(name))
    }

    /// The table's own verb `name` (following aliases): no lock, no refcount.
    fn own(&self, name: &str) -> Option<&Arc<Verb>> {
        self.verbs
            .get(name)
            .or_else(|| self.aliases.get(name).and_then(|t| self.verbs.get(t)))
    }

    /// Does `method` name a typed verb (which reads its parameters from the wire itself)?
    /// Only the table's own verbs can be: changing verbs are passthrough.
    pub(crate) fn is_typed(&self, method: &str) -> bool {
        self.own(method)
            .is_some_and(|v| matches!(v.run, Run::Typed(_)))
    }

    /// Every verb, the table's own and the upstream verbs served right now, sorted by
    /// name (aliases not included).
    pub fn verbs(&self) -> Vec<Arc<Verb>> {
        let extra = self.extra.snapshot();
        let mut v: Vec<_> = self.verbs.values().chain(extra.values()).cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Take the verbs out of a table built only to hold them (the gateway builds its
    /// upstream verbs in one, then serves them as the changing set).
    #[cfg(feature = "gateway")]
    pub(crate) fn into_verbs(self) -> crate::verbs::extra::VerbSet {
        self.verbs
    }

    /// The aliases of `target`, sorted.
    pub fn aliases_of(&self, target: &str) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .aliases
            .iter()
            .filter(|(_, t)| *t == target)
            .map(|(a, _)| a.as_str())
            .collect();
        v.sort();
        v
    }

    /// Every callable name, verbs and aliases, sorted.
    pub fn names(&self) -> Vec<String> {
        let extra = self.extra.snapshot();
        let mut v: Vec<String> = self
            .verbs
            .keys()
            .chain(self.aliases.keys())
            .chain(extra.keys())
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Call `method` and get its answer as a value. Unknown verb: -32601; bad
    /// parameters: -32602; a handler that panics: -32603 (the panic is caught here, the
    /// server lives on); past the verb's timeout: -32004; refused as busy: -32005.
    pub fn call(
        &self,
        method: &str,
        params: Params,
        ctx: CallContext,
    ) -> BoxFuture<'static, Result<Value, RpcError>> {
        let reply = self.dispatch(method, Input::Tree(params), ctx);
        Box::pin(async move { reply.await?.into_value() })
    }

    /// Call `method` with parameters as they arrived; the answer stays typed for the
    /// protocol to encode.
    pub(crate) fn dispatch(&self, method: &str, input: Input<'_>, ctx: CallContext) -> Dispatched {
        let found = self.find(method);
        self.dispatch_found(method, &found, input, ctx)
    }

    /// Look `method` up once: the table's own verbs first, without a lock, then the
    /// upstream verbs served now. A framer that decides by the verb's kind (grouping
    /// forwarded calls) looks it up here and dispatches with [`Self::dispatch_found`].
    pub(crate) fn find(&self, method: &str) -> Found<'_> {
        match self.own(method) {
            Some(v) => Found::Own(v),
            None => Found::Extra(self.extra.get(method)),
        }
    }

    /// [`Self::dispatch`] to a verb already looked up by [`Self::find`].
    pub(crate) fn dispatch_found(
        &self,
        method: &str,
        found: &Found<'_>,
        input: Input<'_>,
        ctx: CallContext,
    ) -> Dispatched {
        // An upstream verb is held by this call (an `Arc`) even if a refresh drops it
        // meanwhile.
        let verb = found.verb();
        let call = self.observer.as_ref().map(|o| o.begin(method, verb, &ctx));
        let Some(verb) = verb else {
            return done(call, Err(RpcError::method_not_found(method)));
        };
        // The parameters as values, mapped onto the declared names (dynamic verbs).
        let args = |input: Input<'_>| {
            input
                .into_params(&verb.name)
                .and_then(|p| map_params(verb, p))
        };
        // Each arm takes what a dynamic call's guard needs of the context (its abort
        // switch) before the handler takes the context.
        let (started, abort) = match &verb.run {
            // A typed handler borrows the context: a sync one that answers at once costs
            // no clone of it. It is settled here: it may have answered already.
            Run::Typed(t) => {
                let defer = verb.policy.limit.is_some();
                return match std::panic::catch_unwind(AssertUnwindSafe(|| {
                    t.start(&verb.name, input, &ctx, defer)
                })) {
                    Ok(Ok(started)) => settle(verb, started, &ctx.abort, call),
                    Ok(Err(e)) => done(call, Err(e)),
                    Err(_) => done(call, Err(panicked(&verb.name))),
                };
            }
            Run::Builtin(f) => {
                let abort = ctx.abort.clone();
                (Ok(args(input).map(|args| f(self, args, ctx))), abort)
            }
            Run::Handler(h) => {
                let abort = ctx.abort.clone();
                let started = match args(input) {
                    Ok(args) => std::panic::catch_unwind(AssertUnwindSafe(|| h(args, ctx))).map(Ok),
                    Err(e) => Ok(Err(e)),
                };
                (started, abort)
            }
            Run::Passthrough(h) => {
                let abort = ctx.abort.clone();
                let started = match input.into_params(&verb.name) {
                    Ok(params) => {
                        std::panic::catch_unwind(AssertUnwindSafe(|| h(params, ctx))).map(Ok)
                    }
                    Err(e) => Ok(Err(e)),
                };
                (started, abort)
            }
        };
        match started {
            Ok(Ok(fut)) => guard(verb, fut, &abort, call),
            Ok(Err(e)) => done(call, Err(e)),
            Err(_) => done(call, Err(panicked(&verb.name))),
        }
    }
}

impl VerbTable {
    /// Start a call of the typed `verb` from a msgpack params array at the start of
    /// `buf`, before the message is framed: its parameters are read straight from the
    /// input, which tells where the message ends (the returned length, from `buf`'s
    /// start), with no framing pass over it first. `None` (nothing observed, nothing
    /// run) for a dynamic verb, or parameters that cannot be read so: the caller frames
    /// the message and dispatches it as usual.
    pub(crate) fn dispatch_unframed(
        &self,
        method: &str,
        verb: &Arc<Verb>,
        buf: &[u8],
        max_depth: usize,
        ctx: &CallContext,
        write_now: crate::verbs::typed::WriteNow<'_>,
    ) -> Option<(usize, Dispatched)> {
        let Run::Typed(t) = &verb.run else {
            return None;
        };
        let defer = verb.policy.limit.is_some();
        let mut call = None;
        let mut used = 0;
        let mut begin = |ctx: &CallContext| {
            call = self
                .observer
                .as_ref()
                .map(|o| o.begin(method, Some(verb), ctx));
        };
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let hooks = crate::verbs::typed::Hooks {
                begin: &mut begin,
                write_now,
            };
            t.start_unframed(buf, max_depth, ctx, defer, &mut used, hooks)
        }));
        let reply = match started {
            Ok(None) => return None,
            Ok(Some(started)) => settle(verb, started, &ctx.abort, call),
            // A panic while reading the parameters (a `Deserialize` of the verb's
            // own): the framed path reads them again and answers it.
            Err(_) if used == 0 => return None,
            Err(_) => done(call, Err(panicked(&verb.name))),
        };
        Some((used, reply))
    }
}

impl VerbTable {
    /// Start a call of the typed `verb` from an XML-RPC document opened up to its
    /// params: they are read straight into the verb's parameter type, with no value
    /// tree. `None` (nothing observed, nothing run) for a dynamic verb, or params that
    /// cannot be read so: the caller parses the call as values and dispatches it as
    /// usual, which gives the client the same error as ever.
    pub(crate) fn dispatch_xml(
        &self,
        verb: &Arc<Verb>,
        call: rpcmux_xmlrpc::CallParams<'_>,
        ctx: &CallContext,
    ) -> Option<Dispatched> {
        let Run::Typed(t) = &verb.run else {
            return None;
        };
        let defer = verb.policy.limit.is_some();
        let mut call_seen = None;
        let mut begun = false;
        let mut begin = |ctx: &CallContext| {
            begun = true;
            call_seen = self
                .observer
                .as_ref()
                .map(|o| o.begin(&verb.name, Some(verb), ctx));
        };
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            t.start_xml(call, ctx, defer, &mut begin)
        }));
        Some(match started {
            Ok(None) => return None,
            Ok(Some(started)) => settle(verb, started, &ctx.abort, call_seen),
            // A panic while reading the params (a `Deserialize` of the verb's own): the
            // tree path reads them again and answers it.
            Err(_) if !begun => return None,
            Err(_) => done(call_seen, Err(panicked(&verb.name))),
        })
    }
}

/// A verb as [`VerbTable::find`] found it.
pub(crate) enum Found<'a> {
    /// One of the table's own (Rust, built-in, demo): never grouped.
    Own(&'a Arc<Verb>),
    /// An upstream verb served now, or no verb of that name.
    Extra(Option<Arc<Verb>>),
}

impl Found<'_> {
    pub(crate) fn verb(&self) -> Option<&Arc<Verb>> {
        match self {
            Found::Own(v) => Some(v),
            Found::Extra(v) => v.as_ref(),
        }
    }
}

/// A call that ended before it started running (unknown verb, bad parameters).
fn done(call: Option<crate::verbs::Call>, r: Result<Output, RpcError>) -> Dispatched {
    if let Some(c) = call {
        c.finish(&r);
    }
    Dispatched::Ready(Some(r))
}

/// A typed handler's start: answered (observed as done), or running (guarded).
fn settle(
    verb: &Arc<Verb>,
    started: Dispatched,
    abort: &Option<Arc<crate::verbs::Abort>>,
    call: Option<crate::verbs::Call>,
) -> Dispatched {
    match started {
        Dispatched::Running(fut) => guard(verb, fut, abort, call),
        Dispatched::Ready(r) => done(call, r.unwrap_or_else(|| Err(answered_twice()))),
        Dispatched::Written => {
            if let Some(c) = call {
                c.finish(&Ok(Output::Value(Value::Nil)));
            }
            Dispatched::Written
        }
    }
}

/// A started call, with its panics caught, its verb's policy applied, the server's
/// shutdown abort, and its observation finished when it ends.
///
/// It is polled once here (with a no-op waker: whoever runs a pending call polls it
/// again with theirs) unless a cap on concurrent calls must admit it first: a call
/// that answers at once needs none of the wrappers below, a box each.
fn guard(
    verb: &Arc<Verb>,
    mut fut: Reply,
    abort: &Option<Arc<crate::verbs::Abort>>,
    call: Option<crate::verbs::Call>,
) -> Dispatched {
    if verb.policy.limit.is_none() {
        match std::panic::catch_unwind(AssertUnwindSafe(|| (&mut fut).now_or_never())) {
            Ok(Some(r)) => return done(call, r),
            Ok(None) => {}
            Err(_) => return done(call, Err(panicked(&verb.name))),
        }
    }
    // The verb itself (an `Arc`) names it if it panics: no String per call.
    let name_of = verb.clone();
    let mut fut: Reply = Box::pin(
        AssertUnwindSafe(fut)
            .catch_unwind()
            .map(move |r| r.unwrap_or_else(|_| Err(panicked(&name_of.name)))),
    );
    if let Some(limit) = &verb.policy.limit {
        let permits = limit.permits.clone();
        fut = match limit.when_busy {
            WhenBusy::Wait => Box::pin(async move {
                let _permit = permits.acquire_owned().await;
                fut.await
            }),
            WhenBusy::Refuse => match permits.try_acquire_owned() {
                Ok(permit) => Box::pin(async move {
                    let r = fut.await;
                    drop(permit);
                    r
                }),
                Err(_) => {
                    return done(call, Err(crate::verbs::policy::busy(&verb.name, limit.max)))
                }
            },
        };
    }
    if let Some(t) = verb.policy.timeout {
        let name_of = verb.clone();
        fut = Box::pin(async move {
            match tokio::time::timeout(t, fut).await {
                Ok(r) => r,
                Err(_) => Err(crate::verbs::policy::timed_out(&name_of.name, t)),
            }
        });
    }
    if abort.is_none() && call.is_none() {
        return Dispatched::Running(fut);
    }
    // One box for both: the server's calls always have an abort switch.
    let abort = abort.clone();
    Dispatched::Running(Box::pin(async move {
        let r = match abort {
            // Biased: a call that is ready at once never registers with the switch.
            Some(abort) => tokio::select! {
                biased;
                r = fut => r,
                _ = abort.fired() => Err(shutting_down()),
            },
            None => fut.await,
        };
        if let Some(c) = call {
            c.finish(&r);
        }
        r
    }))
}


pub(super) fn shutting_down() -> RpcError {
    RpcError::new(
        ERR_SHUTTING_DOWN,
        "server shutting down: the call was cancelled before it finished",
    )
}

fn panicked(verb: &str) -> RpcError {
    tracing::error!(verb, "verb handler panicked");
    RpcError::internal(format!("verb {verb} failed unexpectedly"))
}

/// Map positional or named parameters onto the declared order.
fn map_params(verb: &Verb, params: Params) -> Result<Args, RpcError> {
    let decl = &verb.params;
    let mut values = match params {
        Params::Positional(v) => {
            if v.len() > decl.len() {
                return Err(RpcError::invalid_params(format!(
                    "{} takes at most {} parameter(s), got {}",
                    verb.name,
                    decl.len(),
                    v.len()
                )));
            }
            v
        }
        Params::Named(map) => {
            let mut slots: Vec<Option<Value>> = vec![None; decl.len()];
            for (k, v) in map {
                let Some(i) = decl.iter().position(|p| p.name == k) else {
                    return Err(RpcError::invalid_params(format!(
                        "{} has no parameter {k:?}",
                        verb.name
                    )));
                };
                slots[i] = Some(v);
            }
            // Named calls may leave gaps; they are checked as missing below.
            let last = slots.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
            for (i, s) in slots[..last].iter().enumerate() {
                if s.is_none() && !decl[i].optional {
                    return Err(missing(verb, i));
                }
            }
            slots.truncate(last);
            slots.into_iter().map(Option::unwrap_or_default).collect()
        }
    };
    if let Some(i) = (values.len()..decl.len()).find(|&i| !decl[i].optional) {
        return Err(missing(verb, i));
    }
    values.resize(decl.len(), Value::Nil);
    Ok(Args::new(verb.names, values))
}

fn missing(verb: &Verb, i: usize) -> RpcError {
    RpcError::invalid_params(format!(
        "{} is missing parameter {:?}",
        verb.name, verb.params[i].name
    ))
}

/// Builder returned by [`VerbTable::verb`].
pub struct VerbBuilder<'t> {
    table: &'t mut VerbTable,
    group: Option<crate::verbs::batch::Group>,
    name: String,
    params: Vec<ParamSpec>,
    returns: &'static str,
    help: String,
    signatures: Option<Vec<Vec<String>>>,
    policy: Policy,
}

impl VerbBuilder<'_> {
    /// What the verb does (`system.methodHelp`, `rpc.discover`).
    pub fn help(mut self, text: &str) -> Self {
        self.help = text.to_owned();
        self
    }

    /// Cancel a call still running after `t`; its caller gets error -32004.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.policy.timeout = Some(t);
        self
    }

    /// Run at most `n` calls of this verb at once; the others wait (the default) or are
    /// refused with error -32005 (see [`VerbBuilder::when_busy`]).
    pub fn max_concurrent(mut self, n: usize) -> Self {
        self.policy.limit(n);
        self
    }

    /// What a call finding `max_concurrent` calls running does.
    pub fn when_busy(mut self, w: WhenBusy) -> Self {
        self.policy.when_busy(w);
        self
    }

    /// Finish with a typed handler: its parameters are the fields of `P` (in order, for
    /// callers that send them by position; by name for the others), its result any
    /// `Serialize` type, its error anything that converts into an [`RpcError`]. The
    /// verb's parameter names, optionality and schemas come from `P` and `R`.
    ///
    /// ```
    /// use rpcmux::{RpcError, VerbTable};
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Greet {
    ///     /// Who to greet.
    ///     name: String,
    ///     /// How many times (default 1).
    ///     times: Option<u32>,
    /// }
    ///
    /// #[derive(Serialize, JsonSchema)]
    /// struct Greeting {
    ///     text: String,
    /// }
    ///
    /// let mut verbs = VerbTable::new();
    /// verbs.verb("greet").help("Say hello.").typed(|p: Greet, _ctx| async move {
    ///     if p.name.is_empty() {
    ///         return Err(RpcError::new(1, "who?"));
    ///     }
    ///     let text = format!("hello, {}", p.name).repeat(p.times.unwrap_or(1) as usize);
    ///     Ok(Greeting { text })
    /// });
    /// ```
    ///
    /// # Panics
    /// If the name is already registered.
    pub fn typed<P, R, E, F, Fut>(mut self, f: F)
    where
        P: DeserializeOwned + JsonSchema + 'static,
        R: Serialize + JsonSchema + Send + 'static,
        E: Into<RpcError> + 'static,
        F: Fn(P, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
    {
        self.params = crate::verbs::schema::params_of::<P>();
        let result = crate::verbs::schema::schema_of::<R>();
        self.returns = crate::verbs::schema::kind_of(&result);
        let run = Run::Typed(Arc::new(Typed::<P, _> {
            handler: AsyncHandler(f),
            _params: std::marker::PhantomData,
        }));
        self.finish(run, Some(result));
    }

    /// Finish with a synchronous typed handler: as [`VerbBuilder::typed`], for handlers
    /// that answer without waiting (a lookup, an echo, a computation of microseconds).
    /// It runs as the call is read, on the connection's task, with no future to
    /// allocate or poll, and it borrows the call's context (`&CallContext`: no copy per
    /// call): the cheapest verb rpcmux has. It must not block: anything that
    /// waits on I/O, a lock held across I/O, or computes for long belongs in
    /// [`VerbBuilder::typed`] (with `tokio::task::spawn_blocking` for heavy work). A
    /// [`VerbBuilder::timeout`] cannot cancel it; [`VerbBuilder::max_concurrent`] still
    /// applies (such a call runs once admitted).
    ///
    /// ```
    /// use rpcmux::{RpcError, VerbTable};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Add {
    ///     a: i64,
    ///     b: i64,
    /// }
    ///
    /// let mut verbs = VerbTable::new();
    /// verbs.verb("add").help("a + b").typed_sync(|p: Add, _ctx| {
    ///     p.a.checked_add(p.b).ok_or_else(|| RpcError::new(1, "overflow"))
    /// });
    /// ```
    ///
    /// # Panics
    /// If the name is already registered.
    pub fn typed_sync<P, R, E, F>(mut self, f: F)
    where
        P: DeserializeOwned + JsonSchema + Send + 'static,
        R: Serialize + JsonSchema + Send + 'static,
        E: Into<RpcError> + 'static,
        F: Fn(P, &CallContext) -> Result<R, E> + Send + Sync + 'static,
    {
        self.params = crate::verbs::schema::params_of::<P>();
        let result = crate::verbs::schema::schema_of::<R>();
        self.returns = crate::verbs::schema::kind_of(&result);
        let run = Run::Typed(Arc::new(Typed::<P, _> {
            handler: SyncHandler(Arc::new(f)),
            _params: std::marker::PhantomData,
        }));
        self.finish(run, Some(result));
    }

    /// A required parameter of any type, for [`VerbBuilder::handler`].
    pub fn param(self, name: &'static str) -> Self {
        self.typed_param(name, "any", false)
    }

    /// A parameter that may be left out (it reads as nil), for [`VerbBuilder::handler`].
    pub fn optional(self, name: &'static str) -> Self {
        self.typed_param(name, "any", true)
    }

    /// A parameter with an XML-RPC type name for introspection, for
    /// [`VerbBuilder::handler`].
    pub fn typed_param(mut self, name: &'static str, kind: &'static str, optional: bool) -> Self {
        self.params.push(ParamSpec {
            name,
            kind,
            optional,
            schema: crate::verbs::schema::schema_of_kind(kind),
        });
        self
    }

    /// The XML-RPC type name of the result, for [`VerbBuilder::handler`].
    pub fn returns(mut self, kind: &'static str) -> Self {
        self.returns = kind;
        self
    }

    /// Finish with a dynamic handler, which takes its declared parameters as values
    /// ([`Args`]) and answers a [`Value`].
    ///
    /// # Panics
    /// If the name is already registered.
    pub fn handler<F, Fut>(self, f: F)
    where
        F: Fn(Args, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.finish(
            Run::Handler(Arc::new(move |args, ctx| {
                let fut = f(args, ctx);
                Box::pin(async move { fut.await.map(Output::Value) })
            })),
            None,
        );
    }

    /// Signatures for `system.methodSignature`, each `[return type, param types...]`,
    /// shown as given instead of the one built from the declared parameters. For
    /// verbs described by someone else (a server the gateway forwards to).
    pub fn signatures(mut self, sigs: Vec<Vec<String>>) -> Self {
        self.signatures = Some(sigs);
        self
    }

    /// Finish with a handler that takes the parameters exactly as the caller sent them,
    /// by position or by name, any number, unchecked (declared parameters are only
    /// shown by introspection). For verbs whose parameters are checked elsewhere: the
    /// gateway hands them on to the server that owns the verb, which answers for them.
    ///
    /// # Panics
    /// If the name is already registered.
    pub fn passthrough<F, Fut>(self, f: F)
    where
        F: Fn(Params, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.finish(
            Run::Passthrough(Arc::new(move |params, ctx| {
                let fut = f(params, ctx);
                Box::pin(async move { fut.await.map(Output::Value) })
            })),
            None,
        );
    }

    /// Let batches send several calls of this verb in one request (see `batch.rs`).
    #[cfg(feature = "gateway")]
    pub(crate) fn group(mut self, g: crate::verbs::batch::Group) -> Self {
        self.group = Some(g);
        self
    }

    pub(crate) fn builtin(self, f: Builtin) {
        self.finish(Run::Builtin(f), None);
    }

    /// The precise schema of the parameter declared last, where its XML-RPC type name
    /// says only "array": code generators need an array's `items`.
    pub(crate) fn param_schema(mut self, schema: serde_json::Value) -> Self {
        if let Some(p) = self.params.last_mut() {
            p.schema = schema;
        }
        self
    }

    /// [`builtin`](Self::builtin), with the precise schema of its result.
    pub(crate) fn builtin_returning(self, f: Builtin, result: serde_json::Value) {
        self.finish(Run::Builtin(f), Some(result));
    }

    fn finish(self, run: Run, result: Option<serde_json::Value>) {
        self.table.claim(&self.name);
        // Verbs live for the life of the process; leaking the short name list lets
        // every call's Args borrow it without a refcount. Upstream verbs, which may be
        // registered again at each refresh, declare none: an empty list leaks nothing.
        let names: &'static [&'static str] = Box::leak(
            self.params
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let verb = Verb {
            name: self.name.clone(),
            result: result.unwrap_or_else(|| crate::verbs::schema::schema_of_kind(self.returns)),
            params: self.params,
            returns: self.returns,
            help: self.help,
            signatures: self.signatures,
            policy: self.policy,
            stats: Default::default(),
            static_name: crate::verbs::extra::intern(&self.name),
            group: self.group,
            names,
            run,
        };
        self.table.verbs.insert(self.name, Arc::new(verb));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventHub;
    use rpcmux_value::Map;

    fn table() -> VerbTable {
        let mut t = VerbTable::new();
        t.verb("VM.create")
            .param("vmID")
            .param("name")
            .optional("memSize")
            .handler(|mut a, _| async move {
                let id: String = a.take(0)?;
                let name: String = a.take(1)?;
                let mem: Option<i64> = a.take_opt(2)?;
                Ok(Value::from(format!("{id}/{name}/{mem:?}")))
            });
        t.verb("boom").handler(|_, _| async { panic!("kaboom") });
        t.verb("boom.sync")
            .handler(|_, _| -> std::future::Ready<_> { panic!("sync kaboom") });
        t.alias("create", "VM.create");
        t
    }

    fn call(t: &VerbTable, m: &str, p: Params) -> Result<Value, RpcError> {
        let ctx = CallContext::new("test", Arc::new(EventHub::default()));
        futures_util::FutureExt::now_or_never(t.call(m, p, ctx)).expect("ready")
    }

    fn pos(v: Vec<Value>) -> Params {
        Params::Positional(v)
    }

    fn named(kv: &[(&str, Value)]) -> Params {
        Params::Named(
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Map>(),
        )
    }

    #[test]
    fn positional_and_named_map_alike() {
        let t = table();
        let want = Ok(Value::from("a/b/Some(5)"));
        assert_eq!(
            call(&t, "VM.create", pos(vec!["a".into(), "b".into(), 5.into()])),
            want
        );
        let p = named(&[
            ("memSize", 5.into()),
            ("name", "b".into()),
            ("vmID", "a".into()),
        ]);
        assert_eq!(call(&t, "VM.create", p), want);
        let short = Ok(Value::from("a/b/None"));
        assert_eq!(call(&t, "create", pos(vec!["a".into(), "b".into()])), short);
        let p = named(&[("name", "b".into()), ("vmID", "a".into())]);
        assert_eq!(call(&t, "VM.create", p), short);
    }

    #[test]
    fn parameter_errors_are_invalid_params() {
        let t = table();
        for p in [
            pos(vec!["a".into()]),
            pos(vec!["a".into(), "b".into(), 1.into(), 2.into()]),
            pos(vec!["a".into(), 7.into()]),
            named(&[("vmID", "a".into()), ("bogus", 1.into())]),
            named(&[("name", "b".into())]),
            named(&[("vmID", "a".into()), ("memSize", 1.into())]),
        ] {
            let e = call(&t, "VM.create", p.clone()).unwrap_err();
            assert_eq!(e.code, -32602, "{p:?} -> {e}");
        }
        let e = call(&t, "VM.create", pos(vec!["a".into(), 7.into()])).unwrap_err();
        assert!(e.message.contains("name: expected string, got int"), "{e}");
    }

    #[test]
    fn passthrough_takes_params_as_sent_and_shows_given_signatures() {
        let mut t = table();
        t.verb("fwd")
            .signatures(vec![
                vec!["int".into(), "int".into()],
                vec!["string".into()],
            ])
            .passthrough(|p, _| async move {
                Ok(match p {
                    Params::Positional(v) => Value::Array(v),
                    Params::Named(m) => Value::from(m),
                })
            });
        let v: Vec<Value> = vec![1.into(), "x".into(), Value::Nil, 4.into()];
        assert_eq!(call(&t, "fwd", pos(v.clone())), Ok(Value::Array(v)));
        let r = call(&t, "fwd", named(&[("anything", 1.into())])).unwrap();
        assert_eq!(r.get("anything"), Some(&Value::Int(1)));
        let sig = call(&t, "system.methodSignature", pos(vec!["fwd".into()])).unwrap();
        assert_eq!(
            sig,
            Value::Array(vec![
                Value::Array(vec!["int".into(), "int".into()]),
                Value::Array(vec!["string".into()]),
            ])
        );
        assert!(t.contains("fwd") && t.contains("create") && !t.contains("nope"));
    }

    #[test]
    fn unknown_verb_and_panics() {
        let t = table();
        assert_eq!(call(&t, "nope", pos(vec![])).unwrap_err().code, -32601);
        assert_eq!(call(&t, "boom", pos(vec![])).unwrap_err().code, -32603);
        assert_eq!(call(&t, "boom.sync", pos(vec![])).unwrap_err().code, -32603);
        // and the table still works afterwards
        assert!(call(&t, "create", pos(vec!["a".into(), "b".into()])).is_ok());
    }
}
