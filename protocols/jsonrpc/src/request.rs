//! Parsing requests and batches, with the JSON-RPC 2.0 error classification.

use crate::id::{present, Id};
use rpcmux_value::{Params, RpcError, Value};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;

/// One well-formed call. `id: None` is a notification (no reply is sent).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: Option<Id>,
    pub method: String,
    pub params: Params,
}

/// A request that could not be accepted, with the id to answer it under.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    pub id: Id,
    pub error: RpcError,
}

/// What a JSON-RPC body holds: one request or a batch. A batch is answered as an
/// array even when it has one element (VDSM got that wrong).
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Single(Result<Request, Failed>),
    Batch(Vec<Result<Request, Failed>>),
}

/// The typed fast path: borrowing where it can, `params` straight into [`Value`].
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    method: Option<String>,
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Id>,
}

/// Parse a body. `Err` is an error that answers the whole body: a parse error, or an
/// empty batch (both answered with a null id).
pub fn parse(body: &[u8]) -> Result<Incoming, RpcError> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'[') {
        let items: Vec<&RawValue> = serde_json::from_slice(body).map_err(RpcError::parse_error)?;
        if items.is_empty() {
            return Err(RpcError::invalid_request("empty batch"));
        }
        let reqs = items
            .into_iter()
            .map(|raw| parse_one(raw.get().as_bytes()))
            .collect();
        return Ok(Incoming::Batch(reqs));
    }
    match serde_json::from_slice::<Wire>(body) {
        Ok(w) => Ok(Incoming::Single(validate(w))),
        Err(_) => {
            // Slow path only on failure: is it bad JSON, or valid JSON that is no request?
            let tree: serde_json::Value =
                serde_json::from_slice(body).map_err(RpcError::parse_error)?;
            Ok(Incoming::Single(Err(invalid_from_tree(&tree))))
        }
    }
}

/// Parse one batch element (already known to be valid JSON).
fn parse_one(text: &[u8]) -> Result<Request, Failed> {
    match serde_json::from_slice::<Wire>(text) {
        Ok(w) => validate(w),
        Err(_) => match serde_json::from_slice::<serde_json::Value>(text) {
            Ok(tree) => Err(invalid_from_tree(&tree)),
            Err(e) => Err(Failed {
                id: Id::Null,
                error: RpcError::parse_error(e),
            }),
        },
    }
}

fn validate(w: Wire) -> Result<Request, Failed> {
    let fail = |id: &Option<Id>, msg: &str| Failed {
        id: id.clone().unwrap_or_default(),
        error: RpcError::invalid_request(msg),
    };
    if w.jsonrpc.as_deref() != Some("2.0") {
        return Err(fail(&w.id, "\"jsonrpc\" must be \"2.0\""));
    }
    let Some(method) = w.method else {
        return Err(fail(&w.id, "missing \"method\""));
    };
    let params = match w.params {
        None => Params::default(),
        Some(Value::Array(a)) => Params::Positional(a),
        Some(Value::Struct(m)) => Params::Named(m),
        Some(_) => return Err(fail(&w.id, "\"params\" must be an array or an object")),
    };
    Ok(Request {
        id: w.id,
        method,
        params,
    })
}

/// Explain why a valid JSON value is not a request, keeping its id when it has a usable one.
fn invalid_from_tree(tree: &serde_json::Value) -> Failed {
    let id = tree
        .get("id")
        .and_then(|v| Id::deserialize(v).ok())
        .unwrap_or_default();
    let why = match tree {
        serde_json::Value::Object(o) => match o.get("method") {
            Some(m) if !m.is_string() => "\"method\" must be a string",
            _ => match o.get("id") {
                Some(v) if !(v.is_string() || v.is_number() || v.is_null()) => {
                    "\"id\" must be a string, a number or null"
                }
                _ => "malformed request object",
            },
        },
        _ => "a request must be an object",
    };
    Failed {
        id,
        error: RpcError::invalid_request(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(body: &str) -> Result<Request, Failed> {
        match parse(body.as_bytes()).unwrap() {
            Incoming::Single(r) => r,
            other => panic!("not single: {other:?}"),
        }
    }

    #[test]
    fn request_forms() {
        let r = single(r#"{"jsonrpc":"2.0","method":"echo","params":[1,"a"],"id":7}"#).unwrap();
        assert_eq!(r.id, Some(Id::from(7)));
        assert_eq!(r.params, Params::Positional(vec![1.into(), "a".into()]));
        let r = single(r#"{"jsonrpc":"2.0","method":"ping","id":"u-1"}"#).unwrap();
        assert_eq!(r.params, Params::default());
        assert_eq!(r.id, Some(Id::from("u-1")));
        let r = single(r#"{"jsonrpc":"2.0","method":"n","params":{"x":1}}"#).unwrap();
        assert_eq!(r.id, None, "notification");
        assert!(matches!(r.params, Params::Named(_)));
        let r = single(r#"{"jsonrpc":"2.0","method":"n","id":null}"#).unwrap();
        assert_eq!(
            r.id,
            Some(Id::Null),
            "null id is a request, not a notification"
        );
    }

    #[test]
    fn error_classification() {
        assert_eq!(parse(b"{\"jsonrpc\":").unwrap_err().code, -32700);
        assert_eq!(parse(b"[]").unwrap_err().code, -32600);
        let f = single(r#"{"jsonrpc":"2.0","method":1,"id":3}"#).unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::from(3), -32600));
        let f = single(r#"{"method":"x","id":4}"#).unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::from(4), -32600));
        let f = single(r#"{"jsonrpc":"2.0","method":"x","params":5,"id":"k"}"#).unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::from("k"), -32600));
        let f = single("42").unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::Null, -32600));
        let f = single(r#"{"jsonrpc":"2.0","method":"x","id":{}}"#).unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::Null, -32600));
    }

    #[test]
    fn batch_keeps_order_and_marks_bad_members() {
        let Incoming::Batch(items) =
            parse(br#"[{"jsonrpc":"2.0","method":"a","id":1}, 1, {"jsonrpc":"2.0","method":"b"}]"#)
                .unwrap()
        else {
            panic!("not a batch")
        };
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].as_ref().unwrap().method, "a");
        assert_eq!(items[1].as_ref().unwrap_err().error.code, -32600);
        assert_eq!(items[2].as_ref().unwrap().id, None);
        assert!(
            matches!(parse(b"[{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1}]").unwrap(), Incoming::Batch(v) if v.len() == 1)
        );
    }
}
