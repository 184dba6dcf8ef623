//! What can go wrong with a call before a reply arrives.
//!
//! An error *reply* (an XML-RPC fault, a JSON-RPC error object, a msgpack-rpc error, ...)
//! is not a [`ClientError`]: the server answered, and `call` returns it as the inner
//! `Err(RpcError)`. A `ClientError` means there is no answer to show: the connection
//! failed, timed out, or the peer sent something that is not a reply.

use std::fmt;
use std::time::Duration;

/// Why a call got no reply. Retrying makes sense after `Connect`, `NotSent`, `Timeout`
/// and `Closed` (on a new client for the last two), not after `Protocol` or
/// `Unsupported`; only after `Connect` and `NotSent` is it sure the server never saw
/// the call.
#[derive(Debug)]
pub enum ClientError {
    /// Could not open the connection (or finish the protocol's handshake).
    Connect(String),
    /// Reading or writing the socket failed.
    Io(std::io::Error),
    /// No reply within the timeout.
    Timeout(Duration),
    /// The connection is gone (closed by the peer, or after an earlier failure).
    Closed(String),
    /// The connection was found closed before the call was written (an HTTP keep-alive
    /// connection the server had ended): nothing reached the server, so the call can
    /// go on a new connection even if it is not safe to run twice.
    NotSent(String),
    /// The peer answered with something that is not a reply of this protocol
    /// (a bad body, an HTTP status with no RPC payload, a STOMP ERROR frame).
    Protocol(String),
    /// The call cannot be expressed in this protocol (named params over XML-RPC).
    Unsupported(String),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Connect(e) => write!(f, "cannot connect: {e}"),
            ClientError::Io(e) => write!(f, "i/o error: {e}"),
            ClientError::Timeout(d) => write!(f, "no reply within {:.3}s", d.as_secs_f64()),
            ClientError::Closed(why) => write!(f, "connection closed: {why}"),
            ClientError::NotSent(why) => write!(f, "connection closed before sending: {why}"),
            ClientError::Protocol(why) => write!(f, "protocol error: {why}"),
            ClientError::Unsupported(why) => write!(f, "unsupported: {why}"),
        }
    }
}

impl std::error::Error for ClientError {}

impl From<std::io::Error> for ClientError {
    fn from(e: std::io::Error) -> Self {
        ClientError::Io(e)
    }
}
