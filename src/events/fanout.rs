//! Fanning events out to the other instances of a fleet, whatever engine carries them.
//!
//! One forwarding task per server owns the engine's connection(s). The hub hands it
//! each event published here, with its id, through a bounded queue, and has already
//! delivered it to this instance's subscribers: local delivery never waits for the
//! engine, nor stops when it is down. The task encodes each event ([`wire`]) into its
//! own queue of events waiting to be sent and sends them in the order of their ids (one
//! task, batches sent in order), so every instance sees one publisher's events in its
//! order. What the engine brings in is decoded and delivered through the hub with the
//! same matching, outboxes and slow-subscriber rule as a local publish.
//!
//! What a fleet client may rely on (docs/fleet.md; MODEL.md I1, I5, I6): at-least-once
//! on the wire, exactly once to subscribers, and no acknowledged publish lost without a
//! counted, logged gap:
//!
//! - **Engine away**: events published meanwhile wait (at most `queue` events and
//!   `queue_bytes` bytes; past that new ones are not fanned out, counted and logged) and
//!   are sent in order when it is back, and so are events published while connecting.
//!   A batch whose answer was lost is sent again.
//! - **Engine back with what it held** (a Redis restarted with persistence, a failover
//!   to a replica that has the entries): the engine says so ([`Publisher::fresh`] is
//!   false) and reading goes on after the last entry read: nothing is sent again and
//!   nothing old is delivered as new.
//! - **Engine back without it** ([`Publisher::fresh`]: the entries this instance read
//!   or sent are gone): the events it took in the last `resend_window` are sent again
//!   before anything newer (as many as fit within `queue`/`queue_bytes` with what
//!   waits; the rest is counted `not_resent` and logged with its ids), each carrying
//!   where the lost engine had put it. A receiver delivers such a copy only when it had
//!   not delivered it (by origin and seq) and the engine had taken it after this
//!   receiver started reading ([`Received::history`]): another origin's history is
//!   never replayed as news.
//! - **Receiving**: per publishing instance, an event whose sequence number is not past
//!   the last one delivered from it is skipped (a duplicate, counted); a gap is counted
//!   as missed and logged. The instance's own events, echoed back, are skipped.
//! - **Shutdown** ([`flush`](crate::events::flush)): after the calls in flight have
//!   finished, the task takes every event still queued and sends it, until the
//!   server's shutdown deadline; what it could not send is counted (`unflushed`) and
//!   logged as a gap naming its first and last id.
//!
//! An engine plugs in by implementing [`Backend`] (connect) with its [`Publisher`] and
//! [`Incoming`] halves; this module does the rest.

use crate::config::EventsConfig;
use crate::events::flush::{self, Flush, Stop};
use crate::events::forward::{Forward, Stats, Throttle};
use crate::events::id::random_u64;
use crate::events::{wire, Event, EventHub, EventId};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// An engine's error, as text for the log.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An engine: how to reach it and read the fleet's events on it.
pub(crate) trait Backend: Send + 'static {
    /// The sending half of one connection.
    type Publisher: Publisher;
    /// The receiving half: messages on the channel.
    type Incoming: Incoming;
    /// The engine and its address for the log (no credentials).
    fn describe(&self) -> String;
    /// Connect, and start reading where the last connection stopped (or, on an engine
    /// that lost what it held, from its start); both halves are dropped together when
    /// either fails, and this is called again after a backoff. The engine may report
    /// its lag in `stats`.
    fn connect(
        &mut self,
        stats: &Arc<Stats>,
    ) -> impl Future<Output = Result<(Self::Publisher, Self::Incoming), BoxError>> + Send;
}

/// One message for the engine.
pub(crate) struct Msg<'a> {
    /// The envelope ([`wire`]).
    pub bytes: &'a [u8],
    /// Sent again to an engine that lost it: where the engine had put it the first
    /// time (its mark from [`Publisher::publish`]), so that a reader can tell this copy
    /// from news ([`Received::history`]).
    pub first: Option<&'a str>,
}

/// Sends encoded events to the channel.
pub(crate) trait Publisher: Send + 'static {
    /// Has this engine lost what was given to the one before (a Redis restarted
    /// without persistence, a failover to a replica that lacks the entries, the stream
    /// deleted)? The fan-out then sends its recent events again. An engine that kept
    /// it (persistence, a replica with the entries) is not fresh: nothing is sent
    /// again.
    fn fresh(&self) -> bool;
    /// Send `batch` in order; `Ok` once the engine has taken every message, with the
    /// engine's mark for each (where it put it: a Redis entry id), or none.
    fn publish(
        &mut self,
        batch: &[Msg<'_>],
    ) -> impl Future<Output = Result<Vec<String>, BoxError>> + Send;
}

