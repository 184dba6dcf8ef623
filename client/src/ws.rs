//! JSON-RPC and STOMP over WebSocket for the pipelined stream client: the upgrade
//! request, then each request a masked text frame around what the raw-TCP encoder
//! writes, and replies read by the raw-TCP decoders out of the server's messages.
//!
//! Hand-written over the server's frame codec (rpcmux-websocket) for the same reason as
//! there: the stream client owns its IO and buffers. Limits: the client
//! does not answer pings (it has no writer in its decoder); the server pings only after
//! `ping_interval` of silence, which a client making calls never reaches.

use super::stream::{Decode, Encode, Incoming, Parts};
use super::{ClientError, ConnectOpts, Credentials, Io};
use base64::Engine;
use bytes::{Buf, Bytes, BytesMut};
use rpcmux_value::Params;
use rpcmux_websocket::{self as frames, accept_key};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Which protocol runs inside the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inside {
    Json,
    Stomp,
}

/// A fresh unpredictable 64-bit value (std's per-process random hasher keys; no RNG
/// crate for sixteen bytes of key and the frame masks).
fn random_u64(n: u64) -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(n);
    h.finish()
}

/// Upgrade `io` to a WebSocket on `path`, offering the subprotocol for `inside`, with
/// the credentials as `Authorization` if there are any (a server with `--auth` and no
/// anonymous verbs answers 401 to an upgrade without); the bytes read past the 101.
pub(crate) async fn upgrade<S: Io>(
    io: &mut S,
    host: &str,
    path: &str,
    inside: Inside,
    credentials: Option<&Credentials>,
) -> Result<BytesMut, ClientError> {
    let mut raw = [0u8; 16];
    raw[..8].copy_from_slice(&random_u64(1).to_ne_bytes());
    raw[8..].copy_from_slice(&random_u64(2).to_ne_bytes());
    let key = base64::engine::general_purpose::STANDARD.encode(raw);
    let proto = match inside {
        Inside::Json => "jsonrpc",
        Inside::Stomp => "v12.stomp",
    };
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: {proto}\r\n"
    );
    if let Some(c) = credentials {
        req.push_str("Authorization: ");
        req.push_str(&c.authorization());
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    io.write_all(req.as_bytes()).await?;
    let mut buf = BytesMut::with_capacity(1024);
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 16 * 1024 {
            return Err(ClientError::Connect(
                "WebSocket: response head too long".into(),
            ));
        }
        if io.read_buf(&mut buf).await? == 0 {
            return Err(ClientError::Connect(
                "WebSocket: closed during the upgrade".into(),
            ));
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let status = head.lines().next().unwrap_or("");
    if !status.starts_with("HTTP/1.1 101") {
        return Err(ClientError::Connect(format!(
            "WebSocket upgrade refused: {status}"
        )));
    }
    let want = accept_key(key.as_bytes());
    let accepted = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(n, v)| {
            n.trim().eq_ignore_ascii_case("sec-websocket-accept") && v.trim() == want
        })
    });
    if !accepted {
        return Err(ClientError::Connect(
            "WebSocket: wrong Sec-WebSocket-Accept".into(),
        ));
    }
    buf.advance(end);
    Ok(buf)
}

/// Start a WebSocket stream protocol on `io`: the upgrade, then the inner protocol's
/// encoder and decoder wrapped in frames (STOMP's CONNECT exchange runs inside too).
pub(crate) async fn start<S: Io>(
    mut io: S,
    host: &str,
    opts: &ConnectOpts,
    inside: Inside,
) -> Result<Parts<S>, ClientError> {
    let path = opts.http_path.as_deref().unwrap_or("/");
    let input = upgrade(&mut io, host, path, inside, opts.credentials.as_ref()).await?;
    let inner = match inside {
        Inside::Json => super::jsonrpc_tcp::start(Framed::new(io, input), opts),
        Inside::Stomp => super::stomp::start(Framed::new(io, input), host, opts).await?,
    };
    // The inner protocol ran its handshake over `Framed`; from here the stream client
    // frames and unframes itself (one masked frame per request, with no copy of the IO).
    let Framed {
        mut io,
        raw,
        ready,
        out,
    } = inner.io;
    io.write_all(&out).await?;
    // Payload bytes unframed but not yet read come before what the decoder had read.
    let mut pre = ready;
    pre.extend_from_slice(&inner.input);
    Ok(Parts {
        io,
        input: raw,
        encode: Box::new(Masked {
            inner: inner.encode,
            seed: AtomicU64::new(random_u64(3)),
        }),
        decode: Box::new(Unframe {
            inner: inner.decode,
            messages: pre,
        }),
    })
}

/// Wraps each request the inner encoder writes in one masked text frame.
struct Masked {
    inner: Box<dyn Encode>,
    seed: AtomicU64,
}

impl Encode for Masked {
    fn encode(&self, id: u32, method: &str, params: &Params) -> Result<Bytes, ClientError> {
        let body = self.inner.encode(id, method, params)?;
        Ok(self.frame(&body))
    }

    fn subscribe(
        &self,
        id: u32,
        pattern: &str,
        since: Option<&str>,
    ) -> Option<Result<Bytes, ClientError>> {
        let body = self.inner.subscribe(id, pattern, since)?;
        Some(body.map(|b| self.frame(&b)))
    }
}

