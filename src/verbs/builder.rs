//! Registering verbs.

use crate::verbs::output::Output;
use crate::verbs::policy::{Policy, WhenBusy};
use crate::verbs::register_error::RegisterError;
use crate::verbs::typed::{AsyncHandler, SyncHandler, Typed};
use crate::verbs::verb::{Builtin, ParamSpec, Run, Verb, VerbTable};
use crate::verbs::{Args, CallContext};
use rpcmux_value::{Params, RpcError, Value};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

impl VerbTable {
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
}

/// Builder returned by [`VerbTable::verb`].
pub struct VerbBuilder<'t> {
    table: &'t mut VerbTable,
    group: Option<crate::verbs::group::Group>,
    name: String,
    params: Vec<ParamSpec>,
    returns: &'static str,
    help: String,
    signatures: Option<Vec<Vec<String>>>,
    policy: Policy,
}

impl<'t> VerbBuilder<'t> {
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

    /// Only callers who proved a principal may call it (credentials, a verified client
    /// certificate), even where the credentials file lets anonymous callers, and even
    /// with authentication off (then only mutual-TLS clients may). Others get error
    /// -32020, with nothing run.
    pub fn authenticated(mut self) -> Self {
        self.policy.authenticated = true;
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
    /// An error, and nothing registered, if the name is taken already.
    pub fn typed<P, R, E, F, Fut>(mut self, f: F) -> Result<(), RegisterError>
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
        self.finish(run, Some(result))
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
    /// An error, and nothing registered, if the name is taken already.
    pub fn typed_sync<P, R, E, F>(mut self, f: F) -> Result<(), RegisterError>
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
        self.finish(run, Some(result))
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
    /// An error, and nothing registered, if the name is taken already.
    pub fn handler<F, Fut>(self, f: F) -> Result<(), RegisterError>
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
        )
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
    /// An error, and nothing registered, if the name is taken already.
    pub fn passthrough<F, Fut>(self, f: F) -> Result<(), RegisterError>
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
        )
    }

    /// Let batches send several calls of this verb in one request (see `batch.rs`).
    #[cfg(feature = "gateway")]
    pub(crate) fn group(mut self, g: crate::verbs::group::Group) -> Self {
        self.group = Some(g);
        self
    }

    pub(crate) fn builtin(self, f: Builtin) -> Result<(), RegisterError> {
        self.finish(Run::Builtin(f), None)
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
    pub(crate) fn builtin_returning(
        self,
        f: Builtin,
        result: serde_json::Value,
    ) -> Result<(), RegisterError> {
        self.finish(Run::Builtin(f), Some(result))
    }

    fn finish(self, run: Run, result: Option<serde_json::Value>) -> Result<(), RegisterError> {
        self.table.claim(&self.name)?;
        let (table, verb) = self.build(run, result);
        table.verbs.insert(verb.name.clone(), Arc::new(verb));
        Ok(())
    }

    /// The verb, not yet in the table (the fallback is kept apart from it).
    pub(crate) fn build(
        self,
        run: Run,
        result: Option<serde_json::Value>,
    ) -> (&'t mut VerbTable, Verb) {
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
            static_name: crate::verbs::names::intern(&self.name),
            group: self.group,
            names,
            run,
        };
        (self.table, verb)
    }
}
