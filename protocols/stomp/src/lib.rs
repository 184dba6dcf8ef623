//! STOMP 1.2 frames as a tokio-util codec: pure, no sockets.
//!
//! - [`StompCodec`] decodes bytes into [`Item`]s (frames and heart-beats) and encodes
//!   [`Frame`]s, with header escaping (`\c \n \r \\`, except on CONNECT / STOMP /
//!   CONNECTED, as the spec says), `content-length` or NUL-terminated bodies, LF or CRLF
//!   line ends, and the size caps of [`Limits`] enforced while reading.
//! - [`probe_client_frame`] tells a connection sniffer whether the first bytes are a
//!   STOMP client frame ([`Probe::Match`] / [`Probe::NoMatch`] / [`Probe::NeedMore`]).
//! - [`parse_heartbeat`] and [`heartbeat_negotiate`] implement the `heart-beat` header.
//!
//! Spec: <https://stomp.github.io/stomp-specification-1.2.html>. Session rules (which
//! command may come when, versions, receipts, subscriptions) belong to the server.
//!
//! ```
//! use bytes::BytesMut;
//! use rpcmux_stomp::{Command, Frame, Item, Limits, StompCodec};
//! use tokio_util::codec::{Decoder, Encoder};
//!
//! let mut codec = StompCodec::new(Limits::default());
//! let mut wire = BytesMut::new();
//! let send = Frame::new(Command::Send)
//!     .header("destination", "jms.topic.vdsm_requests")
//!     .with_body(r#"{"jsonrpc":"2.0","method":"ping","id":1}"#);
//! codec.encode(&send, &mut wire).unwrap();
//! codec.encode(Item::Heartbeat, &mut wire).unwrap();
//!
//! let Some(Item::Frame(frame)) = codec.decode(&mut wire).unwrap() else { panic!() };
//! assert_eq!(frame.get("destination"), Some("jms.topic.vdsm_requests"));
//! assert_eq!(frame.get("content-length"), Some("40"));
//! assert_eq!(codec.decode(&mut wire).unwrap(), Some(Item::Heartbeat));
//! assert_eq!(codec.decode(&mut wire).unwrap(), None);
//! ```
#![warn(missing_docs)]

mod codec;
mod command;
mod decode;
mod encode;
mod error;
mod escape;
mod frame;
mod heartbeat;
mod limits;
mod probe;

pub use codec::StompCodec;
pub use command::{Command, UnknownCommand};
pub use encode::{encode_frame, encode_frame_head, encode_heartbeat, HEARTBEAT};
pub use error::StompError;
pub use frame::{Frame, Item};
pub use heartbeat::{heartbeat_negotiate, parse_heartbeat};
pub use limits::Limits;
pub use probe::{probe_client_frame, Probe};
/// Header names and values: the data model's small string (derefs to `str`).
pub use rpcmux_value::Str;