impl Masked {
    /// One masked text frame around `body`.
    fn frame(&self, body: &[u8]) -> Bytes {
        let n = self
            .seed
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
        let mask = (splitmix(n) as u32).to_ne_bytes();
        let mut out = BytesMut::with_capacity(body.len() + 14);
        frames::put_masked(&mut out, frames::TEXT, body, mask);
        out.freeze()
    }
}

/// SplitMix64's output step: turns a counter into well-spread mask bits.
fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Takes the payloads of the server's data frames and hands them, as one byte stream,
/// to the inner decoder.
struct Unframe {
    inner: Box<dyn Decode>,
    messages: BytesMut,
}

impl Decode for Unframe {
    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Incoming>, ClientError> {
        loop {
            if !self.messages.is_empty() {
                if let Some(item) = self.inner.decode(&mut self.messages)? {
                    return Ok(Some(item));
                }
            }
            let Some(payload) = next_frame(buf)? else {
                return Ok(None);
            };
            if let Some(p) = payload {
                self.messages.extend_from_slice(&p);
            }
        }
    }
}

/// The next server frame off `buf`: `Ok(None)` while incomplete, `Some(None)` for a
/// control frame (skipped), `Some(Some(payload))` for a data frame; a close is an error.
fn next_frame(buf: &mut BytesMut) -> Result<Option<Option<BytesMut>>, ClientError> {
    let h = match frames::parse_header(buf) {
        Ok(Some(h)) => h,
        Ok(None) => return Ok(None),
        Err(why) => return Err(ClientError::Protocol(format!("WebSocket: {why}"))),
    };
    let total = h.header_len as u64 + h.len;
    if (buf.len() as u64) < total {
        buf.reserve((total - buf.len() as u64).min(1 << 20) as usize);
        return Ok(None);
    }
    let mut payload = buf.split_to(total as usize);
    payload.advance(h.header_len);
    if let Some(m) = h.mask {
        frames::unmask(&mut payload, m);
    }
    match h.opcode {
        frames::CLOSE => {
            let code = payload.get(..2).map(|c| u16::from_be_bytes([c[0], c[1]]));
            let why = String::from_utf8_lossy(payload.get(2..).unwrap_or(&[]));
            Err(ClientError::Closed(format!(
                "WebSocket closed by the server ({}) {why}",
                code.unwrap_or(1005)
            )))
        }
        frames::TEXT | frames::BINARY | frames::CONTINUATION => Ok(Some(Some(payload))),
        _ => Ok(Some(None)),
    }
}

/// The connection as the inner protocol's handshake sees it (STOMP's CONNECT): writes
/// become masked text frames, reads are the payloads of the server's messages.
struct Framed<S> {
    io: S,
    /// Raw bytes from the socket, not yet unframed.
    raw: BytesMut,
    /// Unframed payload bytes not yet read.
    ready: BytesMut,
    /// Framed bytes not yet written.
    out: BytesMut,
}

impl<S> Framed<S> {
    fn new(io: S, raw: BytesMut) -> Self {
        Framed {
            io,
            raw,
            ready: BytesMut::new(),
            out: BytesMut::new(),
        }
    }
}

impl<S: Io> tokio::io::AsyncRead for Framed<S> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        out: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        let me = self.get_mut();
        if let Poll::Ready(Err(e)) = me.poll_drain(cx) {
            return Poll::Ready(Err(e));
        }
        loop {
            if !me.ready.is_empty() {
                let n = me.ready.len().min(out.remaining());
                out.put_slice(&me.ready[..n]);
                me.ready.advance(n);
                return Poll::Ready(Ok(()));
            }
            match next_frame(&mut me.raw) {
                Ok(Some(Some(p))) => me.ready.extend_from_slice(&p),
                Ok(Some(None)) => {}
                Err(e) => return Poll::Ready(Err(std::io::Error::other(e.to_string()))),
                Ok(None) => {
                    me.raw.reserve(4096);
                    let mut tmp = [0u8; 4096];
                    let mut rb = tokio::io::ReadBuf::new(&mut tmp);
                    match std::pin::Pin::new(&mut me.io).poll_read(cx, &mut rb) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                            return Poll::Ready(Ok(()));
                        }
                        Poll::Ready(Ok(())) => me.raw.extend_from_slice(rb.filled()),
                    }
                }
            }
        }
    }
}

impl<S: Io> Framed<S> {
    /// Write out framed bytes still waiting.
    fn poll_drain(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        while !self.out.is_empty() {
            let n = std::task::ready!(std::pin::Pin::new(&mut self.io).poll_write(cx, &self.out))?;
            if n == 0 {
                return std::task::Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.out.advance(n);
        }
        std::task::Poll::Ready(Ok(()))
    }
}

impl<S: Io> tokio::io::AsyncWrite for Framed<S> {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        // Each write becomes one frame (only the handshake's few small frames come
        // through here); what the socket does not take at once goes out on the next
        // write, read or flush.
        let me = self.get_mut();
        std::task::ready!(me.poll_drain(cx))?;
        let mask = (splitmix(random_u64(4)) as u32).to_ne_bytes();
        frames::put_masked(&mut me.out, frames::TEXT, buf, mask);
        if let std::task::Poll::Ready(Err(e)) = me.poll_drain(cx) {
            return std::task::Poll::Ready(Err(e));
        }
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let me = self.get_mut();
        std::task::ready!(me.poll_drain(cx))?;
        std::pin::Pin::new(&mut me.io).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let me = self.get_mut();
        std::task::ready!(me.poll_drain(cx))?;
        std::pin::Pin::new(&mut me.io).poll_shutdown(cx)
    }
}
