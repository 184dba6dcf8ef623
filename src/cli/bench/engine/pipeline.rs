//! The load loop for stream protocols (msgpack-rpc, JSON-RPC over TCP, STOMP): one task
//! per connection keeps D calls in flight, against an RPC server or a bare byte echo.
//!
//! Both targets get the very same loop and the same per-call work, so the gap between
//! their figures is the servers' alone: one call's bytes are encoded once (with a
//! placeholder id), and each call copies them and writes its own id in place; every
//! answer is decoded with the protocol's decoder into a `Value`, matched to its call
//! by id, and its value checked against the expected one. From an RPC server the answer
//! is the reply (read by the client's decoder, as `rpcmux call` reads it); from an echo
//! server it is the request itself (read as a server would read it). With
//! `--check-bytes`, an answer whose bytes equal a right answer's (its id aside) is taken
//! as right undecoded (see `known`).
//!
//! Ids are fixed-width (10 decimal digits in JSON, a 4-byte uint in msgpack), so every
//! request has the template's length and the id slot never moves.

use super::config::Progress;
use super::judge::{describe_reply, judge};
use super::known::{Check, IdForm, KnownAnswer};
use super::stats::{Outcome, Recorder};
use bytes::{Buf, Bytes, BytesMut};
use rpcmux::client::raw::{Decode, Incoming};
use rpcmux::client::{ClientProto, Io, Reply};
use rpcmux_jsonrpc::{Split, Splitter};
use rpcmux_msgpack_rpc::{Message, MsgpackRpcCodec};
use rpcmux_stomp::{Item, StompCodec};
use rpcmux_value::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;
use tokio_util::codec::Decoder;

/// The id the template is encoded with, found again in its bytes: 0xDEADBEEF, which
/// has 10 decimal digits and takes a 4-byte uint in msgpack.
pub(crate) const PLACEHOLDER_ID: u32 = 0xDEAD_BEEF;
/// Ids run from here, so each has 10 decimal digits like the placeholder.
const FIRST_ID: u32 = 1_000_000_000;
/// How many ids follow `FIRST_ID` (all below 4e9: 10 digits, and a u32).
const ID_SPAN: u32 = 3_000_000_000;

/// What every connection sends and expects, and when.
pub(crate) struct Plan {
    /// One call's bytes, with [`PLACEHOLDER_ID`] as its id.
    template: Bytes,
    id_at: usize,
    id_form: IdForm,
    /// `--check-bytes`: answers equal to a learnt right one are not decoded (`known`).
    pub check_bytes: bool,
    /// What each result (or echoed first param) must be; `None`: anything.
    pub expect: Option<Value>,
    pub pipeline: usize,
    pub measure_from: Instant,
    pub end: Instant,
    /// Longest wait for the next bytes while calls are in flight.
    pub timeout: Duration,
}

impl Plan {
    /// `template`: one call encoded with [`PLACEHOLDER_ID`] as its id.
    pub(crate) fn new(
        proto: ClientProto,
        template: Bytes,
        expect: Option<Value>,
        pipeline: usize,
        measure_from: Instant,
        end: Instant,
        timeout: Duration,
    ) -> Result<Plan, String> {
        let template = if ClientProto::WEBSOCKET.contains(&proto) {
            zero_mask(&template).ok_or("not a WebSocket frame")?
        } else {
            template
        };
        let id_form = match proto {
            ClientProto::Msgpack => IdForm::U32Be,
            _ => IdForm::Decimal10,
        };
        let Some(id_at) = id_form.find_once(&template, PLACEHOLDER_ID) else {
            return Err(format!(
                "the {proto} request does not hold its id exactly once (the payload contains {PLACEHOLDER_ID}?)"
            ));
        };
        Ok(Plan {
            id_at,
            id_form,
            check_bytes: false,
            template,
            expect,
            pipeline,
            measure_from,
            end,
            timeout,
        })
    }

    /// Append one request with `id` to `out`.
    fn write_request(&self, out: &mut Vec<u8>, id: u32) {
        let start = out.len();
        out.extend_from_slice(&self.template);
        self.id_form.write(&mut out[start + self.id_at..], id);
    }

    /// The id of slot `slot`'s call number `round`.
    fn id(&self, slot: usize, round: u64) -> u32 {
        let k = (slot as u64 + self.pipeline as u64 * round) % u64::from(ID_SPAN);
        FIRST_ID + k as u32
    }

