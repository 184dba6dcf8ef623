//! JSON-RPC as a client reads and writes it, shared by HTTP, raw TCP and STOMP.
//!
//! The client always sends numeric ids, so a reply's id is read as a number. A message
//! with a `method` member is a server notification (an event), not a reply.

use super::stream::Incoming;
use super::{ClientError, Event};
use rpcmux_jsonrpc::Id;
use rpcmux_value::Params;

/// `{"jsonrpc":"2.0","method":…,"params":…,"id":id}`
pub(crate) fn write_call(out: &mut Vec<u8>, id: u32, method: &str, params: &Params) {
    rpcmux_jsonrpc::write_request(out, Some(&Id::from(u64::from(id))), method, params);
}

/// Read one JSON-RPC message: a reply to call `id`, or a notification (an event).
pub(crate) fn read_message(body: &[u8]) -> Result<Incoming, ClientError> {
    let Some(r) = parse(body)? else {
        return Ok(notification(body).map_or(Incoming::Other, Incoming::Event));
    };
    let id = match &r.id {
        Id::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Id::Null | Id::String(_) => None,
    };
    match (id, r.outcome) {
        (Some(id), reply) => Ok(Incoming::Reply { id, reply }),
        // The server could not tell which request this answers (a parse error on our
        // bytes): nothing to match it to, and the stream is suspect.
        (None, Err(e)) => Err(ClientError::Protocol(format!(
            "error reply without a usable id: {e}"
        ))),
        (None, Ok(_)) => Err(ClientError::Protocol(format!(
            "reply without a usable id: {}",
            snippet(body, 200)
        ))),
    }
}

/// A notification's method and params as an event.
fn notification(body: &[u8]) -> Option<Event> {
    match rpcmux_jsonrpc::parse(body) {
        Ok(rpcmux_jsonrpc::Incoming::Single(Ok(r))) => Some(Event::from_notification(
            r.method.into_string(),
            Event::params_value(r.params),
        )),
        _ => None,
    }
}

/// Read the reply to a single call (an HTTP body), whatever its id: a body-level error
/// (e.g. -32700 with a null id) still answers this one call.
pub(crate) fn read_reply(body: &[u8]) -> Result<super::Reply, ClientError> {
    match parse(body)? {
        Some(r) => Ok(r.outcome),
        None => Err(ClientError::Protocol(
            "got a notification where a reply was expected".into(),
        )),
    }
}

/// A response, or `None` for a notification.
fn parse(body: &[u8]) -> Result<Option<rpcmux_jsonrpc::Response>, ClientError> {
    rpcmux_jsonrpc::parse_response_or_notification(body).map_err(|e| {
        ClientError::Protocol(format!(
            "not a JSON-RPC reply ({e}): {}",
            snippet(body, 200)
        ))
    })
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
    use rpcmux_value::{RpcError, Value};

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
        let Ok(Incoming::Event(e)) = read_message(
            br#"{"jsonrpc":"2.0","method":"|virt|x","params":{"a":1,"event_id":"0000000000000001-2"}}"#,
        ) else {
            panic!()
        };
        assert_eq!(
            (e.name.as_str(), e.id.as_deref()),
            ("|virt|x", Some("0000000000000001-2"))
        );
        assert!(read_message(br#"{"jsonrpc":"2.0","result":1,"id":"x"}"#).is_err());
        assert!(read_message(b"<html>").is_err());
        let null_id =
            br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#;
        assert_eq!(read_reply(null_id).unwrap().unwrap_err().code, -32700);
    }
}
