//! Server events: verbs publish, subscribed sessions receive.
//!
//! - [`hub`]: the in-process hub every transport subscribes to (always there; alone it
//!   is the whole story for one instance).
//! - [`outbox`]: one session's queue of events, bounded by count and bytes.
//! - [`fanout`]: what any cross-instance backend needs, whatever engine carries it: the
//!   bounded outgoing queue, the instance id, capped backoff, the counters, and the
//!   [`Backend`](fanout::Backend) trait one engine implements.
//! - [`wire`]: the envelope an event travels in between instances.
//! - `redis`: a Redis stream as a backend (feature `events-redis`).
//!
//! Transports only ever see the hub: a backend feeds the hub what other instances
//! published, so adding one (NATS, a STOMP broker) touches none of them
//! (docs/fleet.md, "Adding a backend").

// Without a backend compiled in (the lean library), nothing drives the engine-neutral
// half: it is kept building so a backend feature only adds its engine.
mod event;
#[cfg_attr(not(feature = "events-redis"), allow(dead_code))]
pub(crate) mod fanout;
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
use tokio_util::sync::CancellationToken;

/// Start the backend `config.url` names, forwarding `hub`'s events through it until
/// `stop` is cancelled. No URL: the hub stays in-process and nothing starts. An unknown
/// scheme, or one this build lacks the feature for, is an error (the server does not
/// start); an engine that cannot be reached is not: it is retried in the background
/// while events are delivered locally.
pub(crate) fn start(
    hub: &Arc<EventHub>,
    config: &crate::config::EventsConfig,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let Some(url) = config.url.as_deref() else {
        return Ok(());
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
                fanout::spawn(hub, config, backend, stop);
                Ok(())
            }
            #[cfg(not(feature = "events-redis"))]
            {
                let _ = (hub, stop);
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
