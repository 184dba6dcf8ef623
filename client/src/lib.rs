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
//! An address is `HOST:PORT` (TCP) or a Unix-domain socket, `unix:/path` or
//! `unix:@name` ([`Endpoint`]).
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

mod client;
mod credentials;
mod dial;
mod error;
mod event;
mod follow;
mod http;
mod json;
mod jsonrpc_tcp;
mod login;
mod msgpack;
mod opts;
mod stomp;
mod stream;
mod tls;
mod ws;
mod xmlrpc;

pub use client::{Client, Events};
pub use credentials::Credentials;
pub use dial::Endpoint;
pub use error::ClientError;
pub use event::{pattern_matches, Event};
pub use follow::{Follow, FollowError, Followed};
pub use opts::{ClientProto, ConnectOpts, Io, Reply, StompOpts, TlsOpts};
pub use tls::handshake as tls_handshake;

/// A stream protocol's parts undriven, for a caller that runs its own loop per
/// connection ([`Client::connect_stream`]): the connection after its handshake, the
/// bytes read past it, the protocol's request encoder and reply decoder.
#[cfg(feature = "raw-streams")]
pub mod raw {
    pub use crate::stream::{Decode, Encode, Incoming, Parts};
}
