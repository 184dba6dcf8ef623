//! The pipelined client for stream protocols (JSON-RPC over TCP, msgpack-rpc, STOMP).
//!
//! A caller encodes its request with a fresh id and hands the bytes to a writer task;
//! a reader task decodes replies and completes each waiting call by id. So any number
//! of calls can be in flight on one connection, and replies may come in any order.
//! Each protocol supplies only an [`Encode`] (request → bytes) and a [`Decode`]
//! (bytes → replies); the rest is shared here.

use super::{ClientError, Event, Reply};
use bytes::{Bytes, BytesMut};
use rpcmux_value::{Params, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Writes one call. Runs on the caller's task, so encoding is spread over callers.
pub trait Encode: Send + Sync + 'static {
    /// The bytes of one call of `method` with `params`, tagged with `id`.
    fn encode(&self, id: u32, method: &str, params: &Params) -> Result<Bytes, ClientError>;

    /// The bytes that subscribe to events matching `pattern` (after `since`), answered
    /// as call `id`, for a protocol that does not subscribe with a call (STOMP's
    /// SUBSCRIBE); `None`: the `subscribe` call does it.
    fn subscribe(
        &self,
        id: u32,
        pattern: &str,
        since: Option<&str>,
    ) -> Option<Result<Bytes, ClientError>> {
        let _ = (id, pattern, since);
        None
    }
}

/// What the reader found next in the byte stream.
pub enum Incoming {
    /// The reply to call `id`.
    Reply {
        /// The id the call was encoded with.
        id: u32,
        /// Its result or error reply.
        reply: Reply,
    },
    /// An event (a server notification), or the server's `events.lost` notice.
    Event(Event),
    /// Something that answers no call (a heart-beat, another notification): skipped.
    Other,
}

/// Reads replies. Owned by the reader task; may keep state between reads.
pub trait Decode: Send + 'static {
    /// Take one message off the front of `buf`; `Ok(None)` means more bytes are needed.
    /// An `Err` is fatal: the stream cannot be trusted any more.
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, ClientError>;
}

type Waiter = oneshot::Sender<Result<Reply, ClientError>>;

/// Calls waiting for replies; once the connection has failed, why.
#[derive(Default)]
struct Pending {
    next_id: u32,
    waiters: HashMap<u32, Waiter>,
    dead: Option<String>,
}

impl Pending {
    /// Fail every waiting call and all later ones.
    fn kill(&mut self, why: String) {
        for (_, w) in self.waiters.drain() {
            let _ = w.send(Err(ClientError::Closed(why.clone())));
        }
        self.dead.get_or_insert(why);
    }
}

fn lock(p: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock_sink(s: &EventSink) -> std::sync::MutexGuard<'_, Option<mpsc::Sender<Event>>> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A stream protocol ready to carry calls but not yet driven: the connection, the
/// bytes read past its handshake, and the protocol's encoder and decoder.
/// The [`Client`](crate::Client) drives it with a reader and a writer task; `rpcmux bench`
/// drives it with one loop per connection instead, as it does a bare echo server.
pub struct Parts<S> {
    /// The connection, its handshake done.
    pub io: S,
    /// Bytes already read (after a handshake) that belong to the reply stream.
    pub input: BytesMut,
    /// Writes the protocol's requests.
    pub encode: Box<dyn Encode>,
    /// Reads the protocol's replies off `io`'s bytes (`input` first).
    pub decode: Box<dyn Decode>,
}

/// Where the reader hands events: nowhere until someone asks for them.
type EventSink = Arc<Mutex<Option<mpsc::Sender<Event>>>>;

/// Events a connection holds for a slow reader before it stops reading the socket.
const EVENTS_HELD: usize = 256;

pub(crate) struct StreamClient {
    encode: Box<dyn Encode>,
    pending: Arc<Mutex<Pending>>,
    events: EventSink,
    to_writer: mpsc::Sender<Bytes>,
    tasks: [JoinHandle<()>; 2],
}

/// Removes a call's waiter if the call is dropped before its reply (a timeout), so
/// abandoned ids do not pile up.
struct Forget<'a> {
    pending: &'a Mutex<Pending>,
    id: u32,
    armed: bool,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        if self.armed {
            lock(self.pending).waiters.remove(&self.id);
        }
    }
}

impl StreamClient {
    /// Start the reader and writer tasks on a connection.
    pub(crate) fn start<S: super::Io>(parts: Parts<S>, max_reply: usize) -> StreamClient {
        let Parts {
            io,
            input,
            encode,
            decode,
        } = parts;
        let (rd, wr) = tokio::io::split(io);
        let pending = Arc::new(Mutex::new(Pending::default()));
        // Bounded: callers wait (backpressure) if the socket cannot keep up.
        let (to_writer, rx) = mpsc::channel(1024);
        let events = EventSink::default();
        let reader = tokio::spawn(read_loop(
            rd,
            input,
            decode,
            pending.clone(),
            events.clone(),
            max_reply,
        ));
        let writer = tokio::spawn(write_loop(wr, rx, pending.clone()));
        StreamClient {
            encode,
            pending,
            events,
            to_writer,
            tasks: [reader, writer],
        }
    }

    pub(crate) async fn call(&self, method: &str, params: &Params) -> Result<Reply, ClientError> {
        self.exchange(|id| self.encode.encode(id, method, params))
            .await
    }

