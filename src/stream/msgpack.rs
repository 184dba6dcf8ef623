//! MessagePack-RPC over raw TCP: pipelined requests answered as each completes
//! (out of order; msgids tell them apart), notifications run without reply (unknown
//! ones ignored: pynvim opens with `nvim_set_client_info`), events pushed to
//! connections that subscribed, as `[2, event, [params]]`. A msgpack stream cannot be
//! resynchronised, so a framing error is logged and the connection closed after the
//! replies already owed are written.

use crate::conn::out::Out;
use crate::conn::reply_cap::ReplyCap;
use crate::conn::ConnInfo;
use crate::events::outbox::Delivery;
use crate::events::{Event, Lost};
use crate::io::{Rewind, Stream};
use crate::offload;
use crate::shared::Shared;
use crate::stream::driver::{self, Calls, Close, Framer};
use crate::verbs::{CallContext, Dispatched, Encode, Found, Input, Output, Verb, VerbTable};
use bytes::{Buf, BytesMut};
use futures_util::future::BoxFuture;
use rpcmux_msgpack_rpc::{
    encode_response, encode_result_with, split_call, Limits, Message, MsgpackRpcCodec, SplitCall,
};
use rpcmux_value::{Params, RpcError};
use std::sync::Arc;

struct Msgpack {
    codec: MsgpackRpcCodec,
    verbs: Arc<VerbTable>,
    ctx: CallContext,
    cap: ReplyCap,
    /// Why the stream could not be read on, answered once every call has been.
    last_words: Option<RpcError>,
    /// Bounds of one group of pipelined calls sent as one request (see [`Group`]):
    /// members, and request bytes in all.
    max_batch: usize,
    max_frame: usize,
}

/// Pipelined calls for one upstream that can take many in one request (an XML-RPC
/// server with `system.multicall`): the first complete request in the input is such a
/// call, and the complete requests right behind it for the same upstream join it. They
/// go as one request through the batch path (`verbs/batch.rs`), one call of the
/// session charged with all their bytes, and each member is answered under its own
/// msgid. Only forwarded verbs are looked at: a Rust verb is dispatched as before,
/// after the one lookup that tells its kind.
struct Group {
    /// Each member's msgid (`None`: a notification), verb and parameters.
    members: Vec<(Option<u32>, Arc<Verb>, Params)>,
    /// Request bytes in all.
    bytes: usize,
}

/// What a framed message starts.
enum Started {
    /// A call: its msgid (`None` for a notification) and its reply.
    Call(Option<u32>, Dispatched),
    /// An answer owed at once (an invalid request with a msgid).
    Answer(u32, RpcError),
    /// Nothing to run or answer.
    Nothing,
}

/// Split a framed message at its params and start its call: a typed verb deserializes
/// its parameters straight from the msgpack bytes, a dynamic one reads them as values.
fn start_frame(verbs: &VerbTable, frame: &[u8], ctx: CallContext) -> Started {
    match split_call(frame) {
        Ok(SplitCall::Call {
            msgid,
            method,
            params,
        }) => Started::Call(msgid, verbs.dispatch(&method, Input::Msgpack(params), ctx)),
        other => not_a_call(other),
    }
}

/// What a framed message that is not a call starts: an answer owed, or nothing.
fn not_a_call(split: Result<SplitCall<'_>, rpcmux_msgpack_rpc::CodecError>) -> Started {
    match split {
        Ok(SplitCall::Call { .. }) => Started::Nothing,
        Ok(SplitCall::Other(Message::Invalid {
            msgid: Some(msgid),
            error,
        })) => Started::Answer(msgid, error),
        Ok(SplitCall::Other(Message::Invalid { msgid: None, error })) => {
            tracing::debug!(error = %error, "invalid notification ignored");
            Started::Nothing
        }
        Ok(SplitCall::Other(Message::Response { msgid, .. })) => {
            tracing::debug!(msgid, "client sent a response to no request; ignored");
            Started::Nothing
        }
        Ok(SplitCall::Other(_)) => Started::Nothing,
        Err(e) => {
            tracing::debug!(error = %e, "unparsable msgpack-rpc message ignored");
            Started::Nothing
        }
    }
}

