//! The STOMP 1.2 session of one connection, as a [`Framer`] for the stream driver.
//!
//! Frames are decoded by [`rpcmux_stomp::StompCodec`]; this file holds the session rules:
//! CONNECT first, then SUBSCRIBE / UNSUBSCRIBE / SEND / ACK / NACK / DISCONNECT, a
//! RECEIPT for every frame that asks, and for every protocol fault an ERROR frame
//! followed by closing the connection (the spec's rule; STOMP cannot resynchronise).
//! Calls run concurrently through the driver; their replies, and server events, are
//! delivered as MESSAGE frames to this connection's own subscriptions only.

mod login;
mod rpc;

/// Which covering subscriptions a message goes to (see `Stomp::deliver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deliver {
    /// Every one: an event.
    Every,
    /// One: a reply, to the most specific covering subscription, the first made among
    /// those on that destination (`Subscriptions::reply_target`).
    Reply,
}

use crate::conn::out::Out;
use crate::events::outbox::Delivery;
use crate::events::{Event, Lost};
use crate::shared::Shared;
use crate::stream::driver::{Calls, Close, Framer, MAX_OUT};
use crate::stream::stomp::frames;
use crate::stream::stomp::heartbeat::{self, Beats, Due};
use crate::stream::stomp::subscriptions::{Refused, Subscriptions};
use crate::verbs::CallContext;
use bytes::BytesMut;
use rpcmux_auth::{Failure, Principal};
use rpcmux_stomp::{Command, Frame, Item, StompCodec};
use rpcmux_value::RpcError;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::codec::Decoder;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but CONNECT / STOMP is acceptable yet.
    AwaitConnect,
    /// CONNECT's `login`/`passcode` are being verified: nothing more is read until
    /// CONNECTED (or ERROR) is sent.
    Authenticating,
    Connected,
    /// DISCONNECT seen: calls in flight finish, then the receipt (if asked) goes out.
    Disconnecting,
    /// An ERROR was sent; nothing more is read.
    Failed,
}

/// One connection's STOMP session.
pub(crate) struct Stomp {
    codec: StompCodec,
    state: State,
    subs: Subscriptions,
    beats: Option<Beats>,
    shared: Arc<Shared>,
    /// The context every call on this connection starts from (its `session` set).
    ctx: CallContext,
    conn_id: u64,
    in_flight: usize,
    /// The RECEIPT owed for DISCONNECT, sent once the last call has answered.
    disconnect_receipt: Option<String>,
    /// The event-hub subscription, held while some subscription covers the event destination.
    hub_sub: Option<u64>,
    next_message: u64,
    /// Unroutable replies are logged once per connection at warn, then at debug.
    warned_unrouted: bool,
    /// The heart-beats CONNECT asked for, kept while its credentials are verified.
    connecting: (u64, u64),
    /// An ERROR went out after the last call was started (a refused login): the next
    /// decode closes.
    close_due: Option<String>,
}

/// What the driver hands back: a finished call, or CONNECT's credentials verified.
pub(crate) enum Done {
    /// A call's reply body (none for notifications) and where it goes.
    Reply {
        body: Option<Vec<u8>>,
        reply_to: String,
    },
    /// The principal CONNECT's `login`/`passcode` proved, or why not.
    Login(Result<Principal, Failure>),
}

/// An ERROR for a protocol fault, then the connection closes.
struct Fault {
    message: String,
    /// Extra headers, e.g. `version` when refusing a protocol version.
    extra: Option<(&'static str, &'static str)>,
}

impl Fault {
    fn new(message: impl Into<String>) -> Fault {
        Fault {
            message: message.into(),
            extra: None,
        }
    }

    /// A refusal that has a JSON-RPC code elsewhere, told in a `code` header so a
    /// client need not read it from the message (`SUBSCRIBE` with a `since`).
    fn coded(message: impl Into<String>, code: i64) -> Fault {
        let code = match code {
            crate::codes::ERR_SINCE_TOO_OLD => "-32007",
            crate::codes::ERR_TOO_MANY_SUBSCRIPTIONS => "-32002",
            _ => "-32602",
        };
        Fault {
            message: message.into(),
            extra: Some(("code", code)),
        }
    }
}

