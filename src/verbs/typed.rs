//! Typed verbs: a handler that takes its parameters as a Rust type and returns any
//! `Serialize` type. The type is read straight from what arrived (msgpack bytes through
//! rpcmux-msgpack-rpc's serde reader, or a `Value` tree), and its JSON Schema describes the verb.

use crate::verbs::dispatched::Dispatched;
use crate::verbs::output::{Encode, Output};
use crate::verbs::params_de::{explain, ParamsDe, Shape};
use crate::verbs::CallContext;
use rpcmux_value::{Params, RpcError, Value};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::marker::PhantomData;

/// A call's parameters as they arrived: a tree, or still encoded.
pub(crate) enum Input<'a> {
    Tree(Params),
    /// A msgpack params array, from its header on.
    Msgpack(&'a [u8]),
    /// JSON params (an array or an object) as text, for a typed verb.
    Json(&'a str),
}

impl Input<'_> {
    /// The parameters as a tree, for dynamic verbs.
    pub fn into_params(self, verb: &str) -> Result<Params, RpcError> {
        match self {
            Input::Tree(p) => Ok(p),
            Input::Msgpack(raw) => {
                rpcmux_msgpack_rpc::read_params(verb, raw).map(Params::Positional)
            }
            // Only typed verbs are given text; a tree is built here all the same.
            Input::Json(raw) => match serde_json::from_str::<Value>(raw) {
                Ok(Value::Array(a)) => Ok(Params::Positional(a)),
                Ok(Value::Struct(m)) => Ok(Params::Named(*m)),
                Ok(_) => Err(RpcError::invalid_request(
                    "params must be an array or an object",
                )),
                Err(e) => Err(invalid(verb, e)),
            },
        }
    }
}

/// A typed handler, with its parameter type erased.
pub(crate) trait TypedRun: Send + Sync {
    /// Read the parameters and start the handler; a parameter error is -32602. `defer`:
    /// the call must not run before it is polled (its verb's cap on concurrent calls
    /// admits it first). A result known at once is offered to `write_now`, if given.
    fn start(
        &self,
        verb: &str,
        input: Input<'_>,
        ctx: &CallContext,
        defer: bool,
        write_now: Option<WriteNow<'_>>,
    ) -> Result<Dispatched, RpcError>;

    /// [`TypedRun::start`] for a msgpack params array at the start of `buf`, whose end
    /// is not known yet (the message was not framed): the parameters are read, which
    /// finds where they end (`used` is set to that), then `hooks.begin` is called and the
    /// handler started. `None`, with nothing begun or started, when they cannot be read
    /// so (incomplete, a type mismatch, an extension type, an ignored field, a level
    /// past `max_depth`): the caller frames the message and starts it as usual, which
    /// answers any error.
    fn start_unframed(
        &self,
        buf: &[u8],
        max_depth: usize,
        ctx: &CallContext,
        defer: bool,
        used: &mut usize,
        hooks: Hooks<'_>,
    ) -> Option<Dispatched>;

    /// See [`start_xml`].
    fn start_xml(
        &self,
        call: rpcmux_xmlrpc::CallParams<'_>,
        ctx: &CallContext,
        defer: bool,
        hooks: Hooks<'_>,
    ) -> Option<Dispatched>;
}

/// [`TypedRun::start`] for an XML-RPC call opened up to its params
/// ([`rpcmux_xmlrpc::CallParams`]): they are read straight from the document into the
/// verb's type, the document's end is checked, then `hooks.begin` is called and the
/// handler started (a result known at once offered to `hooks.write_now`). `None`, with
/// nothing begun or started, when they cannot be read so: the caller parses the call as
/// values and dispatches it as usual, which answers any error.
pub(crate) fn start_xml<P: DeserializeOwned, H: TypedHandler<P>>(
    handler: &H,
    mut call: rpcmux_xmlrpc::CallParams<'_>,
    ctx: &CallContext,
    defer: bool,
    hooks: Hooks<'_>,
) -> Option<Dispatched> {
    let params = P::deserialize(ParamsDe {
        inner: &mut call,
        shape: Shape::Sequence,
    });
    let params = match (params, call.finish()) {
        (Ok(p), Ok(())) => p,
        _ => return None,
    };
    (hooks.begin)(ctx);
    Some(handler.run_now(params, ctx, defer, hooks.write_now))
}

