//! Calling a verb: parameters mapped, the verb's policy applied, panics caught, the
//! call observed.

use crate::codes::ERR_SHUTTING_DOWN;
use crate::verbs::dispatched::{answered_twice, Dispatched, Reply};
use crate::verbs::output::Output;
use crate::verbs::policy::WhenBusy;
use crate::verbs::table::Found;
use crate::verbs::typed::{Hooks, Input, WriteNow};
use crate::verbs::verb::{Run, Verb, VerbTable};
use crate::verbs::{Args, CallContext};
use futures_util::future::{BoxFuture, FutureExt};
use rpcmux_value::{Params, RpcError, Value};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

impl VerbTable {
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
        self.dispatch_found(method, &found, input, ctx, None)
    }

    /// [`Self::dispatch`], a sync typed verb's result written by `write_now` as it is
    /// known (then [`Dispatched::Written`]).
    pub(crate) fn dispatch_writing(
        &self,
        method: &str,
        input: Input<'_>,
        ctx: CallContext,
        write_now: WriteNow<'_>,
    ) -> Dispatched {
        let found = self.find(method);
        self.dispatch_found(method, &found, input, ctx, Some(write_now))
    }

    /// [`Self::dispatch`] to a verb already looked up by [`Self::find`]; a typed verb's
    /// result known at once is offered to `write_now`, if given.
    pub(crate) fn dispatch_found(
        &self,
        method: &str,
        found: &Found<'_>,
        input: Input<'_>,
        ctx: CallContext,
        write_now: Option<WriteNow<'_>>,
    ) -> Dispatched {
        // An upstream verb is held by this call (an `Arc`) even if a refresh drops it
        // meanwhile.
        let verb = found.verb();
        let call = self
            .observer
            .as_ref()
            .map(|o| o.begin(method, verb.map(|v| v.observed()), &ctx));
        if let Some(refused) = crate::verbs::access::refusal(&ctx, method, verb.map(|v| &**v)) {
            return done(call, Err(refused));
        }
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
                    t.start(&verb.name, input, &ctx, defer, write_now)
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
            Run::AnyName(h) => {
                let abort = ctx.abort.clone();
                let started = match input.into_params(&verb.name) {
                    Ok(params) => {
                        std::panic::catch_unwind(AssertUnwindSafe(|| h(method, params, ctx)))
                            .map(Ok)
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
        write_now: WriteNow<'_>,
    ) -> Option<(usize, Dispatched)> {
        let Run::Typed(t) = &verb.run else {
            return None;
        };
        // A refused call is answered by the dispatch path.
        if crate::verbs::access::refusal(ctx, method, Some(verb)).is_some() {
            return None;
        }
        let defer = verb.policy.limit.is_some();
        let mut call = None;
        let mut used = 0;
        let mut begin = |ctx: &CallContext| {
            call = self
                .observer
                .as_ref()
                .map(|o| o.begin(method, Some(verb.observed()), ctx));
        };
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let hooks = Hooks {
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
        write_now: WriteNow<'_>,
    ) -> Option<Dispatched> {
        let Run::Typed(t) = &verb.run else {
            return None;
        };
        // A refused call is answered by the dispatch path.
        if crate::verbs::access::refusal(ctx, &verb.name, Some(verb)).is_some() {
            return None;
        }
        let defer = verb.policy.limit.is_some();
        let mut call_seen = None;
        let mut begun = false;
        let mut begin = |ctx: &CallContext| {
            begun = true;
            call_seen = self
                .observer
                .as_ref()
                .map(|o| o.begin(&verb.name, Some(verb.observed()), ctx));
        };
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let hooks = Hooks {
                begin: &mut begin,
                write_now,
            };
            t.start_xml(call, ctx, defer, hooks)
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

pub(crate) fn shutting_down() -> RpcError {
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
