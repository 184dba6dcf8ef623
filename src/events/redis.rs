//! A Redis stream as the events backend (`--events redis://HOST:PORT[/DB]`).
//!
//! Every instance appends its events to one stream (`XADD KEY MAXLEN ~ max_len * data
//! <envelope>`, pipelined in batches) and reads it on a connection of its own (`XREAD
//! BLOCK 1000 COUNT 512 STREAMS KEY <last id read>`), so a reader that reconnects goes on
//! after the last entry it took and reads what it missed, as long as the stream still
//! holds it (`max_len`). The first connection of a process starts at the stream's end: a
//! new instance does not deliver the fleet's history as news.
//!
//! **A Redis that comes back** (a restart, a failover, a connection cut) is judged by
//! its stream, not by its `run_id`: on each reconnect the instance looks for the entry
//! it read last, and the one it appended last (`XRANGE KEY id id`).
//!
//! - Either is still there (persistence: AOF or an RDB that had it; a replica that had
//!   it; a mere cut): the stream is **kept**; reading goes on after the last entry read,
//!   nothing is sent again, nothing old is delivered as new.
//! - Neither is, but `XINFO STREAM` shows the stream trimmed past them
//!   (`max-deleted-entry-id` at or after them, `entries-added` not below what was seen
//!   before): kept too; what was trimmed is counted `missed` by the gap it leaves.
//! - Otherwise the stream **lost** them (Redis restarted without persistence, a
//!   failover to a replica that lacked them, the key deleted): the reader starts the
//!   stream from its beginning ("0") and the publisher says so ([`Publisher::fresh`]),
//!   so the fan-out sends its recent events again. Receivers skip what they delivered
//!   (by origin and seq), and each copy carries the entry id the lost stream had given
//!   it (field `first`): a reader skips, as history, a copy whose original was added
//!   before this process began reading (its `start`, fixed at its first connection),
//!   so another origin's history is never replayed as news.
//!
//! What was seen is logged either way (the entry looked for, the stream's length, last
//! id, `entries-added`, `max-deleted-entry-id`, and the `run_id` before and after).
//!
//! Reconnecting is the fan-out task's (it calls [`Backend::connect`] again), not the
//! crate's connection manager: the task must know when the link is up (the `up` gauge)
//! and must not have a publish stall in the crate's own retries while later events queue.
//! The reader runs as a task of its own, handing entries over through a small bounded
//! queue: it reads no further while the fan-out is busy, so a slow instance falls behind
//! in the stream (its lag, sampled with `XINFO STREAM`), not in memory.

use crate::events::fanout::{Backend, BoxError, Incoming, Msg, Publisher, Received};
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

/// A stream entry id, `MS-SEQ`, as numbers (they order as the stream does).
type EntryId = (u64, u64);

/// `MS-SEQ` (or `MS`) as an [`EntryId`]; `None` for anything else.
fn entry_id(s: &str) -> Option<EntryId> {
    let (ms, seq) = s.split_once('-').unwrap_or((s, "0"));
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// An [`EntryId`] as Redis writes it.
fn entry_text(id: EntryId) -> String {
    format!("{}-{}", id.0, id.1)
}

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
    /// The stream's end at the first connection (or the server's clock then, when
    /// there was no stream): a copy re-sent to a stream that lost it, whose original was added at or
    /// before this, was there before this process read the stream: history.
    start: EntryId,
    /// The id of the last entry handed to the fan-out (`0-0`: none yet).
    last: String,
    /// The id of the last entry the publisher appended, once it has.
    appended: Option<EntryId>,
    /// The highest `entries-added` seen on the stream.
    added_seen: u64,
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

/// What `XINFO STREAM` says of the stream.
#[derive(Debug, Clone, Default)]
struct StreamInfo {
    length: u64,
    last: String,
    /// 0 before Redis 7, which has no such field.
    added: u64,
    /// `None` before Redis 7.
    max_deleted: Option<EntryId>,
}

impl std::fmt::Display for StreamInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "length {}, last id {}, entries-added {}, max-deleted-entry-id {}",
            self.length,
            self.last,
            self.added,
            self.max_deleted.map_or("(none)".into(), entry_text)
        )
    }
}

/// A reconnect's verdict on the stream.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// The stream still holds what this instance read and sent (or trimmed it in
    /// the ordinary way): read on, send nothing again.
    Kept,
    /// It lost it: read from its start, send recent events again.
    Lost,
}

