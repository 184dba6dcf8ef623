//! The driver shared by every stream protocol (raw-TCP JSON-RPC, msgpack-rpc, STOMP, and
//! WebSocket sessions once upgraded).
//!
//! One task per connection reads, decodes, runs calls concurrently, and writes
//! replies as they complete (out of order; ids tell them apart), plus any server
//! events the connection subscribed to. Everything is bounded: at most
//! `max_in_flight` calls, at most `max_out` bytes of unsent output; past either the
//! driver stops reading, so a client that floods or never reads gets backpressure
//! instead of growing the server's memory (VDSM's queues were unbounded).

use crate::conn::budget::{Budget, Charge, Ticket, SMALL};
use crate::conn::out::Out;
use crate::events::outbox::{Delivery, HoldProbe, OutboxRx, Outgoing};
use crate::events::{Event, Lost};
use bytes::BytesMut;
use futures_util::future::{BoxFuture, FutureExt};
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// What a call that waits costs at least, charged in place of its request bytes when
/// those are fewer: a parked 15-byte `sleep` call holds about 1.4 KiB (its boxed future,
/// its context and the reply slot).
const PARKED_CALL: usize = 1536;

/// Calls in flight on one connection, with the request bytes they hold. Each call is
/// charged to the process-wide [`Budget`] until it finishes; the driver stops decoding a
/// connection whose calls hold `max_in_flight_bytes`, or while the budget is spent.
///
/// A call is polled once as it starts: most verbs answer without waiting (an echo, a
/// lookup), and their outcome goes to `ready`, replied to in the same turn of the driver,
/// with no task in `running`, no charge and no turn of the driver's `select!` per reply
/// (a third of the per-call cost of pipelined small calls). Only calls that wait are
/// pushed to `running`, which polls them again with the driver's waker.
///
/// Each outcome carries the holds its call took on the session's outbox (a `subscribe`:
/// [`crate::events::outbox::Outbox::hold`]), claimed right after each poll of the call;
/// the driver releases them once the reply is written, so a subscription's events never
/// precede the reply that names it.
pub(crate) struct Calls<D> {
    /// Made for the first call that waits (`FuturesUnordered` allocates two blocks as
    /// it is made, and most connections never have a call that waits), dropped again
    /// with the connection's buffers when it idles.
    running: Option<FuturesUnordered<Running<D>>>,
    ready: VecDeque<(D, usize)>,
    bytes: usize,
    budget: Arc<Budget>,
    /// The session's holds, on a connection that can carry events.
    probe: Option<HoldProbe>,
}

/// A call that did not finish when it started, holding its share of the budget.
struct Running<D> {
    call: BoxFuture<'static, D>,
    bytes: usize,
    _charge: Charge,
    /// Holds this call took so far, and where to claim them.
    holds: usize,
    probe: Option<HoldProbe>,
}

impl<D> Future for Running<D> {
    type Output = (D, usize, usize);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<(D, usize, usize)> {
        let bytes = self.bytes;
        let polled = self.call.as_mut().poll(cx);
        let took = self.probe.as_ref().map_or(0, HoldProbe::claim);
        self.holds += took;
        let holds = self.holds;
        polled.map(|done| (done, bytes, holds))
    }
}

impl<D: Send + 'static> Calls<D> {
    pub(crate) fn new(budget: Arc<Budget>) -> Self {
        Calls {
            running: None,
            ready: VecDeque::new(),
            bytes: 0,
            budget,
            probe: None,
        }
    }

    /// Attribute the session's outbox holds to the calls that take them.
    pub(crate) fn with_holds(mut self, probe: HoldProbe) -> Self {
        self.probe = Some(probe);
        self
    }

    /// Holds taken since the last claim (by the call just run).
    fn claim(&self) -> usize {
        self.probe.as_ref().map_or(0, HoldProbe::claim)
    }

    /// Start a call decoded from `bytes` bytes of input.
    pub(crate) fn start(&mut self, bytes: usize, call: impl Future<Output = D> + Send + 'static) {
        let mut call: BoxFuture<'static, D> = Box::pin(call);
        // Polled with a no-op waker: a call that is pending is polled again by
        // `running` (a pushed future is queued to run), which registers the real one.
        if let Some(done) = (&mut call).now_or_never() {
            let holds = self.claim();
            self.ready.push_back((done, holds));
            return;
        }
        // A call that waits holds its future, context and task slot whatever its size.
        let bytes = bytes.max(PARKED_CALL);
        self.bytes += bytes;
        let holds = self.claim();
        self.running
            .get_or_insert_with(FuturesUnordered::new)
            .push(Running {
                call,
                bytes,
                _charge: self.budget.charge(bytes),
                holds,
                probe: self.probe.clone(),
            });
    }

    /// A call that the framer found answered as it started (see [`Self::start`]): its
    /// outcome is replied to in this turn, like one that `start` found ready.
    pub(crate) fn finished(&mut self, done: D) {
        let holds = self.claim();
        self.ready.push_back((done, holds));
    }

    /// Calls started and not yet replied to, finished or not.
    pub(crate) fn len(&self) -> usize {
        self.running.as_ref().map_or(0, |r| r.len()) + self.ready.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        !self.waiting() && self.ready.is_empty()
    }

    /// Some call started and has not finished.
    fn waiting(&self) -> bool {
        self.running.as_ref().is_some_and(|r| !r.is_empty())
    }

    /// With no call in flight, give back what holding calls took (the queue of calls
    /// that waited, the room for outcomes): for a connection gone idle.
    fn release(&mut self) {
        if self.is_empty() {
            self.running = None;
            self.ready = VecDeque::new();
        }
    }

    /// The outcome of a call that finished as it started, oldest first, with the outbox
    /// holds it took.
    pub(crate) fn take_ready(&mut self) -> Option<(D, usize)> {
        self.ready.pop_front()
    }

    /// The next call that waited to finish, with the outbox holds it took.
    async fn next(&mut self) -> Option<(D, usize)> {
        let (done, bytes, holds) = self.running.as_mut()?.next().await?;
        self.bytes -= bytes;
        Some((done, holds))
    }
}

