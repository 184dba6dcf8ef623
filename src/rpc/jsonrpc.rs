//! Answering a JSON-RPC body, shared by the HTTP, raw-TCP and STOMP framers. Each
//! reply is written in its request's version: JSON-RPC 1.0 (no `"jsonrpc"`) gets
//! `{"result":…,"error":null,"id":…}` (STOMP refuses 1.0: [`only_v2`]).
//!
//! What a JSON-RPC 1.0 client may rely on (docs/protocols.md, "JSON-RPC 1.0"):
//! - its error is an object or a string as `[jsonrpc] v1_error` says ([`Shape`]):
//!   by default a string on raw TCP, where Go's `net/rpc/jsonrpc` is the client (it
//!   drops the connection on any other shape), an object elsewhere;
//! - `"params":[null]` calls a verb of no parameters (Go's client always sends one
//!   argument, `null` for none), where 2.0 would refuse it with -32602;
//! - python-bitcoinrpc's `batch_`, whose members say `"jsonrpc":"2.0"` but which reads
//!   `error` from every member as bitcoind's replies always had it, gets each member in
//!   1.0's shape: the HTTP layer tells it by its `User-Agent` ([`Shape::legacy`]).
//!
//! What a request may cause is bounded here, not only its bytes: a batch has at most
//! `max_batch` members (refused while parsing, before any member is built), each
//! member's reply is encoded as soon as it is ready (a finished member holds bytes, not
//! a value tree, while slower ones run), and a reply past `max_reply` bytes becomes
//! an error (-32003) instead of an unbounded write.

use crate::offload;
use crate::verbs::{CallContext, Dispatched, Encode, Input, Output, VerbTable};
use futures_util::stream::{self, StreamExt};
use rpcmux_jsonrpc::{
    write_error, write_error_in, write_result_in, write_result_with_in, Failed, Id, Incoming,
    RawParams, Request, Version,
};
use rpcmux_value::RpcError;
use std::sync::Arc;

use crate::conn::reply_cap::ReplyCap;

/// The bounds one answer works within.
#[derive(Clone, Debug)]
pub(crate) struct Bounds {
    /// Batch members running at once.
    pub parallel: usize,
    pub max_batch: usize,
    /// Calls one request may start: batch members, each with the `system.multicall`
    /// calls it carries.
    pub max_calls: usize,
    pub cap: ReplyCap,
    /// How replies are shaped beyond their request's version.
    pub shape: Shape,
}

/// The reply shape a client needs beyond what its request's version says.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Shape {
    /// `[jsonrpc] v1_error`, resolved against the transport in [`answer`].
    pub v1_error: crate::config::V1Error,
    /// Every reply in 1.0's shape, whatever its request said: for clients written for
    /// bitcoind before 28.0, which answered everything so (python-bitcoinrpc).
    pub legacy: bool,
}

/// How one reply is written: its version, and a 1.0 error as text or object.
#[derive(Clone, Copy)]
struct Write {
    version: Version,
    text_error: bool,
}

impl Shape {
    fn write(self, version: Version, protocol: &str) -> Write {
        let version = if self.legacy { Version::V1 } else { version };
        Write {
            version,
            text_error: version == Version::V1 && self.v1_error.is_text_on(protocol),
        }
    }
}

/// Parse a JSON-RPC body, on the blocking pool when it is big. The params of typed
/// verbs stay text, for them to deserialize straight into their types.
pub(crate) async fn parse(
    body: bytes::Bytes,
    bounds: &Bounds,
    verbs: &Arc<VerbTable>,
) -> Result<Incoming, RpcError> {
    let (verbs, max_batch) = (verbs.clone(), bounds.max_batch);
    offload::run(body.len(), move || parse_batch(&body, max_batch, &verbs)).await
}

/// Parse a JSON-RPC message here and now (see [`parse`]).
pub(crate) fn parse_now(
    body: &[u8],
    bounds: &Bounds,
    verbs: &VerbTable,
) -> Result<Incoming, RpcError> {
    parse_batch(body, bounds.max_batch, verbs)
}

fn parse_batch(body: &[u8], max_batch: usize, verbs: &VerbTable) -> Result<Incoming, RpcError> {
    let limits = rpcmux_jsonrpc::ParseLimits { max_batch };
    rpcmux_jsonrpc::parse_for(body, &limits, &|m| verbs.is_typed(m))
}

