//! Writing responses (server side) and requests / reading responses (client side).
//!
//! Responses are written field by field into the caller's buffer: no intermediate
//! tree, one allocation for the whole reply on the hot path.

use crate::id::{present_raw, Id};
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
    out.extend_from_slice(br#"{"jsonrpc":"2.0","result":"#);
    write_json(out, result);
    out.extend_from_slice(br#","id":"#);
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
    let start = out.len();
    out.extend_from_slice(br#"{"jsonrpc":"2.0","result":"#);
    if let Err(e) = write(out) {
        out.truncate(start);
        let e = RpcError::internal(format!("cannot encode the result: {e}"));
        return write_error(out, id, &e);
    }
    out.extend_from_slice(br#","id":"#);
    id.write(out);
    out.push(b'}');
}

/// `{"jsonrpc":"2.0","error":{"code":…,"message":…[,"data":…]},"id":…}`
pub fn write_error(out: &mut Vec<u8>, id: &Id, err: &RpcError) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","error":{"code":"#);
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

#[derive(Deserialize)]
struct WireError {
    code: i64,
    message: String,
    data: Option<Value>,
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
            Some(e) => Err(RpcError {
                code: e.code,
                message: e.message,
                data: e.data.map(Box::new),
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