impl Stomp {
    pub(crate) fn new(shared: Arc<Shared>, ctx: CallContext, conn_id: u64) -> Stomp {
        let limits = rpcmux_stomp::Limits {
            max_frame: shared.config.limits.max_frame,
            ..Default::default()
        };
        Stomp {
            codec: StompCodec::new(limits),
            state: State::AwaitConnect,
            subs: Subscriptions::default(),
            beats: None,
            shared,
            ctx,
            conn_id,
            in_flight: 0,
            disconnect_receipt: None,
            hub_sub: None,
            next_message: 0,
            warned_unrouted: false,
            connecting: (0, 0),
            close_due: None,
        }
    }

    /// Append a frame; any frame also serves as a heart-beat.
    fn emit(&mut self, frame: &Frame, out: &mut Out) {
        frames::put(frame, out);
        if let Some(b) = &mut self.beats {
            b.wrote(std::time::Instant::now());
        }
    }

    /// Send ERROR for `fault` (echoing `receipt`), and close.
    fn fail(&mut self, fault: Fault, receipt: Option<&str>, out: &mut Out) -> Close {
        let mut f = frames::error(&fault.message, receipt);
        if let Some((name, value)) = fault.extra {
            f.push_header(name, value);
        }
        self.emit(&f, out);
        self.state = State::Failed;
        Close::new(format!("STOMP error sent: {}", fault.message))
    }

    /// Handle one frame; true if it started a call (uses one unit of room).
    fn frame(&mut self, f: Frame, out: &mut Out, calls: &mut Calls<Done>) -> Result<bool, Close> {
        let result = match (self.state, f.command) {
            (State::AwaitConnect, Command::Connect | Command::Stomp) => {
                self.connect(&f, out, calls)
            }
            (State::AwaitConnect, c) => Err(Fault::new(format!(
                "expected CONNECT or STOMP as the first frame, got {c}"
            ))),
            (_, Command::Connect | Command::Stomp) => Err(Fault::new("already connected")),
            (_, Command::Send) => self.send(&f, out, calls),
            (_, Command::Subscribe) => self.subscribe(&f),
            (_, Command::Unsubscribe) => self.unsubscribe(&f),
            // Every MESSAGE is delivered once and never redelivered (auto ack), so
            // acknowledgements carry no information: accepted and ignored.
            (_, Command::Ack | Command::Nack) => Ok(false),
            (_, Command::Begin | Command::Commit | Command::Abort) => Err(Fault::new(format!(
                "{} refused: transactions are not supported",
                f.command
            ))),
            (_, Command::Disconnect) => return Err(self.disconnect(&f, out)),
            (_, c) => Err(Fault::new(format!("{c} is a server frame"))),
        };
        let receipt = f.get("receipt");
        match result {
            Err(fault) => Err(self.fail(fault, receipt, out)),
            Ok(started) => {
                // CONNECT / STOMP may not ask for a receipt (the spec allows it on "any
                // client frame other than CONNECT"); CONNECTED answers them.
                let connect = matches!(f.command, Command::Connect | Command::Stomp);
                if let (Some(r), false) = (receipt, connect) {
                    self.emit(&frames::receipt(r), out);
                }
                Ok(started)
            }
        }
    }

    fn connect(
        &mut self,
        f: &Frame,
        out: &mut Out,
        calls: &mut Calls<Done>,
    ) -> Result<bool, Fault> {
        // No accept-version means a STOMP 1.0 client.
        let versions = f.get("accept-version").unwrap_or("1.0");
        if !versions.split(',').any(|v| v.trim() == "1.2") {
            return Err(Fault {
                message: format!("unsupported STOMP version {versions:?}: only 1.2 is spoken"),
                extra: Some(("version", "1.2")),
            });
        }
        let client = match f.get("heart-beat") {
            None => (0, 0),
            Some(v) => rpcmux_stomp::parse_heartbeat(v).map_err(|e| Fault::new(e.to_string()))?,
        };
        self.connecting = client;
        if let Some(caller) = self.ctx.caller.clone() {
            match login::credentials(f) {
                Some(credentials) => {
                    // Verified off the async workers; CONNECTED (or ERROR) follows.
                    let verbs = self.shared.verbs.clone();
                    let source = self.ctx.source_ip();
                    calls.start(0, async move {
                        Done::Login(verbs.login(caller.auth(), &credentials, source).await)
                    });
                    self.in_flight += 1;
                    self.state = State::Authenticating;
                    return Ok(true);
                }
                None if caller.principal().is_none() && !caller.auth().allows_anonymous() => {
                    return Err(Fault::new(
                        "authentication required: CONNECT with login and passcode",
                    ));
                }
                None => {}
            }
        }
        self.connected(out);
        Ok(false)
    }