/// A message read from the channel.
pub(crate) struct Received {
    /// The envelope.
    pub data: Vec<u8>,
    /// A copy sent again to an engine that lost the original, which the engine had
    /// taken before this instance began reading it: the fleet's history, not news to
    /// this instance's subscribers (it would not have read it either).
    pub history: bool,
}

/// Receives what was published on the channel (this instance's own events included).
pub(crate) trait Incoming: Send + 'static {
    /// The next message; `None` once the connection is lost. Cancel-safe: a message is
    /// read once it is returned, and the next connection goes on after it.
    fn next(&mut self) -> impl Future<Output = Option<Received>> + Send;
}

/// Events taken from the queue and sent as one batch at most.
const BATCH: usize = 256;
/// How long connecting and subscribing may take before it counts as a failure.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The first reconnect delay; it doubles up to `reconnect_max`.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Other instances whose sequence numbers are tracked (for dedupe and `missed`); past
/// it the one heard from longest ago is forgotten, so a fleet that churns instance ids
/// cannot grow the table.
const MAX_ORIGINS: usize = 1_024;

/// Start forwarding `hub`'s events through `backend` until the returned handle flushes
/// it (or is dropped).
pub(crate) fn spawn<B: Backend>(hub: &Arc<EventHub>, config: &EventsConfig, backend: B) -> Flush {
    let (ask, stop) = flush::pair();
    let task = Task::new(hub, config, stop);
    let handle = tokio::spawn(task.run(backend, Backoff::new(config.reconnect_max())));
    Flush::new(ask, handle)
}

/// The bounds of the events waiting to be sent, and of those kept to send again.
struct Caps {
    events: usize,
    bytes: usize,
    /// How long a sent event is kept to send again.
    age: Duration,
}

/// One encoded event.
struct Out {
    bytes: Vec<u8>,
    id: EventId,
    /// When the task took it from the hub (a few milliseconds after it was published).
    at: Instant,
    /// Put on the wire before: counted as resent when the engine takes it.
    again: bool,
    /// An engine took it before: counted as sent once, the first time.
    taken: bool,
    /// Where the first engine that took it put it (its mark), once one has.
    first: Option<String>,
}

/// Encoded events, oldest first, and the bytes they hold.
#[derive(Default)]
struct Queue {
    items: VecDeque<Out>,
    bytes: usize,
}

impl Queue {
    fn push_back(&mut self, out: Out) {
        self.bytes += out.bytes.len();
        self.items.push_back(out);
    }

    fn push_front(&mut self, out: Out) {
        self.bytes += out.bytes.len();
        self.items.push_front(out);
    }

    fn pop_front(&mut self) -> Option<Out> {
        let out = self.items.pop_front()?;
        self.bytes -= out.bytes.len();
        Some(out)
    }

    fn pop_back(&mut self) -> Option<Out> {
        let out = self.items.pop_back()?;
        self.bytes -= out.bytes.len();
        Some(out)
    }

    fn len(&self) -> usize {
        self.items.len()
    }
}

/// How a connected session ended.
enum End {
    /// The link failed (why, for the log): reconnect.
    Lost(String),
    /// Flushing, and nothing is left to send (or its deadline passed): stop.
    Done,
}

/// A run of event ids left out of the fan-out, for one log line: how many, the first
/// and the last.
#[derive(Default)]
struct Gap {
    count: u64,
    first: Option<EventId>,
    last: Option<EventId>,
}

impl Gap {
    fn add(&mut self, id: EventId) {
        self.count += 1;
        self.first.get_or_insert(id);
        self.last = Some(id);
    }

    fn ids(&self) -> String {
        match (self.first, self.last) {
            (Some(a), Some(b)) => format!("{a} to {b}"),
            _ => "none".into(),
        }
    }
}

struct Task {
    hub: Arc<EventHub>,
    /// This instance's id, the origin of its events: skipped when they come back.
    instance: u64,
    rx: mpsc::Receiver<Arc<Event>>,
    /// The hub's queue is closed and empty (flushing): nothing more comes in.
    drained: bool,
    stop: Stop,
    stats: Arc<Stats>,
    max_message: usize,
    caps: Caps,
    /// Encoded events waiting to be sent, in the order of their ids.
    waiting: Queue,
    /// Events the engine took in the last `caps.age`, to send again to a fresh one.
    sent: Queue,
    /// The last sequence number delivered from each other instance, and when it came
    /// (in `received` order).
    seen: HashMap<u64, (u64, u64)>,
    /// Events received so far: the clock of `seen`.
    tick: u64,
    refused_log: Throttle,
    down_log: Throttle,
    full_log: Throttle,
    gap_log: Throttle,
}

