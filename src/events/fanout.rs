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
//! At-least-once on the wire, exactly once to subscribers:
//!
//! - **Engine away**: events published meanwhile wait (at most `queue` events and
//!   `queue_bytes` bytes; past that new ones are not fanned out, counted and logged) and
//!   are sent in order when it is back. A batch whose answer was lost is sent again.
//! - **Engine back empty** (a Redis restarted without persistence: the engine's
//!   [`Publisher::fresh`]): the events it took in the last `resend_window` (kept within
//!   the same count and byte caps) are sent again before anything newer, so an event it
//!   took but no instance read yet still reaches them.
//! - **Receiving**: per publishing instance, an event whose sequence number is not past
//!   the last one delivered from it is skipped (a duplicate, counted); a gap is counted
//!   as missed and logged. The instance's own events, echoed back, are skipped.
//!
//! An engine plugs in by implementing [`Backend`] (connect) with its [`Publisher`] and
//! [`Incoming`] halves; this module does the rest.

use crate::config::EventsConfig;
use crate::events::forward::{Forward, Stats, Throttle};
use crate::events::id::random_u64;
use crate::events::{wire, Event, EventHub};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

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

/// Sends encoded events to the channel.
pub(crate) trait Publisher: Send + 'static {
    /// Is this engine a fresh one, holding nothing of what was sent to the one before
    /// (a Redis restarted without persistence)? The fan-out then sends its recent
    /// events again.
    fn fresh(&self) -> bool;
    /// Send `batch` in order; `Ok` once the engine has taken every message.
    fn publish(&mut self, batch: &[&[u8]]) -> impl Future<Output = Result<(), BoxError>> + Send;
}

/// Receives what was published on the channel (this instance's own events included).
pub(crate) trait Incoming: Send + 'static {
    /// The next message; `None` once the connection is lost. Cancel-safe: a message is
    /// read once it is returned, and the next connection goes on after it.
    fn next(&mut self) -> impl Future<Output = Option<Vec<u8>>> + Send;
}

/// Events taken from the queue and sent as one batch at most.
const BATCH: usize = 256;
/// The hub's queue into the task holds this many at most (the task drains it into its
/// own, bounded by count and bytes, at once, connected or not).
const HANDOFF: usize = 8_192;
/// How long connecting and subscribing may take before it counts as a failure.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The first reconnect delay; it doubles up to `reconnect_max`.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Other instances whose sequence numbers are tracked (for dedupe and `missed`); past
/// it the one heard from longest ago is forgotten, so a fleet that churns instance ids
/// cannot grow the table.
const MAX_ORIGINS: usize = 1_024;

/// Start forwarding `hub`'s events through `backend` until `stop`.
pub(crate) fn spawn<B: Backend>(
    hub: &Arc<EventHub>,
    config: &EventsConfig,
    backend: B,
    stop: CancellationToken,
) {
    let task = Task::new(hub, config);
    tokio::spawn(task.run(backend, Backoff::new(config.reconnect_max()), stop));
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
    /// When the task took it from the hub (a few milliseconds after it was published).
    at: Instant,
    /// Sent before: counted as resent, not sent, when the engine takes it.
    again: bool,
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

    fn pop_front(&mut self) -> Option<Out> {
        let out = self.items.pop_front()?;
        self.bytes -= out.bytes.len();
        Some(out)
    }

    fn len(&self) -> usize {
        self.items.len()
    }
}