/// Why a connection is being closed (logged by the driver), and the limit it broke,
/// if that is why (counted in `/metrics`).
#[derive(Debug)]
pub(crate) struct Close(pub String, pub Option<&'static str>);

impl Close {
    /// A close for `why`.
    pub fn new(why: impl Into<String>) -> Self {
        Close(why.into(), None)
    }
    /// A close because the peer broke `limit` (`"frame"`, ...).
    pub fn over_limit(limit: &'static str, why: impl Into<String>) -> Self {
        Close(why.into(), Some(limit))
    }
}

/// Log that a stream connection closes for `why` (a protocol error, a failed STOMP
/// login...): at most a few lines a second, however many connections a flood closes
/// (each line says how many were not logged since the last).
fn log_close(peer: &str, why: &str) {
    static LINES: std::sync::LazyLock<crate::observe::log_budget::LogBudget> =
        std::sync::LazyLock::new(crate::observe::log_budget::LogBudget::new);
    if let Some(suppressed) = LINES.admit() {
        tracing::info!(peer, reason = why, suppressed, "closing connection");
    }
}

/// A stream protocol's half of the driver.
pub(crate) trait Framer: Send {
    /// What a finished call yields (typically its encoded reply).
    type Done: Send + 'static;

    /// Decode complete messages from `input`, starting at most `room` calls into
    /// `calls`; write immediate answers (protocol errors) into `out`. `Err` stops
    /// reading: calls in flight finish, `out` is flushed, then the connection closes.
    fn decode(
        &mut self,
        input: &mut BytesMut,
        out: &mut Out,
        calls: &mut Calls<Self::Done>,
        room: usize,
    ) -> Result<(), Close>;

    /// A call finished: write its reply.
    fn reply(&mut self, done: Self::Done, out: &mut Out);

    /// A subscribed event arrived: write it as a notification (bytes every subscriber
    /// sends alike go in shared: [`Event`]'s encodings, [`Out::put_shared`]), in the
    /// shape and with the id its subscription asked for (`how`).
    fn event(&mut self, event: &Event, how: &Delivery, out: &mut Out);

    /// The hub dropped this session as too slow: write the notice of what it lost (its
    /// last output before the connection closes).
    fn lost(&mut self, notice: &Lost, out: &mut Out);

    /// Called every [`Framer::tick_every`] (heart-beats); `Err` closes. `idle_for` is
    /// how long ago the peer last sent a byte.
    fn tick(&mut self, _idle_for: Duration, _out: &mut Out) -> Result<(), Close> {
        Ok(())
    }

    /// Re-read after every event of the driver loop, so a framer can start ticking once
    /// it knows its period (STOMP learns its heart-beats from CONNECT).
    fn tick_every(&self) -> Option<Duration> {
        None
    }

    /// The framer holds input of its own that may yield work without new bytes (a
    /// WebSocket message that carried several STOMP frames): decode is called again.
    fn has_pending(&self) -> bool {
        false
    }

    /// Input bytes the framer holds of its own (a WebSocket message being put together
    /// from fragments): charged to the process budget like the driver's input buffer.
    fn held(&self) -> usize {
        0
    }

    /// Reading has stopped (peer gone, shutdown, idle, a limit) and every call has
    /// answered: the last output, once (a WebSocket close frame).
    fn finish(&mut self, _out: &mut Out) {}
}

pub(crate) struct DriveOpts {
    pub max_in_flight: usize,
    /// Request bytes the calls of this connection may hold (one call may always run).
    pub max_in_flight_bytes: usize,
    /// The process-wide budget of request bytes in flight.
    pub budget: Arc<Budget>,
    /// The process-wide budget of bytes queued for clients.
    pub out_budget: Arc<Budget>,
    pub max_out: usize,
    pub idle_timeout: Duration,
    /// How long output may wait without a byte written before the connection closes.
    pub send_timeout: Duration,
    /// How long a large frame being read may go without a byte (`body_timeout`).
    pub frame_timeout: Duration,
    pub shutdown: CancellationToken,
    /// Cancelled when the event hub drops this connection as too slow.
    pub kill: CancellationToken,
    pub peer: String,
    /// The hub and this session's id: a session with event subscriptions is
    /// waiting for events, not idle, so the idle timeout leaves it open.
    pub events: (Arc<crate::events::EventHub>, u64),
    /// Where a close over a limit is counted.
    pub metrics: Option<Arc<crate::observe::Metrics>>,
}

impl DriveOpts {
    /// The server's limits for one connection; `kill` is the event hub's drop switch.
    pub(crate) fn new(
        shared: &crate::shared::Shared,
        info: &crate::conn::ConnInfo,
        kill: CancellationToken,
    ) -> Self {
        let limits = &shared.config.limits;
        DriveOpts {
            max_in_flight: limits.max_in_flight,
            max_in_flight_bytes: limits.max_in_flight_bytes,
            budget: shared.budget.clone(),
            out_budget: shared.out_budget.clone(),
            max_out: limits.max_conn_output.max(1),
            idle_timeout: limits.idle_timeout(),
            send_timeout: limits.send_timeout(),
            frame_timeout: limits.body_timeout(),
            shutdown: shared.shutdown.clone(),
            kill,
            peer: info.peer.to_string(),
            events: (shared.events.clone(), info.session),
            metrics: shared.metrics.clone(),
        }
    }
}

/// Run a stream protocol on `io`: give the framer (built from the connection's call
/// context, which can receive events) to the driver, and forget the connection's
/// subscriptions when it ends. Shared by raw-TCP JSON-RPC, msgpack-rpc and STOMP.
///
/// Not an `async fn`: the setup runs now, and the future returned holds only the
/// driver's (and the hub and session id to tell at the end). As an `async fn` it kept
/// its arguments (the stream, the connection's facts, the framer's makings) for the
/// connection's life beside the moved copies inside the driver's future, part of every
/// idle connection's memory (`benches/idle_memory.py`).
pub(crate) fn serve<S, F>(
    io: crate::io::Rewind<S>,
    info: crate::conn::ConnInfo,
    shared: Arc<crate::shared::Shared>,
    protocol: &'static str,
    make_framer: impl FnOnce(crate::verbs::CallContext) -> F,
) -> impl Future<Output = ()>
where
    S: crate::io::Stream,
    F: Framer,
{
    let (prefix, io) = io.into_parts();
    let input = BytesMut::from(&prefix[..]);
    // The sniff buffer behind `prefix` is not kept for the life of the connection.
    drop(prefix);
    // `[events] outbox` (4096 by default): the outbox fills while the connection's task
    // waits to run, so it must outlast scheduling jitter (at 256, healthy subscribers of a
    // busy 2-core machine publishing 30k events/s were dropped); its deque grows only as
    // it fills, so the depth costs nothing until used.
    let events = &shared.config.events;
    let (tx, rx) = crate::events::outbox::bounded(
        events.outbox,
        events.outbox_bytes,
        shared.out_budget.clone(),
    );
    let kill = CancellationToken::new();
    let mut ctx = shared.call_context(&info, protocol);
    let caller = ctx.caller.clone();
    // The session's own number (not the connection's: one HTTP/2 connection carries
    // many WebSocket sessions) and its own caller (`Shared::call_context`).
    // Its subscriptions count against its connection's cap (shared by the sessions of
    // an HTTP/2 connection) and its address's (`events::conn_subs`).
    let conn_subs = info.subs.clone().unwrap_or_else(|| {
        crate::events::conn_subs::ConnSubs::for_connection(
            &shared.per_ip,
            shared.config.limits.max_connection_subscriptions,
            &info.peer,
        )
    });
    ctx.session = Some(crate::events::Session::on_connection(
        info.session,
        tx,
        kill.clone(),
        caller,
        conn_subs,
    ));
    let framer = make_framer(ctx);
    let opts = DriveOpts::new(&shared, &info, kill);
    let (rd, wr) = tokio::io::split(io);
    let (hub, session) = (shared.events.clone(), info.session);
    drive(rd, wr, input, framer, rx, opts).map(move |()| hub.drop_connection(session))
}

/// How long a connection has nothing pending before its buffers are given back.
/// Giving them back at once cost pipelined connections 10-20% of their calls per CPU
/// second (each time all replies were out: two allocations and smaller reads after).
const RELEASE_AFTER: Duration = Duration::from_secs(1);

/// The free space a read gets once a read has filled the room it had (a peer sending
/// more than fits: pipelined calls, a large frame).
const READ_ROOM: usize = 16 * 1024;

/// The free space a read gets until then, and again after the buffers were released (once
/// the first read, [`FIRST_READ`] bytes without a buffer, has brought something).
/// Most connections send a request now and then (VDSM's, the CLI's, a monitor's): with
/// 16 KiB for every read each of them held 16 KiB from its first request on, and an
/// allocator need not give freed memory back to the system (mimalloc keeps pages freed
/// from another thread until their owner allocates again), so releasing buffers when idle
/// did not bring the resident size down. Growing only after a full read is hyper's
/// adaptive read strategy; a pipelining peer fills its first read and gets
/// [`READ_ROOM`] from the next one on.
const SMALL_READ_ROOM: usize = 2 * 1024;

/// The most the first read after the buffers were released takes (see [`read_some`]):
/// a small request whole; the rest of a larger one comes with the next read.
const FIRST_READ: usize = 64;

/// Unsent output past which the driver stops reading and stops taking events, by
/// default (`[limits] max_conn_output`); the framers stop starting work past it.
pub(crate) const MAX_OUT: usize = 4 << 20;

/// Write some of `out` (several pieces at once when it has shared chunks), or flush once
/// it is all written (TLS buffers inside).
async fn write_or_flush<W: AsyncWrite + Unpin>(
    wr: &mut W,
    out: &Out,
) -> std::io::Result<Option<usize>> {
    if out.is_done() {
        wr.flush().await.map(|_| None)
    } else if out.is_chunked() && wr.is_write_vectored() {
        let mut slices = Vec::new();
        out.slices(&mut slices);
        wr.write_vectored(&slices).await.map(Some)
    } else {
        wr.write(out.front()).await.map(Some)
    }
}

/// Write all of `out` and flush (a last word before closing: callers bound the wait).
async fn write_all<W: AsyncWrite + Unpin>(wr: &mut W, out: &mut Out) -> std::io::Result<()> {
    while let Some(n) = write_or_flush(wr, out).await? {
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        out.advance(n);
    }
    Ok(())
}

/// Read into `input`, at most `limit` bytes (`usize::MAX`: as much as fits).
///
/// With `first` (a connection that gave its buffers back when it idled) the read waits
/// with no buffer of its own: up to [`FIRST_READ`] bytes land in this future, then in
/// an `input` just big enough for them. Reserving a read's room before waiting, as
/// otherwise, made every idle connection take 2 KiB again as soon as it had given its
/// buffers back (`benches/idle_memory.py`).
async fn read_some<R: AsyncRead + Unpin>(
    rd: &mut R,
    input: &mut BytesMut,
    limit: usize,
    first: bool,
) -> std::io::Result<usize> {
    if first {
        let mut buf = [0u8; FIRST_READ];
        let n = rd.read(&mut buf[..FIRST_READ.min(limit)]).await?;
        input.extend_from_slice(&buf[..n]);
        return Ok(n);
    }
    if limit == usize::MAX {
        rd.read_buf(input).await
    } else {
        rd.take(limit as u64).read_buf(input).await
    }
}

/// Reply to the calls that finished as they started, while the output has room; events
/// a call published first, as for the others (see the driver); each reply releases the
/// outbox holds its call took. True if any reply was written.
fn put_ready<F: Framer>(
    framer: &mut F,
    calls: &mut Calls<F::Done>,
    events: &mut OutboxRx,
    out: &mut Out,
    max_out: usize,
) -> bool {
    let mut any = false;
    while out.pending() < max_out {
        let Some((done, holds)) = calls.take_ready() else {
            break;
        };
        put_reply(framer, events, out, done, holds);
        any = true;
    }
    any
}

/// Write a finished call's reply: first the events that wait (a call's own published
/// events reach its caller before its reply, as VDSM sends them: its client's tests
/// depend on the order), then the reply, then release the outbox holds the call took,
/// so its subscription's events follow the reply that names it.
fn put_reply<F: Framer>(
    framer: &mut F,
    events: &mut OutboxRx,
    out: &mut Out,
    done: F::Done,
    holds: usize,
) {
    while let Some(o) = events.try_recv() {
        put_outgoing(framer, o, out);
    }
    framer.reply(done, out);
    events.release(holds);
}

async fn next_event(rx: &mut OutboxRx) -> Option<Outgoing> {
    rx.recv().await
}

/// Write what the outbox gave: an event, or the notice that events were lost.
fn put_outgoing<F: Framer>(framer: &mut F, o: Outgoing, out: &mut Out) {
    match &o {
        Outgoing::Event(event, how) | Outgoing::Replayed(event, how) => {
            framer.event(event, how, out)
        }
        Outgoing::Lost(notice) => framer.lost(notice, out),
    }
    o.written();
}

/// How long a session the hub dropped as too slow may take to write its last output
/// (the "events lost" notice) before it is closed.
const LOST_NOTICE_WAIT: Duration = Duration::from_secs(5);

/// A buffer holding more than this once empty is given back at once (a large frame or
/// reply has gone): an attacker cycling big messages keeps no big buffers between them.
const KEEP_EMPTY: usize = 4 * READ_ROOM;

/// Input bytes of a connection charged to the process budget: what it holds of a
/// request past [`SMALL`] bytes (a large frame being read; up to that, the small-request
/// lane every connection has), its own buffer and what the framer holds of its own.
fn input_held(input: &BytesMut, framer_held: usize) -> usize {
    let held = input.len() + framer_held;
    if held > SMALL {
        held
    } else {
        0
    }
}

/// The most one read of a large frame takes, reserved in the budget before it is made.
const BIG_READ: usize = 256 * 1024;

/// The driver loop of one connection. Not an `async fn`, which would keep each argument
/// twice in its future for the connection's life (as passed, and moved into the body:
/// the framer and the options are hundreds of bytes); the `async move` block below
/// uses them where they were captured.
#[allow(clippy::manual_async_fn)]
pub(crate) fn drive<R, W, F>(
    mut rd: R,
    mut wr: W,
    mut input: BytesMut,
    mut framer: F,
    mut events: OutboxRx,
    opts: DriveOpts,
) -> impl Future<Output = ()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    F: Framer,
{
    async move {
        let mut out = Out::new(opts.out_budget.clone());
        let mut calls: Calls<F::Done> = Calls::new(opts.budget.clone()).with_holds(events.probe());
        // What this connection holds for itself: unsent output (output budget) and a
        // partial frame or message being read (input budget).
        let mut out_charge = opts.out_budget.charge(0);
        let mut in_charge = opts.budget.charge(0);
        // What the oldest large frame read past the budget (see `budget`).
        let mut in_over = opts.budget.overdraft();
        // Held while a large frame is being read: the oldest may always go on (`budget`).
        let mut ticket: Option<Ticket> = None;
        let frame_timer = tokio::time::sleep(opts.frame_timeout);
        tokio::pin!(frame_timer);
        let mut reading = true;
        let mut unflushed = false;
        let mut finished = false;
        let idle = tokio::time::sleep(opts.idle_timeout);
        tokio::pin!(idle);
        let mut last_input = tokio::time::Instant::now();
        let mut last_reply = last_input;
        // Buffers are given back once the connection has had nothing pending for
        // RELEASE_AFTER; the timer is moved only when it fires, never per call.
        let mut idle_since: Option<tokio::time::Instant> = None;
        // Whether the last read filled the room it had (see SMALL_READ_ROOM).
        let mut read_full = false;
        // The buffers were given back and no byte has come since (see `read_some`).
        let mut released = false;
        // `input` holds bytes read without a buffer of its own (the sniffed prefix, the
        // first read after a release): the next buffer is made to measure (see below).
        let mut exact = true;
        let release = tokio::time::sleep(RELEASE_AFTER);
        tokio::pin!(release);
        // Since when output has waited without a byte written (None: nothing waits).
        let mut stalled_since: Option<tokio::time::Instant> = None;
        // When bytes last went out: only then can a reset on close cut a reply (see linger).
        let mut last_write: Option<tokio::time::Instant> = None;
        let stalled = tokio::time::sleep(opts.send_timeout);
        tokio::pin!(stalled);
        let mut tick_every = framer.tick_every();
        let mut ticker = tick_every.map(ticker_for);
        // Made once and polled across iterations: a fresh `cancelled()` per loop turn
        // registers with (and leaves) the token's waiter list every time, which showed
        // in profiles of pipelined load.
        let killed = opts.kill.cancelled();
        tokio::pin!(killed);
        let shutting_down = opts.shutdown.cancelled();
        tokio::pin!(shutting_down);

        loop {
            // No call left: any hold not claimed by one (a framer that ran a verb outside
            // `calls`) has had its reply written, whatever it was.
            if calls.is_empty() {
                events.release(calls.claim());
            }
            // Room for more calls: by count, by bytes held on this connection (one call may
            // always run, however large), and in the process-wide budget.
            let room_for_calls = calls.len() < opts.max_in_flight
                && (calls.is_empty() || calls.bytes < opts.max_in_flight_bytes);
            // Room for more output: this connection's share, and while the process-wide
            // output budget is spent, only a connection with nothing waiting may start
            // calls (clients that read their replies go on; those that do not, stop).
            let out_room =
                out.pending() < opts.max_out && (out.is_done() || opts.out_budget.has_room());
            // While large requests hold the process budget, a connection may still buffer
            // and decode up to `SMALL` bytes: a frame complete within them is small and
            // takes the reserve; one that is not waits for the budget (see `budget`). The
            // connection's own partial frame is its own: it does not keep itself waiting.
            let own = in_charge.bytes();
            if input.len() + framer.held() <= SMALL {
                ticket = None;
            } else if ticket.is_none() {
                ticket = Some(opts.budget.ticket());
                frame_timer
                    .as_mut()
                    .reset(tokio::time::Instant::now() + opts.frame_timeout);
            }
            let big_room = opts.budget.room_for(usize::MAX, own)
                || ticket.as_ref().is_some_and(Ticket::is_first);
            let small_room = !big_room && opts.budget.room_for(SMALL, own);
            let may_decode = big_room || (small_room && input.len() <= SMALL);
            if reading
                && room_for_calls
                && out_room
                && may_decode
                && (!input.is_empty() || framer.has_pending())
            {
                // One call per decode: each call's bytes are known and checked before the next.
                let room = 1;
                let before = input.len();
                if let Err(Close(why, limit)) =
                    framer.decode(&mut input, &mut out, &mut calls, room)
                {
                    if let (Some(m), Some(limit)) = (&opts.metrics, limit) {
                        m.refused(limit);
                    }
                    log_close(&opts.peer, &why);
                    reading = false;
                } else if !input.is_empty() && input.len() < before && out.pending() < opts.max_out
                {
                    // A message was taken and more input waits: its replies go into `out`
                    // first (so what waits to be written is counted and bounded there, not
                    // piled up in `calls`), then round again before reading or writing, so
                    // one write carries the replies of all of it.
                    put_ready(&mut framer, &mut calls, &mut events, &mut out, opts.max_out);
                    continue;
                }
                if input.is_empty() && input.capacity() > KEEP_EMPTY {
                    input = BytesMut::new();
                }
            }
            // Replies of the calls that finished as they started, while the output has
            // room; events a call published first, as for the others (below).
            if put_ready(&mut framer, &mut calls, &mut events, &mut out, opts.max_out)
                && calls.is_empty()
            {
                last_reply = tokio::time::Instant::now();
            }
            if !reading && calls.is_empty() && !finished {
                finished = true;
                framer.finish(&mut out);
            }
            if !reading && calls.is_empty() && out.is_done() && !unflushed {
                break;
            }
            out_charge.set(out.owned());
            // What is held in, the overdraft first (it is given back first).
            let held = input_held(&input, framer.held());
            in_over.set(in_over.bytes().min(held));
            in_charge.set(held - in_over.bytes());
            let idle_now = calls.is_empty() && input.is_empty() && out.is_done() && !unflushed;
            if !idle_now {
                idle_since = None;
            } else if idle_since.is_none() {
                idle_since = Some(tokio::time::Instant::now());
            }
            let holds_buffers = input.capacity() > 0 || out.capacity() > 0;
            if framer.tick_every() != tick_every {
                tick_every = framer.tick_every();
                ticker = tick_every.map(ticker_for);
            }
            // Up to SMALL bytes a request is read in the small lane. Past it (a large frame,
            // or a WebSocket message put together from fragments) each read first reserves
            // its bytes in the process budget, so half-read frames never hold more than the
            // budget (the oldest may go on regardless: see `budget`), and small requests
            // keep their reserve.
            let held_in = input.len() + framer.held();
            let (may_read, read_limit) = if held_in < SMALL {
                (big_room || small_room, SMALL - held_in)
            } else {
                let want = held_in + BIG_READ;
                let reserved = in_charge.bytes() + in_over.bytes() >= want
                    || opts.budget.try_grow(&mut in_charge, want - in_over.bytes());
                // The oldest large frame goes on past the budget, as its overdraft.
                let first = !reserved && ticket.as_ref().is_some_and(Ticket::is_first);
                if first {
                    in_over.set(want - in_charge.bytes());
                }
                (reserved || first, BIG_READ)
            };
            let can_read = reading && room_for_calls && may_read && out_room;
            let want_room = if read_full {
                READ_ROOM
            } else {
                SMALL_READ_ROOM
            };
            let first_read = released && input.capacity() == 0;
            if can_read && !first_read && input.capacity() - input.len() < want_room {
                // A codec reserves only what its next frame still needs; reading into just
                // that made every read end at a frame boundary (one frame per read, so one
                // reply per write: STOMP managed 107k pings/s on a full core against 435k
                // for raw-TCP JSON). Reads get at least this much room instead; the input
                // still grows only as far as the framer's frame limit allows.
                if exact && input.len() < want_room {
                    // The first buffer to read into is `want_room` bytes, not that plus
                    // the few held (growing the sniffed prefix or a first read made
                    // 2057 bytes, which mimalloc serves from the size class of a
                    // connection's own future, 2.4 KiB: with the two interleaved, the
                    // futures' pages stayed half empty once the buffers were released,
                    // 2.8 KiB of each idle msgpack-rpc connection).
                    let mut buf = BytesMut::with_capacity(want_room);
                    buf.extend_from_slice(&input);
                    input = buf;
                } else {
                    input.reserve(want_room);
                }
                exact = false;
            }
            // What the read below may fill: if it does, the peer has more to send.
            let read_room = if first_read {
                FIRST_READ.min(read_limit)
            } else {
                (input.capacity() - input.len()).min(read_limit)
            };
            let wait_for_budget = reading && (!big_room || !may_read);
            let has_output = !out.is_done();
            tokio::select! {
                biased;
                _ = &mut killed => {
                    tracing::warn!(peer = %opts.peer, "dropped by the event hub (too slow); closing");
                    // The events still queued were dropped with the notice of what was lost
                    // (its `first_lost` is the first of them): the notice is its last output.
                    while let Some(o) = events.try_recv_any() {
                        if let Outgoing::Lost(notice) = &o {
                            framer.lost(notice, &mut out);
                        }
                        o.written();
                    }
                    let _ = tokio::time::timeout(LOST_NOTICE_WAIT, write_all(&mut wr, &mut out)).await;
                    break;
                }
                // A finished call's reply is taken only while the unsent output has room: a
                // reply that does not fit waits in its call rather than piling up here.
                Some((done, holds)) = calls.next(), if calls.waiting() && out.pending() < opts.max_out => {
                    put_reply(&mut framer, &mut events, &mut out, done, holds);
                    if calls.is_empty() {
                        // Idle time counts from the last reply too, not only the last input.
                        last_reply = tokio::time::Instant::now();
                    }
                }
                r = write_or_flush(&mut wr, &out), if has_output || unflushed => match r {
                    Ok(Some(n)) if n > 0 => {
                        out.advance(n);
                        unflushed = true;
                        stalled_since = None;
                        last_write = Some(tokio::time::Instant::now());
                        if out.is_done() && out.capacity() > KEEP_EMPTY {
                            out.release();
                        }
                    }
                    Ok(None) => unflushed = false,
                    _ => break,
                },
                Some(o) = next_event(&mut events), if reading && out.pending() < opts.max_out => {
                    put_outgoing(&mut framer, o, &mut out);
                    // Take the rest of the queue in the same turn: a burst of events costs one
                    // write, and the queue empties whenever this task runs (one event per
                    // turn left a subscriber behind a burst judged too slow and dropped).
                    while out.pending() < opts.max_out {
                        match events.try_recv() {
                            Some(o) => put_outgoing(&mut framer, o, &mut out),
                            None => break,
                        }
                    }
                }
                r = read_some(&mut rd, &mut input, read_limit, first_read), if can_read => match r {
                    Ok(0) => reading = false,
                    // The idle timer is not reset here (a timer-wheel move per read); when it
                    // fires, it re-arms from the last input if there was any since.
                    Ok(n) => {
                        // A first read that fills its few bytes is no sign of a peer with
                        // more to send than fits: the next read gets the small room.
                        read_full = !first_read && n >= read_room;
                        released = false;
                        last_input = tokio::time::Instant::now();
                    }
                    Err(e) => {
                        tracing::debug!(peer = %opts.peer, error = %e, "read failed");
                        break;
                    }
                },
                _ = &mut shutting_down, if reading => reading = false,
                // Give the buffers back once nothing has been pending for RELEASE_AFTER (an
                // idle connection then holds no buffer at all; see SMALL_READ_ROOM).
                _ = &mut release, if idle_since.is_some() && holds_buffers => match idle_since {
                    Some(t) if t.elapsed() >= RELEASE_AFTER => {
                        tracing::trace!(peer = %opts.peer, input = input.capacity(), out = out.capacity(), "idle: buffers released");
                        input = BytesMut::new();
                        out.release();
                        calls.release();
                        read_full = false;
                        released = true;
                        exact = true;
                    }
                    Some(t) => release.as_mut().reset(t + RELEASE_AFTER),
                    None => {}
                },
                _ = opts.budget.freed(), if wait_for_budget => {}
                _ = opts.out_budget.freed(), if reading && !out_room && out.pending() < opts.max_out => {}
                // A peer that stops reading holds its output and its calls: `send_timeout`
                // bounds how long output may wait without a byte written (nginx's rule).
                // (The timer is not moved per write; when it fires it re-arms from the stall's start.)
                _ = &mut stalled, if has_output => match stalled_since {
                    Some(t) if t.elapsed() >= opts.send_timeout => {
                        tracing::info!(peer = %opts.peer, unsent = out.pending(), "peer stopped reading (send_timeout); closing");
                        if let Some(m) = &opts.metrics {
                            m.refused("send_timeout");
                        }
                        break;
                    }
                    Some(t) => stalled.as_mut().reset(t + opts.send_timeout),
                    None => {
                        let now = tokio::time::Instant::now();
                        stalled_since = Some(now);
                        stalled.as_mut().reset(now + opts.send_timeout);
                    }
                },
                _ = &mut idle, if reading && calls.is_empty() => {
                    let last = last_input.max(last_reply);
                    if last.elapsed() < opts.idle_timeout {
                        idle.as_mut().reset(last + opts.idle_timeout);
                    } else if opts.events.0.is_subscribed(opts.events.1) {
                        idle.as_mut().reset(tokio::time::Instant::now() + opts.idle_timeout);
                    } else {
                        tracing::info!(peer = %opts.peer, "idle timeout; closing");
                        reading = false;
                    }
                }
                // A large frame that stops arriving gives its place in line (and its bytes)
                // back: the oldest one may always go on reading, so it must not stall.
                _ = &mut frame_timer, if reading && ticket.is_some() => {
                    if last_input.elapsed() >= opts.frame_timeout {
                        tracing::info!(peer = %opts.peer, buffered = input.len(), "large frame stalled (body_timeout); closing");
                        if let Some(m) = &opts.metrics {
                            m.refused("frame_timeout");
                        }
                        break;
                    }
                    frame_timer.as_mut().reset(last_input + opts.frame_timeout);
                }
                _ = tick(&mut ticker), if reading && tick_every.is_some() => {
                    if let Err(Close(why, _)) = framer.tick(last_input.elapsed(), &mut out) {
                        log_close(&opts.peer, &why);
                        reading = false;
                    }
                }
            }
        }
        // What this connection held is freed before the lingering close.
        drop(out);
        drop(calls);
        drop((out_charge, in_charge, in_over, ticket));
        let _ = tokio::time::timeout(Duration::from_secs(5), wr.shutdown()).await;
        // A connection that wrote nothing lately has no reply in flight to protect: closing
        // it at once keeps an idle client from holding up shutdown by LINGER.
        if last_write.is_some_and(|t| t.elapsed() < LINGER) {
            linger(&mut rd).await;
        }
    }
}

/// The next tick of `ticker`; never without one.
async fn tick(ticker: &mut Option<tokio::time::Interval>) {
    match ticker {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// How long a closing connection reads what its client still sends.
const LINGER: Duration = Duration::from_millis(500);

/// After our FIN, read and drop what the client still sends, briefly and boundedly.
/// Closing a socket with unread input makes the kernel send RST, which can destroy
/// the error reply (STOMP ERROR, JSON-RPC error line) still in flight to the client.
async fn linger<R: AsyncRead + Unpin>(rd: &mut R) {
    const MAX_DRAIN: usize = 256 * 1024;
    // On the heap, and only now: an array here would be part of every connection's
    // future for its whole life (it made each stream connection 8 KiB bigger).
    let mut sink = vec![0u8; 8192];
    let mut drained = 0;
    let drain = async {
        while drained < MAX_DRAIN {
            match rd.read(&mut sink).await {
                Ok(n) if n > 0 => drained += n,
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

/// A ticker whose first tick is one period away. None is made for a framer that does not
/// tick (an interval allocates its timer).
fn ticker_for(every: Duration) -> tokio::time::Interval {
    let mut t = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Buf;
    use std::pin::Pin;
    use std::sync::Mutex;
    use std::task::{Context, Poll};

    /// Hands out `left` chunks, then EOF, and records how much room each read was
    /// given. A chunk is 100 bytes, or as much as the read has room for (`fill`: a peer
    /// with more to send than fits).
    struct Chunks {
        left: usize,
        fill: bool,
        room: Arc<Mutex<Vec<usize>>>,
    }

    impl AsyncRead for Chunks {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            self.room.lock().unwrap().push(buf.remaining());
            if self.left > 0 {
                self.left -= 1;
                let n = if self.fill { buf.remaining() } else { 100 };
                let n = n.min(buf.remaining());
                buf.put_slice(&vec![b'x'; n]);
            }
            Poll::Ready(Ok(()))
        }
    }

    /// Consumes whatever arrives; starts no calls.
    struct Swallow;

    impl Framer for Swallow {
        type Done = ();
        fn decode(
            &mut self,
            input: &mut BytesMut,
            _: &mut Out,
            _: &mut Calls<()>,
            _: usize,
        ) -> Result<(), Close> {
            // Keep a few bytes back, as a codec does with the start of a partial frame.
            let keep = input.len().min(7);
            input.advance(input.len() - keep);
            Ok(())
        }
        fn reply(&mut self, _: (), _: &mut Out) {}
        fn event(&mut self, _: &Event, _: &Delivery, _: &mut Out) {}
        fn lost(&mut self, _: &Lost, _: &mut Out) {}
    }

    /// Takes every message whole; starts no calls.
    struct TakeAll;

    impl Framer for TakeAll {
        type Done = ();
        fn decode(
            &mut self,
            input: &mut BytesMut,
            _: &mut Out,
            _: &mut Calls<()>,
            _: usize,
        ) -> Result<(), Close> {
            input.clear();
            Ok(())
        }
        fn reply(&mut self, _: (), _: &mut Out) {}
        fn event(&mut self, _: &Event, _: &Delivery, _: &mut Out) {}
        fn lost(&mut self, _: &Lost, _: &mut Out) {}
    }

    /// Sends one 100-byte message, then nothing (a client idle between calls), and
    /// records the room each read is given.
    struct OneThenIdle {
        sent: bool,
        room: Arc<Mutex<Vec<usize>>>,
    }

    impl AsyncRead for OneThenIdle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            self.room.lock().unwrap().push(buf.remaining());
            if self.sent {
                // Never woken: the driver polls again only when something else of its
                // own (the release timer) makes it go round.
                return Poll::Pending;
            }
            self.sent = true;
            buf.put_slice(&[b'x'; 100]);
            Poll::Ready(Ok(()))
        }
    }

    /// Options with room to spare everywhere and no timeout that a test would meet.
    fn roomy_opts() -> DriveOpts {
        DriveOpts {
            max_in_flight: 8,
            max_in_flight_bytes: 1 << 20,
            budget: Budget::new(1 << 20),
            out_budget: Budget::new(1 << 20),
            max_out: MAX_OUT,
            idle_timeout: Duration::from_secs(60),
            send_timeout: Duration::from_secs(60),
            frame_timeout: Duration::from_secs(60),
            shutdown: CancellationToken::new(),
            kill: CancellationToken::new(),
            peer: "test".into(),
            events: (Arc::new(crate::events::EventHub::default()), 1),
            metrics: None,
        }
    }

    #[tokio::test]
    async fn an_idle_connection_waits_for_its_next_message_without_a_read_buffer() {
        let room = Arc::new(Mutex::new(Vec::new()));
        let rd = OneThenIdle {
            sent: false,
            room: room.clone(),
        };
        let (_tx, rx) = crate::events::outbox::outbox(1, Budget::new(1 << 20));
        let opts = roomy_opts();
        let driver = tokio::spawn(drive(
            rd,
            tokio::io::sink(),
            BytesMut::new(),
            TakeAll,
            rx,
            opts,
        ));
        // The buffers go RELEASE_AFTER after the message (up to twice that: the release
        // timer is moved only when it fires); the read after that is the one judged.
        // Waiting for it, not for a time: the bound is only against a hang.
        let mut seen = Vec::new();
        for _ in 0..200 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            seen = room.lock().unwrap().clone();
            if seen.iter().any(|&r| r < SMALL_READ_ROOM) {
                break;
            }
        }
        driver.abort();
        assert!(seen[0] >= SMALL_READ_ROOM, "{seen:?}");
        let last = *seen.last().unwrap();
        assert!(
            last <= FIRST_READ,
            "once the buffers were released, the wait for the next message reserved one: {seen:?}"
        );
    }

    /// The room each read of a connection fed by `Chunks { fill, .. }` gets.
    async fn read_rooms(fill: bool) -> Vec<usize> {
        let room = Arc::new(Mutex::new(Vec::new()));
        let rd = Chunks {
            left: 50,
            fill,
            room: room.clone(),
        };
        let (_tx, rx) = crate::events::outbox::outbox(1, Budget::new(1 << 20));
        let opts = roomy_opts();
        drive(rd, tokio::io::sink(), BytesMut::new(), Swallow, rx, opts).await;
        let room = room.lock().unwrap().clone();
        // 50 chunks and the EOF; no linger after our FIN, since nothing was written.
        assert_eq!(room.len(), 51, "{room:?}");
        room
    }

    #[tokio::test]
    async fn a_call_that_waits_is_charged_what_it_holds_at_least() {
        let budget = Budget::new(1 << 20);
        let mut calls: Calls<()> = Calls::new(budget.clone());
        calls.start(15, std::future::pending());
        assert_eq!(budget.used(), PARKED_CALL, "a parked 15-byte call");
        calls.start(15, std::future::ready(()));
        assert_eq!(
            budget.used(),
            PARKED_CALL,
            "one answered at once is not charged"
        );
        calls.start(1 << 16, std::future::pending());
        assert_eq!(budget.used(), PARKED_CALL + (1 << 16));
    }

    #[tokio::test]
    async fn a_peer_with_more_to_send_gets_room_for_many_frames() {
        let room = read_rooms(true).await;
        // The first read gets a small buffer; it fills it, so every read after it (with
        // a partial frame pending) gets the full room.
        assert!(room[0] >= SMALL_READ_ROOM, "{room:?}");
        assert!(
            room[1..51].iter().all(|&r| r >= READ_ROOM),
            "a read got less than {READ_ROOM} bytes of room: {room:?}"
        );
    }

    #[tokio::test]
    async fn a_peer_sending_little_keeps_a_small_buffer() {
        let room = read_rooms(false).await;
        // 100-byte messages never fill a read: the buffer stays small.
        assert!(
            room[..51]
                .iter()
                .all(|&r| (SMALL_READ_ROOM..READ_ROOM).contains(&r)),
            "{room:?}"
        );
    }
}
