//! Fanning events out to the other instances of a fleet, whatever engine carries them.
//!
//! One forwarding task per server owns the engine's connection(s). The hub hands it
//! each event published here through a bounded queue and has already delivered it to
//! this instance's subscribers: local delivery never waits for the engine, nor stops
//! when it is down. The task sends events in the order they were published (one task,
//! batches sent in order), so every instance sees one publisher's events in its order.
//! What the engine brings in is decoded ([`crate::events::wire`]) and delivered through the hub
//! with the same matching, outboxes and slow-subscriber rule as a local publish; the
//! instance's own events, echoed back, are skipped, so each subscriber gets each event
//! exactly once.
//!
//! Pub/sub is at-most-once across instances: while the engine is unreachable, events
//! are delivered locally only, counted as not fanned out and logged (rate-limited);
//! nothing is replayed after a reconnect. A receiver counts the gaps it sees in another
//! instance's sequence numbers as missed.
//!
//! An engine plugs in by implementing [`Backend`] (connect and subscribe) with its
//! [`Publisher`] and [`Incoming`] halves; this module does the rest.

use crate::config::EventsConfig;
use crate::events::forward::{Forward, Stats, Throttle};
use crate::events::{wire, Event, EventHub};
use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// An engine's error, as text for the log.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A pub/sub engine: how to reach it and subscribe to the fleet's channel.
pub(crate) trait Backend: Send + 'static {
    /// The sending half of one connection.
    type Publisher: Publisher;
    /// The receiving half: messages on the channel.
    type Incoming: Incoming;
    /// The engine and its address for the log (no credentials).
    fn describe(&self) -> String;
    /// Connect and subscribe to the channel; both halves are dropped together when
    /// either fails, and this is called again after a backoff.
    fn connect(
        &mut self,
    ) -> impl Future<Output = Result<(Self::Publisher, Self::Incoming), BoxError>> + Send;
}

/// Sends encoded events to the channel.
pub(crate) trait Publisher: Send + 'static {
    /// Send `batch` in order; `Ok` once the engine has taken every message.
    fn publish(&mut self, batch: &[Vec<u8>]) -> impl Future<Output = Result<(), BoxError>> + Send;
}

/// Receives what was published on the channel (this instance's own events included).
pub(crate) trait Incoming: Send + 'static {
    /// The next message; `None` once the connection is lost.
    fn next(&mut self) -> impl Future<Output = Option<Vec<u8>>> + Send;
}

/// Events taken from the queue and sent as one batch at most.
const BATCH: usize = 256;
/// How long connecting and subscribing may take before it counts as a failure.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The first reconnect delay; it doubles up to `reconnect_max`.
const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// Other instances whose sequence numbers are tracked (for `missed`); past it the
/// table starts over, so a fleet that churns instance ids cannot grow it.
const MAX_ORIGINS: usize = 1_024;

/// Start forwarding `hub`'s events through `backend` until `stop`.
pub(crate) fn spawn<B: Backend>(
    hub: &Arc<EventHub>,
    config: &EventsConfig,
    backend: B,
    stop: CancellationToken,
) {
    let (tx, rx) = mpsc::channel(config.queue.max(1));
    let stats = Arc::new(Stats::default());
    hub.set_forward(Forward {
        tx,
        stats: stats.clone(),
        full: Throttle::default(),
    });
    let task = Task {
        hub: hub.clone(),
        rx,
        stats,
        origin: random_u64(),
        seq: 0,
        max_message: config.max_message,
        seen: HashMap::new(),
        refused_log: Throttle::default(),
        down_log: Throttle::default(),
    };
    tokio::spawn(task.run(backend, Backoff::new(config.reconnect_max()), stop));
}

struct Task {
    hub: Arc<EventHub>,
    rx: mpsc::Receiver<Arc<Event>>,
    stats: Arc<Stats>,
    /// This instance's id in the envelopes, to skip its own events coming back.
    origin: u64,
    /// Events this instance has taken to send.
    seq: u64,
    max_message: usize,
    /// The last sequence number seen from each other instance.
    seen: HashMap<u64, u64>,
    refused_log: Throttle,
    down_log: Throttle,
}