struct Task {
    hub: Arc<EventHub>,
    /// This instance's id, the origin of its events: skipped when they come back.
    instance: u64,
    rx: mpsc::Receiver<Arc<Event>>,
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
    fn new(hub: &Arc<EventHub>, config: &EventsConfig) -> Task {
        let (tx, rx) = mpsc::channel(config.queue.clamp(1, HANDOFF));
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

    async fn run<B: Backend>(
        mut self,
        mut backend: B,
        mut backoff: Backoff,
        stop: CancellationToken,
    ) {
        let engine = backend.describe();
        tracing::info!(
            engine,
            instance = format_args!("{:016x}", self.instance),
            "events: fanning out"
        );
        loop {
            let connected = tokio::select! {
                _ = stop.cancelled() => return,
                r = tokio::time::timeout(CONNECT_TIMEOUT, backend.connect(&self.stats)) => r,
            };
            let why = match connected {
                Ok(Ok((publisher, incoming))) => {
                    self.stats.connects.fetch_add(1, Ordering::Relaxed);
                    self.stats.up.store(true, Ordering::Relaxed);
                    backoff.reset();
                    if publisher.fresh() {
                        let n = self.resend_all();
                        tracing::warn!(
                            engine,
                            resend = n,
                            "events: the engine came back empty (restarted without persistence); sending this instance's recent events again and reading its stream from the start"
                        );
                    }
                    tracing::info!(engine, waiting = self.waiting.len(), "events: connected");
                    let why = tokio::select! {
                        _ = stop.cancelled() => None,
                        why = self.session(publisher, incoming) => Some(why),
                    };
                    self.stats.up.store(false, Ordering::Relaxed);
                    let Some(why) = why else { return };
                    why
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
            if !self.wait_down(delay, &stop).await {
                return;
            }
        }
    }

    /// Connected: send what waits, take what the hub queues, deliver what arrives,
    /// until the link fails.
    async fn session<P: Publisher, I: Incoming>(
        &mut self,
        mut publisher: P,
        mut incoming: I,
    ) -> String {
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            // Unbiased: with all three ready, each gets its turn.
            tokio::select! {
                msg = incoming.next() => match msg {
                    Some(m) => self.receive(&m),
                    None => return "connection lost".into(),
                },
                n = self.rx.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return "hub gone".into();
                    }
                    self.take(&mut batch);
                }
                () = std::future::ready(()), if self.waiting.len() > 0 => {
                    if let Err(e) = self.send(&mut publisher).await {
                        return e.to_string();
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
        let batch: Vec<&[u8]> = self
            .waiting
            .items
            .iter()
            .take(n)
            .map(|o| o.bytes.as_slice())
            .collect();
        // While the engine answers (5 s at most, on a link that died silently), what the
        // hub queues is taken too, up to `queue`: the hand-off queue is small.
        let mut arrived = Vec::new();
        let room = self.caps.events.saturating_sub(self.waiting.len());
        let sent = {
            let publish = publisher.publish(&batch);
            tokio::pin!(publish);
            loop {
                let limit = room.saturating_sub(arrived.len()).min(BATCH);
                tokio::select! {
                    r = &mut publish => break r,
                    k = self.rx.recv_many(&mut arrived, limit), if limit > 0 => {
                        if k == 0 {
                            break (&mut publish).await; // the hub is gone
                        }
                    }
                }
            }
        };
        drop(batch);
        if !arrived.is_empty() {
            self.take(&mut arrived);
        }
        if let Err(e) = sent {
            for o in self.waiting.items.iter_mut().take(n) {
                o.again = true;
            }
            return Err(e);
        }
        for _ in 0..n {
            let Some(out) = self.waiting.pop_front() else {
                break;
            };
            let counter = if out.again {
                &self.stats.resent
            } else {
                &self.stats.sent
            };
            counter.fetch_add(1, Ordering::Relaxed);
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

    /// The engine lost what it held: put every kept event back in line, before what
    /// waits (they are older). Returns how many.
    fn resend_all(&mut self) -> usize {
        self.expire();
        let n = self.sent.len();
        while let Some(mut out) = self.sent.items.pop_back() {
            out.again = true;
            self.waiting.bytes += out.bytes.len();
            self.waiting.items.push_front(out);
        }
        self.sent.bytes = 0;
        self.stats
            .waiting
            .store(self.waiting.len() as u64, Ordering::Relaxed);
        n
    }

    /// Down for `delay`: events published meanwhile wait to be sent when the engine is
    /// back. False when `stop` came.
    async fn wait_down(&mut self, delay: Duration, stop: &CancellationToken) -> bool {
        let until = tokio::time::Instant::now() + delay;
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return false,
                _ = tokio::time::sleep_until(until) => return true,
                n = self.rx.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return false;
                    }
                    self.take(&mut batch);
                }
            }
        }
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
                        at: now,
                        again: false,
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
    /// delivered already, or junk.
    fn receive(&mut self, msg: &[u8]) {
        let event = match wire::decode(msg, self.max_message) {
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
                self.stats.duplicate.fetch_add(1, Ordering::Relaxed);
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
                        "events: another instance's events never arrived (its queue overflowed, or the stream was trimmed past them)"
                    );
                }
            }
            _ => {}
        }
        self.tick += 1;
        self.seen.insert(id.origin, (id.seq, self.tick));
        self.stats.received.fetch_add(1, Ordering::Relaxed);
        self.hub.deliver(&Arc::new(event));
    }
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

    use crate::events::EventId;
    use rpcmux_value::{Map, Value};

    fn event(origin: u64, seq: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let e = Event::new("|t", Value::Struct(Box::default())).with_id(EventId { origin, seq });
        wire::encode(&mut out, &e).unwrap();
        out
    }

    fn count(s: &std::sync::atomic::AtomicU64) -> u64 {
        s.load(Ordering::Relaxed)
    }

    #[test]
    fn receiving_skips_own_events_and_duplicates_and_counts_gaps() {
        let hub = Arc::new(EventHub::default());
        let mut task = Task::new(&hub, &EventsConfig::default());
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
        task.receive(b"junk");
        let s = &task.stats;
        assert_eq!(count(&s.received), 4, "7-1, 7-2, 7-5, 8-3");
        assert_eq!(count(&s.duplicate), 3, "7-2 and 7-1 again, 7-4 after 7-5");
        assert_eq!(count(&s.missed), 2, "7-3 and 7-4 had not come when 7-5 did");
        assert_eq!(count(&s.refused), 1);
    }

    #[test]
    fn past_max_origins_the_one_heard_from_longest_ago_is_forgotten() {
        let hub = Arc::new(EventHub::default());
        let mut task = Task::new(&hub, &EventsConfig::default());
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
            at: Instant::now(),
            again: false,
        }
    }

    #[test]
    fn a_fresh_engine_gets_the_kept_events_first_in_order() {
        let hub = Arc::new(EventHub::default());
        let mut task = Task::new(&hub, &EventsConfig::default());
        for n in 1..=3 {
            task.keep(out(n));
        }
        task.waiting.push_back(out(4));
        assert_eq!(task.resend_all(), 3);
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

        async fn publish(&mut self, _: &[&[u8]]) -> Result<(), BoxError> {
            self.0.notified().await;
            Ok(())
        }
    }

    #[tokio::test]
    async fn events_published_while_the_engine_is_slow_to_answer_are_taken() {
        let hub = Arc::new(EventHub::default());
        let config = EventsConfig {
            queue: 64,
            ..EventsConfig::default()
        };
        let mut task = Task::new(&hub, &config);
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
        let mut task = Task::new(&hub, &config);
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
}
