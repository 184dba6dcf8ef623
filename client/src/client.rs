//! The client: one connection to one server, speaking one protocol.

use crate::dial::Endpoint;
use crate::error::ClientError;
use crate::event::Event;
use crate::login::login;
use crate::opts::{ClientProto, ConnectOpts, Io, Reply, StompOpts};
#[cfg(feature = "raw-streams")]
use crate::stream as raw;
use crate::stream;
use crate::{http, jsonrpc_tcp, msgpack, stomp, tls, ws};
use rpcmux_value::Params;
use std::time::Duration;

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
    /// Open a connection to `addr`, TLS on it if `opts.tls` says so, and start `proto`
    /// on it. `addr` is `HOST:PORT` (TCP), or a Unix-domain socket: `unix:/path` (a
    /// socket file) or `unix:@name` (Linux's abstract namespace); see [`Endpoint`].
    pub async fn connect(
        proto: ClientProto,
        addr: &str,
        opts: ConnectOpts,
    ) -> Result<Client, ClientError> {
        let io = dial(proto, addr, &opts).await?;
        Client::over(proto, io, Endpoint::parse(addr).authority(), opts).await
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
        let host = Endpoint::parse(addr).authority();
        tokio::time::timeout(opts.timeout, stream_parts(proto, io, host, opts))
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

/// The events one connection receives (see [`Client::events`]); ends with the connection.
pub struct Events(tokio::sync::mpsc::Receiver<Event>);

impl Events {
    /// The next event, in the order the server sent them; `None` once the connection
    /// is over (closed, failed, or the client dropped).
    pub async fn next(&mut self) -> Option<Event> {
        self.0.recv().await
    }
}

impl Client {
    /// The events this connection receives from now on, on every subscription (events
    /// before the first call of this are dropped, as they are when nobody asks): take
    /// them before [`Client::subscribe`]. `None` on HTTP, which carries no events, and
    /// when taken already. A reader that does not keep up holds the connection's
    /// reading back, replies included; the server tells a subscriber that falls too
    /// far behind with [`Event::LOST`] and closes it.
    pub fn events(&self) -> Option<Events> {
        match &self.inner {
            Inner::Http(_) => None,
            Inner::Stream(s) => s.events().map(Events),
        }
    }

    /// Subscribe this connection to the events whose name matches `pattern` (`*` for
    /// all; see [`pattern_matches`](crate::pattern_matches)), resumable: each event
    /// carries its id ([`Event::id`]). With `since` (an id received before, or `"0"`
    /// for everything the server still retains) the retained events after it come
    /// first, in order, then live ones. `Ok(Ok(_))`: subscribed; `Ok(Err(e))`: refused
    /// (-32007 when `since` is older than what is retained, the message naming the
    /// oldest retained id; -32602 for a `since` that is no id).
    ///
    /// Replayed events arrive before the reply: read [`Client::events`] while this
    /// runs, or more than a few hundred of them hold the reply back until the timeout.
    /// STOMP subscribes to every event (its event destination): apply the pattern to
    /// the events received.
    pub async fn subscribe(
        &self,
        pattern: &str,
        since: Option<&str>,
    ) -> Result<Reply, ClientError> {
        let Inner::Stream(s) = &self.inner else {
            return Err(ClientError::Unsupported(format!(
                "{} cannot carry events; use jsonrpc-tcp, msgpack, stomp, jsonrpc-ws or stomp-ws",
                self.proto
            )));
        };
        tokio::time::timeout(self.timeout, s.subscribe(pattern, since))
            .await
            .map_err(|_| ClientError::Timeout(self.timeout))?
    }
}

/// Open a connection to `addr` (TCP or Unix-domain), with TLS on it if `opts.tls` says so.
async fn dial(
    proto: ClientProto,
    addr: &str,
    opts: &ConnectOpts,
) -> Result<Box<dyn Io>, ClientError> {
    let at = Endpoint::parse(addr);
    let io = at.connect(opts.timeout).await?;
    match &opts.tls {
        None => Ok(io),
        Some(tls) => {
            let handshake = tls::handshake(io, at.host(), tls, proto);
            let stream = tokio::time::timeout(opts.timeout, handshake)
                .await
                .map_err(|_| ClientError::Connect(format!("{at}: TLS handshake timed out")))??;
            Ok(Box::new(stream))
        }
    }
}

/// Start a stream protocol on `io` (its handshake, for STOMP and WebSocket; `rpc.login`
/// with credentials, for JSON-RPC over TCP and msgpack-rpc), undriven.
async fn stream_parts<S: Io>(
    proto: ClientProto,
    io: S,
    host: &str,
    opts: &ConnectOpts,
) -> Result<stream::Parts<S>, ClientError> {
    match proto {
        ClientProto::JsonrpcTcp => {
            let parts = jsonrpc_tcp::start(io, opts);
            login(parts, proto, opts.credentials.as_ref(), opts.max_reply).await
        }
        ClientProto::Stomp => stomp::start(io, host, opts).await,
        ClientProto::Msgpack => {
            let parts = msgpack::start(io, opts);
            login(parts, proto, opts.credentials.as_ref(), opts.max_reply).await
        }
        ClientProto::JsonrpcWs => ws::start(io, host, opts, ws::Inside::Json).await,
        ClientProto::StompWs => ws::start(io, host, opts, ws::Inside::Stomp).await,
        ClientProto::Xmlrpc | ClientProto::Jsonrpc => Err(ClientError::Unsupported(format!(
            "{proto} is not a stream protocol"
        ))),
    }
}
