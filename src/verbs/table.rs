//! Registration and dispatch.

use super::{Args, CallContext};
use futures_util::future::{BoxFuture, FutureExt};
use rpcmux_value::{Params, RpcError, Value};
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

pub(crate) type Reply = BoxFuture<'static, Result<Value, RpcError>>;
type Handler = dyn Fn(Args, CallContext) -> Reply + Send + Sync;
/// A verb built into the table, which needs the table itself (introspection, multicall).
pub(crate) type Builtin = fn(&VerbTable, Args, CallContext) -> Reply;

enum Run {
    Handler(Arc<Handler>),
    Builtin(Builtin),
}

/// One declared parameter.
#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: &'static str,
    /// XML-RPC-style type name for `system.methodSignature` ("int", "string", "struct", ...).
    pub kind: &'static str,
    pub optional: bool,
}

/// A registered verb.
pub struct Verb {
    pub name: String,
    pub params: Vec<ParamSpec>,
    pub returns: &'static str,
    pub help: String,
    names: &'static [&'static str],
    run: Run,
}

impl std::fmt::Debug for Verb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verb").field("name", &self.name).finish()
    }
}

/// The dispatch table: verbs by name, plus aliases (old flat names to namespaced ones).
pub struct VerbTable {
    verbs: HashMap<String, Arc<Verb>>,
    aliases: HashMap<String, String>,
    /// Calls per `system.multicall` (the server sets it from `max_batch`).
    pub(crate) max_batch: usize,
}

impl Default for VerbTable {
    fn default() -> Self {
        VerbTable {
            verbs: HashMap::new(),
            aliases: HashMap::new(),
            max_batch: crate::Limits::default().max_batch,
        }
    }
}

impl VerbTable {
    /// A table holding only the built-in introspection verbs (`system.*`).
    pub fn new() -> Self {
        let mut t = VerbTable::default();
        super::introspect::register(&mut t);
        super::multicall::register(&mut t);
        t
    }

    /// Start registering `name`; finish with [`VerbBuilder::handler`].
    pub fn verb(&mut self, name: &str) -> VerbBuilder<'_> {
        VerbBuilder {
            table: self,
            name: name.to_owned(),
            params: Vec::new(),
            returns: "any",
            help: String::new(),
        }
    }

    /// Make `alias` call `target`.
    pub fn alias(&mut self, alias: &str, target: &str) -> &mut Self {
        self.aliases.insert(alias.to_owned(), target.to_owned());
        self
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Verb>> {
        self.verbs
            .get(name)
            .or_else(|| self.aliases.get(name).and_then(|t| self.verbs.get(t)))
    }

    /// Every callable name, verbs and aliases, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .verbs
            .keys()
            .chain(self.aliases.keys())
            .cloned()
            .collect();
        v.sort();
        v
    }

    /// Call `method`. Unknown verb: -32601; bad parameters: -32602; a handler that
    /// panics: -32603 (the panic is caught here, the server lives on).
    pub fn call(&self, method: &str, params: Params, ctx: CallContext) -> Reply {
        let Some(verb) = self.get(method) else {
            let err = RpcError::method_not_found(method);
            return Box::pin(std::future::ready(Err(err)));
        };
        let args = match map_params(verb, params) {
            Ok(a) => a,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let handler = match &verb.run {
            Run::Builtin(f) => return f(self, args, ctx),
            Run::Handler(h) => h,
        };
        let abort = ctx.abort.clone();
        let started = std::panic::catch_unwind(AssertUnwindSafe(|| handler(args, ctx)));
        let fut = match started {
            Ok(fut) => fut,
            Err(_) => return Box::pin(std::future::ready(Err(panicked(&verb.name)))),
        };
        // The verb itself (an `Arc`) names it if it panics: no String per call.
        let verb = verb.clone();
        let guarded = AssertUnwindSafe(fut)
            .catch_unwind()
            .map(move |r| r.unwrap_or_else(|_| Err(panicked(&verb.name))));
        match abort {
            None => Box::pin(guarded),
            Some(abort) => Box::pin(async move {
                // Biased: a call that is ready at once never registers with the switch.
                tokio::select! {
                    biased;
                    r = guarded => r,
                    _ = abort.fired() => Err(shutting_down()),
                }
            }),
        }
    }
}

/// Code of the error a call gets when the server stops before it finished.
pub const ERR_SHUTTING_DOWN: i64 = -32001;

fn shutting_down() -> RpcError {
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
    name: String,
    params: Vec<ParamSpec>,
    returns: &'static str,
    help: String,
}

impl VerbBuilder<'_> {
    /// A required parameter of any type.
    pub fn param(self, name: &'static str) -> Self {
        self.typed_param(name, "any", false)
    }

    /// A parameter that may be left out (it reads as nil).
    pub fn optional(self, name: &'static str) -> Self {
        self.typed_param(name, "any", true)
    }

    /// A parameter with a type name for introspection.
    pub fn typed_param(mut self, name: &'static str, kind: &'static str, optional: bool) -> Self {
        self.params.push(ParamSpec {
            name,
            kind,
            optional,
        });
        self
    }

    pub fn returns(mut self, kind: &'static str) -> Self {
        self.returns = kind;
        self
    }

    pub fn help(mut self, text: &str) -> Self {
        self.help = text.to_owned();
        self
    }

    /// Finish: register the verb with its async handler (replacing one of the same name).
    pub fn handler<F, Fut>(self, f: F)
    where
        F: Fn(Args, CallContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.finish(Run::Handler(Arc::new(move |args, ctx| {
            Box::pin(f(args, ctx))
        })));
    }

    pub(crate) fn builtin(self, f: Builtin) {
        self.finish(Run::Builtin(f));
    }

    fn finish(self, run: Run) {
        // Verbs live for the life of the process; leaking the short name list lets
        // every call's Args borrow it without a refcount.
        let names: &'static [&'static str] = Box::leak(
            self.params
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let verb = Verb {
            name: self.name.clone(),
            params: self.params,
            returns: self.returns,
            help: self.help,
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
    fn unknown_verb_and_panics() {
        let t = table();
        assert_eq!(call(&t, "nope", pos(vec![])).unwrap_err().code, -32601);
        assert_eq!(call(&t, "boom", pos(vec![])).unwrap_err().code, -32603);
        assert_eq!(call(&t, "boom.sync", pos(vec![])).unwrap_err().code, -32603);
        // and the table still works afterwards
        assert!(call(&t, "create", pos(vec!["a".into(), "b".into()])).is_ok());
    }
}
