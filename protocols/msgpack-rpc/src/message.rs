//! The three msgpack-rpc messages, their encoders, and parsing one framed message.
//!
//! Wire forms (<https://github.com/msgpack-rpc/msgpack-rpc/blob/master/spec.md>):
//! `[0, msgid, method, params]`, `[1, msgid, error, result]`, `[2, method, params]`.

use crate::decode::{ReadError, Reader};
use crate::encode::{put_array_len, put_nil, put_str, put_uint, write_value};
use crate::error::{CodecError, EncodeError};
use crate::error_shape::put_error;
use crate::limits::Limits;
use crate::scan::{Scan, Scanner};
use bytes::BytesMut;
use rpcmux_value::{RpcError, Value};

/// Depth allowance when parsing a frame: the scanner already enforced [`Limits::max_depth`].
const FRAMED: usize = usize::MAX;

/// The array headers of 4-item (request, response) and 3-item (notification) messages.
const ARRAY4: u8 = rmp::Marker::FixArray(4).to_u8();
const ARRAY3: u8 = rmp::Marker::FixArray(3).to_u8();

/// The type field of a request: `[0, msgid, method, params]`.
pub const REQUEST: u8 = 0;
/// The type field of a response: `[1, msgid, error, result]`.
pub const RESPONSE: u8 = 1;
/// The type field of a notification: `[2, method, params]`.
pub const NOTIFICATION: u8 = 2;

/// One msgpack-rpc message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A call that expects a response with the same `msgid`.
    Request {
        /// Chosen by the caller to match the response.
        msgid: u32,
        /// The method name.
        method: String,
        /// The arguments, by position.
        params: Vec<Value>,
    },
    /// `error` is nil on success; then `result` holds the value.
    Response {
        /// The request's msgid.
        msgid: u32,
        /// Nil, or the error (any value; rpcmux sends `[code, message]`).
        error: Value,
        /// The result (nil when `error` is set).
        result: Value,
    },
    /// A call that gets no response.
    Notification {
        /// The method name.
        method: String,
        /// The arguments, by position.
        params: Vec<Value>,
    },
    /// A request or notification that was framed correctly but cannot be carried out: the
    /// method is not a str/bin, params is not an array, or a param holds something the
    /// data model cannot (an unknown extension, a map key that is an array, ...). The stream
    /// is still in step, so the connection goes on: a server answers a request with
    /// `error` ([`encode_response`] with `Err`, or encode this message, which does that)
    /// and logs a notification's (`msgid: None`), which has no reply.
    Invalid {
        /// The request's msgid; `None` for a notification.
        msgid: Option<u32>,
        /// Why it cannot be carried out, to answer with.
        error: RpcError,
    },
}

impl Message {
    /// Append this message's wire form to `out`. A `Response`'s error and result are
    /// written as they are; an `Invalid` with a msgid is written as the error reply to it,
    /// one without writes nothing (notifications get no reply).
    pub fn encode(&self, out: &mut BytesMut) -> Result<(), EncodeError> {
        match self {
            Message::Request {
                msgid,
                method,
                params,
            } => encode_request(out, *msgid, method, params),
            Message::Notification { method, params } => encode_notification(out, method, params),
            Message::Response {
                msgid,
                error,
                result,
            } => atomic(out, |out| {
                out.extend_from_slice(&[ARRAY4, RESPONSE]);
                put_uint(out, u64::from(*msgid));
                write_value(out, error)?;
                write_value(out, result)
            }),
            Message::Invalid {
                msgid: Some(msgid),
                error,
            } => {
                encode_response(out, *msgid, Err(error));
                Ok(())
            }
            Message::Invalid { msgid: None, .. } => Ok(()),
        }
    }
}