/// The built-in verb that runs calls of its own.
const MULTICALL: &str = "system.multicall";

/// The calls a batch starts: one per member, and for a `system.multicall` member the
/// calls it carries (each may be refused later by `max_batch`, but counts here).
/// Batch members times multicall calls multiplied a 51 KB request into 475,120 calls.
fn calls_in(items: &[Result<Request, Failed>]) -> usize {
    items
        .iter()
        .map(|item| match item {
            Ok(r) if r.method == MULTICALL => match &r.params {
                rpcmux_value::Params::Positional(p) => match p.first() {
                    Some(rpcmux_value::Value::Array(calls)) => 1 + calls.len(),
                    _ => 1,
                },
                rpcmux_value::Params::Named(m) => match m.values().next() {
                    Some(rpcmux_value::Value::Array(calls)) => 1 + calls.len(),
                    _ => 1,
                },
            },
            _ => 1,
        })
        .sum()
}

/// Run what `incoming` asks and write the reply body into `out`. Returns false when
/// there is nothing to send (a notification, or a batch of notifications only).
/// Batch members run concurrently, at most `bounds.parallel` at a time, and answer in
/// order. `size` is the request's size: big requests are encoded off the async workers.
pub(crate) async fn answer(
    verbs: Arc<VerbTable>,
    ctx: CallContext,
    incoming: Incoming,
    bounds: &Bounds,
    size: usize,
    out: &mut Vec<u8>,
) -> bool {
    let (shape, protocol) = (bounds.shape, ctx.protocol);
    match incoming {
        Incoming::Single(item) => {
            let start = out.len();
            let Some((how, id)) = one_into(&verbs, ctx, item, bounds, size, out).await else {
                return false;
            };
            if let Err(e) = bounds.cap.check(out.len() - start) {
                crate::conn::reply_cap::discard_from(out, start);
                write_error_as(out, how, &id, &e);
            }
            true
        }
        Incoming::Batch(items) => {
            let calls = calls_in(&items);
            if calls > bounds.max_calls {
                let e = RpcError::invalid_request(format!(
                    "this batch would start {calls} calls (its members and the system.multicall calls they carry); at most {} per request (max_calls_per_request)",
                    bounds.max_calls
                ));
                write_error(out, &Id::Null, &e);
                return true;
            }
            let per_member = size / items.len().max(1);
            let mut replies = stream::iter(runs(&verbs, items, bounds.max_batch, &ctx))
                .map(|run| {
                    let (verbs, ctx) = (&verbs, ctx.clone());
                    async move {
                        let answered = match run {
                            Run::One(item) => one(verbs, ctx, item).await.into_iter().collect(),
                            Run::Group(reqs, vs) => group(verbs, ctx, reqs, vs).await,
                        };
                        let mut encoded = Vec::with_capacity(answered.len());
                        for (version, id, r) in answered {
                            let mut reply = Vec::new();
                            let how = shape.write(version, protocol);
                            encode_into(&mut reply, per_member, how, &id, r).await;
                            encoded.push(reply);
                        }
                        encoded
                    }
                })
                .buffered(bounds.parallel.max(1))
                .flat_map(stream::iter);
            let start = out.len();
            let mut first = true;
            while let Some(reply) = replies.next().await {
                if let Err(e) = bounds.cap.check(out.len() - start + reply.len() + 2) {
                    // Stop here: the members still running are dropped with the stream.
                    crate::conn::reply_cap::discard_from(out, start);
                    write_error(out, &Id::Null, &e);
                    return true;
                }
                out.push(if first { b'[' } else { b',' });
                first = false;
                out.extend_from_slice(&reply);
            }
            if first {
                return false;
            }
            out.push(b']');
            true
        }
    }
}

/// A batch member alone, or consecutive members for one upstream that go to it as one
/// request (`verbs/batch.rs`).
enum Run {
    One(Result<Request, Failed>),
    Group(Vec<Request>, Vec<Arc<crate::verbs::Verb>>),
}

