//! The RFC 6455 WebSocket frame codec and the opening handshake's accept key, pure (no
//! I/O): the caller owns the connection and its buffers.
//!
//! Why not tokio-tungstenite or fastwebsockets: both own the connection's IO, with their
//! own read buffer and their own write queue, and rpcmux's session driver must own those
//! to bound unsent output (backpressure) and to give buffers back while a session is
//! idle. The frame format itself is small: a 2 to 14 byte header, and client payloads
//! XOR-masked with a 4-byte key. [`parse_header`] judges a frame from its header before
//! any of its payload is buffered, and [`unmask`] works in place, so a single-frame
//! message reaches its parser without a copy.
//!
//! ```
//! use bytes::BytesMut;
//! use rpcmux_websocket::{parse_header, put_masked, unmask, TEXT};
//!
//! // A client's frame, masked as RFC 6455 requires.
//! let mut wire = BytesMut::new();
//! put_masked(&mut wire, TEXT, br#"{"jsonrpc":"2.0","method":"ping","id":1}"#, [1, 2, 3, 4]);
//!
//! // The server: the header first (`Ok(None)` until it is complete), then the payload.
//! let h = parse_header(&wire).unwrap().unwrap();
//! assert_eq!((h.fin, h.opcode, h.len), (true, TEXT, 40));
//! let mut payload = wire.split_off(h.header_len);
//! unmask(&mut payload, h.mask.unwrap());
//! assert!(payload.starts_with(b"{\"jsonrpc\""));
//!
//! assert_eq!(
//!     rpcmux_websocket::accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
//!     "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
//! );
//! ```
#![warn(missing_docs)]

mod frames;
mod handshake;

pub use frames::*;
pub use handshake::accept_key;