/// Run a started call to its reply (`None` for a notification); a big one's reply is
/// encoded off the async workers.
async fn finish(started: Started, size: usize, cap: ReplyCap) -> Done {
    match started {
        Started::Call(Some(msgid), reply) => {
            let r = reply.await;
            if size < offload::OFFLOAD_AT {
                return Some(Reply::Done(msgid, r));
            }
            Some(
                offload::run(size, move || {
                    let mut out = BytesMut::new();
                    put_reply(&mut out, msgid, r, &cap);
                    Reply::Encoded(out)
                })
                .await,
            )
        }
        Started::Call(None, reply) => answered(None, reply.await),
        Started::Answer(msgid, e) => Some(Reply::Done(msgid, Err(e))),
        Started::Nothing => None,
    }
}

/// What a call's answer owes: a reply, or nothing for a notification (its failure is
/// logged).
fn answered(msgid: Option<u32>, r: Result<Output, RpcError>) -> Done {
    match msgid {
        Some(msgid) => Some(Reply::Done(msgid, r)),
        None => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "notification failed (no reply is sent)");
            }
            None
        }
    }
}

/// Append the reply to `msgid`, a typed result serialized straight into `out`; one
/// the cap refuses (over `max_reply`, or big while the output budget is spent) becomes
/// its error (-32003, -32006).
fn put_reply(out: &mut BytesMut, msgid: u32, result: Result<Output, RpcError>, cap: &ReplyCap) {
    let start = out.len();
    match &result {
        Ok(Output::Value(v)) => encode_response(out, msgid, Ok(v)),
        Ok(Output::Typed(t)) => return put_typed_reply(out, msgid, &**t, cap),
        Err(e) => encode_response(out, msgid, Err(e)),
    }
    if let Err(e) = cap.check(out.len() - start) {
        crate::conn::reply_cap::discard_from_bytes(out, start);
        encode_response(out, msgid, Err(&e));
    }
}

/// Append the reply to `msgid` with a typed result, serialized straight into `out`;
/// one the cap refuses becomes its error (see [`put_reply`]), a result whose
/// `Serialize` panics -32603 (nothing of it is left in `out`).
fn put_typed_reply(out: &mut BytesMut, msgid: u32, result: &dyn Encode, cap: &ReplyCap) {
    let start = out.len();
    let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        encode_result_with(out, msgid, |o| result.to_msgpack(o))
    }));
    let error = match written {
        Err(_) => Some(RpcError::internal("the result could not be encoded")),
        Ok(()) => cap.check(out.len() - start).err(),
    };
    if let Some(e) = error {
        crate::conn::reply_cap::discard_from_bytes(out, start);
        encode_response(out, msgid, Err(&e));
    }
}

/// A finished call's reply: its msgid and outcome, to encode straight into the output
/// (small calls), or already encoded (big ones); `None` for a notification.
enum Reply {
    Done(u32, Result<Output, RpcError>),
    Encoded(BytesMut),
}
type Done = Option<Reply>;

impl Msgpack {
    /// Events wait in this connection's outbox: a reply written now would overtake them.
    fn events_waiting(&self) -> bool {
        self.ctx
            .session
            .as_ref()
            .is_some_and(|s| !s.link.outbox.is_empty())
    }

    /// Whether this connection's caller may not call `method` (its verb `v`).
    fn refused(&self, method: &str, v: &Verb) -> bool {
        crate::verbs::refusal(&self.ctx, method, Some(v)).is_some()
    }