/// Split a batch into its runs.
fn runs(
    verbs: &VerbTable,
    items: Vec<Result<Request, Failed>>,
    max: usize,
    ctx: &CallContext,
) -> Vec<Run> {
    let methods: Vec<Option<&str>> = items
        .iter()
        .map(|i| i.as_ref().ok().map(|r| r.method.as_str()))
        .collect();
    let plan = crate::verbs::plan(verbs, &methods, max, ctx);
    if plan.iter().all(|r| matches!(r, crate::verbs::Run::One(_))) {
        return items.into_iter().map(Run::One).collect();
    }
    let mut items: Vec<Option<Result<Request, Failed>>> = items.into_iter().map(Some).collect();
    plan.into_iter()
        .filter_map(|r| match r {
            crate::verbs::Run::One(i) => items[i].take().map(Run::One),
            crate::verbs::Run::Group(range, vs) => {
                let reqs = range.filter_map(|i| items[i].take()?.ok()).collect();
                Some(Run::Group(reqs, vs))
            }
        })
        .collect()
}

/// One group's calls; the answers of those that are not notifications.
async fn group(
    verbs: &VerbTable,
    ctx: CallContext,
    reqs: Vec<Request>,
    vs: Vec<Arc<crate::verbs::Verb>>,
) -> Vec<Answer> {
    let mut ids = Vec::with_capacity(reqs.len());
    let calls = vs
        .into_iter()
        .zip(reqs)
        .map(|(v, req)| {
            ids.push((req.version, req.id));
            (v, req.params)
        })
        .collect();
    let results = verbs.dispatch_group(calls, ctx).await;
    ids.into_iter()
        .zip(results)
        .filter_map(|((version, id), r)| Some((version, id?, r)))
        .collect()
}

/// A call's outcome, with the version and id its reply is written in.
type Answer = (Version, Id, Result<Output, RpcError>);

/// One call; `None` for a notification (run, but not answered).
async fn one(verbs: &VerbTable, ctx: CallContext, item: Result<Request, Failed>) -> Option<Answer> {
    match item {
        Err(f) => Some((f.version, f.id, Err(f.error))),
        Ok(mut req) => {
            let (method, input) = call_of(verbs, &mut req);
            let result = verbs.dispatch(method, input, ctx).await;
            req.id.map(|id| (req.version, id, result))
        }
    }
}

/// A request's method and its parameters as the dispatch takes them (the raw text for
/// a typed verb, else the tree, taken out of `req`); JSON-RPC 1.0's "no argument" to a
/// verb that takes none is no parameters ([`no_argument`]).
fn call_of<'r>(verbs: &VerbTable, req: &'r mut Request) -> (&'r str, Input<'r>) {
    if no_argument(verbs, req) {
        req.params = rpcmux_value::Params::default();
        req.raw_params = None;
    }
    let Request {
        method,
        params,
        raw_params,
        ..
    } = req;
    let input = match raw_params {
        Some(raw) => Input::Json(RawParams::get(raw)),
        None => Input::Tree(std::mem::take(params)),
    };
    (method, input)
}

/// A request alone (not in a batch), answered into `out`: the shape and id its reply was
/// written in, or `None` for a notification (run, not answered). A small request's sync
/// typed verb writes its result into `out` as it returns it ([`WriteNow`]): no box for
/// the result, and no queue.
///
/// [`WriteNow`]: crate::verbs::typed::WriteNow
async fn one_into(
    verbs: &VerbTable,
    ctx: CallContext,
    item: Result<Request, Failed>,
    bounds: &Bounds,
    size: usize,
    out: &mut Vec<u8>,
) -> Option<(Write, Id)> {
    let mut req = match item {
        Ok(req) => req,
        Err(f) => {
            let how = bounds.shape.write(f.version, ctx.protocol);
            write_error_as(out, how, &f.id, &f.error);
            return Some((how, f.id));
        }
    };
    let how = bounds.shape.write(req.version, ctx.protocol);
    let id = req.id.take();
    let (method, input) = call_of(verbs, &mut req);
    let at = out.len();
    let dispatched = if size < offload::OFFLOAD_AT {
        let mut write_now = |r: &dyn Encode| {
            // A notification's result is dropped: nothing is sent for it.
            if let Some(id) = &id {
                write_result_with_in(out, how.version, id, |o| r.to_json(o));
            }
            true
        };
        verbs.dispatch_writing(method, input, ctx, &mut write_now)
    } else {
        verbs.dispatch(method, input, ctx)
    };
    let result = match dispatched {
        Dispatched::Written => None,
        // Not written: nothing of a result is left in `out` (a `Serialize` that
        // panicked part way is answered -32603 by the dispatch).
        running => {
            out.truncate(at);
            Some(running.await)
        }
    };
    let id = id?;
    if let Some(r) = result {
        encode_into(out, size, how, &id, r).await;
    }
    Some((how, id))
}