/// Judge a stream on reconnecting by one entry this instance had read or appended:
/// `found` whether `XRANGE` found it, `added_seen` the highest `entries-added` seen.
fn judge(id: EntryId, found: bool, info: Option<&StreamInfo>, added_seen: u64) -> Verdict {
    if found {
        return Verdict::Kept;
    }
    match info {
        // Trimmed past it (MAXLEN), the stream otherwise whole.
        Some(i) if i.max_deleted.is_some_and(|d| d >= id) && i.added >= added_seen => Verdict::Kept,
        _ => Verdict::Lost,
    }
}

/// Which entries read are history: the fleet's events from before this process began
/// reading, not news to its subscribers.
#[derive(Debug, Clone, Copy)]
struct History {
    /// Where this process began reading ([`Position::start`]).
    start: EntryId,
    /// Reading a stream that lost what was read again from its start: its end then.
    /// An entry up to it that was added at or before `start` is history.
    catch_up: Option<EntryId>,
}

impl History {
    /// Is the entry `id` (a copy of the entry `first` when sent again) history?
    fn judge(&self, id: &str, first: Option<&str>) -> bool {
        if let Some(first) = first {
            // A copy: its original's place says when the fleet first had it.
            return entry_id(first).is_some_and(|f| f <= self.start);
        }
        let Some(id) = entry_id(id) else {
            return false;
        };
        self.catch_up
            .is_some_and(|end| id <= end && id <= self.start)
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

    /// Does the stream hold the entry `id`?
    async fn holds(&self, conn: &mut MultiplexedConnection, id: EntryId) -> Result<bool, BoxError> {
        let id = entry_text(id);
        let reply: Value = redis::cmd("XRANGE")
            .arg(&self.key)
            .arg(&id)
            .arg(&id)
            .arg("COUNT")
            .arg(1)
            .query_async(conn)
            .await?;
        Ok(matches!(reply, Value::Array(a) if !a.is_empty()))
    }

    /// The first connection's `start`: the stream's end, or with no stream yet the
    /// server's clock less a millisecond (a copy of an entry of a stream lost before
    /// this process started is older than that).
    async fn start(
        conn: &mut MultiplexedConnection,
        info: Option<&StreamInfo>,
    ) -> Result<EntryId, BoxError> {
        if let Some(end) = info.and_then(|i| entry_id(&i.last)) {
            return Ok(end);
        }
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await?;
        Ok(((secs * 1_000 + micros / 1_000).saturating_sub(1), u64::MAX))
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
        let stream = stream_info(&mut conn, &self.key).await?;
        let (before, last, appended, added_seen) = {
            let pos = Position::lock(&self.pos);
            (
                pos.run_id.clone(),
                pos.last.clone(),
                pos.appended,
                pos.added_seen,
            )
        };
        let start = match before {
            None => Some(Self::start(&mut conn, stream.as_ref()).await?),
            Some(_) => None,
        };
        // Judged apart: a replica may hold what was read and lack the last appends.
        let last_read = entry_id(&last).filter(|&id| id != (0, 0));
        let mut verdicts = [Verdict::Kept, Verdict::Kept];
        for (verdict, id) in verdicts.iter_mut().zip([last_read, appended]) {
            if let (Some(id), None) = (id, start) {
                let found = self.holds(&mut conn, id).await?;
                *verdict = judge(id, found, stream.as_ref(), added_seen);
            }
        }
        let [read_lost, sent_lost] = verdicts.map(|v| v == Verdict::Lost);
        let mut reader = self
            .client
            .get_multiplexed_async_connection_with_config(&Self::config(
                RESPONSE_TIMEOUT + Duration::from_millis(BLOCK_MS),
            ))
            .await?;
        self.set_name(&mut reader, "read").await;
        let catch_up = {
            let mut pos = Position::lock(&self.pos);
            if let Some(start) = start {
                // The first server: read what is appended from now on.
                let (last, added) = stream
                    .as_ref()
                    .map_or_else(|| ("0-0".into(), 0), |i| (i.last.clone(), i.added));
                pos.start = start;
                pos.last = last;
                pos.offset = added;
                pos.consumed = 0;
            }
            if let Some(i) = &stream {
                pos.added_seen = pos.added_seen.max(i.added);
            }
            if sent_lost {
                pos.appended = None;
            }
            pos.run_id = Some(run_id.clone());
            if read_lost {
                pos.last = "0-0".into();
                pos.added_seen = stream.as_ref().map_or(0, |i| i.added);
                pos.offset = 0;
                pos.consumed = 0;
                // Read again from the start: of what is there now, an entry added
                // before this process began reading is history (a replica's older
                // entries), whatever its origin.
                stream.as_ref().and_then(|i| entry_id(&i.last))
            } else {
                None
            }
        };
        let seen = stream
            .as_ref()
            .map_or_else(|| "no stream".to_owned(), ToString::to_string);
        let shown = |id: Option<EntryId>| id.map_or("none".into(), entry_text);
        let was = before.as_deref().unwrap_or("none");
        if read_lost || sent_lost {
            tracing::warn!(
                stream = seen,
                last_read = shown(last_read),
                read_is_gone = read_lost,
                last_appended = shown(appended),
                appended_is_gone = sent_lost,
                run_id_before = was,
                run_id = run_id,
                "events: the stream lost entries this instance had read or appended (Redis restarted without persistence, a failover to a replica without them, or the key deleted); reading it again from its start when the last read is gone (skipping what was delivered, by id, and what predates this instance), sending recent events again when the last appended is gone"
            );
        } else if before.as_ref().is_some_and(|b| *b != run_id) {
            tracing::info!(
                stream = seen,
                last_read = shown(last_read),
                last_appended = shown(appended),
                run_id_before = was,
                run_id = run_id,
                "events: Redis restarted or is another server, and its stream kept what this instance had read and appended (persistence, or a replica that has it); reading on after the last entry read, sending nothing again"
            );
        }
        let fresh = sent_lost;
        let history = History {
            start: Position::lock(&self.pos).start,
            catch_up,
        };
        let (tx, rx) = mpsc::channel(READ_COUNT);
        let stop = CancellationToken::new();
        tokio::spawn(read(
            reader,
            self.key.clone(),
            self.pos.clone(),
            history,
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
                pos: self.pos.clone(),
            },
            RedisIncoming {
                rx,
                pos: self.pos.clone(),
                _stop: stop.drop_guard(),
            },
        ))
    }
}