    /// Start a small framed message's call, or (`Err`) hand back the first member of a
    /// group: a call to a forwarded verb whose upstream takes many calls in one request.
    #[allow(clippy::type_complexity)]
    fn start_small(&self, frame: &[u8]) -> Result<Started, (Option<u32>, Arc<Verb>, Params)> {
        let (msgid, method, params) = match split_call(frame) {
            Ok(SplitCall::Call {
                msgid,
                method,
                params,
            }) => (msgid, method, params),
            other => return Ok(not_a_call(other)),
        };
        // The one lookup: a Rust verb is `Found::Local` and dispatched at once.
        let found = self.verbs.find(&method);
        if let Found::Upstream(Some(v)) = &found {
            // A call the caller may not make is never grouped: dispatched alone, it is
            // refused.
            if v.grouping().is_some() && !self.refused(&method, v) {
                if let Ok(p) = rpcmux_msgpack_rpc::read_params(&method, params) {
                    return Err((msgid, v.clone(), Params::Positional(p)));
                }
            }
        }
        let input = Input::Msgpack(params);
        let reply = self
            .verbs
            .dispatch_found(&method, &found, input, self.ctx.clone(), None);
        Ok(Started::Call(msgid, reply))
    }

    /// Start the message at the front of `input` without framing it first, when it
    /// calls a typed verb: the verb's reader reads the parameters straight from the
    /// input and so finds where the message ends (the framing scan would walk every
    /// item of it once more first). Returns the message's length and its call, or `None`
    /// (nothing started) for everything else: a message part-way through framing, a
    /// dynamic or forwarded verb, parameters the typed reader does not take (see
    /// [`VerbTable::dispatch_unframed`]), a big message (framed and read off the
    /// workers), anything not a call; those are framed and started as before.
    ///
    /// A sync typed verb's result is written into `out` as its handler returns (see
    /// `WriteNow` (`verbs/typed.rs`)), unless events wait for this
    /// connection (they go first, as for every reply) or `out` is full.
    fn start_unframed(&self, input: &[u8], out: &mut BytesMut) -> Option<(usize, Started)> {
        if !self.codec.is_idle() {
            return None;
        }
        let limits = self.codec.limits();
        let buf = &input[..input
            .len()
            .min(limits.max_message)
            .min(offload::OFFLOAD_AT - 1)];
        let Ok(SplitCall::Call {
            msgid,
            method,
            params,
        }) = split_call(buf)
        else {
            return None;
        };
        let Found::Local(verb) = self.verbs.find(&method) else {
            return None;
        };
        // Levels the reader may open: the message array is one of the cap's.
        let depth = limits.max_depth.saturating_sub(1);
        let cap = &self.cap;
        let mut write_now = |r: &dyn Encode| {
            if out.len() >= driver::MAX_OUT || self.events_waiting() {
                return false;
            }
            if let Some(msgid) = msgid {
                put_typed_reply(out, msgid, r, cap);
            }
            true
        };
        let (used, reply) = self.verbs.dispatch_unframed(
            &method,
            verb,
            params,
            depth,
            &self.ctx,
            &mut write_now,
        )?;
        let len = params.as_ptr() as usize - buf.as_ptr() as usize + used;
        Some((len, Started::Call(msgid, reply)))
    }

    /// Reply to, or keep running, a small message's call started in place.
    fn take_started(
        &self,
        started: Started,
        size: usize,
        out: &mut BytesMut,
        calls: &mut Calls<Done>,
    ) {
        match started {
            Started::Nothing => {}
            Started::Answer(msgid, e) => put_reply(out, msgid, Err(e), &self.cap),
            Started::Call(_, Dispatched::Written) => {}
            Started::Call(msgid, reply) => match reply.now() {
                Ok(r) => calls.finished(answered(msgid, r)),
                Err(running) => {
                    let started = Started::Call(msgid, Dispatched::Running(running));
                    calls.start(size, finish(started, size, self.cap.clone()))
                }
            },
        }
    }