/// Whether `req` is JSON-RPC 1.0's "no argument" (`"params":[null]`, what Go's client
/// sends for a nil argument) to a verb of this server that takes no parameters: it is
/// called with none. A forwarded verb (its parameters unknown here) gets what was sent.
fn no_argument(verbs: &VerbTable, req: &Request) -> bool {
    if req.version != Version::V1 {
        return false;
    }
    let one_null = match &req.raw_params {
        Some(raw) => raw
            .get()
            .bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .eq(*b"[null]"),
        None => {
            matches!(&req.params, rpcmux_value::Params::Positional(p) if p.as_slice() == [rpcmux_value::Value::Nil])
        }
    };
    one_null
        && verbs
            .get(&req.method)
            .is_some_and(|v| v.params.is_empty() && !v.is_passthrough())
}

/// An error in the shape `how` says.
fn write_error_as(out: &mut Vec<u8>, how: Write, id: &Id, e: &RpcError) {
    if how.text_error {
        rpcmux_jsonrpc::write_error_text(out, id, e)
    } else {
        write_error_in(out, how.version, id, e)
    }
}

/// Append one reply object in the shape `how` says (a typed result serialized straight
/// into `out`); on the blocking pool when its request was big.
async fn encode_into(
    out: &mut Vec<u8>,
    size: usize,
    how: Write,
    id: &Id,
    r: Result<Output, RpcError>,
) {
    let version = how.version;
    let write = move |out: &mut Vec<u8>, id: &Id, r: Result<Output, RpcError>| match r {
        Ok(Output::Value(v)) => write_result_in(out, version, id, &v),
        Ok(Output::Typed(t)) => write_result_with_in(out, version, id, |o| t.to_json(o)),
        Err(e) => write_error_as(out, how, id, &e),
    };
    if size < offload::OFFLOAD_AT {
        return write(out, id, r);
    }
    let id = id.clone();
    let encoded = offload::run(size, move || {
        let mut buf = Vec::with_capacity(size.min(1 << 20) + 64);
        write(&mut buf, &id, r);
        buf
    })
    .await;
    out.extend_from_slice(&encoded);
}

/// For a transport that speaks JSON-RPC 2.0 only (STOMP, as VDSM has it): a 1.0 request
/// (no `"jsonrpc"`) is refused with -32600 instead of run, in 2.0's shape.
pub(crate) fn only_v2(incoming: Incoming) -> Incoming {
    let refuse = |item: Result<Request, Failed>| match item {
        Ok(r) if r.version == Version::V1 => Err(Failed {
            version: Version::V2,
            id: r.id.unwrap_or_default(),
            error: RpcError::invalid_request(
                "\"jsonrpc\" must be \"2.0\" (JSON-RPC over STOMP is 2.0 only)",
            ),
        }),
        Err(f) => Err(Failed {
            version: Version::V2,
            ..f
        }),
        ok => ok,
    };
    match incoming {
        Incoming::Single(item) => Incoming::Single(refuse(item)),
        Incoming::Batch(items) => Incoming::Batch(items.into_iter().map(refuse).collect()),
    }
}

/// A buffer for the reply to a request of `request_size` bytes: room for a reply about
/// as big as its request (an echo, a get-and-set), so writing it does not grow the
/// buffer by doubling (two or three reallocations and copies a call); at least 256
/// bytes, at most 64 KiB reserved ahead. Replies are cut to their length before they
/// are charged (`conn::out::cut_to_length`), so the spare room is never held.
pub(crate) fn reply_buffer(request_size: usize) -> Vec<u8> {
    Vec::with_capacity(request_size.saturating_add(64).clamp(256, 64 * 1024))
}

/// A reply body for an error that answers the whole message (parse error, too large).
pub(crate) fn error_body(err: &RpcError) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    write_error(&mut out, &Id::Null, err);
    out
}