    /// Send CONNECTED, with the heart-beats CONNECT asked for.
    fn connected(&mut self, out: &mut Out) {
        let hb = heartbeat::offer(self.connecting);
        self.beats = (hb != (0, 0)).then(|| Beats::new(hb));
        self.state = State::Connected;
        self.emit(&frames::connected(self.conn_id, hb), out);
        tracing::debug!(conn = self.conn_id, heartbeat = ?hb, "STOMP session connected");
    }

    fn subscribe(&mut self, f: &Frame) -> Result<bool, Fault> {
        let (Some(id), Some(dest)) = (f.get("id"), f.get("destination")) else {
            return Err(Fault::new(
                "SUBSCRIBE needs both an id and a destination header",
            ));
        };
        // Events are what the `subscribe` verb gives on every other protocol: a
        // subscription that covers the event destination needs its permission.
        let events = &self.shared.config.stomp.event_destination;
        let covers_events = crate::stream::stomp::subscriptions::dest_covers(dest, events);
        if covers_events {
            if let Some(refused) = crate::verbs::refusal(&self.ctx, "subscribe", None) {
                return Err(Fault::new(refused.message));
            }
        }
        // `since`: resume after an `event-id` received before ("0": all retained).
        let since = match f.get("since") {
            Some(s) if covers_events => Some(
                s.parse::<crate::events::Since>()
                    .map_err(|e| Fault::coded(format!("since: {e}"), -32602))?,
            ),
            _ => None,
        };
        match self.subs.add(id, dest) {
            Ok(()) => {}
            Err(Refused::DuplicateId) => {
                return Err(Fault::new(format!("subscription id {id:?} already in use")))
            }
            Err(Refused::TooMany) => {
                return Err(Fault::new(format!(
                    "too many subscriptions (limit {})",
                    crate::stream::stomp::subscriptions::MAX_SUBSCRIPTIONS
                )))
            }
            Err(Refused::TooLarge) => {
                return Err(Fault::new(format!(
                    "subscription ids and destinations over {} bytes on this connection",
                    crate::stream::stomp::subscriptions::MAX_SUBSCRIPTION_BYTES
                )))
            }
        }
        if since.is_some() {
            // Resubscribe to the hub from `since`: the retained events after it come
            // before any live one (a subscription already there may see some twice:
            // clients tell them apart by event-id).
            if let Some(hub_id) = self.hub_sub.take() {
                self.shared.events.unsubscribe(self.session_id(), hub_id);
            }
        }
        if let Err(e) = self.sync_events(since) {
            self.subs.remove(id);
            return Err(Fault::coded(e.message, e.code));
        }
        Ok(false)
    }

    /// The number the hub knows this session by.
    fn session_id(&self) -> u64 {
        self.ctx
            .session
            .as_ref()
            .map_or(self.conn_id, |s| s.conn_id)
    }

    fn unsubscribe(&mut self, f: &Frame) -> Result<bool, Fault> {
        let id = f
            .get("id")
            .ok_or_else(|| Fault::new("UNSUBSCRIBE needs an id header"))?;
        // Like VDSM, an unknown id is not worth closing the session over.
        if !self.subs.remove(id) {
            tracing::debug!(
                conn = self.conn_id,
                id,
                "UNSUBSCRIBE of an unknown id ignored"
            );
        }
        let _ = self.sync_events(None);
        Ok(false)
    }

    /// Hold one hub subscription (all events) while any STOMP subscription covers the
    /// event destination; [`Framer::event`] fans each event out to those subscriptions.
    /// `since` (on a new hub subscription) replays the retained events after it first;
    /// an error for a `since` the window does not cover, or past a subscription cap.
    fn sync_events(&mut self, since: Option<crate::events::Since>) -> Result<(), RpcError> {
        let events = self.shared.events.clone();
        let wanted = self
            .subs
            .covers(&self.shared.config.stomp.event_destination);
        match (wanted, self.hub_sub) {
            (true, None) => {
                let session = self
                    .ctx
                    .session
                    .clone()
                    .expect("STOMP calls carry a session");
                // A refusal (the `since`, or a cap on the connection's or the address's
                // subscriptions) refuses the SUBSCRIBE: ERROR with its code.
                let id = events.subscribe_since("*", session, since, since.is_some())?;
                self.hub_sub = Some(id);
            }
            (false, Some(id)) => {
                events.unsubscribe(self.session_id(), id);
                self.hub_sub = None;
            }
            _ => {}
        }
        Ok(())
    }