    /// The group `head` (already taken from `input`, `size` bytes) starts: the complete
    /// requests right behind it in `input` for the same upstream join it, taken from
    /// `input`, at most `max_batch` members and `max_frame` bytes in all. The first
    /// message that does not join (another verb, a big or incomplete frame, a framing
    /// error) stays for the next decode.
    fn gather(
        &mut self,
        input: &mut BytesMut,
        head: (Option<u32>, Arc<Verb>, Params),
        size: usize,
    ) -> Group {
        let mut group = Group {
            members: vec![head],
            bytes: size,
        };
        let Some(target) = group.members[0].1.grouping().cloned() else {
            return group;
        };
        while group.members.len() < self.max_batch.max(1) {
            let len = match self.codec.frame_len(input) {
                Ok(Some(len)) if len < offload::OFFLOAD_AT => len,
                _ => break,
            };
            if group.bytes + len > self.max_frame {
                break;
            }
            let Ok(SplitCall::Call {
                msgid,
                method,
                params,
            }) = split_call(&input[..len])
            else {
                break;
            };
            let Found::Upstream(Some(v)) = self.verbs.find(&method) else {
                break;
            };
            if !v.grouping().is_some_and(|g| g.same_target(&target)) || self.refused(&method, &v) {
                break;
            }
            let Ok(p) = rpcmux_msgpack_rpc::read_params(&method, params) else {
                break;
            };
            group.members.push((msgid, v, Params::Positional(p)));
            group.bytes += len;
            input.advance(len);
        }
        group
    }

    /// Run a group: one request for two or more members; a member alone is an
    /// ordinary call. Each member is answered under its own msgid, its error in
    /// msgpack-rpc's shape; the replies together are bounded by `max_reply` (members
    /// past it get -32003).
    fn run_group(&self, mut group: Group) -> BoxFuture<'static, Done> {
        let (cap, bytes) = (self.cap.clone(), group.bytes);
        if group.members.len() == 1 {
            let (msgid, verb, params) = group.members.remove(0);
            let found = Found::Upstream(Some(verb.clone()));
            let input = Input::Tree(params);
            let reply =
                self.verbs
                    .dispatch_found(&verb.name, &found, input, self.ctx.clone(), None);
            return Box::pin(finish(Started::Call(msgid, reply), bytes, cap));
        }
        let mut ids = Vec::with_capacity(group.members.len());
        let members = group
            .members
            .into_iter()
            .map(|(msgid, verb, params)| {
                ids.push(msgid);
                (verb, params)
            })
            .collect();
        let results = self.verbs.dispatch_group(members, self.ctx.clone());
        Box::pin(async move {
            let results = results.await;
            let encoded = offload::run(bytes, move || {
                let mut out = BytesMut::new();
                for (msgid, r) in ids.into_iter().zip(results) {
                    let Some(msgid) = msgid else { continue };
                    match cap.check(out.len()) {
                        Err(e) => put_reply(&mut out, msgid, Err(e), &cap),
                        Ok(()) => put_reply(&mut out, msgid, r, &cap),
                    }
                }
                out
            })
            .await;
            Some(Reply::Encoded(encoded))
        })
    }
}

