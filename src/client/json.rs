//! JSON-RPC as a client reads and writes it, shared by HTTP, raw TCP and STOMP.
//!
//! The client always sends numeric ids, so a reply's id is read as a number. A message
//! with a `method` member is a server notification (an event), not a reply.

use super::stream::Incoming;
use super::ClientError;
use rpcmux_jsonrpc::Id;
use rpcmux_value::{Params, RpcError, Value};
use serde::de::IgnoredAny;
use serde::Deserialize;

/// `{"jsonrpc":"2.0","method":…,"params":…,"id":id}`
pub(crate) fn write_call(out: &mut Vec<u8>, id: u32, method: &str, params: &Params) {
    rpcmux_jsonrpc::write_request(out, Some(&Id::from(u64::from(id))), method, params);
}

#[derive(Deserialize)]
struct WireError {
    code: i64,
    message: String,
    data: Option<Value>,
}

#[derive(Deserialize)]
struct Wire {
    method: Option<IgnoredAny>,
    result: Option<Value>,
    error: Option<WireError>,
    #[serde(default)]
    id: Option<serde_json::Value>,
}

/// Read one JSON-RPC message: a reply to call `id`, or a notification.
pub(crate) fn read_message(body: &[u8]) -> Result<Incoming, ClientError> {
    let w: Wire = serde_json::from_slice(body).map_err(|e| {
        ClientError::Protocol(format!(
            "not a JSON-RPC reply ({e}): {}",
            snippet(body, 200)
        ))
    })?;
    if w.method.is_some() {
        return Ok(Incoming::Other);
    }
    let reply = match w.error {
        Some(e) => Err(RpcError {
            code: e.code,
            message: e.message,
            data: e.data.map(Box::new),
        }),
        None => Ok(w.result.unwrap_or(Value::Nil)),
    };
    match w.id.as_ref().and_then(|v| v.as_u64()) {
        Some(id) if id <= u64::from(u32::MAX) => Ok(Incoming::Reply {
            id: id as u32,
            reply,
        }),
        // The server could not tell which request this answers (a parse error on our
        // bytes): nothing to match it to, and the stream is suspect.
        _ => Err(ClientError::Protocol(match reply {
            Err(e) => format!("error reply without a usable id: {e}"),
            Ok(_) => format!("reply without a usable id: {}", snippet(body, 200)),
        })),
    }
}

/// Read the reply to a single call (an HTTP body), whatever its id.
pub(crate) fn read_reply(body: &[u8]) -> Result<super::Reply, ClientError> {
    match read_message(body) {
        Ok(Incoming::Reply { reply, .. }) => Ok(reply),
        Ok(Incoming::Other) => Err(ClientError::Protocol(
            "got a notification where a reply was expected".into(),
        )),
        // A body-level error (e.g. -32700 with a null id) still answers this one call.
        Err(e) => match rpcmux_jsonrpc::parse_response(body) {
            Ok(r) => Ok(r.outcome),
            Err(_) => Err(e),
        },
    }
}

/// The start of `bytes` as text, for error messages.
pub(crate) fn snippet(bytes: &[u8], max: usize) -> String {
    let s = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]);
    if bytes.len() > max {
        format!("{s}…")
    } else {
        s.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_errors_and_notifications() {
        let Incoming::Reply { id, reply } =
            read_message(br#"{"jsonrpc":"2.0","result":[1,"a"],"id":7}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (id, reply),
            (7, Ok(Value::Array(vec![1.into(), "a".into()])))
        );
        let Incoming::Reply { reply, .. } = read_message(
            br#"{"jsonrpc":"2.0","error":{"code":1,"message":"no VM","data":3},"id":2}"#,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(reply, Err(RpcError::new(1, "no VM").with_data(3.into())));
        assert!(matches!(
            read_message(br#"{"jsonrpc":"2.0","method":"|virt|x","params":{}}"#),
            Ok(Incoming::Other)
        ));
        assert!(read_message(br#"{"jsonrpc":"2.0","result":1,"id":"x"}"#).is_err());
        assert!(read_message(b"<html>").is_err());
        let null_id =
            br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#;
        assert_eq!(read_reply(null_id).unwrap().unwrap_err().code, -32700);
    }
}