/// What the caller of [`TypedRun::start_unframed`] lends the call as it starts.
pub(crate) struct Hooks<'a> {
    /// Called once the parameters are read, before the handler runs (the observer's
    /// start of the call).
    pub begin: &'a mut dyn FnMut(&CallContext),
    /// Where a result known at once may be written.
    pub write_now: WriteNow<'a>,
}

/// Where a result known as the call is read may be written at once (the framer's reply
/// encoder for this call, into its output): `true` once written, `false` if not now
/// (the result is then boxed and queued as usual). A sync typed verb's result so goes
/// from the handler straight into the output, with no box, no copy of it into one, and
/// no queue: msgpack-rpc's unframed calls, every single JSON-RPC request, and XML-RPC.
pub(crate) type WriteNow<'a> = &'a mut dyn FnMut(&dyn Encode) -> bool;

/// The parameters of a msgpack params array at the start of `buf`; once they are read,
/// `used` is set to where the array ends (see [`TypedRun::start_unframed`]). A `Result`, not an `Option`
/// of a pair: the parameters, which may be a big struct, keep their place on the way
/// out instead of being copied into a bigger value.
fn read_unframed<P: DeserializeOwned>(
    buf: &[u8],
    max_depth: usize,
    used: &mut usize,
) -> Result<P, ()> {
    let n = rpcmux_msgpack_rpc::params_len(buf).ok_or(())?;
    let mut de = rpcmux_msgpack_rpc::typed::Deserializer::with_depth(buf, max_depth);
    let p = P::deserialize(ParamsDe {
        inner: &mut de,
        shape: Shape::Positional(n),
    });
    if de.skipped() {
        return Err(());
    }
    if p.is_ok() {
        *used = de.position();
    }
    p.map_err(|_| ())
}

/// A typed verb: its parameter type `P` and its handler, [`AsyncHandler`] or
/// [`SyncHandler`].
pub(crate) struct Typed<P, H> {
    pub handler: H,
    pub _params: PhantomData<fn(P)>,
}

/// How a typed handler runs once its parameters are read. `defer`: not before the call
/// is polled (a cap on concurrent calls admits it first).
pub(crate) trait TypedHandler<P>: Send + Sync {
    /// The context is borrowed: an async or deferred call clones it into its future, a
    /// sync one that answers at once lends it to the handler.
    fn run(&self, params: P, ctx: &CallContext, defer: bool) -> Dispatched;

    /// [`TypedHandler::run`], offering an answer known at once to `write_now`.
    fn run_now(
        &self,
        params: P,
        ctx: &CallContext,
        defer: bool,
        _write_now: WriteNow<'_>,
    ) -> Dispatched {
        self.run(params, ctx, defer)
    }
}

/// An `async` handler ([`VerbBuilder::typed`](crate::verbs::VerbBuilder::typed)): its future
/// is the call (the cap's admission happens when it is polled).
pub(crate) struct AsyncHandler<F>(pub F);

/// A synchronous handler ([`VerbBuilder::typed_sync`](crate::verbs::VerbBuilder::typed_sync)):
/// it answers as it is called, with no future to allocate or poll; shared with a
/// deferred call's future.
pub(crate) struct SyncHandler<F>(pub std::sync::Arc<F>);