    /// The slot a call id belongs to (`None`: not one of ours).
    fn slot_of(&self, id: u32) -> Option<usize> {
        let k = id.checked_sub(FIRST_ID).filter(|&k| k < ID_SPAN)?;
        Some(k as usize % self.pipeline)
    }

    /// Rounds per slot before ids would wrap: slot + D × round stays below `ID_SPAN`.
    fn rounds(&self) -> u64 {
        u64::from(ID_SPAN) / self.pipeline as u64
    }
}

/// What answers the calls, read off the stream.
pub(crate) enum Answers {
    /// An RPC server's replies, read by the client's decoder for the protocol.
    Replies(Box<dyn Decode>),
    /// A bare echo server: each request comes back as sent, and is read as a request.
    Echoes(Echoes),
}

impl Answers {
    /// The next answer in `buf`: the call id and the reply (from an echo: the first
    /// param). `Ok(None)`: more bytes are needed. `Err`: the stream is unusable.
    fn next(&mut self, buf: &mut BytesMut) -> Result<Option<(u32, Reply)>, String> {
        match self {
            Answers::Replies(decode) => loop {
                match decode.decode(buf).map_err(|e| e.to_string())? {
                    None => return Ok(None),
                    Some(Incoming::Reply { id, reply }) => return Ok(Some((id, reply))),
                    Some(Incoming::Other | Incoming::Event(_)) => continue,
                }
            },
            Answers::Echoes(echoes) => echoes.next(buf),
        }
    }
}

/// Reads echoed requests with the framing a client's reply decoder uses for the same
/// protocol (msgpack codec, JSON splitter, STOMP codec), kept for the connection's life
/// as the client keeps its own: the echo side of the loop does the same work per call.
pub(crate) enum Echoes {
    Msgpack(MsgpackRpcCodec),
    Json(Splitter),
    Stomp(StompCodec),
}

impl Echoes {
    /// `None` for the HTTP protocols, which are not echoed. `max` caps a message, as
    /// the client's `max_reply` caps a reply.
    pub(crate) fn new(proto: ClientProto, max: usize) -> Option<Echoes> {
        Some(match proto {
            ClientProto::Msgpack => {
                Echoes::Msgpack(MsgpackRpcCodec::new(rpcmux_msgpack_rpc::Limits {
                    max_message: max,
                    ..Default::default()
                }))
            }
            ClientProto::JsonrpcTcp => Echoes::Json(Splitter::new(max)),
            ClientProto::Stomp => Echoes::Stomp(StompCodec::new(rpcmux_stomp::Limits {
                max_frame: max,
                ..Default::default()
            })),
            ClientProto::Xmlrpc
            | ClientProto::Jsonrpc
            | ClientProto::JsonrpcWs
            | ClientProto::StompWs => return None,
        })
    }

    /// The next echoed request: its id and first param.
    fn next(&mut self, buf: &mut BytesMut) -> Result<Option<(u32, Reply)>, String> {
        const BAD: &str = "the echo did not decode to the request";
        match self {
            Echoes::Msgpack(codec) => match codec.decode(buf) {
                Ok(None) => Ok(None),
                Ok(Some(Message::Request { msgid, params, .. })) => {
                    let first = params.into_iter().next().ok_or(BAD)?;
                    Ok(Some((msgid, Ok(first))))
                }
                Ok(Some(_)) | Err(_) => Err(BAD.into()),
            },
            Echoes::Json(splitter) => match splitter.next(buf) {
                Split::Value { start, end } => {
                    let frame = buf.split_to(end);
                    json_request(&frame[start..]).map(Some).ok_or(BAD.into())
                }
                Split::Incomplete | Split::Garbage { skip: 0 } => Ok(None),
                Split::Garbage { .. } | Split::TooLarge => Err(BAD.into()),
            },
            Echoes::Stomp(codec) => loop {
                match codec.decode(buf) {
                    Ok(None) => return Ok(None),
                    Ok(Some(Item::Heartbeat)) => continue,
                    Ok(Some(Item::Frame(f))) => {
                        return json_request(&f.body).map(Some).ok_or(BAD.into())
                    }
                    Err(_) => return Err(BAD.into()),
                }
            },
        }
    }
}

