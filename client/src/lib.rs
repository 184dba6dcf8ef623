//! One async client for every protocol rpcmux speaks, used by `rpcmux call`,
//! `rpcmux bench`, the gateway and the tests. The `rpcmux` crate re-exports it as
//! `rpcmux::client` (its `client` feature).
//!
//! ```no_run
//! use rpcmux_client::{Client, ClientProto, ConnectOpts};
//! use rpcmux_value::{Params, Value};
//! # async fn run() -> Result<(), rpcmux_client::ClientError> {
//! let client = Client::connect(ClientProto::JsonrpcTcp, "127.0.0.1:54321", ConnectOpts::default()).await?;
//! match client.call("echo", Params::Positional(vec![Value::from("hi")])).await? {
//!     Ok(v) => println!("{v:?}"),
//!     Err(e) => eprintln!("error reply {}: {}", e.code, e.message),
//! }
//! # Ok(()) }
//! ```
//!
//! Two shapes of transport sit behind [`Client`]:
//! - HTTP (XML-RPC, JSON-RPC): one hyper HTTP/1.1 keep-alive connection; calls on it
//!   take turns (HTTP/1.1 answers in order, so one connection carries one call at a
//!   time; open more clients for more concurrency).
//! - Streams (JSON-RPC over TCP, msgpack-rpc, STOMP): calls are pipelined: any number
//!   may be in flight on one connection, each tagged with an id, replies matched by id
//!   in whatever order they come.
//!
//! [`Client::over`] takes an already-open stream, so TLS (or anything else that is
//! `AsyncRead + AsyncWrite`) slots in under every protocol unchanged; [`tls_handshake`]
//! is the TLS that [`Client::connect`] speaks, for callers that dial themselves.
//!
//! TLS is rustls with its aws-lc-rs provider, as the rpcmux server has it.
//!
//! Features: `clap` (`ClientProto` is a clap `ValueEnum`), `raw-streams` (the stream
//! protocols' parts undriven: `Client::connect_stream` and the `raw` module, for a load
//! generator that drives each connection itself, as `rpcmux bench` does).
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod error;
mod http;
mod json;
mod jsonrpc_tcp;
mod msgpack;
mod stomp;
mod stream;
mod tls;
mod ws;
mod xmlrpc;

pub use error::ClientError;
pub use tls::handshake as tls_handshake;
pub use tls::TlsOpts;

/// A stream protocol's parts undriven, for a caller that runs its own loop per
/// connection ([`Client::connect_stream`]): the connection after its handshake, the
/// bytes read past it, the protocol's request encoder and reply decoder.
#[cfg(feature = "raw-streams")]
pub mod raw {
    pub use crate::stream::{Decode, Encode, Incoming, Parts};
}

use rpcmux_value::{Params, RpcError, Value};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// What a call returns when the server answered: its result or its error reply.
pub type Reply = Result<Value, RpcError>;

/// The wire protocols the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ClientProto {
    /// XML-RPC over HTTP/1.1 (POST, text/xml).
    Xmlrpc,
    /// JSON-RPC 2.0 over HTTP/1.1 (POST, application/json).
    Jsonrpc,
    /// JSON-RPC 2.0 over raw TCP (one message per line), pipelined.
    JsonrpcTcp,
    /// MessagePack-RPC over raw TCP, pipelined.
    Msgpack,
    /// JSON-RPC 2.0 over STOMP 1.2 (SEND with reply-to, MESSAGE back), pipelined.
    Stomp,
    /// JSON-RPC 2.0 over WebSocket (one request per text message), pipelined.
    JsonrpcWs,
    /// JSON-RPC over STOMP 1.2 over WebSocket (subprotocol `v12.stomp`), pipelined.
    StompWs,
}

impl ClientProto {
    /// The WebSocket protocols (not in [`ClientProto::ALL`], the raw port's own).
    pub const WEBSOCKET: [ClientProto; 2] = [ClientProto::JsonrpcWs, ClientProto::StompWs];

    /// Every protocol of the raw port, for tools and tests that try each.
    pub const ALL: [ClientProto; 5] = [
        ClientProto::Xmlrpc,
        ClientProto::Jsonrpc,
        ClientProto::JsonrpcTcp,
        ClientProto::Msgpack,
        ClientProto::Stomp,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ClientProto::Xmlrpc => "xmlrpc",
            ClientProto::Jsonrpc => "jsonrpc",
            ClientProto::JsonrpcTcp => "jsonrpc-tcp",
            ClientProto::Msgpack => "msgpack",
            ClientProto::Stomp => "stomp",
            ClientProto::JsonrpcWs => "jsonrpc-ws",
            ClientProto::StompWs => "stomp-ws",
        }
    }

    /// True when one connection can carry many calls at once.
    pub fn pipelines(self) -> bool {
        !matches!(self, ClientProto::Xmlrpc | ClientProto::Jsonrpc)
    }

    /// True when the protocol can carry parameters by name.
    pub fn named_params(self) -> bool {
        matches!(
            self,
            ClientProto::Jsonrpc
                | ClientProto::JsonrpcTcp
                | ClientProto::Stomp
                | ClientProto::JsonrpcWs
                | ClientProto::StompWs
        )
    }
}