    /// Subscribe to events matching `pattern`, resumable (after `since`): STOMP's
    /// SUBSCRIBE, else the `subscribe` call with `resumable` (by position, as
    /// msgpack-rpc carries params).
    pub(crate) async fn subscribe(
        &self,
        pattern: &str,
        since: Option<&str>,
    ) -> Result<Reply, ClientError> {
        let params = Params::Positional(vec![
            Value::from(pattern),
            since.map_or(Value::Nil, Value::from),
            Value::Bool(true),
        ]);
        self.exchange(|id| match self.encode.subscribe(id, pattern, since) {
            Some(bytes) => bytes,
            None => self.encode.encode(id, "subscribe", &params),
        })
        .await
    }

    /// The events this connection receives from now on (events before are dropped);
    /// the channel ends when the connection does. Once per connection.
    pub(crate) fn events(&self) -> Option<mpsc::Receiver<Event>> {
        let (tx, rx) = mpsc::channel(EVENTS_HELD);
        {
            let mut sink = lock_sink(&self.events);
            if sink.is_some() {
                return None;
            }
            *sink = Some(tx);
        }
        // Dead already: the reader has gone (or goes) without taking the sender along.
        if self.is_closed() {
            lock_sink(&self.events).take();
        }
        Some(rx)
    }

    /// Send the bytes `write(id)` gives, a call with a fresh id, and wait for its reply.
    async fn exchange(
        &self,
        write: impl FnOnce(u32) -> Result<Bytes, ClientError>,
    ) -> Result<Reply, ClientError> {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut p = lock(&self.pending);
            if let Some(why) = &p.dead {
                return Err(ClientError::NotSent(why.clone()));
            }
            // Ids wrap (msgpack-rpc's msgid is a u32); skip one still in use.
            let mut id = p.next_id;
            while p.waiters.contains_key(&id) {
                id = id.wrapping_add(1);
            }
            p.next_id = id.wrapping_add(1);
            p.waiters.insert(id, tx);
            id
        };
        let mut guard = Forget {
            pending: &self.pending,
            id,
            armed: true,
        };
        let bytes = write(id)?;
        if self.to_writer.send(bytes).await.is_err() {
            return Err(ClientError::NotSent("writer stopped".into()));
        }
        let out = rx
            .await
            .unwrap_or_else(|_| Err(ClientError::Closed("reader stopped".into())));
        guard.armed = false;
        out
    }
}

impl StreamClient {
    /// The connection failed or was closed: every call on it fails now.
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.pending).dead.is_some()
    }
}

impl Drop for StreamClient {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

async fn read_loop<R: tokio::io::AsyncRead + Unpin>(
    mut rd: R,
    mut buf: BytesMut,
    mut decode: Box<dyn Decode>,
    pending: Arc<Mutex<Pending>>,
    events: EventSink,
    max_reply: usize,
) {
    let mut got = Vec::new();
    let why = loop {
        let drained = drain(&mut buf, decode.as_mut(), &pending, &mut got);
        // Events wait for their reader (backpressure onto the socket, and so onto the
        // server, which tells a subscriber that falls too far behind).
        for e in got.drain(..) {
            let sink = lock_sink(&events).clone();
            if let Some(tx) = sink {
                if tx.send(e).await.is_err() {
                    lock_sink(&events).take();
                }
            }
        }
        match drained {
            Ok(()) => {}
            Err(e) => break e.to_string(),
        }
        if buf.len() > max_reply {
            break format!("reply larger than {max_reply} bytes");
        }
        buf.reserve(16 * 1024);
        match rd.read_buf(&mut buf).await {
            Ok(0) if buf.is_empty() => break "closed by the server".to_string(),
            Ok(0) => break "closed by the server in the middle of a reply".to_string(),
            Ok(_) => {}
            Err(e) => break format!("read failed: {e}"),
        }
    };
    lock(&pending).kill(why);
    lock_sink(&events).take();
}

/// Decode every complete message in `buf` and complete the calls they answer.
fn drain(
    buf: &mut BytesMut,
    decode: &mut dyn Decode,
    pending: &Mutex<Pending>,
    events: &mut Vec<Event>,
) -> Result<(), ClientError> {
    while let Some(item) = decode.decode(buf)? {
        match item {
            Incoming::Reply { id, reply } => {
                // A reply for an id nobody waits for answers a call that timed out.
                if let Some(w) = lock(pending).waiters.remove(&id) {
                    let _ = w.send(Ok(reply));
                }
            }
            Incoming::Event(e) => events.push(e),
            Incoming::Other => {}
        }
    }
    Ok(())
}

async fn write_loop<W: tokio::io::AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<Bytes>,
    pending: Arc<Mutex<Pending>>,
) {
    let mut batch = Vec::with_capacity(64);
    let mut out = BytesMut::with_capacity(16 * 1024);
    // Gather every request queued so far into one write: fewer syscalls when pipelining.
    while rx.recv_many(&mut batch, 64).await > 0 {
        for b in batch.drain(..) {
            out.extend_from_slice(&b);
        }
        if let Err(e) = wr.write_all(&out).await {
            lock(&pending).kill(format!("write failed: {e}"));
            return;
        }
        out.clear();
    }
    let _ = wr.shutdown().await;
}
