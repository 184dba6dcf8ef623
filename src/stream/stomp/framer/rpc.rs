//! RPC and event delivery: a SEND to a request destination becomes a call on the verb
//! table; its reply, and each server event, become MESSAGE frames to this connection's
//! own subscriptions.

use super::Deliver;
use crate::conn::out::Out;
use crate::offload;
use crate::rpc::jsonrpc::{self};
use crate::stream::driver::Calls;
use crate::stream::stomp::framer::{Done, Fault, Stomp};
use crate::stream::stomp::frames;
use crate::stream::stomp::subscriptions::dest_covers;
use bytes::Bytes;
use rpcmux_jsonrpc::Incoming;
use rpcmux_stomp::Frame;
use tracing::Instrument;

/// The header VDSM's engine puts its flow (correlation) id in.
const FLOW_ID: &str = "ovirtCorrelationId";

impl Stomp {
    /// SEND: start the call its body asks for (true), or answer at once (false).
    pub(super) fn send(
        &mut self,
        f: &Frame,
        out: &mut Out,
        calls: &mut Calls<Done>,
    ) -> Result<bool, Fault> {
        let cfg = &self.shared.config.stomp;
        let dest = f
            .get("destination")
            .ok_or_else(|| Fault::new("SEND needs a destination header"))?;
        if !cfg
            .request_destinations
            .iter()
            .any(|q| dest_covers(q, dest))
        {
            // VDSM answers "Subscription not available"; this server is not a broker,
            // so a message nobody will read is refused rather than silently lost.
            return Err(Fault::new(format!(
                "no such destination {dest:?}: requests go to {}",
                cfg.request_destinations.join(", ")
            )));
        }
        let reply_to = f
            .get("reply-to")
            .unwrap_or(&cfg.response_destination)
            .to_owned();
        let bounds = self.shared.json_bounds();
        let size = f.body.len();
        // A big body is parsed inside the call, off the async workers (see `heavy`).
        let incoming = if size >= offload::OFFLOAD_AT {
            None
        } else {
            match jsonrpc::parse_now(&f.body, &bounds, &self.shared.verbs) {
                Ok(incoming) => Some(jsonrpc::only_v2(incoming)),
                Err(e) => {
                    let body = jsonrpc::error_body(&e);
                    self.deliver_reply(&reply_to, body.into(), out);
                    return Ok(false);
                }
            }
        };
        let mut ctx = self.ctx.clone();
        ctx.flow_id = f.get(FLOW_ID).map(str::to_owned);
        let verbs = self.shared.verbs.clone();
        let span = ctx.flow_id.as_deref().map(|flow_id| {
            let method = match &incoming {
                Some(Incoming::Single(Ok(r))) => r.method.as_str(),
                Some(Incoming::Single(Err(_))) | None => "",
                Some(Incoming::Batch(_)) => "(batch)",
            };
            tracing::info!(
                conn = self.conn_id,
                flow_id,
                method,
                destination = dest,
                "STOMP call"
            );
            tracing::info_span!("stomp_call", conn = self.conn_id, flow_id)
        });
        let raw = incoming.is_none().then(|| f.body.clone());
        let call = async move {
            let incoming = match (incoming, raw) {
                (Some(incoming), _) => Ok(incoming),
                (None, Some(raw)) => jsonrpc::parse(raw, &bounds, &verbs)
                    .await
                    .map(jsonrpc::only_v2),
                (None, None) => unreachable!("a body either parsed or kept"),
            };
            let mut body = jsonrpc::reply_buffer(size);
            let some = match incoming {
                Ok(incoming) => {
                    jsonrpc::answer(verbs, ctx, incoming, &bounds, size, &mut body).await
                }
                Err(e) => {
                    body = jsonrpc::error_body(&e);
                    true
                }
            };
            Done::Reply {
                body: some.then_some(body),
                reply_to,
            }
        };
        match span {
            Some(span) => calls.start(size, call.instrument(span)),
            None => calls.start(size, call),
        }
        self.in_flight += 1;
        Ok(true)
    }

    /// Write `body` as a MESSAGE to every subscription of this connection that covers
    /// `dest` (STOMP 1.2: a message goes to each matching subscription); false if none
    /// does. VDSM answers only subscribers of the reply destination and drops a reply no
    /// subscription covers; so does this server, with a log line. The body is written
    /// once however many subscriptions get it: each MESSAGE is its own head (its
    /// `subscription` and `message-id`) in front of the same bytes, so 256 overlapping
    /// SUBSCRIBEs cost 256 heads, not 256 copies of an 8 MiB reply. `shared`: the body
    /// is an event's encoding other connections send too.
    ///
    /// `to`: an event goes to every covering subscription (each is a listener); a reply
    /// answers one request, so it goes to one subscription: the most specific that
    /// covers `dest` (an exact destination before a parent, whatever order they were
    /// made in: stompjs subscribes to its own `reply-to` beside a parent), the first made
    /// among those on that destination. VDSM's client keeps its response queue and an
    /// event subscription on one destination (`jms.queue.events` in its `stomp_test`):
    /// VDSM's broker sends a reply to both, and its client, having completed the call
    /// with the first copy, raises on the second (`JsonRpcClient` pops the call).
    pub(super) fn deliver(
        &mut self,
        dest: &str,
        body: &Bytes,
        shared: bool,
        event_id: Option<&str>,
        to: Deliver,
        out: &mut Out,
    ) -> bool {
        let Stomp {
            subs,
            next_message,
            conn_id,
            ..
        } = self;
        let mut any = false;
        let mut put = |sub: &str| {
            *next_message += 1;
            let id = format!("{conn_id}-{next_message}");
            frames::put_message(dest, sub, &id, body, shared, event_id, out);
            any = true;
        };
        match to {
            Deliver::Every => subs.covering(dest).for_each(&mut put),
            Deliver::Reply => subs.reply_target(dest).into_iter().for_each(&mut put),
        }
        if any {
            if let Some(b) = &mut self.beats {
                b.wrote(std::time::Instant::now());
            }
        }
        any
    }

    pub(super) fn deliver_reply(&mut self, dest: &str, body: Bytes, out: &mut Out) {
        if !self.deliver(dest, &body, false, None, Deliver::Reply, out) {
            if self.warned_unrouted {
                tracing::debug!(
                    conn = self.conn_id,
                    destination = dest,
                    "reply dropped: no subscription covers its destination"
                );
            } else {
                self.warned_unrouted = true;
                tracing::warn!(
                    conn = self.conn_id,
                    destination = dest,
                    "reply dropped: no subscription on this connection covers its destination (subscribe to it before sending; further drops logged at debug)"
                );
            }
        }
    }
}