impl std::fmt::Display for ClientProto {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// STOMP destinations; the defaults are VDSM's (and rpcmux's server defaults).
#[derive(Debug, Clone)]
pub struct StompOpts {
    /// Where requests are SENT.
    pub request_destination: String,
    /// Subscribed to at connect, and named in each SEND's `reply-to`.
    pub response_destination: String,
}

impl Default for StompOpts {
    fn default() -> Self {
        StompOpts {
            request_destination: "jms.topic.vdsm_requests".into(),
            response_destination: "jms.topic.vdsm_responses".into(),
        }
    }
}

/// How to connect and how long to wait.
#[derive(Debug, Clone)]
pub struct ConnectOpts {
    /// Limit on connecting (and the protocol handshake), and on each call.
    pub timeout: Duration,
    /// HTTP request path; `None` uses `/RPC2` for XML-RPC (what Python clients use) and `/`.
    pub http_path: Option<String>,
    /// Largest reply accepted, in bytes.
    pub max_reply: usize,
    /// STOMP destinations (only `ClientProto::Stomp` uses them).
    pub stomp: StompOpts,
    /// Speak TLS to the server (under any protocol).
    pub tls: Option<TlsOpts>,
}

impl Default for ConnectOpts {
    fn default() -> Self {
        ConnectOpts {
            timeout: Duration::from_secs(30),
            http_path: None,
            max_reply: 64 << 20,
            stomp: StompOpts::default(),
            tls: None,
        }
    }
}

/// Anything a protocol can run over: a TCP stream, a TLS stream, an in-memory duplex.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// A connection to one server, speaking one protocol. `call` takes `&self`: share the
/// client (an `Arc`) between tasks to run calls concurrently.
pub struct Client {
    proto: ClientProto,
    timeout: Duration,
    inner: Inner,
}

enum Inner {
    Http(http::HttpClient),
    Stream(stream::StreamClient),
}

impl Client {
    /// Open a TCP connection to `addr` (`host:port`), TLS on it if `opts.tls` says so,
    /// and start `proto` on it.
    pub async fn connect(
        proto: ClientProto,
        addr: &str,
        opts: ConnectOpts,
    ) -> Result<Client, ClientError> {
        let io = dial(proto, addr, &opts).await?;
        Client::over(proto, io, addr, opts).await
    }

    /// Connect as [`Client::connect`] does, but hand back a stream protocol's parts
    /// undriven (for `rpcmux bench`'s own loop). HTTP protocols: `Unsupported`.
    #[cfg(feature = "raw-streams")]
    pub async fn connect_stream(
        proto: ClientProto,
        addr: &str,
        opts: &ConnectOpts,
    ) -> Result<raw::Parts<Box<dyn Io>>, ClientError> {
        let io = dial(proto, addr, opts).await?;
        tokio::time::timeout(opts.timeout, stream_parts(proto, io, addr, opts))
            .await
            .map_err(|_| ClientError::Connect(format!("{proto} handshake timed out")))?
    }

    /// Start `proto` over an open stream (plain TCP, TLS, ...). `host` names the server
    /// for the HTTP `Host` header and the STOMP `host` header.
    pub async fn over<S: Io>(
        proto: ClientProto,
        io: S,
        host: &str,
        opts: ConnectOpts,
    ) -> Result<Client, ClientError> {
        let timeout = opts.timeout;
        let start = async {
            Ok::<_, ClientError>(match proto {
                ClientProto::Xmlrpc | ClientProto::Jsonrpc => {
                    Inner::Http(http::HttpClient::start(proto, io, host, &opts).await?)
                }
                _ => Inner::Stream(stream::StreamClient::start(
                    stream_parts(proto, io, host, &opts).await?,
                    opts.max_reply,
                )),
            })
        };
        let inner = tokio::time::timeout(timeout, start)
            .await
            .map_err(|_| ClientError::Connect(format!("{proto} handshake timed out")))??;
        Ok(Client {
            proto,
            timeout,
            inner,
        })
    }