impl Task {
    /// The task for `hub`, set as its fan-out.
    fn new(hub: &Arc<EventHub>, config: &EventsConfig, stop: Stop) -> Task {
        // The hub's queue into the task holds `[events] queue` events at most, like the
        // task's own (which it drains into at once, connected or not): `Arc`s of events
        // the window shares. A hand-off of 8,192 dropped acknowledged events (counted,
        // but lost all the same) whenever the task was not scheduled for a moment while
        // publishers were fast: a SIGTERM test on a loaded 2-core machine lost 1,985 of
        // 11,927.
        let (tx, rx) = mpsc::channel(config.queue.max(1));
        let stats = Arc::new(Stats::default());
        hub.set_forward(Forward {
            tx,
            stats: stats.clone(),
            full: Throttle::default(),
        });
        Task {
            hub: hub.clone(),
            instance: hub.instance(),
            rx,
            drained: false,
            stop,
            stats,
            max_message: config.max_message,
            caps: Caps {
                events: config.queue.max(1),
                bytes: config.queue_bytes.max(1),
                age: config.resend_window(),
            },
            waiting: Queue::default(),
            sent: Queue::default(),
            seen: HashMap::new(),
            tick: 0,
            refused_log: Throttle::default(),
            down_log: Throttle::default(),
            full_log: Throttle::default(),
            gap_log: Throttle::default(),
        }
    }

    /// Flushing and nothing left to send.
    fn flushed(&self) -> bool {
        self.stop.flushing() && self.drained && self.waiting.len() == 0
    }

    /// A flush was asked for: take what the hub still has queued (nothing more can
    /// come), send it, then stop.
    fn begin_flush(&mut self) {
        self.rx.close();
        tracing::info!(
            waiting = self.waiting.len() + self.rx.len(),
            "events: shutting down: sending the events still queued for the engine"
        );
    }

    /// Events from the hub (`n` of them in `batch`; 0: its queue is closed and empty).
    fn took(&mut self, n: usize, batch: &mut Vec<Arc<Event>>) {
        if n == 0 {
            self.drained = true;
        } else {
            self.take(batch);
        }
    }

    async fn run<B: Backend>(mut self, mut backend: B, mut backoff: Backoff) {
        let engine = backend.describe();
        tracing::info!(
            engine,
            instance = format_args!("{:016x}", self.instance),
            "events: fanning out"
        );
        loop {
            if self.flushed() || self.stop.passed() {
                break;
            }
            let Some(connected) = self.connect(&mut backend).await else {
                break; // the flush's deadline passed while connecting
            };
            let why = match connected {
                Ok(Ok((publisher, incoming))) => {
                    self.stats.connects.fetch_add(1, Ordering::Relaxed);
                    self.stats.up.store(true, Ordering::Relaxed);
                    backoff.reset();
                    if publisher.fresh() {
                        let (n, dropped) = self.resend_all();
                        tracing::warn!(
                            engine,
                            resend = n,
                            not_resent = dropped,
                            "events: the engine lost what it was given; sending this instance's recent events again (receivers skip what they delivered, by id)"
                        );
                    }
                    tracing::info!(engine, waiting = self.waiting.len(), "events: connected");
                    let end = self.session(publisher, incoming).await;
                    self.stats.up.store(false, Ordering::Relaxed);
                    match end {
                        End::Lost(why) => why,
                        End::Done => break,
                    }
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {CONNECT_TIMEOUT:?}"),
            };
            let delay = backoff.next();
            if let Some(more) = self.down_log.allow() {
                tracing::warn!(
                    engine,
                    error = why,
                    retry_in = ?delay,
                    waiting = self.waiting.len(),
                    more,
                    "events: engine unreachable; events are delivered on this instance and kept (bounded) to send when it is back"
                );
            }
            if !self.wait_down(delay).await {
                break;
            }
        }
        self.finish();
    }

    /// Connect, taking what the hub queues meanwhile (a connect may take seconds).
    /// `None` when a flush's deadline passed first.
    async fn connect<B: Backend>(
        &mut self,
        backend: &mut B,
    ) -> Option<Result<Result<(B::Publisher, B::Incoming), BoxError>, tokio::time::error::Elapsed>>
    {
        let stats = self.stats.clone();
        let connect = tokio::time::timeout(CONNECT_TIMEOUT, backend.connect(&stats));
        tokio::pin!(connect);
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            let flushing = self.stop.flushing();
            let deadline = self.stop.deadline();
            tokio::select! {
                r = &mut connect => return Some(r),
                n = self.rx.recv_many(&mut batch, BATCH), if !self.drained => {
                    self.took(n, &mut batch);
                }
                () = self.stop.asked(), if !flushing => self.begin_flush(),
                () = tokio::time::sleep_until(deadline), if flushing => return None,
            }
        }
    }

