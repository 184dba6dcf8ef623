//! Writing responses (server side) and requests / reading responses (client side).
//!
//! Responses are written field by field into the caller's buffer: no intermediate
//! tree, one allocation for the whole reply on the hot path.

use crate::id::{present_raw, Id};
use crate::request::Version;
use rpcmux_value::{Params, RpcError, Value};
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing a Value or an Id into a Vec cannot fail: no I/O, string keys only.
    serde_json::to_writer(&mut *out, v).expect("serializing a Value never fails");
}

/// `{"jsonrpc":"2.0","result":…,"id":…}`
pub fn write_result(out: &mut Vec<u8>, id: &Id, result: &Value) {
    write_result_in(out, Version::V2, id, result)
}

/// A result in the request's [`Version`]: 2.0's `{"jsonrpc":"2.0","result":…,"id":…}`
/// or 1.0's `{"result":…,"error":null,"id":…}`.
pub fn write_result_in(out: &mut Vec<u8>, version: Version, id: &Id, result: &Value) {
    out.extend_from_slice(result_head(version));
    write_json(out, result);
    write_result_tail(out, version, id);
}

fn result_head(version: Version) -> &'static [u8] {
    match version {
        Version::V2 => br#"{"jsonrpc":"2.0","result":"#,
        Version::V1 => br#"{"result":"#,
    }
}

fn write_result_tail(out: &mut Vec<u8>, version: Version, id: &Id) {
    out.extend_from_slice(match version {
        Version::V2 => br#","id":"#,
        Version::V1 => br#","error":null,"id":"#,
    });
    id.write(out);
    out.push(b'}');
}

/// `{"jsonrpc":"2.0","result":…,"id":…}` whose result `write` appends itself: a server
/// serializes a typed result straight from its Rust type, with no [`Value`]. If `write`
/// fails, what it wrote is dropped and the reply is an internal error saying why.
pub fn write_result_with<E: std::fmt::Display>(
    out: &mut Vec<u8>,
    id: &Id,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) {
    write_result_with_in(out, Version::V2, id, write)
}

/// [`write_result_with`] in the request's [`Version`].
pub fn write_result_with_in<E: std::fmt::Display>(
    out: &mut Vec<u8>,
    version: Version,
    id: &Id,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) {
    let start = out.len();
    out.extend_from_slice(result_head(version));
    if let Err(e) = write(out) {
        out.truncate(start);
        let e = RpcError::internal(format!("cannot encode the result: {e}"));
        return write_error_in(out, version, id, &e);
    }
    write_result_tail(out, version, id);
}

/// `{"jsonrpc":"2.0","error":{"code":…,"message":…[,"data":…]},"id":…}`
pub fn write_error(out: &mut Vec<u8>, id: &Id, err: &RpcError) {
    write_error_in(out, Version::V2, id, err)
}