impl Framer for Msgpack {
    type Done = Done;

    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut Out,
        calls: &mut Calls<Self::Done>,
        mut room: usize,
    ) -> Result<(), Close> {
        while room > 0 {
            if let Some((size, started)) = self.start_unframed(input, out) {
                input.advance(size);
                self.take_started(started, size, out, calls);
                room -= 1;
                continue;
            }
            let size = match self.codec.frame_len(input) {
                Ok(Some(len)) => len,
                Ok(None) => return Ok(()),
                Err(e) => {
                    input.clear();
                    // The stream cannot be resynchronised: say why, as an error reply under
                    // msgid 0 (the message's own is unknown), after the replies owed.
                    self.last_words = Some(e.to_rpc_error());
                    let why = format!("msgpack-rpc framing error: {e}");
                    return Err(match e {
                        rpcmux_msgpack_rpc::CodecError::TooLarge { .. } => {
                            Close::over_limit("frame", why)
                        }
                        _ => Close::new(why),
                    });
                }
            };
            if size < offload::OFFLOAD_AT {
                // Small: the call starts from the bytes in place (a typed verb's params
                // are deserialized from them), then they are dropped.
                let started = match self.start_small(&input[..size]) {
                    Ok(started) => started,
                    Err(head) => {
                        input.advance(size);
                        let group = self.gather(input, head, size);
                        calls.start(group.bytes, self.run_group(group));
                        room -= 1;
                        continue;
                    }
                };
                input.advance(size);
                let call = matches!(started, Started::Call(..));
                self.take_started(started, size, out, calls);
                if !call {
                    continue;
                }
            } else {
                // Big: split and decoded inside the call, off the async workers.
                let frame = input.split_to(size).freeze();
                let (verbs, ctx, cap) = (self.verbs.clone(), self.ctx.clone(), self.cap.clone());
                calls.start(size, async move {
                    let started =
                        offload::run(size, move || start_frame(&verbs, &frame, ctx)).await;
                    finish(started, size, cap).await
                });
            }
            room -= 1;
        }
        Ok(())
    }

    fn reply(&mut self, done: Self::Done, out: &mut Out) {
        match done {
            Some(Reply::Done(msgid, r)) => put_reply(out, msgid, r, &self.cap),
            Some(Reply::Encoded(bytes)) => out.put_owned(bytes),
            None => {}
        }
    }

    fn event(&mut self, event: &Event, how: &Delivery, out: &mut Out) {
        let budget = out.budget().clone();
        if let Some(n) = event.msgpack_for(&budget, how) {
            n.put(out);
        }
    }

    fn lost(&mut self, notice: &Lost, out: &mut Out) {
        let params = [notice.params()];
        // A struct of two strings always encodes.
        let _ = rpcmux_msgpack_rpc::encode_notification(out, Lost::METHOD, &params);
    }

    fn finish(&mut self, out: &mut Out) {
        if let Some(e) = self.last_words.take() {
            encode_response(out, 0, Err(&e));
        }
    }
}

fn limits(shared: &Shared) -> Limits {
    Limits {
        max_message: shared.config.limits.max_frame,
        ..Limits::default()
    }
}

/// Not an `async fn`: its arguments would stay in every connection's future beside the
/// driver's (see [`driver::serve`]).
pub(crate) fn serve<S: Stream>(
    io: Rewind<S>,
    info: ConnInfo,
    shared: Arc<Shared>,
) -> impl std::future::Future<Output = ()> {
    let codec = MsgpackRpcCodec::new(limits(&shared));
    let verbs = shared.verbs.clone();
    let limits = &shared.config.limits;
    let (max_batch, max_frame) = (limits.max_batch, limits.max_frame);
    let cap = shared.reply_cap();
    driver::serve(io, info, shared, "msgpack-rpc", move |ctx| Msgpack {
        codec,
        verbs,
        ctx,
        cap,
        last_words: None,
        max_batch,
        max_frame,
    })
}