    /// Connected: send what waits, take what the hub queues, deliver what arrives,
    /// until the link fails or, flushing, nothing is left to send.
    async fn session<P: Publisher, I: Incoming>(
        &mut self,
        mut publisher: P,
        mut incoming: I,
    ) -> End {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            if self.flushed() || self.stop.passed() {
                return End::Done;
            }
            let flushing = self.stop.flushing();
            let deadline = self.stop.deadline();
            // Unbiased: with all ready, each gets its turn.
            tokio::select! {
                msg = incoming.next() => match msg {
                    Some(m) => self.receive(&m),
                    None => return End::Lost("connection lost".into()),
                },
                n = self.rx.recv_many(&mut batch, BATCH), if !self.drained => {
                    self.took(n, &mut batch);
                }
                () = self.stop.asked(), if !flushing => self.begin_flush(),
                () = tokio::time::sleep_until(deadline), if flushing => return End::Done,
                () = std::future::ready(()), if self.waiting.len() > 0 => {
                    let sent = tokio::select! {
                        r = self.send(&mut publisher) => r,
                        // A batch cut short here counts as not sent (`unflushed`).
                        () = tokio::time::sleep_until(deadline) => return End::Done,
                    };
                    if let Err(e) = sent {
                        return End::Lost(e.to_string());
                    }
                }
            }
        }
    }

    /// Send the oldest waiting events (one batch); once the engine took them they are
    /// kept to send again (see [`Task::keep`]). A failed batch stays first in line,
    /// marked as sent before.
    async fn send<P: Publisher>(&mut self, publisher: &mut P) -> Result<(), BoxError> {
        let n = self.waiting.len().min(BATCH);
        let batch: Vec<Msg<'_>> = self
            .waiting
            .items
            .iter()
            .take(n)
            .map(|o| Msg {
                bytes: &o.bytes,
                first: o.first.as_deref(),
            })
            .collect();
        // While the engine answers (5 s at most, on a link that died silently), what the
        // hub queues is taken too, up to `queue`: the hand-off queue is small.
        let mut arrived = Vec::new();
        let room = self.caps.events.saturating_sub(self.waiting.len());
        let mut drained = self.drained;
        let sent = {
            let publish = publisher.publish(&batch);
            tokio::pin!(publish);
            loop {
                let limit = room.saturating_sub(arrived.len()).min(BATCH);
                tokio::select! {
                    r = &mut publish => break r,
                    k = self.rx.recv_many(&mut arrived, limit), if limit > 0 && !drained => {
                        drained |= k == 0;
                    }
                }
            }
        };
        drop(batch);
        if drained && !self.drained {
            self.took(0, &mut arrived);
        }
        if !arrived.is_empty() {
            self.take(&mut arrived);
        }
        let marks = match sent {
            Ok(marks) => marks,
            Err(e) => {
                for o in self.waiting.items.iter_mut().take(n) {
                    o.again = true;
                }
                return Err(e);
            }
        };
        let mut marks = marks.into_iter().take(n).fuse();
        for _ in 0..n {
            let Some(mut out) = self.waiting.pop_front() else {
                break;
            };
            let mark = marks.next();
            if !out.taken {
                // The first time an engine took it: sent, once, even when an earlier
                // try failed (then resent as well: it went on the wire twice).
                out.taken = true;
                out.first = mark;
                self.stats.sent.fetch_add(1, Ordering::Relaxed);
            }
            if out.again {
                self.stats.resent.fetch_add(1, Ordering::Relaxed);
            }
            self.keep(out);
        }
        self.stats
            .waiting
            .store(self.waiting.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Keep an event the engine took, for `caps.age`, within the caps (the oldest go).
    fn keep(&mut self, out: Out) {
        if self.caps.age.is_zero() {
            return;
        }
        self.sent.push_back(out);
        while self.sent.len() > self.caps.events || self.sent.bytes > self.caps.bytes {
            self.sent.pop_front();
        }
        self.expire();
    }

    /// Forget kept events older than `caps.age`.
    fn expire(&mut self) {
        while self
            .sent
            .items
            .front()
            .is_some_and(|o| o.at.elapsed() > self.caps.age)
        {
            self.sent.pop_front();
        }
    }

    /// The engine lost what it held: put the kept events back in line, before what
    /// waits (they are older), as many of the newest as fit within the caps with what
    /// waits. Returns how many were put back and how many did not fit (counted
    /// `not_resent`, logged with their ids: readers that had not read them miss them).
    fn resend_all(&mut self) -> (usize, usize) {
        self.expire();
        let mut n = 0;
        while let Some(mut out) = self.sent.pop_back() {
            if self.waiting.len() >= self.caps.events
                || self.waiting.bytes + out.bytes.len() > self.caps.bytes
            {
                self.sent.push_back(out);
                break;
            }
            out.again = true;
            self.waiting.push_front(out);
            n += 1;
        }
        let mut gap = Gap::default();
        while let Some(out) = self.sent.pop_front() {
            gap.add(out.id);
        }
        if gap.count > 0 {
            self.stats
                .not_resent
                .fetch_add(gap.count, Ordering::Relaxed);
            tracing::warn!(
                not_resent = gap.count,
                ids = gap.ids(),
                waiting = self.waiting.len(),
                "events: the engine lost events this instance had sent, and not all fit in [events] queue/queue_bytes with those waiting; the oldest are not sent again (instances that had not read them count them as missed)"
            );
        }
        self.stats
            .waiting
            .store(self.waiting.len() as u64, Ordering::Relaxed);
        (n, gap.count as usize)
    }

    /// Down for `delay`: events published meanwhile wait to be sent when the engine is
    /// back. False when a flush's deadline passed, or it has nothing left to send.
    async fn wait_down(&mut self, delay: Duration) -> bool {
        let until = tokio::time::Instant::now() + delay;
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            if self.flushed() {
                return false;
            }
            let flushing = self.stop.flushing();
            let deadline = self.stop.deadline();
            tokio::select! {
                () = tokio::time::sleep_until(until) => return true,
                () = self.stop.asked(), if !flushing => self.begin_flush(),
                () = tokio::time::sleep_until(deadline), if flushing => return false,
                n = self.rx.recv_many(&mut batch, BATCH), if !self.drained => {
                    self.took(n, &mut batch);
                }
            }
        }
    }

    /// Stopping: what was not sent is a gap, counted (`unflushed`) and logged with its
    /// first and last id.
    fn finish(&mut self) {
        self.rx.close();
        let mut gap = Gap::default();
        for out in &self.waiting.items {
            gap.add(out.id);
        }
        while let Ok(event) = self.rx.try_recv() {
            gap.add(event.id());
        }
        self.waiting = Queue::default();
        self.stats.waiting.store(0, Ordering::Relaxed);
        if gap.count == 0 {
            tracing::info!(
                sent = self.stats.sent.load(Ordering::Relaxed),
                "events: fan-out stopped with nothing left to send"
            );
            return;
        }
        self.stats.unflushed.fetch_add(gap.count, Ordering::Relaxed);
        tracing::warn!(
            unflushed = gap.count,
            ids = gap.ids(),
            "events: fan-out stopped with events not sent to the engine (unreachable or too slow until the shutdown deadline); the other instances never get them"
        );
    }

    /// Encode `batch` (emptying it) into the events waiting to be sent; an event over
    /// `max_message`, or past the caps, is not fanned out.
    fn take(&mut self, batch: &mut Vec<Arc<Event>>) {
        let now = Instant::now();
        for event in batch.drain(..) {
            let mut bytes = Vec::new();
            let why = match wire::encode(&mut bytes, &event) {
                Ok(()) if bytes.len() > self.max_message => {
                    format!("{} bytes, over [events] max_message", bytes.len())
                }
                Ok(())
                    if self.waiting.len() >= self.caps.events
                        || self.waiting.bytes + bytes.len() > self.caps.bytes =>
                {
                    self.stats.not_sent.fetch_add(1, Ordering::Relaxed);
                    if let Some(more) = self.full_log.allow() {
                        tracing::warn!(
                            event = event.name,
                            id = %event.id(),
                            waiting = self.waiting.len(),
                            bytes = self.waiting.bytes,
                            more,
                            "events: too many events waiting for the engine ([events] queue, queue_bytes); event delivered on this instance only"
                        );
                    }
                    continue;
                }
                Ok(()) => {
                    self.waiting.push_back(Out {
                        bytes,
                        id: event.id(),
                        at: now,
                        again: false,
                        taken: false,
                        first: None,
                    });
                    continue;
                }
                Err(e) => e,
            };
            self.stats.not_sent.fetch_add(1, Ordering::Relaxed);
            if let Some(more) = self.refused_log.allow() {
                tracing::warn!(
                    event = event.name,
                    error = why,
                    more,
                    "events: not fanned out"
                );
            }
        }
        self.stats
            .waiting
            .store(self.waiting.len() as u64, Ordering::Relaxed);
    }

    /// A message from the channel: another instance's event, our own echo, one
    /// delivered already, history, or junk.
    fn receive(&mut self, msg: &Received) {
        let event = match wire::decode(&msg.data, self.max_message) {
            Ok(event) => event,
            Err(why) => {
                self.stats.refused.fetch_add(1, Ordering::Relaxed);
                if let Some(more) = self.refused_log.allow() {
                    tracing::warn!(
                        error = why,
                        more,
                        "events: refused a message on the channel"
                    );
                }
                return;
            }
        };
        let id = event.id();
        if id.origin == self.instance {
            return; // delivered locally when it was published
        }
        if msg.history {
            // In the stream before this instance read it: not news here.
            count(&self.stats.history);
            return;
        }
        if self.seen.len() >= MAX_ORIGINS && !self.seen.contains_key(&id.origin) {
            let oldest = self
                .seen
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(o, _)| *o);
            if let Some(oldest) = oldest {
                self.seen.remove(&oldest);
            }
        }
        match self.seen.get(&id.origin).map(|(seq, _)| *seq) {
            Some(last) if id.seq <= last => {
                count(&self.stats.duplicate);
                return;
            }
            Some(last) if id.seq > last + 1 => {
                let gap = id.seq - last - 1;
                self.stats.missed.fetch_add(gap, Ordering::Relaxed);
                if let Some(more) = self.gap_log.allow() {
                    tracing::warn!(
                        origin = format_args!("{:016x}", id.origin),
                        after = last,
                        next = id.seq,
                        missed = gap,
                        more,
                        "events: another instance's events never arrived (its queue overflowed, it stopped with events unsent, or the stream lost or trimmed them)"
                    );
                }
            }
            _ => {}
        }
        self.tick += 1;
        self.seen.insert(id.origin, (id.seq, self.tick));
        count(&self.stats.received);
        self.hub.deliver(&Arc::new(event));
    }
}