    /// The exact bytes this client would write for one call with id `id`, on a stream
    /// protocol with default options (HTTP: `Unsupported`). The bench sends them to a
    /// bare echo server to measure the ceiling of the same traffic.
    pub fn request_bytes(
        proto: ClientProto,
        id: u32,
        method: &str,
        params: &Params,
    ) -> Result<bytes::Bytes, ClientError> {
        use stream::Encode;
        match proto {
            ClientProto::JsonrpcTcp => jsonrpc_tcp::Lines.encode(id, method, params),
            ClientProto::Msgpack => msgpack::Requests.encode(id, method, params),
            ClientProto::Stomp => stomp::Sends(StompOpts::default()).encode(id, method, params),
            ClientProto::JsonrpcWs | ClientProto::StompWs => Err(ClientError::Unsupported(
                "WebSocket requests are masked per connection, not replayed raw".into(),
            )),
            ClientProto::Xmlrpc | ClientProto::Jsonrpc => Err(ClientError::Unsupported(
                "HTTP requests are not replayed raw".into(),
            )),
        }
    }

    /// The protocol this client speaks.
    pub fn proto(&self) -> ClientProto {
        self.proto
    }

    /// Whether the connection is known to be over (closed by the server, or failed):
    /// every call on it would fail, so a pool drops such a client and connects anew.
    /// `false` is no promise that the next call gets through.
    pub fn is_closed(&self) -> bool {
        match &self.inner {
            Inner::Http(h) => h.is_closed(),
            Inner::Stream(s) => s.is_closed(),
        }
    }

    /// Call `method`. `Ok(Ok(v))` is a result, `Ok(Err(e))` an error reply from the
    /// server, `Err(_)` a call that got no reply (see [`ClientError`]).
    pub async fn call(&self, method: &str, params: Params) -> Result<Reply, ClientError> {
        self.call_ref(method, &params).await
    }

    /// [`Client::call`] without giving up the params: a load generator sends the same
    /// ones over and over, and cloning a large struct per call would load the client.
    pub async fn call_ref(&self, method: &str, params: &Params) -> Result<Reply, ClientError> {
        self.call_with_headers(method, params, &[]).await
    }

    /// [`Client::call_ref`] with extra HTTP request headers (`X-Forwarded-For`, say):
    /// the HTTP protocols send them with this call's request; the stream protocols have
    /// no per-call headers and ignore them. A name or value HTTP cannot carry is
    /// `Unsupported`.
    pub async fn call_with_headers(
        &self,
        method: &str,
        params: &Params,
        headers: &[(&str, &str)],
    ) -> Result<Reply, ClientError> {
        if let Params::Named(_) = params {
            if !self.proto.named_params() {
                return Err(ClientError::Unsupported(format!(
                    "{} carries parameters by position only; pass them in order",
                    self.proto
                )));
            }
        }
        let call = async {
            match &self.inner {
                Inner::Http(h) => h.call(method, params, headers).await,
                Inner::Stream(s) => s.call(method, params).await,
            }
        };
        tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| ClientError::Timeout(self.timeout))?
    }
}

/// Open a TCP connection to `addr`, with TLS on it if `opts.tls` says so.
async fn dial(
    proto: ClientProto,
    addr: &str,
    opts: &ConnectOpts,
) -> Result<Box<dyn Io>, ClientError> {
    let tcp = tokio::time::timeout(opts.timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| ClientError::Connect(format!("{addr}: timed out")))?
        .map_err(|e| ClientError::Connect(format!("{addr}: {e}")))?;
    // Calls are small request/reply messages: never hold one back waiting for more.
    tcp.set_nodelay(true)
        .map_err(|e| ClientError::Connect(format!("{addr}: {e}")))?;
    match &opts.tls {
        None => Ok(Box::new(tcp)),
        Some(tls) => {
            let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
            let handshake = tls::handshake(tcp, host, tls, proto);
            let stream = tokio::time::timeout(opts.timeout, handshake)
                .await
                .map_err(|_| ClientError::Connect(format!("{addr}: TLS handshake timed out")))??;
            Ok(Box::new(stream))
        }
    }
}

/// Start a stream protocol on `io` (its handshake, for STOMP), undriven.
async fn stream_parts<S: Io>(
    proto: ClientProto,
    io: S,
    host: &str,
    opts: &ConnectOpts,
) -> Result<stream::Parts<S>, ClientError> {
    match proto {
        ClientProto::JsonrpcTcp => Ok(jsonrpc_tcp::start(io, opts)),
        ClientProto::Stomp => stomp::start(io, host, opts).await,
        ClientProto::Msgpack => Ok(msgpack::start(io, opts)),
        ClientProto::JsonrpcWs => ws::start(io, host, opts, ws::Inside::Json).await,
        ClientProto::StompWs => ws::start(io, host, opts, ws::Inside::Stomp).await,
        ClientProto::Xmlrpc | ClientProto::Jsonrpc => Err(ClientError::Unsupported(format!(
            "{proto} is not a stream protocol"
        ))),
    }
}