/// Run `f`, and if it fails cut `out` back to where it was, so a failed encode never
/// leaves half a message in the output stream.
fn atomic(
    out: &mut BytesMut,
    f: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let start = out.len();
    let r = f(out);
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// Append the reply `[1, msgid, error, result]` to `out`: `[1, msgid, nil, value]` on
/// success, `[1, msgid, [code, message(, data)], nil]` on error (see
/// [`error_to_value`](crate::error_to_value) for why that shape). The server's hot path:
/// one pass into the connection's output buffer, no intermediate values.
///
/// Never fails: a result msgpack cannot express (a string over 4 GiB) is replaced by an
/// internal-error reply, so the caller always has a reply to send.
pub fn encode_response(out: &mut BytesMut, msgid: u32, result: Result<&Value, &RpcError>) {
    let written = atomic(out, |out| {
        out.extend_from_slice(&[ARRAY4, RESPONSE]);
        put_uint(out, u64::from(msgid));
        match result {
            Ok(v) => {
                put_nil(out);
                write_value(out, v)
            }
            Err(e) => {
                put_error(out, e)?;
                put_nil(out);
                Ok(())
            }
        }
    });
    if let Err(e) = written {
        let e = RpcError::internal(format!("cannot encode the reply: {e}"));
        // Our own error of a few bytes always encodes.
        let _ = atomic(out, |out| {
            out.extend_from_slice(&[ARRAY4, RESPONSE]);
            put_uint(out, u64::from(msgid));
            put_error(out, &e)?;
            put_nil(out);
            Ok(())
        });
    }
}

/// Append a success reply `[1, msgid, nil, result]` whose result `write` appends itself:
/// a server encodes a typed result straight from its Rust type, with no [`Value`].
/// If `write` fails, what it wrote is dropped and the reply is an internal error saying why.
pub fn encode_result_with<E: std::fmt::Display>(
    out: &mut BytesMut,
    msgid: u32,
    write: impl FnOnce(&mut BytesMut) -> Result<(), E>,
) {
    let start = out.len();
    out.extend_from_slice(&[ARRAY4, RESPONSE]);
    put_uint(out, u64::from(msgid));
    put_nil(out);
    if let Err(e) = write(out) {
        out.truncate(start);
        let e = RpcError::internal(format!("cannot encode the result: {e}"));
        encode_response(out, msgid, Err(&e));
    }
}

/// Append the notification `[2, method, params]` to `out` (server events). On error `out`
/// is left as it was.
pub fn encode_notification(
    out: &mut BytesMut,
    method: &str,
    params: &[Value],
) -> Result<(), EncodeError> {
    atomic(out, |out| {
        out.extend_from_slice(&[ARRAY3, NOTIFICATION]);
        put_str(out, method)?;
        put_array_len(out, params.len())?;
        params.iter().try_for_each(|p| write_value(out, p))
    })
}

/// Append the request `[0, msgid, method, params]` to `out` (for clients and benches). On
/// error `out` is left as it was.
pub fn encode_request(
    out: &mut BytesMut,
    msgid: u32,
    method: &str,
    params: &[Value],
) -> Result<(), EncodeError> {
    atomic(out, |out| {
        out.extend_from_slice(&[ARRAY4, REQUEST]);
        put_uint(out, u64::from(msgid));
        put_str(out, method)?;
        put_array_len(out, params.len())?;
        params.iter().try_for_each(|p| write_value(out, p))
    })
}

/// Decode a buffer that holds exactly one message (an HTTP body, a test vector), with the
/// same caps and rules as the stream codec.
pub fn decode_message(buf: &[u8], limits: &Limits) -> Result<Message, CodecError> {
    match Scanner::default().scan(buf, limits)? {
        Scan::Complete(len) if len == buf.len() => parse_message(&buf[..len]),
        Scan::Complete(len) => Err(CodecError::Malformed(format!(
            "{} bytes after the end of the message",
            buf.len() - len
        ))),
        Scan::Incomplete { .. } => Err(CodecError::Truncated {
            buffered: buf.len(),
        }),
    }
}

/// Parse one message that the scanner framed (so its size, depth and envelope are known
/// good). What makes a message fatal and what makes it [`Message::Invalid`] is explained in
/// the crate docs.
pub(crate) fn parse_message(frame: &[u8]) -> Result<Message, CodecError> {
    let mut r = Reader::new(frame);
    let malformed = |why: String| CodecError::Malformed(why);
    let fatal = |e: ReadError| CodecError::Malformed(e.to_string());
    let depth = FRAMED;
    let len = r
        .array_len()
        .map_err(fatal)?
        .ok_or_else(|| malformed("a message is an array".into()))?;
    let kind = match r.value(FRAMED) {
        Ok(Value::Int(k @ 0..=2)) => k as u8,
        Ok(other) => {
            return Err(malformed(format!(
                "message type must be 0, 1 or 2, got {}",
                describe(&other)
            )))
        }
        Err(e) => return Err(malformed(format!("message type: {e}"))),
    };
    match (kind, len) {
        (REQUEST, 4) => {
            let msgid = msgid(&mut r, "request")?;
            let invalid = |error| Message::Invalid {
                msgid: Some(msgid),
                error,
            };
            Ok(match method_and_params(&mut r, depth) {
                Ok((method, params)) => Message::Request {
                    msgid,
                    method,
                    params,
                },
                Err(error) => invalid(error),
            })
        }
        (RESPONSE, 4) => {
            let msgid = msgid(&mut r, "response")?;
            let error = r.value(depth).map_err(fatal)?;
            let result = r.value(depth).map_err(fatal)?;
            Ok(Message::Response {
                msgid,
                error,
                result,
            })
        }
        (NOTIFICATION, 3) => Ok(match method_and_params(&mut r, depth) {
            Ok((method, params)) => Message::Notification { method, params },
            Err(error) => Message::Invalid { msgid: None, error },
        }),
        (kind, len) => Err(malformed(format!(
            "a message of type {kind} must have {} items, got {len}",
            if kind == NOTIFICATION { 3 } else { 4 }
        ))),
    }
}

/// The msgid of a request or response: a u32. Anything else is fatal, since a reply must
/// carry the request's msgid and there is none to carry (see the crate docs).
pub(crate) fn msgid(r: &mut Reader<'_>, what: &str) -> Result<u32, CodecError> {
    match r.value(FRAMED) {
        Ok(Value::Int(i)) if (0..=i64::from(u32::MAX)).contains(&i) => Ok(i as u32),
        Ok(other) => Err(CodecError::Malformed(format!(
            "{what} msgid must be an unsigned 32-bit int, got {}",
            describe(&other)
        ))),
        Err(e) => Err(CodecError::Malformed(format!("{what} msgid: {e}"))),
    }
}

/// The method name (str, or bin as pynvim sends it) and the params array.
fn method_and_params(r: &mut Reader<'_>, depth: usize) -> Result<(String, Vec<Value>), RpcError> {
    let method = method_name(r)?;
    let n = match r.array_len() {
        Ok(Some(n)) => n,
        _ => {
            let got = r.value(depth).map(|v| describe(&v));
            return Err(RpcError::invalid_request(format!(
                "params of {method} must be an array, got {}",
                got.unwrap_or_else(|e| e.to_string())
            )));
        }
    };
    let params = r
        .items(n, depth)
        .map_err(|e| RpcError::invalid_params(format!("{method}: {e}")))?;
    Ok((method, params))
}

/// The method name: a str, or a bin holding UTF-8 (pynvim sends bin).
pub(crate) fn method_name(r: &mut Reader<'_>) -> Result<String, RpcError> {
    match r.value(FRAMED) {
        Ok(Value::String(s)) => Ok(s.into_string()),
        Ok(Value::Bytes(b)) => {
            String::from_utf8(b).map_err(|_| RpcError::invalid_request("method name is not UTF-8"))
        }
        Ok(other) => Err(RpcError::invalid_request(format!(
            "method name must be a str or bin, got {}",
            describe(&other)
        ))),
        Err(e) => Err(RpcError::invalid_request(format!("method name: {e}"))),
    }
}

/// A short description of a value for error messages: its type, and small scalars in full.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Int(i) => format!("int {i}"),
        Value::Double(d) => format!("double {d}"),
        Value::Bool(b) => format!("bool {b}"),
        Value::String(s) if s.len() <= 32 => format!("string {s:?}"),
        other => other.type_name().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_encode_leaves_the_buffer_as_it_was() {
        let mut out = BytesMut::from(&b"earlier reply"[..]);
        let r = atomic(&mut out, |out| {
            out.extend_from_slice(&[0x94, RESPONSE, 0x01]);
            Err(EncodeError {
                what: "string",
                len: usize::MAX,
            })
        });
        assert!(r.is_err());
        assert_eq!(&out[..], b"earlier reply");
    }

    #[test]
    fn describe_shows_small_scalars() {
        assert_eq!(describe(&Value::Int(-1)), "int -1");
        assert_eq!(describe(&Value::from("x".repeat(40))), "string");
        assert_eq!(describe(&Value::Nil), "nil");
    }
}