    /// DISCONNECT: stop reading; the RECEIPT waits for the calls still in flight, so it
    /// really confirms that everything sent before it was handled.
    fn disconnect(&mut self, f: &Frame, out: &mut Out) -> Close {
        self.state = State::Disconnecting;
        self.disconnect_receipt = f.get("receipt").map(str::to_owned);
        self.flush_disconnect(out);
        Close::new("client sent DISCONNECT")
    }

    fn flush_disconnect(&mut self, out: &mut Out) {
        if self.in_flight == 0 {
            if let Some(r) = self.disconnect_receipt.take() {
                self.emit(&frames::receipt(&r), out);
            }
        }
    }
}

impl Framer for Stomp {
    type Done = Done;

    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut Out,
        calls: &mut Calls<Done>,
        mut room: usize,
    ) -> Result<(), Close> {
        if let Some(why) = self.close_due.take() {
            return Err(Close::new(format!("STOMP error sent: {why}")));
        }
        if self.state == State::Authenticating {
            // Frames sent before CONNECTED wait, unread, for the credentials' verdict.
            return Ok(());
        }
        while room > 0 {
            let frame = match self.codec.decode(input) {
                Ok(Some(Item::Frame(f))) => f,
                Ok(Some(Item::Heartbeat)) => continue,
                Ok(None) => return Ok(()),
                Err(e) => return Err(self.fail(Fault::new(e.to_string()), None, out)),
            };
            if self.frame(frame, out, calls)? {
                room -= 1;
            }
        }
        Ok(())
    }

    fn reply(&mut self, done: Done, out: &mut Out) {
        self.in_flight -= 1;
        match done {
            Done::Reply {
                body: Some(body),
                reply_to,
            } => self.deliver_reply(&reply_to, body.into(), out),
            Done::Reply { body: None, .. } => {}
            Done::Login(Ok(who)) => {
                if let Some(c) = &self.ctx.caller {
                    c.bind(who);
                }
                self.connected(out);
            }
            Done::Login(Err(why)) => {
                let message = format!("login failed: {why}");
                let _ = self.fail(Fault::new(message.clone()), None, out);
                self.close_due = Some(message);
            }
        }
        if self.state == State::Disconnecting {
            self.flush_disconnect(out);
        }
    }

    fn event(&mut self, event: &Event, how: &Delivery, out: &mut Out) {
        if self.state != State::Connected {
            return;
        }
        let shared = self.shared.clone();
        let dest = &shared.config.stomp.event_destination;
        if !self.subs.covers(dest) {
            return;
        }
        // The id rides in a header on every MESSAGE (headers cost VDSM's clients
        // nothing); in the body only for a subscription that asked (`since`).
        // STOMP subscriptions are not in the subscription shape (`subscribe`'s).
        let body = event.json(out.budget(), how.resumable);
        let id = event.id().to_string();
        self.deliver(dest, &body, true, Some(&id), Deliver::Every, out);
    }

    fn lost(&mut self, notice: &Lost, out: &mut Out) {
        // An ERROR: STOMP's word for "this session is over", with what was lost.
        let mut f = frames::error(
            &format!(
                "events lost ({}); subscribe again with since",
                notice.reason
            ),
            None,
        );
        f.push_header("first-lost", notice.first_lost.to_string());
        self.emit(&f, out);
        self.state = State::Failed;
    }

    fn tick(&mut self, idle_for: Duration, out: &mut Out) -> Result<(), Close> {
        let Some(beats) = &mut self.beats else {
            return Ok(());
        };
        // While the driver is not reading (calls or output at their caps) the peer's
        // heart-beats wait unread in the socket: its silence proves nothing.
        let reading =
            self.in_flight < self.shared.config.limits.max_in_flight && out.pending() < MAX_OUT;
        match beats.tick(std::time::Instant::now(), idle_for, reading) {
            Due::Nothing => Ok(()),
            Due::Beat => {
                rpcmux_stomp::encode_heartbeat(out);
                Ok(())
            }
            Due::Dead { silent, every } => {
                tracing::warn!(
                    conn = self.conn_id,
                    ?silent,
                    ?every,
                    "STOMP peer missed its heart-beats; closing"
                );
                Err(Close::new(format!(
                    "no heart-beat for {silent:?} (promised every {every:?})"
                )))
            }
        }
    }

    fn tick_every(&self) -> Option<Duration> {
        self.beats.as_ref()?.tick_every()
    }

    fn has_pending(&self) -> bool {
        self.close_due.is_some()
    }
}