fn count(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Reconnect delays: doubling from [`BACKOFF_MIN`] up to a cap, each drawn between half
/// and all of its step, so a fleet whose engine restarts does not reconnect in one burst.
pub(crate) struct Backoff {
    step: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(max: Duration) -> Self {
        Backoff {
            step: BACKOFF_MIN,
            max: max.max(BACKOFF_MIN),
        }
    }

    pub fn next(&mut self) -> Duration {
        let step = self.step;
        self.step = (step * 2).min(self.max);
        let frac = (random_u64() >> 11) as f64 / (1u64 << 53) as f64;
        step / 2 + step.mul_f64(frac / 2.0)
    }

    pub fn reset(&mut self) {
        self.step = BACKOFF_MIN;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_with_jitter_and_resets() {
        let mut b = Backoff::new(Duration::from_secs(1));
        let d: Vec<_> = (0..8).map(|_| b.next()).collect();
        assert!(d[0] >= Duration::from_millis(50) && d[0] <= Duration::from_millis(100));
        assert!(d[7] >= Duration::from_millis(500) && d[7] <= Duration::from_secs(1));
        b.reset();
        assert!(b.next() <= Duration::from_millis(100));
    }

    #[test]
    fn throttle_lets_one_line_a_second() {
        let t = Throttle::default();
        assert_eq!(t.allow(), Some(0));
        assert_eq!(t.allow(), None);
        assert_eq!(t.allow(), None);
    }

    #[test]
    fn jitter_differs() {
        assert_ne!(random_u64(), random_u64());
    }

    use rpcmux_value::{Map, Value};

    fn event(origin: u64, seq: u64) -> Received {
        let mut data = Vec::new();
        let e = Event::new("|t", Value::Struct(Box::default())).with_id(EventId { origin, seq });
        wire::encode(&mut data, &e).unwrap();
        Received {
            data,
            history: false,
        }
    }

    fn count(s: &std::sync::atomic::AtomicU64) -> u64 {
        s.load(Ordering::Relaxed)
    }

    #[test]
    fn receiving_skips_own_events_and_duplicates_and_counts_gaps() {
        let hub = Arc::new(EventHub::default());
        let mut task = Task::new(&hub, &EventsConfig::default(), flush::pair().1);
        let own = hub.instance();
        for (origin, seq) in [
            (7, 1),
            (7, 2),
            (7, 2),
            (7, 1),
            (own, 9),
            (7, 5),
            (8, 3),
            (7, 4),
        ] {
            task.receive(&event(origin, seq));
        }
        task.receive(&Received {
            data: b"junk".to_vec(),
            history: false,
        });
        let s = &task.stats;
        assert_eq!(count(&s.received), 4, "7-1, 7-2, 7-5, 8-3");
        assert_eq!(count(&s.duplicate), 3, "7-2 and 7-1 again, 7-4 after 7-5");
        assert_eq!(count(&s.missed), 2, "7-3 and 7-4 had not come when 7-5 did");
        assert_eq!(count(&s.refused), 1);
    }

    #[test]
    fn past_max_origins_the_one_heard_from_longest_ago_is_forgotten() {
        let hub = Arc::new(EventHub::default());
        let mut task = Task::new(&hub, &EventsConfig::default(), flush::pair().1);
        let busy = 1_000_000;
        for origin in 0..MAX_ORIGINS as u64 + 10 {
            task.receive(&event(origin + 10, 1));
            task.receive(&event(busy, origin + 1)); // heard from all along
        }
        assert_eq!(task.seen.len(), MAX_ORIGINS);
        task.receive(&event(busy, 5));
        assert_eq!(
            count(&task.stats.duplicate),
            1,
            "the busy origin is still known"
        );
        assert!(!task.seen.contains_key(&10), "the first quiet one went");
    }

    fn out(n: u8) -> Out {
        Out {
            bytes: vec![n; 10],
            id: EventId {
                origin: 1,
                seq: u64::from(n),
            },
            at: Instant::now(),
            again: false,
            taken: true,
            first: None,
        }
    }

    #[test]
    fn a_fresh_engine_gets_the_kept_events_first_in_order() {
        let hub = Arc::new(EventHub::default());
        let mut task = Task::new(&hub, &EventsConfig::default(), flush::pair().1);
        for n in 1..=3 {
            task.keep(out(n));
        }
        task.waiting.push_back(out(4));
        assert_eq!(task.resend_all(), (3, 0));
        let order: Vec<(u8, bool)> = task
            .waiting
            .items
            .iter()
            .map(|o| (o.bytes[0], o.again))
            .collect();
        assert_eq!(order, [(1, true), (2, true), (3, true), (4, false)]);
        assert_eq!(task.waiting.bytes, 40);
        assert_eq!((task.sent.len(), task.sent.bytes), (0, 0));
    }

    /// A publisher whose engine answers only when told.
    struct Stalled(Arc<tokio::sync::Notify>);

    impl Publisher for Stalled {
        fn fresh(&self) -> bool {
            false
        }

        async fn publish(&mut self, _: &[Msg<'_>]) -> Result<Vec<String>, BoxError> {
            self.0.notified().await;
            Ok(Vec::new())
        }
    }

    #[tokio::test]
    async fn events_published_while_the_engine_is_slow_to_answer_are_taken() {
        let hub = Arc::new(EventHub::default());
        let config = EventsConfig {
            queue: 64,
            ..EventsConfig::default()
        };
        let mut task = Task::new(&hub, &config, flush::pair().1);
        hub.publish("|t", Map::default());
        let mut first = Vec::new();
        task.rx.recv_many(&mut first, 8).await;
        task.take(&mut first);
        let answer = Arc::new(tokio::sync::Notify::new());
        let mut publisher = Stalled(answer.clone());
        // 100 events while the engine has not answered: more than the hand-off queue
        // (64 here) holds.
        let publishing = async {
            for _ in 0..100 {
                hub.publish("|t", Map::default());
                tokio::task::yield_now().await;
            }
            answer.notify_one();
        };
        let (sent, ()) = tokio::join!(task.send(&mut publisher), publishing);
        sent.unwrap();
        assert_eq!(count(&task.stats.not_sent), 0);
        assert_eq!(count(&task.stats.sent), 1);
        assert_eq!(task.waiting.len() + task.rx.len(), 100);
    }

    #[test]
    fn kept_and_waiting_events_are_bounded() {
        let hub = Arc::new(EventHub::default());
        let config = EventsConfig {
            queue: 3,
            queue_bytes: 1 << 20,
            ..EventsConfig::default()
        };
        let mut task = Task::new(&hub, &config, flush::pair().1);
        for n in 1..=5 {
            task.keep(out(n));
        }
        let kept: Vec<u8> = task.sent.items.iter().map(|o| o.bytes[0]).collect();
        assert_eq!(kept, [3, 4, 5], "the oldest go");
        task.caps.age = Duration::ZERO;
        task.keep(out(6));
        assert_eq!(task.sent.len(), 3, "with no window nothing more is kept");

        // Waiting: past `queue` new events are not fanned out, and counted.
        let mut batch: Vec<Arc<Event>> = (1..=5)
            .map(|seq| {
                Arc::new(
                    Event::new("|t", Value::Struct(Box::default()))
                        .with_id(EventId { origin: 1, seq }),
                )
            })
            .collect();
        task.take(&mut batch);
        assert_eq!(task.waiting.len(), 3);
        assert_eq!(count(&task.stats.not_sent), 2);
        assert_eq!(count(&task.stats.waiting), 3);
    }

    #[test]
    fn a_resend_stays_within_the_caps_and_names_what_it_drops() {
        let hub = Arc::new(EventHub::default());
        let config = EventsConfig {
            queue: 4,
            queue_bytes: 1 << 20,
            ..EventsConfig::default()
        };
        let mut task = Task::new(&hub, &config, flush::pair().1);
        for n in 1..=4 {
            task.keep(out(n));
        }
        task.waiting.push_back(out(5));
        task.waiting.push_back(out(6));
        // 4 kept + 2 waiting > queue (4): the two oldest kept are not re-sent.
        assert_eq!(task.resend_all(), (2, 2));
        let order: Vec<u8> = task.waiting.items.iter().map(|o| o.bytes[0]).collect();
        assert_eq!(order, [3, 4, 5, 6]);
        assert_eq!(count(&task.stats.not_resent), 2);
        assert!(task.waiting.len() <= config.queue);
    }

    /// A publisher whose first answer is lost, then takes everything.
    struct LosesFirst(bool);

    impl Publisher for LosesFirst {
        fn fresh(&self) -> bool {
            false
        }

        async fn publish(&mut self, batch: &[Msg<'_>]) -> Result<Vec<String>, BoxError> {
            if std::mem::replace(&mut self.0, false) {
                return Err("answer lost".into());
            }
            Ok((0..batch.len()).map(|n| format!("1-{n}")).collect())
        }
    }

    #[tokio::test]
    async fn an_event_sent_after_a_failed_try_counts_as_sent_once_and_resent() {
        let hub = Arc::new(EventHub::default());
        let mut task = Task::new(&hub, &EventsConfig::default(), flush::pair().1);
        hub.publish("|t", Map::default());
        let mut batch = Vec::new();
        task.rx.recv_many(&mut batch, 8).await;
        task.take(&mut batch);
        let mut publisher = LosesFirst(true);
        assert!(task.send(&mut publisher).await.is_err());
        task.send(&mut publisher).await.unwrap();
        assert_eq!(
            count(&task.stats.sent),
            1,
            "the event reached the engine once"
        );
        assert_eq!(count(&task.stats.resent), 1, "on its second try");
        assert_eq!(task.sent.items[0].first.as_deref(), Some("1-0"));
    }

    /// An engine that never answers a connect.
    struct Unreachable;

    impl Backend for Unreachable {
        type Publisher = LosesFirst;
        type Incoming = Never;

        fn describe(&self) -> String {
            "nowhere".into()
        }

        async fn connect(&mut self, _: &Arc<Stats>) -> Result<(LosesFirst, Never), BoxError> {
            std::future::pending().await
        }
    }

    struct Never;

    impl Incoming for Never {
        async fn next(&mut self) -> Option<Received> {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn events_queued_while_connecting_are_taken_and_a_flush_that_cannot_send_counts_them() {
        let hub = Arc::new(EventHub::default());
        let config = EventsConfig {
            queue: 10_000,
            ..EventsConfig::default()
        };
        let flush = spawn(&hub, &config, Unreachable);
        tokio::task::yield_now().await;
        // A burst near the hand-off's room, while the task waits on a connect.
        for _ in 0..8_292 {
            hub.publish("|t", Map::default());
            tokio::task::yield_now().await;
        }
        let stats = hub.fanout_stats().unwrap();
        assert_eq!(count(&stats.not_sent), 0, "nothing dropped");
        assert_eq!(
            count(&stats.waiting),
            8_292,
            "taken from the hand-off into the task's own queue while connecting"
        );
        flush.run(Duration::from_millis(100)).await;
        let stats = hub.fanout_stats().unwrap();
        assert_eq!(count(&stats.unflushed), 8_292);
        assert_eq!(count(&stats.waiting), 0);
    }
}