/// One connection with `plan.pipeline` calls in flight until `plan.end`, then until the
/// last of them is answered. `buf` holds bytes already read past a handshake.
pub(crate) async fn connection<S: Io>(
    mut io: S,
    mut buf: BytesMut,
    mut answers: Answers,
    plan: Arc<Plan>,
    progress: Arc<Progress>,
) -> Recorder {
    let d = plan.pipeline;
    let mut rec = Recorder::new();
    // Per slot: the round it is on, when that call was sent, whether one is in flight.
    let mut round = vec![0u64; d];
    let mut sent_at = vec![Instant::now(); d];
    let mut busy = vec![true; d];
    let mut in_flight = d;
    let mut out = Vec::with_capacity(plan.template.len() * d);
    for slot in 0..d {
        plan.write_request(&mut out, plan.id(slot, 0));
    }
    let lost = |rec: &mut Recorder, n: usize, why: String| {
        for _ in 0..n.max(1) {
            rec.record(Duration::ZERO, Outcome::Transport, || why.clone());
        }
    };
    buf.reserve(64 * 1024);
    // `--check-bytes`: a right answer, once decoded (not the connection's first, below);
    // later ones are compared with it (see `known`).
    let mut known: Option<KnownAnswer> = None;
    // Decoded answers it may still be learnt from (when none comes right, the copies
    // stop).
    let mut learn_left = if plan.check_bytes { 16 } else { 0 };
    // Whether the decoder has seen part of the answer at the front of `buf`.
    let mut partial = false;
    let mut decoded = 0u32;
    loop {
        if !out.is_empty() {
            if let Err(e) = io.write_all(&out).await {
                lost(&mut rec, in_flight, format!("write failed: {e}"));
                break;
            }
            out.clear();
        }
        if in_flight == 0 {
            break;
        }
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(64 * 1024);
        }
        match tokio::time::timeout(plan.timeout, io.read_buf(&mut buf)).await {
            Ok(Ok(0)) => {
                lost(&mut rec, in_flight, "closed by the server".into());
                break;
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                lost(&mut rec, in_flight, format!("read failed: {e}"));
                break;
            }
            Err(_) => {
                let why = format!("no reply within {:?}", plan.timeout);
                lost(&mut rec, in_flight, why);
                break;
            }
        }
        let now = Instant::now();
        loop {
            // `None`: the known right answer, taken by its bytes (`--check-bytes`).
            let check = known.as_ref().filter(|_| !partial).map(|k| k.check(&buf));
            let (id, reply) = match check {
                Some(Check::Same { id, len }) => {
                    buf.advance(len);
                    (id, None)
                }
                Some(Check::Prefix) => break,
                Some(Check::Differs) | None => {
                    // Not learnt from a connection's first answer: a decoder may leave
                    // a separator behind an answer (JSON's newline) and take it with the
                    // next one, so the first answer's bytes are not every later one's.
                    let learning = known.is_none() && learn_left > 0 && decoded > 0;
                    let before = learning.then(|| buf.clone());
                    match answers.next(&mut buf) {
                        Ok(Some((id, reply))) => {
                            partial = false;
                            decoded += 1;
                            if let Some(before) = before {
                                learn_left -= 1;
                                if judge(&reply, plan.expect.as_ref()) == Outcome::Ok {
                                    let frame = &before[..before.len() - buf.len()];
                                    known = KnownAnswer::learn(frame, id, plan.id_form);
                                }
                            }
                            (id, Some(reply))
                        }
                        Ok(None) => {
                            // The decoder may keep what it has seen of this answer:
                            // it reads the rest too.
                            partial = !buf.is_empty();
                            break;
                        }
                        Err(why) => {
                            lost(&mut rec, in_flight, why);
                            return rec;
                        }
                    }
                }
            };
            let slot = match plan.slot_of(id) {
                Some(s) if busy[s] && plan.id(s, round[s]) == id => s,
                _ => {
                    lost(
                        &mut rec,
                        in_flight,
                        format!("an answer to id {id}, not in flight"),
                    );
                    return rec;
                }
            };
            let outcome = match &reply {
                Some(reply) => judge(reply, plan.expect.as_ref()),
                None => Outcome::Ok,
            };
            progress.count(outcome);
            if sent_at[slot] >= plan.measure_from {
                rec.record(now - sent_at[slot], outcome, || {
                    reply.as_ref().map(describe_reply).unwrap_or_default()
                });
            }
            if now < plan.end {
                round[slot] = (round[slot] + 1) % plan.rounds();
                plan.write_request(&mut out, plan.id(slot, round[slot]));
                sent_at[slot] = now;
            } else {
                busy[slot] = false;
                in_flight -= 1;
            }
        }
    }
    rec
}