impl<P, F, Fut, R, E> TypedHandler<P> for AsyncHandler<F>
where
    F: Fn(P, CallContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Serialize + Send + 'static,
    E: Into<RpcError> + 'static,
{
    fn run(&self, params: P, ctx: &CallContext, _defer: bool) -> Dispatched {
        let fut = (self.0)(params, ctx.clone());
        Dispatched::Running(Box::pin(async move { typed_output(fut.await) }))
    }
}

impl<P, F, R, E> TypedHandler<P> for SyncHandler<F>
where
    P: Send + 'static,
    F: Fn(P, &CallContext) -> Result<R, E> + Send + Sync + 'static,
    R: Serialize + Send + 'static,
    E: Into<RpcError> + 'static,
{
    fn run(&self, params: P, ctx: &CallContext, defer: bool) -> Dispatched {
        if !defer {
            return Dispatched::Ready(Some(typed_output((self.0)(params, ctx))));
        }
        // Run when polled, once the verb's cap admits it (see `table::guard`).
        let (f, ctx) = (self.0.clone(), ctx.clone());
        Dispatched::Running(Box::pin(async move { typed_output(f(params, &ctx)) }))
    }

    fn run_now(
        &self,
        params: P,
        ctx: &CallContext,
        defer: bool,
        write_now: WriteNow<'_>,
    ) -> Dispatched {
        if defer {
            return self.run(params, ctx, defer);
        }
        match (self.0)(params, ctx) {
            Ok(r) if write_now(&r) => Dispatched::Written,
            r => Dispatched::Ready(Some(typed_output(r))),
        }
    }
}

fn invalid(verb: &str, e: impl std::fmt::Display) -> RpcError {
    RpcError::invalid_params(format!("{verb}: {}", explain(e)))
}

fn read<P: DeserializeOwned>(verb: &str, input: Input<'_>) -> Result<P, RpcError> {
    match input {
        Input::Tree(Params::Positional(v)) => {
            let shape = Shape::Positional(v.len());
            P::deserialize(ParamsDe {
                inner: Value::Array(v),
                shape,
            })
            .map_err(|e| invalid(verb, e))
        }
        Input::Tree(Params::Named(m)) => {
            let shape = Shape::Named(m.len());
            P::deserialize(ParamsDe {
                inner: Value::Struct(Box::new(m)),
                shape,
            })
            .map_err(|e| invalid(verb, e))
        }
        Input::Json(raw) if raw.starts_with('[') => {
            // One pass when the array holds the type's parameters, no more and no fewer
            // (the common case): read as its sequence of fields. Only for a type with
            // a fixed number of them (`Shape::Fields`): a sequence type is counted first.
            let mut de = serde_json::Deserializer::from_str(raw);
            if let Ok(p) = P::deserialize(ParamsDe {
                inner: &mut de,
                shape: Shape::Fields,
            }) {
                if de.end().is_ok() {
                    return Ok(p);
                }
            }
            // Else the items' text first (one scan, no values built), for their count
            // (optional fields left out, or an error to name); at most MAX_PARAMS of
            // them, so a long array costs no more than its bytes.
            let items = raw_items(raw).map_err(|e| invalid(verb, e))?;
            let n = items.len();
            P::deserialize(ParamsDe {
                inner: serde::de::value::SeqDeserializer::new(items.into_iter()),
                shape: Shape::Positional(n),
            })
            .map_err(|e| invalid(verb, e))
        }
        Input::Json(raw) => {
            let empty = raw[1..].trim_start().starts_with('}');
            let mut de = serde_json::Deserializer::from_str(raw);
            P::deserialize(ParamsDe {
                inner: &mut de,
                shape: Shape::Named(usize::from(!empty)),
            })
            .map_err(|e| invalid(verb, e))
        }
        Input::Msgpack(raw) => {
            let n = rpcmux_msgpack_rpc::params_len(raw)
                .ok_or_else(|| RpcError::invalid_request("params must be an array"))?;
            let mut de = rpcmux_msgpack_rpc::typed::Deserializer::new(raw);
            P::deserialize(ParamsDe {
                inner: &mut de,
                shape: Shape::Positional(n),
            })
            .or_else(|direct| {
                // On this rare path the params are read again as values, so the caller
                // gets the same message as over every other protocol (and an extension
                // type, which only the value path reads, reaches a `Value` parameter).
                match rpcmux_msgpack_rpc::read_params(verb, raw) {
                    Ok(v) => read(verb, Input::Tree(Params::Positional(v))),
                    Err(_) => Err(invalid(verb, direct)),
                }
            })
        }
    }
}

/// More positional parameters than any typed verb takes (its struct's fields or its
/// tuple's items): the array is refused before more of it is indexed.
const MAX_PARAMS: usize = 1024;

/// The items' texts of one call's params: most verbs take a few, held without a heap
/// allocation (one per typed call before).
type RawItems<'a> = smallvec::SmallVec<[&'a serde_json::value::RawValue; 8]>;

