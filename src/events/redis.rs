//! A Redis stream as the events backend (`--events redis://HOST:PORT[/DB]`).
//!
//! Every instance appends its events to one stream (`XADD KEY MAXLEN ~ max_len * data
//! <envelope>`, pipelined in batches) and reads it on a connection of its own (`XREAD
//! BLOCK 1000 COUNT 512 STREAMS KEY <last id read>`), so a reader that reconnects goes on
//! after the last entry it took and reads what it missed, as long as the stream still
//! holds it (`max_len`).
//!
//! Redis may come back empty: a restarted server without persistence, or another
//! server behind the same address. Each connection asks the server's `run_id` (`INFO
//! server`); when it is not the one read before, the server is fresh: the reader starts
//! its stream from the beginning ("0"), and the publisher says so ([`Publisher::fresh`])
//! so the fan-out sends its recent events again (receivers drop what they already
//! delivered, by id). The first connection of a process starts at the stream's end: a
//! new instance does not deliver the fleet's history as news.
//!
//! Reconnecting is the fan-out task's (it calls [`Backend::connect`] again), not the
//! crate's connection manager: the task must know when the link is up (the `up` gauge)
//! and must not have a publish stall in the crate's own retries while later events queue.
//! The reader runs as a task of its own, handing entries over through a small bounded
//! queue: it reads no further while the fan-out is busy, so a slow instance falls behind
//! in the stream (its lag, sampled with `XINFO STREAM`), not in memory.

use crate::events::fanout::{Backend, BoxError, Incoming, Publisher};
use crate::events::forward::Stats;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, Value};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How long one command (a batch of XADDs, INFO, XINFO) may wait for its reply.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a TCP connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long one XREAD waits for entries (ms): also how often a reader looks up.
const BLOCK_MS: u64 = 1_000;
/// Entries one XREAD returns at most.
const READ_COUNT: usize = 512;
/// How often the reader samples its lag.
const LAG_EVERY: Duration = Duration::from_secs(1);

/// The fleet's stream on one Redis server.
pub(crate) struct RedisBackend {
    client: Client,
    key: String,
    max_len: usize,
    /// The connections' names (`CLIENT SETNAME`): `rpcmux-<instance>-`, then `pub` or
    /// `read`, so `CLIENT LIST` tells which instance is which.
    name: String,
    /// Where reading goes on after a reconnect (shared with the reader of the moment).
    pos: Arc<Mutex<Position>>,
}

/// Where this instance is in the stream.
#[derive(Debug, Default)]
struct Position {
    /// The server connected to last (`INFO server`'s `run_id`); `None` before the first.
    run_id: Option<String>,
    /// The id of the last entry handed to the fan-out (`0-0`: none yet).
    last: String,
    /// Entries handed over since `offset` was set: with the stream's `entries-added`,
    /// how far behind the reader is.
    consumed: u64,
    /// `entries-added` less `consumed` when the reader was last caught up.
    offset: u64,
}

impl Position {
    fn lock(pos: &Mutex<Position>) -> std::sync::MutexGuard<'_, Position> {
        pos.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl RedisBackend {
    /// A backend for `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`) and the stream `key`,
    /// for the instance `instance`; nothing is connected yet. A malformed URL is an
    /// error.
    pub fn new(url: &str, key: &str, max_len: usize, instance: u64) -> Result<Self, BoxError> {
        if key.is_empty() {
            return Err("[events] channel is empty".into());
        }
        Ok(RedisBackend {
            client: Client::open(url)?,
            key: key.to_owned(),
            max_len: max_len.max(1),
            name: format!("rpcmux-{instance:016x}-"),
            pos: Arc::default(),
        })
    }

    /// Name a connection (`pub`, `read`); a server that refuses (an ACL without
    /// `CLIENT SETNAME`) is not an error.
    async fn set_name(&self, conn: &mut MultiplexedConnection, what: &str) {
        let _: Result<(), _> = redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg(format!("{}{what}", self.name))
            .query_async(conn)
            .await;
    }

    fn config(response: Duration) -> AsyncConnectionConfig {
        AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(response))
    }
}

impl Backend for RedisBackend {
    type Publisher = RedisPublisher;
    type Incoming = RedisIncoming;

    fn describe(&self) -> String {
        let info = self.client.get_connection_info();
        format!(
            "redis {}/{} stream {}",
            info.addr(),
            info.redis_settings().db(),
            self.key
        )
    }