impl Task {
    async fn run<B: Backend>(
        mut self,
        mut backend: B,
        mut backoff: Backoff,
        stop: CancellationToken,
    ) {
        let engine = backend.describe();
        tracing::info!(engine, instance = self.origin, "events: fanning out");
        loop {
            let connected = tokio::select! {
                _ = stop.cancelled() => return,
                r = tokio::time::timeout(CONNECT_TIMEOUT, backend.connect()) => r,
            };
            let why = match connected {
                Ok(Ok((publisher, incoming))) => {
                    self.stats.connects.fetch_add(1, Ordering::Relaxed);
                    self.stats.up.store(true, Ordering::Relaxed);
                    tracing::info!(engine, "events: connected and subscribed");
                    backoff.reset();
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
                    more,
                    "events: engine unreachable; events are delivered on this instance only until it is back"
                );
            }
            if !self.wait_down(delay, &stop).await {
                return;
            }
        }
    }

    /// Connected: send what is queued, deliver what arrives, until the link fails.
    async fn session<P: Publisher, I: Incoming>(
        &mut self,
        mut publisher: P,
        mut incoming: I,
    ) -> String {
        let mut batch = Vec::with_capacity(BATCH);
        let mut wire = Vec::with_capacity(BATCH);
        loop {
            tokio::select! {
                msg = incoming.next() => match msg {
                    Some(m) => self.receive(&m),
                    None => return "connection lost".into(),
                },
                n = self.rx.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return "hub gone".into();
                    }
                    self.encode(&mut batch, &mut wire);
                    if wire.is_empty() {
                        continue;
                    }
                    let sent = publisher.publish(&wire).await;
                    let n = wire.len() as u64;
                    wire.clear();
                    match sent {
                        Ok(()) => self.stats.sent.fetch_add(n, Ordering::Relaxed),
                        Err(e) => {
                            self.stats.not_sent.fetch_add(n, Ordering::Relaxed);
                            return e.to_string();
                        }
                    };
                }
            }
        }
    }

    /// Down for `delay`: events published meanwhile are counted as not fanned out
    /// (delivering them after a reconnect would hand subscribers stale news out of
    /// order with fresh). False when `stop` came.
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
                    self.seq += n as u64;
                    self.stats.not_sent.fetch_add(n as u64, Ordering::Relaxed);
                    batch.clear();
                }
            }
        }
    }

    /// Encode `batch` into `wire` (emptying `batch`); an event over `max_message` is
    /// not sent.
    fn encode(&mut self, batch: &mut Vec<Arc<Event>>, wire: &mut Vec<Vec<u8>>) {
        for event in batch.drain(..) {
            self.seq += 1;
            let mut out = Vec::new();
            let why = match wire::encode(&mut out, self.origin, self.seq, &event) {
                Ok(()) if out.len() <= self.max_message => {
                    wire.push(out);
                    continue;
                }
                Ok(()) => format!("{} bytes, over [events] max_message", out.len()),
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
    }

    /// A message from the channel: another instance's event, our own echo, or junk.
    fn receive(&mut self, msg: &[u8]) {
        let env = match wire::decode(msg, self.max_message) {
            Ok(env) => env,
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
        if env.origin == self.origin {
            return; // delivered locally when it was published
        }
        if self.seen.len() >= MAX_ORIGINS && !self.seen.contains_key(&env.origin) {
            self.seen.clear();
        }
        let last = self.seen.insert(env.origin, env.seq);
        if let Some(last) = last {
            if env.seq > last + 1 {
                self.stats
                    .missed
                    .fetch_add(env.seq - last - 1, Ordering::Relaxed);
            }
        }
        self.stats.received.fetch_add(1, Ordering::Relaxed);
        self.hub.deliver(&Arc::new(env.event));
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

/// A random u64 from the standard library's per-process random hash keys: enough for an
/// instance id and backoff jitter without a dependency for it.
fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
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
    fn instance_ids_differ() {
        assert_ne!(random_u64(), random_u64());
    }
}
