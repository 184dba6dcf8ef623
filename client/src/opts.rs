//! What a connection is opened with: the protocol, its options, the stream under it.

use crate::Credentials;
use rpcmux_value::{RpcError, Value};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

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
    /// Where the server sends events (subscribed to by `Client::subscribe`).
    pub event_destination: String,
}

impl Default for StompOpts {
    fn default() -> Self {
        StompOpts {
            request_destination: "jms.topic.vdsm_requests".into(),
            response_destination: "jms.topic.vdsm_responses".into(),
            event_destination: "jms.queue.events".into(),
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
    /// Who to say the client is, to a server with `--auth`. XML-RPC and JSON-RPC over
    /// HTTP send `Authorization` (Basic or Bearer) with every request; STOMP sends
    /// `login`/`passcode` on CONNECT (a token as the passcode); JSON-RPC over TCP and
    /// msgpack-rpc call `rpc.login` before anything else; both WebSocket protocols send
    /// `Authorization` on the upgrade (the server refuses an upgrade without
    /// credentials when anonymous callers may call nothing), STOMP over WebSocket its
    /// CONNECT `login`/`passcode` too. Refused credentials fail the connect
    /// (HTTP: the first call, with the 401).
    pub credentials: Option<Credentials>,
}

impl Default for ConnectOpts {
    fn default() -> Self {
        ConnectOpts {
            timeout: Duration::from_secs(30),
            http_path: None,
            max_reply: 64 << 20,
            stomp: StompOpts::default(),
            tls: None,
            credentials: None,
        }
    }
}

/// Anything a protocol can run over: a TCP stream, a TLS stream, an in-memory duplex.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// How to speak TLS to the server.
#[derive(Debug, Clone)]
pub struct TlsOpts {
    /// PEM file with the CA certificate(s) the server's certificate must chain to.
    pub ca: PathBuf,
    /// PEM client certificate (chain) and its key, for servers that require mutual TLS.
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// The name the server's certificate must carry; default: the host of the address
    /// (a DNS name or an IP address).
    pub server_name: Option<String>,
}
