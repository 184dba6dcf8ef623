//! What can go wrong while decoding or encoding, and how it maps to the shared [`RpcError`].

use rpcmux_value::RpcError;
use std::fmt;
use std::io;

/// A fatal error of the stream: after it the connection cannot go on (a msgpack stream has
/// no delimiter to resynchronise on), so the server logs it and closes.
///
/// Problems inside a well-framed request (bad method type, params not an array, an
/// unsupported value) are not errors of the stream: the decoder yields
/// [`Message::Invalid`](crate::Message::Invalid) for them and the connection goes on.
#[derive(Debug)]
pub enum CodecError {
    /// Reading from or writing to the transport failed.
    Io(io::Error),
    /// The message is (or is declared to be) larger than [`Limits::max_message`](crate::Limits).
    /// `size` is a lower bound: the decoder stops as soon as the cap is passed.
    TooLarge {
        /// The cap.
        limit: usize,
        /// Bytes seen or declared (at least).
        size: u64,
    },
    /// More than [`Limits::max_depth`](crate::Limits) containers are open at once.
    TooDeep {
        /// The cap.
        limit: usize,
    },
    /// Bytes that are not a msgpack-rpc message: not an array of 3 or 4 items, an unknown
    /// message type, a msgid that is not a u32, the reserved byte 0xc1, trailing bytes, ...
    Malformed(String),
    /// The stream ended in the middle of a message.
    Truncated {
        /// Bytes of the cut message that had arrived.
        buffered: usize,
    },
    /// A value could not be encoded (a string, binary or container longer than msgpack's
    /// 32-bit lengths allow).
    Encode(EncodeError),
}

impl CodecError {
    /// The error to report to a peer when one can still be sent (say, as the body of an
    /// HTTP reply): size → invalid request (-32600), anything else → parse error (-32700).
    pub fn to_rpc_error(&self) -> RpcError {
        match self {
            CodecError::TooLarge { .. } => RpcError::invalid_request(self),
            CodecError::Encode(_) | CodecError::Io(_) => RpcError::internal(self),
            _ => RpcError::parse_error(self),
        }
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::Io(e) => write!(f, "msgpack-rpc I/O error: {e}"),
            CodecError::TooLarge { limit, size } => write!(
                f,
                "msgpack-rpc message too large: at least {size} bytes, the limit is {limit}"
            ),
            CodecError::TooDeep { limit } => write!(
                f,
                "msgpack-rpc message nested too deep: more than {limit} levels"
            ),
            CodecError::Malformed(why) => write!(f, "malformed msgpack-rpc message: {why}"),
            CodecError::Truncated { buffered } => write!(
                f,
                "msgpack-rpc stream ended inside a message ({buffered} bytes unread)"
            ),
            CodecError::Encode(e) => write!(f, "cannot encode msgpack-rpc message: {e}"),
        }
    }
}

impl std::error::Error for CodecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CodecError::Io(e) => Some(e),
            CodecError::Encode(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for CodecError {
    fn from(e: io::Error) -> Self {
        CodecError::Io(e)
    }
}

impl From<EncodeError> for CodecError {
    fn from(e: EncodeError) -> Self {
        CodecError::Encode(e)
    }
}

/// A value msgpack cannot express: a string, binary, array or map whose length does not
/// fit msgpack's 32-bit length fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodeError {
    /// "string", "binary", "array" or "map".
    pub what: &'static str,
    /// Its length.
    pub len: usize,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of length {} exceeds msgpack's limit of {}",
            self.what,
            self.len,
            u32::MAX
        )
    }
}

impl std::error::Error for EncodeError {}