    async fn connect(
        &mut self,
        stats: &Arc<Stats>,
    ) -> Result<(RedisPublisher, RedisIncoming), BoxError> {
        let mut conn = self
            .client
            .get_multiplexed_async_connection_with_config(&Self::config(RESPONSE_TIMEOUT))
            .await?;
        self.set_name(&mut conn, "pub").await;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await?;
        let run_id = info
            .lines()
            .find_map(|l| l.strip_prefix("run_id:"))
            .map(|id| id.trim().to_owned())
            .ok_or("INFO server has no run_id")?;
        let end = stream_end(&mut conn, &self.key).await?;
        let mut reader = self
            .client
            .get_multiplexed_async_connection_with_config(&Self::config(
                RESPONSE_TIMEOUT + Duration::from_millis(BLOCK_MS),
            ))
            .await?;
        self.set_name(&mut reader, "read").await;
        let fresh = {
            let mut pos = Position::lock(&self.pos);
            let fresh = match &pos.run_id {
                // The first server: read what is appended from now on.
                None => {
                    let (last, added) = end.unwrap_or_else(|| ("0-0".into(), 0));
                    pos.last = last;
                    pos.offset = added;
                    pos.consumed = 0;
                    false
                }
                Some(old) if *old != run_id => {
                    pos.last = "0-0".into();
                    pos.offset = 0;
                    pos.consumed = 0;
                    true
                }
                Some(_) => false,
            };
            pos.run_id = Some(run_id);
            fresh
        };
        let (tx, rx) = mpsc::channel(READ_COUNT);
        let stop = CancellationToken::new();
        tokio::spawn(read(
            reader,
            self.key.clone(),
            self.pos.clone(),
            tx,
            stats.clone(),
            stop.clone(),
        ));
        Ok((
            RedisPublisher {
                conn,
                key: self.key.clone(),
                max_len: self.max_len,
                fresh,
            },
            RedisIncoming {
                rx,
                pos: self.pos.clone(),
                _stop: stop.drop_guard(),
            },
        ))
    }
}

/// The stream's last id and `entries-added` (0 before Redis 7, which has no such
/// field); `None` when there is no stream yet.
async fn stream_end(
    conn: &mut MultiplexedConnection,
    key: &str,
) -> Result<Option<(String, u64)>, BoxError> {
    let reply: Value = redis::cmd("XINFO")
        .arg("STREAM")
        .arg(key)
        .query_async(conn)
        .await
        .or_else(|e| match e.kind() {
            // "ERR no such key": no event was ever appended.
            redis::ErrorKind::Server(_) if e.to_string().contains("no such key") => Ok(Value::Nil),
            _ => Err(e),
        })?;
    if matches!(reply, Value::Nil) {
        return Ok(None);
    }
    let fields = pairs(reply);
    let mut last = None;
    let mut added = 0;
    for (k, v) in fields {
        match text(&k).as_deref() {
            Some("last-generated-id") => last = text(&v),
            Some("entries-added") => {
                if let Value::Int(n) = v {
                    added = n.max(0) as u64;
                }
            }
            _ => {}
        }
    }
    Ok(Some((
        last.ok_or("XINFO STREAM has no last-generated-id")?,
        added,
    )))
}

/// Read the stream from the last id handed over, handing each entry's `data` to the
/// fan-out, until the connection fails or `stop` (the halves were dropped).
async fn read(
    mut conn: MultiplexedConnection,
    key: String,
    pos: Arc<Mutex<Position>>,
    tx: mpsc::Sender<(String, Vec<u8>)>,
    stats: Arc<Stats>,
    stop: CancellationToken,
) {
    let mut last = Position::lock(&pos).last.clone();
    let mut sampled = Instant::now();
    loop {
        let mut xread = redis::cmd("XREAD");
        xread
            .arg("COUNT")
            .arg(READ_COUNT)
            .arg("BLOCK")
            .arg(BLOCK_MS)
            .arg("STREAMS")
            .arg(&key)
            .arg(&last);
        let xread = xread.query_async::<Value>(&mut conn);
        let reply = tokio::select! {
            _ = stop.cancelled() => return,
            r = xread => r,
        };
        let Ok(reply) = reply else {
            return; // the fan-out sees the queue close: connection lost
        };
        if matches!(reply, Value::Nil) && tx.capacity() == tx.max_capacity() {
            // Nothing new within BLOCK_MS and nothing handed over unread: caught up.
            stats.lag.store(0, Ordering::Relaxed);
            continue;
        }
        for (id, data) in entries(reply) {
            last.clone_from(&id);
            if tx.send((id, data)).await.is_err() {
                return;
            }
        }
        if sampled.elapsed() >= LAG_EVERY {
            sampled = Instant::now();
            if let Ok(Some((end, added))) = stream_end(&mut conn, &key).await {
                let mut pos = Position::lock(&pos);
                if pos.last == end {
                    pos.offset = added.saturating_sub(pos.consumed);
                }
                let lag = added.saturating_sub(pos.offset + pos.consumed);
                stats.lag.store(lag, Ordering::Relaxed);
            }
        }
    }
}