/// The text of each item of a JSON array, at most [`MAX_PARAMS`] of them.
fn raw_items(raw: &str) -> serde_json::Result<RawItems<'_>> {
    use serde::de::{Deserializer as _, SeqAccess, Visitor};
    struct Items;
    impl<'de> Visitor<'de> for Items {
        type Value = RawItems<'de>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of parameters")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = RawItems::new();
            while let Some(item) = seq.next_element()? {
                if items.len() == MAX_PARAMS {
                    return Err(serde::de::Error::custom(format_args!(
                        "more than {MAX_PARAMS} parameters"
                    )));
                }
                items.push(item);
            }
            Ok(items)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw);
    let items = (&mut de).deserialize_seq(Items)?;
    de.end()?;
    Ok(items)
}

impl<P: DeserializeOwned + 'static, H: TypedHandler<P>> TypedRun for Typed<P, H> {
    fn start(
        &self,
        verb: &str,
        input: Input<'_>,
        ctx: &CallContext,
        defer: bool,
        write_now: Option<WriteNow<'_>>,
    ) -> Result<Dispatched, RpcError> {
        let params: P = read(verb, input)?;
        Ok(match write_now {
            Some(write_now) => self.handler.run_now(params, ctx, defer, write_now),
            None => self.handler.run(params, ctx, defer),
        })
    }

    fn start_unframed(
        &self,
        buf: &[u8],
        max_depth: usize,
        ctx: &CallContext,
        defer: bool,
        used: &mut usize,
        hooks: Hooks<'_>,
    ) -> Option<Dispatched> {
        let params = read_unframed::<P>(buf, max_depth, used).ok()?;
        (hooks.begin)(ctx);
        Some(self.handler.run_now(params, ctx, defer, hooks.write_now))
    }

    fn start_xml(
        &self,
        call: rpcmux_xmlrpc::CallParams<'_>,
        ctx: &CallContext,
        defer: bool,
        hooks: Hooks<'_>,
    ) -> Option<Dispatched> {
        start_xml::<P, H>(&self.handler, call, ctx, defer, hooks)
    }
}

/// A handler's outcome as the verb table carries it.
fn typed_output<R: Serialize + Send + 'static, E: Into<RpcError>>(
    r: Result<R, E>,
) -> Result<Output, RpcError> {
    match r {
        Ok(r) => Ok(Output::Typed(Box::new(r))),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positional_json_params_are_indexed_up_to_a_bound() {
        let items = raw_items(r#"[1, "a", {"b": [2]}]"#).unwrap();
        let texts: Vec<&str> = items.iter().map(|r| r.get()).collect();
        assert_eq!(texts, ["1", "\"a\"", r#"{"b": [2]}"#]);
        let long = format!("[{}0]", "0,".repeat(MAX_PARAMS));
        let e = raw_items(&long).unwrap_err().to_string();
        assert!(e.contains("more than 1024 parameters"), "{e}");
        assert!(raw_items(&format!("[{}0]", "0,".repeat(MAX_PARAMS - 1))).is_ok());
    }

    #[test]
    fn a_sequence_type_is_counted_before_it_is_read() {
        // The one-pass read is for a fixed number of parameters: a typed verb that takes
        // a list keeps the bound on how many it is sent.
        let long = format!("[{}0]", "0,".repeat(MAX_PARAMS));
        let e = read::<Vec<i64>>("v", Input::Json(&long)).unwrap_err();
        assert!(e.message.contains("more than 1024 parameters"), "{e:?}");
        let fits = format!("[{}0]", "0,".repeat(MAX_PARAMS - 1));
        assert_eq!(
            read::<Vec<i64>>("v", Input::Json(&fits)).unwrap().len(),
            MAX_PARAMS
        );
        // A struct's fields, a tuple's items: one pass, and the same answers.
        assert_eq!(
            read::<(i64, String)>("v", Input::Json(r#"[1,"a"]"#)).unwrap(),
            (1, "a".into())
        );
        let e = read::<(i64, String)>("v", Input::Json(r#"[1,"a",2]"#)).unwrap_err();
        assert!(e.message.contains("takes 2 parameter(s), got 3"), "{e:?}");
    }
}