/// What `XINFO STREAM` says; `None` when there is no stream (no event was ever
/// appended, or it was lost).
async fn stream_info(
    conn: &mut MultiplexedConnection,
    key: &str,
) -> Result<Option<StreamInfo>, BoxError> {
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
    let mut info = StreamInfo::default();
    let mut last = None;
    for (k, v) in pairs(reply) {
        match text(&k).as_deref() {
            Some("last-generated-id") => last = text(&v),
            Some("length") => info.length = int(&v),
            Some("entries-added") => info.added = int(&v),
            Some("max-deleted-entry-id") => {
                info.max_deleted = text(&v).as_deref().and_then(entry_id);
            }
            _ => {}
        }
    }
    info.last = last.ok_or("XINFO STREAM has no last-generated-id")?;
    Ok(Some(info))
}

fn int(v: &Value) -> u64 {
    match v {
        Value::Int(n) => (*n).max(0) as u64,
        _ => 0,
    }
}

/// Read the stream from the last id handed over, handing each entry's `data` to the
/// fan-out, until the connection fails or `stop` (the halves were dropped).
async fn read(
    mut conn: MultiplexedConnection,
    key: String,
    pos: Arc<Mutex<Position>>,
    history: History,
    tx: mpsc::Sender<(String, Received)>,
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
        for (id, data, first) in entries(reply) {
            last.clone_from(&id);
            let history = history.judge(&id, first.as_deref());
            if tx.send((id, Received { data, history })).await.is_err() {
                return;
            }
        }
        if sampled.elapsed() >= LAG_EVERY {
            sampled = Instant::now();
            if let Ok(Some(info)) = stream_info(&mut conn, &key).await {
                let (end, added) = (info.last, info.added);
                let mut pos = Position::lock(&pos);
                pos.added_seen = pos.added_seen.max(added);
                if pos.last == end {
                    pos.offset = added.saturating_sub(pos.consumed);
                }
                let lag = added.saturating_sub(pos.offset + pos.consumed);
                stats.lag.store(lag, Ordering::Relaxed);
            }
        }
    }
}

