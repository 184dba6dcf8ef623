//! Redis pub/sub as the events backend (`--events redis://HOST:PORT[/DB]`).
//!
//! One RESP3 connection per instance both publishes and is subscribed to the fleet's
//! channel: RESP3 lets a subscribed connection still send commands, so there is one link
//! whose failure means "down", not two to keep in step. Messages arrive as pushes, which
//! the `redis` crate hands to a sender of ours without waiting: a bounded queue, so an
//! instance that cannot keep up drops messages (they show as missed, through the
//! sequence numbers) rather than growing without end, as the crate's own pub/sub stream
//! (an unbounded channel) would. Reconnecting and resubscribing are the fan-out task's
//! (it calls [`Backend::connect`] again), not the crate's connection manager: the task
//! must know when the link is up (the `up` gauge, counting what is not fanned out) and
//! must not have a publish stall in the crate's own retries while later events queue.

use crate::events::fanout::{Backend, BoxError, Incoming, Publisher};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, IntoConnectionInfo, ProtocolVersion, PushKind};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How long one command (a batch of publishes, the subscribe) may wait for its reply.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a TCP connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The fleet's channel on one Redis server.
pub(crate) struct RedisBackend {
    client: Client,
    channel: String,
    /// Messages received and not yet delivered, at most.
    queue: usize,
}

impl RedisBackend {
    /// A backend for `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`); nothing is connected
    /// yet. A malformed URL is an error.
    pub fn new(url: &str, channel: &str, queue: usize) -> Result<Self, BoxError> {
        if channel.is_empty() {
            return Err("[events] channel is empty".into());
        }
        let info = url.into_connection_info()?;
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(ProtocolVersion::RESP3);
        let client = Client::open(info.set_redis_settings(settings))?;
        Ok(RedisBackend {
            client,
            channel: channel.to_owned(),
            queue: queue.max(1),
        })
    }
}

impl Backend for RedisBackend {
    type Publisher = RedisPublisher;
    type Incoming = RedisIncoming;

    fn describe(&self) -> String {
        let info = self.client.get_connection_info();
        format!(
            "redis {}/{} channel {}",
            info.addr(),
            info.redis_settings().db(),
            self.channel
        )
    }

    async fn connect(&mut self) -> Result<(RedisPublisher, RedisIncoming), BoxError> {
        let (tx, rx) = mpsc::channel(self.queue);
        let lost = CancellationToken::new();
        let on_push = {
            let lost = lost.clone();
            move |push: redis::PushInfo| -> Result<(), ()> {
                match push.kind {
                    PushKind::Message => {
                        if let Some(redis::Value::BulkString(payload)) =
                            push.data.into_iter().nth(1)
                        {
                            // Full: this instance is behind; the event is dropped here and
                            // counted as missed from its sequence number.
                            let _ = tx.try_send(payload);
                        }
                    }
                    PushKind::Disconnection => lost.cancel(),
                    _ => {}
                }
                Ok(())
            }
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_push_sender(on_push);
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        conn.subscribe(&self.channel).await?;
        Ok((
            RedisPublisher {
                conn,
                channel: self.channel.clone(),
            },
            RedisIncoming { rx, lost },
        ))
    }
}

/// Publishes on the shared connection.
pub(crate) struct RedisPublisher {
    conn: MultiplexedConnection,
    channel: String,
}

impl Publisher for RedisPublisher {
    async fn publish(&mut self, batch: &[Vec<u8>]) -> Result<(), BoxError> {
        // One pipeline: the PUBLISHes go out back to back and in order, one round trip.
        let mut pipe = redis::pipe();
        for msg in batch {
            pipe.publish(&self.channel, msg.as_slice()).ignore();
        }
        pipe.query_async::<()>(&mut self.conn).await?;
        Ok(())
    }
}

/// The messages the connection was pushed.
pub(crate) struct RedisIncoming {
    rx: mpsc::Receiver<Vec<u8>>,
    lost: CancellationToken,
}

impl Incoming for RedisIncoming {
    async fn next(&mut self) -> Option<Vec<u8>> {
        tokio::select! {
            biased;
            m = self.rx.recv() => m,
            _ = self.lost.cancelled() => None,
        }
    }
}