/// The entries of an XREAD reply (one stream): each id and its `data` field (empty when
/// it has none: refused as not an envelope).
fn entries(reply: Value) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    // RESP2: [[key, entries]]; RESP3: {key: entries}; nil when nothing came.
    for (_key, list) in pairs_or_list(reply) {
        let Value::Array(list) = list else { continue };
        for entry in list {
            let Value::Array(mut entry) = entry else {
                continue;
            };
            if entry.len() != 2 {
                continue;
            }
            let fields = entry.pop().unwrap_or(Value::Nil);
            let Some(id) = entry.pop().as_ref().and_then(text) else {
                continue;
            };
            let data = pairs(fields)
                .into_iter()
                .find_map(|kv| match kv {
                    (Value::BulkString(k), Value::BulkString(v)) if k == b"data" => Some(v),
                    _ => None,
                })
                .unwrap_or_default();
            out.push((id, data));
        }
    }
    out
}

/// XREAD's top level: `[[key, value], ...]` (RESP2) or a map (RESP3).
fn pairs_or_list(v: Value) -> Vec<(Value, Value)> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|kv| match kv {
                Value::Array(mut kv) if kv.len() == 2 => {
                    let v = kv.pop()?;
                    Some((kv.pop()?, v))
                }
                _ => None,
            })
            .collect(),
        Value::Map(m) => m,
        _ => Vec::new(),
    }
}

/// A flat `[k, v, k, v, ...]` (RESP2) or a map (RESP3) as pairs.
fn pairs(v: Value) -> Vec<(Value, Value)> {
    match v {
        Value::Array(items) => {
            let mut it = items.into_iter();
            let mut out = Vec::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((k, v));
            }
            out
        }
        Value::Map(m) => m,
        _ => Vec::new(),
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

/// Appends to the stream on the first connection.
pub(crate) struct RedisPublisher {
    conn: MultiplexedConnection,
    key: String,
    max_len: usize,
    fresh: bool,
}

impl Publisher for RedisPublisher {
    fn fresh(&self) -> bool {
        self.fresh
    }

    async fn publish(&mut self, batch: &[&[u8]]) -> Result<(), BoxError> {
        // One pipeline: the XADDs go out back to back and in order, one round trip.
        let mut pipe = redis::pipe();
        for msg in batch {
            pipe.cmd("XADD")
                .arg(&self.key)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.max_len)
                .arg("*")
                .arg("data")
                .arg(*msg)
                .ignore();
        }
        pipe.query_async::<()>(&mut self.conn).await?;
        Ok(())
    }
}

/// The entries the reader hands over.
pub(crate) struct RedisIncoming {
    rx: mpsc::Receiver<(String, Vec<u8>)>,
    pos: Arc<Mutex<Position>>,
    /// Stops the reader when this half goes.
    _stop: DropGuard,
}

impl Incoming for RedisIncoming {
    async fn next(&mut self) -> Option<Vec<u8>> {
        let (id, data) = self.rx.recv().await?;
        let mut pos = Position::lock(&self.pos);
        pos.last = id;
        pos.consumed += 1;
        Some(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn xread_replies_both_protocols() {
        let entry =
            |id: &str, fields: Vec<Value>| Value::Array(vec![bulk(id), Value::Array(fields)]);
        let list = Value::Array(vec![
            entry("1-0", vec![bulk("data"), bulk("a")]),
            entry("1-1", vec![bulk("other"), bulk("x")]),
            entry(
                "2-0",
                vec![bulk("other"), bulk("x"), bulk("data"), bulk("b")],
            ),
        ]);
        let want = vec![
            ("1-0".to_owned(), b"a".to_vec()),
            ("1-1".to_owned(), Vec::new()),
            ("2-0".to_owned(), b"b".to_vec()),
        ];
        let resp2 = Value::Array(vec![Value::Array(vec![bulk("k"), list.clone()])]);
        assert_eq!(entries(resp2), want);
        let resp3 = Value::Map(vec![(bulk("k"), list)]);
        assert_eq!(entries(resp3), want);
        assert!(entries(Value::Nil).is_empty());
    }
}