/// An `application/msgpack` HTTP body: one request (or notification). Returns the
/// reply body, or `None` for a notification. A body that is not one msgpack-rpc
/// request is answered `[1, 0, [code, message], nil]` (msgid 0: the real one is unknown).
pub(crate) async fn answer_http(
    body: bytes::Bytes,
    shared: &Shared,
    info: &ConnInfo,
) -> Option<Vec<u8>> {
    let size = body.len();
    let limits = limits(shared);
    let cap = shared.reply_cap();
    let parsed = offload::run(size, move || {
        rpcmux_msgpack_rpc::decode_message(&body, &limits)
    })
    .await;
    let (msgid, result) = match parsed {
        Ok(Message::Request {
            msgid,
            method,
            params,
        }) => {
            let ctx = shared.call_context(
                info,
                info.http_protocol("msgpack-rpc-http", "msgpack-rpc-h2"),
            );
            let r = shared
                .verbs
                .dispatch(&method, Input::Tree(Params::Positional(params)), ctx)
                .await;
            (msgid, r)
        }
        Ok(Message::Notification { method, params }) => {
            let ctx = shared.call_context(
                info,
                info.http_protocol("msgpack-rpc-http", "msgpack-rpc-h2"),
            );
            let _ = shared
                .verbs
                .dispatch(&method, Input::Tree(Params::Positional(params)), ctx)
                .await;
            return None;
        }
        Ok(Message::Invalid { msgid, error }) => (msgid.unwrap_or(0), Err(error)),
        Ok(Message::Response { .. }) => (
            0,
            Err(RpcError::invalid_request("a response is not a request")),
        ),
        Err(e) => (0, Err(e.to_rpc_error())),
    };
    let out = offload::run(size, move || {
        let mut out = BytesMut::new();
        put_reply(&mut out, msgid, result, &cap);
        out
    })
    .await;
    Some(out.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::budget::Budget;

    /// What `rpcmux bench --payload musicentry` (and `musicentry-typed`) sends: echo of
    /// the MusicEntry struct, read from the request file the bench's payload is checked
    /// against, and the same struct to the typed verb echoMusicEntry.
    struct Payload {
        name: String,
        method: String,
        params: rpcmux_value::Params,
    }

    impl Payload {
        fn music_entry() -> Payload {
            let req: rpcmux_value::Value =
                serde_json::from_slice(include_bytes!("../../benches/data/jsonrpc_echo_req.json"))
                    .unwrap();
            let Some(rpcmux_value::Value::Array(params)) = req.get("params").cloned() else {
                panic!("no params in jsonrpc_echo_req.json")
            };
            Payload {
                name: "musicentry".into(),
                method: "echo".into(),
                params: rpcmux_value::Params::Positional(params),
            }
        }

        fn music_entry_typed() -> Payload {
            Payload {
                name: "musicentry-typed".into(),
                method: "echoMusicEntry".into(),
                ..Payload::music_entry()
            }
        }
    }

    /// A session's framer over the demo verbs, with the server's observer (metrics on,
    /// access log off) when `observed`.
    fn demo_framer(observed: bool) -> Msgpack {
        let mut verbs = VerbTable::new();
        crate::demo::register(&mut verbs).unwrap();
        if observed {
            verbs.observer = Some(Arc::new(crate::verbs::Observer::new(
                Some(Arc::new(crate::observe::Metrics::new())),
                crate::observe::AccessLog {
                    level: crate::AccessLevel::Off,
                    slow: std::time::Duration::from_secs(1),
                },
            )));
        }
        Msgpack {
            codec: MsgpackRpcCodec::new(Limits::default()),
            verbs: Arc::new(verbs),
            ctx: CallContext::new("msgpack-rpc", Arc::new(crate::EventHub::default())),
            cap: ReplyCap {
                max_reply: 1 << 24,
                budget: Budget::new(1 << 30),
            },
            last_words: None,
            max_batch: 100,
            max_frame: 1 << 24,
        }
    }

    /// The framer's whole per-call work (framing, dispatch, encoding) without sockets:
    /// a loop for profiling, not a timed test (`cargo test --release --lib --
    /// --ignored framer_loop --nocapture`).
    #[test]
    #[ignore]
    fn framer_loop() {
        let only = std::env::var("FRAMER_LOOP").ok();
        for payload in [Payload::music_entry(), Payload::music_entry_typed()] {
            if only.as_ref().is_some_and(|o| *o != payload.name) {
                continue;
            }
            let mut framer = demo_framer(true);
            let rpcmux_value::Params::Positional(params) = &payload.params else {
                panic!()
            };
            let mut block = BytesMut::new();
            for id in 0..16 {
                rpcmux_msgpack_rpc::encode_request(&mut block, id, &payload.method, params)
                    .unwrap();
            }
            let mut calls = Calls::new(Budget::new(1 << 30));
            let mut out = Out::new(Budget::new(1 << 30));
            out.reserve(64 << 10);
            let rounds: usize = std::env::var("FRAMER_ROUNDS")
                .ok()
                .and_then(|r| r.parse().ok())
                .unwrap_or(100_000);
            let t = std::time::Instant::now();
            for _ in 0..rounds {
                let mut input = block.clone();
                framer.decode(&mut input, &mut out, &mut calls, 64).unwrap();
                while let Some((done, _)) = calls.take_ready() {
                    framer.reply(done, &mut out);
                }
                assert!(calls.is_empty());
                out.clear();
            }
            let per = t.elapsed().as_nanos() as f64 / (rounds * 16) as f64;
            println!("{}: {per:.0} ns per call", payload.name);
        }
    }

    /// A framer over `verbs`, on a session whose outbox is returned (events queued in
    /// it wait for the connection, as the driver would send them).
    fn session_framer(verbs: VerbTable) -> (Msgpack, crate::events::outbox::OutboxRx) {
        let (tx, rx) = crate::events::outbox::outbox(4, crate::conn::budget::Budget::new(1 << 20));
        let mut ctx = CallContext::new("msgpack-rpc", Arc::new(crate::EventHub::default()));
        ctx.session = Some(crate::events::Session::new(
            1,
            tx,
            tokio_util::sync::CancellationToken::new(),
            None,
        ));
        let framer = Msgpack {
            codec: MsgpackRpcCodec::new(Limits::default()),
            verbs: Arc::new(verbs),
            ctx,
            cap: ReplyCap {
                max_reply: 1 << 20,
                budget: Budget::new(1 << 30),
            },
            last_words: None,
            max_batch: 100,
            max_frame: 1 << 20,
        };
        (framer, rx)
    }

    /// The replies in `out`, by msgid: the result, or the error's code.
    fn replies(out: &mut BytesMut) -> std::collections::BTreeMap<u32, Result<Value, i64>> {
        let mut codec = MsgpackRpcCodec::new(Limits::default());
        let mut got = std::collections::BTreeMap::new();
        while let Some(m) = tokio_util::codec::Decoder::decode(&mut codec, out).unwrap() {
            let Message::Response {
                msgid,
                error,
                result,
            } = m
            else {
                panic!("{m:?}")
            };
            let r = match error {
                Value::Nil => Ok(result),
                e => Err(e.as_array().unwrap()[0].as_i64().unwrap()),
            };
            got.insert(msgid, r);
        }
        got
    }

    use rpcmux_value::Value;

    /// A sync typed verb's result is written into the output as the call is read
    /// (nothing queued), unless events wait for the connection: then it is queued
    /// behind them, as every reply is. A result whose `Serialize` panics becomes -32603,
    /// with nothing of it left in the output, and the calls behind it are answered.
    #[test]
    fn sync_typed_results_are_written_in_place_behind_waiting_events() {
        struct Explodes;
        impl serde::Serialize for Explodes {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                panic!("no")
            }
        }
        impl schemars::JsonSchema for Explodes {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                "Explodes".into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({})
            }
        }
        let mut verbs = VerbTable::new();
        verbs
            .verb("twice")
            .typed_sync(|(n,): (i64,), _| Ok::<_, RpcError>(n * 2))
            .unwrap();
        verbs
            .verb("explode")
            .typed_sync(|(): (), _| Ok::<_, RpcError>(Explodes))
            .unwrap();
        let (mut framer, mut events) = session_framer(verbs);
        let mut input = BytesMut::new();
        for (id, (method, params)) in [
            ("twice", vec![Value::from(21)]),
            ("explode", vec![]),
            ("twice", vec![Value::from(4)]),
        ]
        .into_iter()
        .enumerate()
        {
            rpcmux_msgpack_rpc::encode_request(&mut input, id as u32, method, &params).unwrap();
        }
        let mut calls = Calls::new(Budget::new(1 << 30));
        let mut out = Out::new(Budget::new(1 << 30));
        framer.decode(&mut input, &mut out, &mut calls, 64).unwrap();
        assert!(input.is_empty());
        assert!(calls.is_empty(), "answered in place, nothing queued");
        let got = replies(&mut out);
        assert_eq!(got[&0], Ok(Value::from(42)));
        assert_eq!(got[&1], Err(-32603));
        assert_eq!(got[&2], Ok(Value::from(8)));

        // An event waits: the reply is queued behind it.
        let Some(session) = &framer.ctx.session else {
            unreachable!()
        };
        session.link.outbox.offer(
            &Arc::new(crate::events::Event::new("e", Value::Nil)),
            crate::events::outbox::Delivery::default(),
            false,
        );
        rpcmux_msgpack_rpc::encode_request(&mut input, 7, "twice", &[Value::from(1)]).unwrap();
        framer.decode(&mut input, &mut out, &mut calls, 64).unwrap();
        assert!(out.is_empty(), "nothing written ahead of the event");
        assert_eq!(calls.len(), 1);
        assert!(events.try_recv().is_some());
        let (done, _) = calls.take_ready().unwrap();
        framer.reply(done, &mut out);
        assert_eq!(replies(&mut out)[&7], Ok(Value::from(2)));
    }

    /// Calls back to back in one read, to typed verbs (with parameters, without any,
    /// with a parameter of the wrong type, an unknown field) and dynamic ones: each is
    /// answered under its msgid and the session reads on (a typed call is read without
    /// framing it first; where its reader stopped is where the next message starts).
    #[test]
    fn pipelined_calls_to_typed_and_dynamic_verbs_are_each_answered() {
        use rpcmux_value::Value;
        let mut framer = demo_framer(false);
        let entry = match Payload::music_entry_typed().params {
            rpcmux_value::Params::Positional(p) => p,
            _ => unreachable!(),
        };
        let mut unknown_field = entry.clone();
        if let Value::Array(pair) = &mut unknown_field[0] {
            if let Value::Struct(m) = &mut pair[1] {
                m.insert("extra", Value::from(vec![Value::from(1)]));
            }
        }
        let calls: Vec<(&str, Vec<Value>)> = vec![
            ("Host.getVMList", vec![]),
            ("echoMusicEntry", entry.clone()),
            ("echoMusicEntry", vec![Value::from("x")]),
            ("echo", vec![Value::from(7)]),
            ("echoMusicEntry", unknown_field),
            ("ping", vec![]),
        ];
        let mut input = BytesMut::new();
        for (id, (method, params)) in calls.iter().enumerate() {
            rpcmux_msgpack_rpc::encode_request(&mut input, id as u32, method, params).unwrap();
        }
        let mut calls_running = Calls::new(Budget::new(1 << 30));
        let mut out = Out::new(Budget::new(1 << 30));
        framer
            .decode(&mut input, &mut out, &mut calls_running, 64)
            .unwrap();
        assert!(input.is_empty(), "every message was consumed");
        while let Some((done, _)) = calls_running.take_ready() {
            framer.reply(done, &mut out);
        }
        assert!(calls_running.is_empty());
        let answers = replies(&mut out);
        assert_eq!(answers.len(), 6, "{answers:?}");
        assert!(answers[&0].is_ok());
        assert_eq!(answers[&1].as_ref().unwrap(), &entry[0]);
        assert_eq!(answers[&2], Err(-32602));
        assert_eq!(answers[&3].as_ref().unwrap(), &Value::from(7));
        // An unknown field is ignored (serde's default), on the framed path.
        assert_eq!(answers[&4].as_ref().unwrap(), &entry[0]);
        assert_eq!(answers[&5].as_ref().unwrap(), &Value::Bool(true));
    }
}