/// The entries of an XREAD reply (one stream): each id, its `data` field (empty when it
/// has none: refused as not an envelope) and its `first` field (a copy sent again: the
/// id of the original in the stream that lost it).
fn entries(reply: Value) -> Vec<(String, Vec<u8>, Option<String>)> {
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
            let mut data = Vec::new();
            let mut first = None;
            for kv in pairs(fields) {
                match kv {
                    (Value::BulkString(k), Value::BulkString(v)) if k == b"data" => data = v,
                    (Value::BulkString(k), v) if k == b"first" => first = text(&v),
                    _ => {}
                }
            }
            out.push((id, data, first));
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
    /// Where it notes the last entry it appended.
    pos: Arc<Mutex<Position>>,
}

impl Publisher for RedisPublisher {
    fn fresh(&self) -> bool {
        self.fresh
    }

    async fn publish(&mut self, batch: &[Msg<'_>]) -> Result<Vec<String>, BoxError> {
        // One pipeline: the XADDs go out back to back and in order, one round trip.
        let mut pipe = redis::pipe();
        for msg in batch {
            let add = pipe
                .cmd("XADD")
                .arg(&self.key)
                .arg("MAXLEN")
                .arg("~")
                .arg(self.max_len)
                .arg("*")
                .arg("data")
                .arg(msg.bytes);
            if let Some(first) = msg.first {
                add.arg("first").arg(first);
            }
        }
        let ids: Vec<String> = pipe.query_async(&mut self.conn).await?;
        if let Some(last) = ids.last().and_then(|id| entry_id(id)) {
            Position::lock(&self.pos).appended = Some(last);
        }
        Ok(ids)
    }
}

/// The entries the reader hands over.
pub(crate) struct RedisIncoming {
    rx: mpsc::Receiver<(String, Received)>,
    pos: Arc<Mutex<Position>>,
    /// Stops the reader when this half goes.
    _stop: DropGuard,
}

impl Incoming for RedisIncoming {
    async fn next(&mut self) -> Option<Received> {
        let (id, received) = self.rx.recv().await?;
        let mut pos = Position::lock(&self.pos);
        pos.last = id;
        pos.consumed += 1;
        Some(received)
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
                vec![
                    bulk("other"),
                    bulk("x"),
                    bulk("data"),
                    bulk("b"),
                    bulk("first"),
                    bulk("1-7"),
                ],
            ),
        ]);
        let want = vec![
            ("1-0".to_owned(), b"a".to_vec(), None),
            ("1-1".to_owned(), Vec::new(), None),
            ("2-0".to_owned(), b"b".to_vec(), Some("1-7".to_owned())),
        ];
        let resp2 = Value::Array(vec![Value::Array(vec![bulk("k"), list.clone()])]);
        assert_eq!(entries(resp2), want);
        let resp3 = Value::Map(vec![(bulk("k"), list)]);
        assert_eq!(entries(resp3), want);
        assert!(entries(Value::Nil).is_empty());
    }

    #[test]
    fn a_stream_is_judged_by_the_entries_it_still_has() {
        let info = |max_deleted: Option<EntryId>, added| StreamInfo {
            length: 10,
            last: "9-0".into(),
            added,
            max_deleted,
        };
        // Persistence or a replica with it: found.
        assert_eq!(judge((5, 0), true, None, 0), Verdict::Kept);
        // Trimmed past it, the stream otherwise whole.
        assert_eq!(
            judge((5, 0), false, Some(&info(Some((6, 0)), 100)), 100),
            Verdict::Kept
        );
        // Gone: no stream, or a new one (nothing deleted, fewer entries added).
        assert_eq!(judge((5, 0), false, None, 100), Verdict::Lost);
        assert_eq!(
            judge((5, 0), false, Some(&info(None, 3)), 100),
            Verdict::Lost
        );
        assert_eq!(
            judge((5, 0), false, Some(&info(Some((9, 0)), 3)), 100),
            Verdict::Lost
        );
    }

    #[test]
    fn history_is_what_the_fleet_had_before_this_process_read() {
        let live = History {
            start: (100, 5),
            catch_up: None,
        };
        assert!(
            live.judge("200-0", Some("100-5")),
            "a copy of an older entry"
        );
        assert!(!live.judge("200-0", Some("100-6")), "a copy of a newer one");
        assert!(!live.judge("50-0", None), "an original, read on");
        let again = History {
            start: (100, 5),
            catch_up: Some((300, 0)),
        };
        assert!(again.judge("50-0", None), "older than this process");
        assert!(!again.judge("150-0", None));
        assert!(!again.judge("400-0", None), "added after the catch-up");
        assert_eq!(entry_id("7"), Some((7, 0)));
        assert_eq!(entry_id("x-1"), None);
    }
}