/// A JSON-RPC request's id and first param.
/// A masked frame re-masked with the all-zero key, whose payload bytes read as sent: every
/// request is written from one template with its id patched in, and the server still
/// unmasks each frame (XOR with zeros costs what any key does).
fn zero_mask(frame: &[u8]) -> Option<Bytes> {
    use rpcmux_websocket as frames;
    let h = frames::parse_header(frame).ok()??;
    let mut payload = frame.get(h.header_len..)?.to_vec();
    frames::unmask(&mut payload, h.mask?);
    let mut out = BytesMut::with_capacity(frame.len());
    frames::put_masked(&mut out, h.opcode, &payload, [0; 4]);
    Some(out.freeze())
}

fn json_request(bytes: &[u8]) -> Option<(u32, Reply)> {
    let rpcmux_jsonrpc::Incoming::Single(Ok(req)) = rpcmux_jsonrpc::parse(bytes).ok()? else {
        return None;
    };
    let id = match req.id? {
        rpcmux_jsonrpc::Id::Number(n) => u32::try_from(n.as_u64()?).ok()?,
        _ => return None,
    };
    match req.params {
        rpcmux_value::Params::Positional(p) => Some((id, Ok(p.into_iter().next()?))),
        rpcmux_value::Params::Named(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(proto: ClientProto, template: &[u8], pipeline: usize) -> Result<Plan, String> {
        let now = Instant::now();
        Plan::new(
            proto,
            Bytes::copy_from_slice(template),
            None,
            pipeline,
            now,
            now,
            Duration::from_secs(1),
        )
    }

    #[test]
    fn ids_are_written_in_place_and_map_back_to_their_slot() {
        let json = plan(
            ClientProto::JsonrpcTcp,
            br#"{"id":3735928559,"method":"x"}"#,
            8,
        )
        .unwrap();
        let mut out = Vec::new();
        json.write_request(&mut out, json.id(3, 2));
        assert_eq!(out, br#"{"id":1000000019,"method":"x"}"#);
        assert_eq!(json.slot_of(json.id(3, 2)), Some(3));
        assert_eq!(json.slot_of(7), None);

        let mp = plan(
            ClientProto::Msgpack,
            &[0x94, 0, 0xce, 0xde, 0xad, 0xbe, 0xef, 0x90],
            4,
        )
        .unwrap();
        let mut out = Vec::new();
        mp.write_request(&mut out, 0x0102_0304);
        assert_eq!(out, [0x94, 0, 0xce, 1, 2, 3, 4, 0x90]);
        // Rounds wrap before ids leave the 10-digit range.
        let last = mp.id(3, mp.rounds() - 1);
        assert!((FIRST_ID..FIRST_ID + ID_SPAN).contains(&last));
        assert_eq!(mp.slot_of(last), Some(3));
    }

    #[test]
    fn echoes_are_read_as_requests_across_reads() {
        use rpcmux::client::Client;
        let params = rpcmux_value::Params::Positional(vec![Value::from("hi")]);
        for proto in [
            ClientProto::Msgpack,
            ClientProto::JsonrpcTcp,
            ClientProto::Stomp,
        ] {
            let mut echoes = Echoes::new(proto, 1 << 20).unwrap();
            let mut wire = Vec::new();
            for id in [FIRST_ID, FIRST_ID + 1] {
                wire.extend_from_slice(&Client::request_bytes(proto, id, "echo", &params).unwrap());
            }
            // The first request arrives in two pieces, the second whole.
            let cut = wire.len() / 4;
            let mut buf = BytesMut::from(&wire[..cut]);
            assert_eq!(echoes.next(&mut buf).unwrap(), None, "{proto}");
            buf.extend_from_slice(&wire[cut..]);
            for id in [FIRST_ID, FIRST_ID + 1] {
                let got = echoes.next(&mut buf).unwrap();
                assert_eq!(got, Some((id, Ok(Value::from("hi")))), "{proto}");
            }
            assert_eq!(echoes.next(&mut buf).unwrap(), None, "{proto}");
            assert!(
                echoes
                    .next(&mut BytesMut::from(&b"\x00garbage\n"[..]))
                    .is_err(),
                "{proto}"
            );
        }
        assert!(Echoes::new(ClientProto::Xmlrpc, 1).is_none());
    }

    #[test]
    fn a_template_must_hold_its_id_exactly_once() {
        assert!(plan(ClientProto::JsonrpcTcp, br#"{"id":1}"#, 1).is_err());
        assert!(plan(
            ClientProto::JsonrpcTcp,
            br#"{"id":3735928559,"params":[3735928559]}"#,
            1
        )
        .is_err());
    }
}
