//! Server events: verbs publish, subscribed sessions receive.
//!
//! - [`hub`]: the in-process hub every transport subscribes to (always there; alone it
//!   is the whole story for one instance).
//! - [`outbox`]: one session's queue of events, bounded by count and bytes.
//! - [`fanout`]: what any cross-instance backend needs, whatever engine carries it: the
//!   bounded outgoing queue, the instance id, capped backoff, the counters, and the
//!   [`Backend`](fanout::Backend) trait one engine implements.
//! - [`flush`]: stopping the fan-out at shutdown after the calls, sending what waits.
//! - [`wire`]: the envelope an event travels in between instances.
//! - `redis`: a Redis stream as a backend (feature `events-redis`).
//!
//! Transports only ever see the hub: a backend feeds the hub what other instances
//! published, so adding one (NATS, a STOMP broker) touches none of them
//! (docs/fleet.md, "Adding a backend").
//!
//! # The delivery model: what a client may rely on
//!
//! One statement for the whole event path (docs/events.md, "The delivery model", says
//! it for users; `tests/events_model` checks recorded histories against it under
//! generated fault schedules). An event has an id `(origin, seq)`; a *session* is one
//! connection or WebSocket session that subscribed.
//!
//! - **I1 ids**: unique across a fleet; per origin, `seq` increases in publish order and
//!   is never reused (`id`).
//! - **I2 order**: on one connection, one origin's events arrive in increasing `seq`,
//!   replayed and live alike (`hub`: a delivery and a subscription never overlap).
//! - **I3 reply first**: no event of a subscription is written before the reply that
//!   made it (`outbox`'s holds; STOMP: its RECEIPT, written before the replay).
//! - **I4 no silent gap**: on a connection, from the first event a subscription got,
//!   every matching event the instance delivered after it is written, unless an
//!   `events.lost` notice comes, whose `first_lost` is the first event *not* written
//!   (`outbox::Outbox::lost`).
//! - **I5 resume**: `subscribe(since = X)`, X the last id the client handled, gives every
//!   retained matching event after X, in order, then live ones, with no gap or duplicate
//!   at the seam; or error -32007 saying why, and nothing subscribed.
//! - **I6 acknowledged publishes**: a publish whose reply was sent is in the window and
//!   queued to the other instances; a loss (a full fan-out queue, shutdown) is counted
//!   and logged, never silent (`fanout`).
//! - **I7 unsubscribe**: after the `unsubscribe` reply, no event published after it is
//!   delivered for that subscription.
//! - **M1 memory**: what an event or a reply holds is charged to the output budget while
//!   it is held (one encoding per event and shape, whatever the subscribers; a reply's
//!   allocation until it is freed: `conn::out`).

// Without a backend compiled in (the lean library), nothing drives the engine-neutral
// half: it is kept building so a backend feature only adds its engine.
pub(crate) mod conn_subs;
mod event;
#[cfg_attr(not(feature = "events-redis"), allow(dead_code))]
pub(crate) mod fanout;
#[cfg_attr(not(feature = "events-redis"), allow(dead_code))]
pub(crate) mod flush;
pub(crate) mod forward;
mod hub;
mod id;
pub(crate) mod log;
mod options;
pub(crate) mod outbox;
#[cfg(feature = "events-redis")]
mod redis;
mod retention;
mod session;
#[cfg_attr(
    not(any(feature = "events-redis", feature = "events-log")),
    allow(dead_code)
)]
pub(crate) mod wire;

pub use event::Event;
pub use hub::EventHub;
pub use id::{EventId, Since};
pub(crate) use options::Options as SubOptions;
pub use outbox::Lost;
pub(crate) use retention::Bounds as RetentionBounds;
pub use session::Session;

use std::sync::Arc;

/// Start the backend `config.url` names, forwarding `hub`'s events through it until the
/// returned handle flushes it at shutdown (after the calls in flight: see [`flush`]) or
/// is dropped. No URL: the hub stays in-process and nothing starts. An unknown
/// scheme, or one this build lacks the feature for, is an error (the server does not
/// start); an engine that cannot be reached is not: it is retried in the background
/// while events are delivered locally.
pub(crate) fn start(
    hub: &Arc<EventHub>,
    config: &crate::config::EventsConfig,
) -> std::io::Result<Option<flush::Flush>> {
    let Some(url) = config.url.as_deref() else {
        return Ok(None);
    };
    let invalid = |msg: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, msg);
    let scheme = url.split_once("://").map_or("", |(s, _)| s);
    match scheme {
        "redis" => {
            #[cfg(feature = "events-redis")]
            {
                let backend =
                    redis::RedisBackend::new(url, &config.channel, config.max_len, hub.instance())
                        .map_err(|e| invalid(format!("[events] url {url:?}: {e}")))?;
                Ok(Some(fanout::spawn(hub, config, backend)))
            }
            #[cfg(not(feature = "events-redis"))]
            {
                let _ = hub;
                Err(invalid(
                    "[events] url is redis:// but rpcmux was built without the `events-redis` feature"
                        .into(),
                ))
            }
        }
        _ => Err(invalid(format!(
            "[events] url {url:?}: unknown scheme (supported: redis://HOST:PORT[/DB])"
        ))),
    }
}
