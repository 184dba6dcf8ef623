//! MessagePack-RPC for rpcmux: the messages, [`Value`](rpcmux_value::Value) ↔ msgpack, and an incremental
//! tokio-util codec. Pure: no sockets, usable on its own.
//!
//! ```
//! use bytes::BytesMut;
//! use rpcmux_msgpack_rpc::{encode_request, encode_response, Message, MsgpackRpcCodec};
//! use rpcmux_value::Value;
//! use tokio_util::codec::Decoder;
//!
//! let mut wire = BytesMut::new();
//! encode_request(&mut wire, 7, "echo", &[Value::from("hi")]).unwrap();
//! let mut codec = MsgpackRpcCodec::default();
//! let Some(Message::Request { msgid, method, params }) = codec.decode(&mut wire).unwrap() else {
//!     panic!()
//! };
//! assert_eq!((msgid, method.as_str()), (7, "echo"));
//! let mut out = BytesMut::new();
//! encode_response(&mut out, msgid, Ok(&params[0])); // [1, 7, nil, "hi"]
//! ```
//!
//! # Decisions
//!
//! **Error field.** Errors go out as `[code, message]` (`[code, message, data]` when there is
//! data). pynvim raises `Exception(error[1])`, so it needs an array whose item 1 is the
//! message; aio-msgpack-rpc and msgpack-rpc-python raise their exception with the whole
//! object, so they show code and message. A bare string or a map would break pynvim. The
//! sources and the reasoning are in [`error_to_value`]'s module;
//! [`value_to_error`] reads this shape and the common foreign ones.
//!
//! **msgid.** A request's (or response's) msgid must be an int in `0..=u32::MAX`. Anything
//! else (negative, above u32::MAX, a float, a string) is a fatal [`CodecError::Malformed`]:
//! the server logs it and closes the connection. A reply must carry the request's msgid, and
//! there is no u32 to carry; a reply with some other msgid would match none of the client's
//! calls (or the wrong one), and staying silent would leave the call hanging forever.
//! Closing fails every pending call of that client at once, with a clear log line on our side.
//!
//! **Fatal versus answerable.** A msgpack stream cannot resynchronise, so everything that
//! breaks framing is a [`CodecError`] (the caller closes): a first byte that does not start
//! an array of 3 or 4 items, the reserved byte 0xc1, a message over
//! [`Limits::max_message`] or deeper than [`Limits::max_depth`], an unknown message type,
//! a type with the wrong item count, a bad msgid, a response whose values cannot be read.
//! Once a request's msgid is known, its other problems leave the stream in step and come
//! out as [`Message::Invalid`] with that msgid, to be answered with an error: a method that
//! is not str/bin (-32600), params that are not an array (-32600), a param the model cannot
//! hold (-32602). A notification with such problems comes out as `Invalid` without msgid:
//! log it and go on (notifications have no reply).
//!
//! **Types.**
//! - Ints of every width read as i64. A u64 above `i64::MAX` becomes a **double** (the
//!   same rule as the JSON side's `Value` deserializer, so `echo` behaves alike on every
//!   protocol); it keeps its magnitude and loses low bits. Ints are written in the
//!   smallest form, non-negative ones as uint.
//! - f32 widens to f64; doubles are always written as f64.
//! - A str that is not valid UTF-8 reads as **bytes**, not an error: msgpack-rpc-python
//!   0.4.1 packs with msgpack-python 0.5 and `use_bin_type=False`, so Python `bytes` arrive as
//!   old-spec raw (str). Keeping them as bytes round-trips them. Method names and map keys
//!   must be UTF-8.
//! - bin ↔ bytes. The timestamp extension (-1), in all three sizes (4, 8, 12 bytes) ↔
//!   dateTime, written in the smallest size that holds the instant. Other extension types
//!   are refused.
//! - Maps become structs. Keys: str, or bin that is UTF-8 (what pynvim's bytes keys are);
//!   ints are written in decimal (`{1: x}` → `{"1": x}`, as Python's `json.dumps` does)
//!   and bools as `true`/`false`; nil, float, array, map and extension keys are refused. A
//!   repeated key keeps its first position and its last value.
//!
//! **Incremental decoding.** [`MsgpackRpcCodec`] walks item headers as bytes arrive and
//! keeps its place between calls (a stack of "items still to read" per open container and
//! the offset scanned so far), so a message in a thousand reads costs one walk and one
//! parse, and the caps apply to declared lengths before the bytes arrive.
//!
//! **Encoding.** Into the caller's buffer in one pass, through rmp's [`Marker`](rmp::Marker)
//! tags and [`bytes::BufMut`]; no serde and no intermediate values. Output is byte-identical
//! to Python's `msgpack.packb` for the same data.
#![warn(missing_docs)]

mod call;
mod codec;
mod decode;
mod encode;
mod error;
mod error_shape;
mod limits;
mod message;
mod scan;
mod short;
mod timestamp;
pub mod typed;

pub use call::{params_len, read_params, split_call, SplitCall};
pub use codec::{parse_framed, Framed, MsgpackRpcCodec};
pub use decode::read_value;
pub use encode::write_value;
pub use error::{CodecError, EncodeError};
pub use error_shape::{error_to_value, value_to_error};
pub use limits::Limits;
pub use message::{
    decode_message, encode_notification, encode_request, encode_response, encode_result_with,
    Message, NOTIFICATION, REQUEST, RESPONSE,
};
pub use timestamp::TIMESTAMP_EXT;