/// An error in the request's [`Version`]: 2.0's
/// `{"jsonrpc":"2.0","error":{…},"id":…}` or 1.0's `{"result":null,"error":{…},"id":…}`
/// (the error object is 2.0's in both: 1.0 leaves its shape open).
pub fn write_error_in(out: &mut Vec<u8>, version: Version, id: &Id, err: &RpcError) {
    out.extend_from_slice(match version {
        Version::V2 => br#"{"jsonrpc":"2.0","error":{"code":"#,
        Version::V1 => br#"{"result":null,"error":{"code":"#,
    });
    out.extend_from_slice(err.code.to_string().as_bytes());
    out.extend_from_slice(br#","message":"#);
    write_json(out, &err.message);
    if let Some(data) = &err.data {
        out.extend_from_slice(br#","data":"#);
        write_json(out, data);
    }
    out.extend_from_slice(br#"},"id":"#);
    id.write(out);
    out.push(b'}');
}

/// A JSON-RPC 1.0 error as text: `{"result":null,"error":"…","id":…}`, the shape Go's
/// `net/rpc/jsonrpc` client reads (it takes `error` as a string and gives up on the
/// connection when it is anything else). The text is the message with its code after
/// it, `"Method not found: nope (code -32601)"`, so a Go caller still sees the code.
pub fn write_error_text(out: &mut Vec<u8>, id: &Id, err: &RpcError) {
    out.extend_from_slice(br#"{"result":null,"error":"#);
    write_json(out, &format!("{} (code {})", err.message, err.code));
    out.extend_from_slice(br#","id":"#);
    id.write(out);
    out.push(b'}');
}

/// The code a text error reads as ([`parse_response`]): JSON-RPC 1.0 leaves the shape of
/// `error` open, and Go's `net/rpc/jsonrpc` servers send a bare string
/// (`"error":"divide by zero"`), which carries no code. It is in the range JSON-RPC
/// leaves to servers, next to rpcmux's gateway codes (-32010..-32013).
pub const TEXT_ERROR_CODE: i64 = -32014;

/// A notification `{"jsonrpc":"2.0","method":…,"params":…}`: how servers push events.
pub fn write_notification(out: &mut Vec<u8>, method: &str, params: &Value) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    write_json(out, method);
    out.extend_from_slice(br#","params":"#);
    write_json(out, params);
    out.push(b'}');
}

/// A request as a client writes it; `id: None` writes a notification.
pub fn write_request(out: &mut Vec<u8>, id: Option<&Id>, method: &str, params: &Params) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    write_json(out, method);
    out.extend_from_slice(br#","params":"#);
    match params {
        Params::Positional(a) => write_json(out, a),
        Params::Named(m) => write_json(out, m),
    }
    if let Some(id) = id {
        out.extend_from_slice(br#","id":"#);
        id.write(out);
    }
    out.push(b'}');
}

/// A response as a client reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered.
    pub id: Id,
    /// `result`, or `error`.
    pub outcome: Result<Value, RpcError>,
}

/// `error` as servers send it: 2.0's object, or (JSON-RPC 1.0, as Go's
/// `net/rpc/jsonrpc` server writes it) a bare string.
#[derive(Deserialize)]
#[serde(untagged)]
enum WireError {
    Object {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    Text(String),
}

#[derive(Deserialize)]
struct WireResponse<'a> {
    /// Only a server notification (an event) has one.
    method: Option<IgnoredAny>,
    result: Option<Value>,
    error: Option<WireError>,
    /// The exact text, so a number id reads back as it was written.
    #[serde(default, borrow, deserialize_with = "present_raw")]
    id: Option<&'a RawValue>,
}

impl WireResponse<'_> {
    fn into_response(self) -> Result<Response, RpcError> {
        let id = match self.id {
            None => Id::Null,
            Some(raw) => Id::from_raw(raw).ok_or_else(|| {
                RpcError::parse_error("\"id\" must be a string, a number or null")
            })?,
        };
        let outcome = match self.error {
            Some(WireError::Object {
                code,
                message,
                data,
            }) => Err(RpcError {
                code,
                message,
                data: data.map(Box::new),
            }),
            Some(WireError::Text(message)) => Err(RpcError {
                code: TEXT_ERROR_CODE,
                message,
                data: None,
            }),
            None => Ok(self.result.unwrap_or(Value::Nil)),
        };
        Ok(Response { id, outcome })
    }
}

/// Parse one response object (not a batch). A reply with neither result nor error
/// reads as a `null` result (`"result": null` deserializes to `None`).
pub fn parse_response(body: &[u8]) -> Result<Response, RpcError> {
    let w: WireResponse = serde_json::from_slice(body).map_err(RpcError::parse_error)?;
    w.into_response()
}

/// Parse one message arriving at a client over a stream, where the server may also
/// push events: `Ok(None)` for a notification (a message with a `method`), else the
/// response, read as [`parse_response`] reads it.
pub fn parse_response_or_notification(body: &[u8]) -> Result<Option<Response>, serde_json::Error> {
    let w: WireResponse = serde_json::from_slice(body)?;
    if w.method.is_some() {
        return Ok(None);
    }
    w.into_response()
        .map(Some)
        .map_err(|e| serde::de::Error::custom(e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_results_and_errors() {
        let mut out = Vec::new();
        write_result(&mut out, &Id::from(1), &Value::from("x"));
        assert_eq!(out, br#"{"jsonrpc":"2.0","result":"x","id":1}"#);
        out.clear();
        let err = RpcError::method_not_found("nope").with_data(Value::Int(3));
        write_error(&mut out, &Id::Null, &err);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found: nope","data":3},"id":null}"#
        );
        let back = parse_response(&out).unwrap();
        assert_eq!(back.outcome, Err(err.clone()));
        let back = parse_response_or_notification(&out).unwrap().unwrap();
        assert_eq!((back.id, back.outcome), (Id::Null, Err(err)));
        out.clear();
        write_notification(&mut out, "|virt|x", &Value::Nil);
        assert_eq!(parse_response_or_notification(&out).unwrap(), None);
        assert!(parse_response_or_notification(b"<html>").is_err());
    }

    #[test]
    fn version_1_replies_carry_result_and_error() {
        let mut out = Vec::new();
        write_result_in(&mut out, Version::V1, &Id::from(1), &Value::from("x"));
        assert_eq!(out, br#"{"result":"x","error":null,"id":1}"#);
        let back = parse_response(&out).unwrap();
        assert_eq!((back.id, back.outcome), (Id::from(1), Ok(Value::from("x"))));
        out.clear();
        write_result_with_in(&mut out, Version::V1, &Id::from("a"), |o| {
            o.extend_from_slice(b"[1]");
            Ok::<(), String>(())
        });
        assert_eq!(out, br#"{"result":[1],"error":null,"id":"a"}"#);
        out.clear();
        write_result_with_in(&mut out, Version::V1, &Id::from(2), |o| {
            o.extend_from_slice(b"[1");
            Err("no")
        });
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"result":null,"error":{"code":-32603,"message":"Internal error: cannot encode the result: no"},"id":2}"#
        );
        out.clear();
        let err = RpcError::method_not_found("nope");
        write_error_in(&mut out, Version::V1, &Id::from(3), &err);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            r#"{"result":null,"error":{"code":-32601,"message":"Method not found: nope"},"id":3}"#
        );
        assert_eq!(parse_response(&out).unwrap().outcome, Err(err));
    }

    #[test]
    fn text_errors_both_ways() {
        // Go's net/rpc/jsonrpc server: the error is a string, the result null.
        let back = parse_response(br#"{"id":1,"result":null,"error":"divide by zero"}"#).unwrap();
        let want = RpcError {
            code: TEXT_ERROR_CODE,
            message: "divide by zero".into(),
            data: None,
        };
        assert_eq!((back.id, back.outcome), (Id::from(1), Err(want)));
        let ok = parse_response(br#"{"id":2,"result":7,"error":null}"#).unwrap();
        assert_eq!(ok.outcome, Ok(Value::Int(7)));
        assert!(parse_response(br#"{"id":3,"error":5}"#).is_err());
        let mut out = Vec::new();
        write_error_text(&mut out, &Id::from(4), &RpcError::method_not_found("nope"));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"result":null,"error":"Method not found: nope (code -32601)","id":4}"#
        );
    }

    #[test]
    fn request_round_trips_through_the_server_parser() {
        let mut out = Vec::new();
        let params = Params::Positional(vec![Value::Bool(true)]);
        write_request(&mut out, Some(&Id::from("a")), "echo", &params);
        let crate::Incoming::Single(Ok(req)) = crate::parse(&out).unwrap() else {
            panic!()
        };
        assert_eq!((req.method.as_str(), req.params), ("echo", params));
    }
}
