//! RPC and event delivery: a SEND to a request destination becomes a call on the verb
//! table; its reply, and each server event, become MESSAGE frames to this connection's
//! own subscriptions.

use super::{Fault, Stomp};
use crate::events::Event;
use crate::transport::jsonrpc;
use crate::transport::session::Calls;
use crate::transport::stomp::frames;
use crate::transport::stomp::subscriptions::dest_covers;
use bytes::{Bytes, BytesMut};
use rpcmux_jsonrpc::Incoming;
use rpcmux_stomp::Frame;
use tracing::Instrument;

/// The header VDSM's engine puts its flow (correlation) id in.
const FLOW_ID: &str = "ovirtCorrelationId";

/// A finished call: its reply body (none for notifications) and where it goes.
pub(crate) struct Done {
    pub(super) body: Option<Vec<u8>>,
    pub(super) reply_to: String,
}

impl Stomp {
    /// SEND: start the call its body asks for (true), or answer at once (false).
    pub(super) fn send(
        &mut self,
        f: &Frame,
        out: &mut BytesMut,
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
        let incoming = match rpcmux_jsonrpc::parse(&f.body) {
            Ok(incoming) => incoming,
            Err(e) => {
                let body = jsonrpc::error_body(&e);
                self.deliver_reply(&reply_to, body.into(), out);
                return Ok(false);
            }
        };
        let mut ctx = self.ctx.clone();
        ctx.flow_id = f.get(FLOW_ID).map(str::to_owned);
        let (verbs, parallel) = (
            self.shared.verbs.clone(),
            self.shared.config.limits.max_in_flight,
        );
        let span = ctx.flow_id.as_deref().map(|flow_id| {
            let method = match &incoming {
                Incoming::Single(Ok(r)) => r.method.as_str(),
                Incoming::Single(Err(_)) => "",
                Incoming::Batch(_) => "(batch)",
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
        let call = async move {
            let mut body = Vec::with_capacity(256);
            let some = jsonrpc::answer(verbs, ctx, incoming, parallel, &mut body).await;
            Done {
                body: some.then_some(body),
                reply_to,
            }
        };
        match span {
            Some(span) => calls.push(Box::pin(call.instrument(span))),
            None => calls.push(Box::pin(call)),
        }
        self.in_flight += 1;
        Ok(true)
    }

    /// Write `body` as a MESSAGE to every subscription of this connection that covers
    /// `dest`. VDSM does the same (it answers only subscribers of the reply destination)
    /// and drops a reply no subscription covers; so does this server, with a log line.
    pub(super) fn deliver(&mut self, dest: &str, body: Bytes, out: &mut BytesMut) -> usize {
        let mut sent = 0;
        let Stomp {
            subs,
            next_message,
            conn_id,
            ..
        } = self;
        for sub in subs.covering(dest) {
            *next_message += 1;
            let id = format!("{conn_id}-{next_message}");
            frames::put(&frames::message(dest, sub, &id, body.clone()), out);
            sent += 1;
        }
        if sent > 0 {
            if let Some(b) = &mut self.beats {
                b.wrote(std::time::Instant::now());
            }
        }
        sent
    }

    pub(super) fn deliver_reply(&mut self, dest: &str, body: Bytes, out: &mut BytesMut) {
        if self.deliver(dest, body, out) == 0 {
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

/// An event as VDSM sends it: a JSON-RPC notification named after the event.
pub(super) fn event_body(event: &Event) -> Vec<u8> {
    let mut body = Vec::with_capacity(128);
    rpcmux_jsonrpc::write_notification(&mut body, &event.name, &event.params);
    body
}
