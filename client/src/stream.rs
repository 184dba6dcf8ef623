//! The pipelined client for stream protocols (JSON-RPC over TCP, msgpack-rpc, STOMP).
//!
//! A caller encodes its request with a fresh id and hands the bytes to a writer task;
//! a reader task decodes replies and completes each waiting call by id. So any number
//! of calls can be in flight on one connection, and replies may come in any order.
//! Each protocol supplies only an [`Encode`] (request → bytes) and a [`Decode`]
//! (bytes → replies); the rest is shared here.

use super::{ClientError, Reply};
use bytes::{Bytes, BytesMut};
use rpcmux_value::Params;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// Writes one call. Runs on the caller's task, so encoding is spread over callers.
pub trait Encode: Send + Sync + 'static {
    /// The bytes of one call of `method` with `params`, tagged with `id`.
    fn encode(&self, id: u32, method: &str, params: &Params) -> Result<Bytes, ClientError>;
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
    /// Something that answers no call (a notification, an event, a heart-beat): skipped.
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

pub(crate) struct StreamClient {
    encode: Box<dyn Encode>,
    pending: Arc<Mutex<Pending>>,
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
        let reader = tokio::spawn(read_loop(rd, input, decode, pending.clone(), max_reply));
        let writer = tokio::spawn(write_loop(wr, rx, pending.clone()));
        StreamClient {
            encode,
            pending,
            to_writer,
            tasks: [reader, writer],
        }
    }

    pub(crate) async fn call(&self, method: &str, params: &Params) -> Result<Reply, ClientError> {
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
        let bytes = self.encode.encode(id, method, params)?;
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
    max_reply: usize,
) {
    let why = loop {
        match drain(&mut buf, decode.as_mut(), &pending) {
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
}

/// Decode every complete message in `buf` and complete the calls they answer.
fn drain(
    buf: &mut BytesMut,
    decode: &mut dyn Decode,
    pending: &Mutex<Pending>,
) -> Result<(), ClientError> {
    while let Some(item) = decode.decode(buf)? {
        if let Incoming::Reply { id, reply } = item {
            // A reply for an id nobody waits for answers a call that timed out: drop it.
            if let Some(w) = lock(pending).waiters.remove(&id) {
                let _ = w.send(Ok(reply));
            }
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
