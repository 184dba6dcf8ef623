//! The stream protocols: one driver ([`driver`]) runs every framer that reads
//! messages off a byte stream (raw-TCP JSON-RPC, msgpack-rpc, STOMP, WebSocket),
//! with the per-connection bounds, event delivery and back-pressure in one place.

pub(crate) mod driver;
pub(crate) mod jsonrpc_tcp;
pub(crate) mod msgpack;
pub mod stomp;
pub mod websocket;

/// A session to run on a connection its first protocol handed over (a WebSocket after
/// its HTTP upgrade), boxed: it is not part of every connection's future.
pub(crate) type Session = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
