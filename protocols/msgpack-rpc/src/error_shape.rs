//! How an [`RpcError`] travels in a response's error field.
//!
//! The msgpack-rpc spec leaves the error object free. rpcmux sends **`[code, message]`**
//! (`[code, message, data]` when the error has data): an int and a str. Why this shape, from
//! what each tested client does with the field (read in their sources):
//!
//! - **pynvim 0.6.0** `Session.request`: `if err: raise self.error_wrapper(err)` with
//!   `error_wrapper = lambda e: Exception(e[1])` (`NvimError(e[1])` via `Nvim`), so it needs
//!   an indexable error whose item 1 is the message (Neovim itself sends `[type, message]`).
//!   A bare string would raise its second character; a map would raise `KeyError`.
//! - **aio-msgpack-rpc 0.2.0** `Client._on_recv`: `if error: future.set_exception(
//!   RPCResponseError(error))`: any truthy object becomes the exception argument, shown as
//!   `[-32601, 'Method not found: nope']`. (An empty string or 0 would count as success.)
//! - **msgpack-rpc-python 0.4.1** `Future.get`: `raise error.RPCError(self._error)`: any
//!   object becomes the exception argument, shown as `[-32601, b'Method not found: nope']`
//!   (its msgpack-python 0.5 unpacker gives str as bytes by default).
//!
//! So `[code, message]` gives the message as the exception text in pynvim and the code and
//! message in the two others, and the code stays machine-readable.

use crate::encode::{put_array_len, put_int, put_str, write_value};
use crate::error::EncodeError;
use bytes::BufMut;
use rpcmux_value::{RpcError, Value};

/// The error field rpcmux sends for `e`: `[code, message]`, or `[code, message, data]`.
pub fn error_to_value(e: &RpcError) -> Value {
    let mut items = Vec::with_capacity(3);
    items.push(Value::Int(e.code));
    items.push(Value::from(e.message.as_str()));
    if let Some(data) = &e.data {
        // `Value::clone` through deref: works whether `data` is boxed or not.
        items.push(Value::clone(data));
    }
    Value::Array(items)
}

/// Write [`error_to_value`]'s shape straight into `out`, without building a Value.
pub(crate) fn put_error<B: BufMut>(out: &mut B, e: &RpcError) -> Result<(), EncodeError> {
    put_array_len(out, if e.data.is_some() { 3 } else { 2 })?;
    put_int(out, e.code);
    put_str(out, &e.message)?;
    if let Some(data) = &e.data {
        write_value(out, data)?;
    }
    Ok(())
}

/// Read a (non-nil) error field from a peer back into an [`RpcError`]. Understands:
/// - `[code, message]` and `[code, message, data]` (rpcmux, Neovim's `[type, message]`);
/// - `{"code": .., "message": .., "data": ..}` (a JSON-RPC style object);
/// - a bare string (aio-msgpack-rpc and msgpack-rpc-python servers send `str(exception)`)
///   and `[message]` (msgpack-rpc-python's `RPCError.to_msgpack`).
///
/// Messages may be str or bin (lossily decoded). Where the peer gave no code the code is
/// internal error (-32603); any other shape becomes that code with the whole error field
/// as `data`.
pub fn value_to_error(v: &Value) -> RpcError {
    fn text(v: &Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s.to_string()),
            Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
    let unknown = || RpcError::new(RpcError::INTERNAL_ERROR, "peer reported an error");
    match v {
        Value::Array(items) => match items.as_slice() {
            [Value::Int(code), msg, rest @ ..] if rest.len() <= 1 && text(msg).is_some() => {
                with_data(
                    RpcError::new(*code, text(msg).unwrap_or_default()),
                    rest.first(),
                )
            }
            [msg] if text(msg).is_some() => {
                RpcError::new(RpcError::INTERNAL_ERROR, text(msg).unwrap_or_default())
            }
            _ => unknown().with_data(v.clone()),
        },
        Value::Struct(m) => match (m.get("code"), m.get("message").and_then(text)) {
            (Some(Value::Int(code)), Some(message)) => {
                with_data(RpcError::new(*code, message), m.get("data"))
            }
            _ => unknown().with_data(v.clone()),
        },
        other => match text(other) {
            Some(message) => RpcError::new(RpcError::INTERNAL_ERROR, message),
            None => unknown().with_data(v.clone()),
        },
    }
}

fn with_data(e: RpcError, data: Option<&Value>) -> RpcError {
    match data {
        Some(d) => e.with_data(d.clone()),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcmux_value::vstruct;

    #[test]
    fn our_shape_round_trips() {
        let e = RpcError::method_not_found("nope");
        let v = error_to_value(&e);
        assert_eq!(
            v,
            Value::Array(vec![Value::Int(-32601), "Method not found: nope".into()])
        );
        assert_eq!(value_to_error(&v), e);
        let e = RpcError::new(7, "no such VM").with_data(vstruct! {"vmID" => "x"});
        assert_eq!(value_to_error(&error_to_value(&e)), e);
    }

    #[test]
    fn direct_write_matches_the_value_shape() {
        for e in [
            RpcError::invalid_params("x"),
            RpcError::new(1, "m").with_data(Value::Int(5)),
        ] {
            let mut a = Vec::new();
            put_error(&mut a, &e).unwrap();
            let mut b = Vec::new();
            write_value(&mut b, &error_to_value(&e)).unwrap();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn foreign_shapes() {
        let e = value_to_error(&"boom".into());
        assert_eq!((e.code, e.message.as_str()), (-32603, "boom"));
        let e = value_to_error(&Value::Array(vec![Value::Bytes(b"old".to_vec())]));
        assert_eq!(e.message, "old");
        let e = value_to_error(&Value::Array(vec![
            Value::Int(0),
            Value::Bytes(b"nvim".to_vec()),
        ]));
        assert_eq!((e.code, e.message.as_str()), (0, "nvim"));
        let e = value_to_error(&vstruct! {"code" => 3, "message" => "json-ish"});
        assert_eq!((e.code, e.message.as_str()), (3, "json-ish"));
        let e = value_to_error(&Value::Int(42));
        assert_eq!(e.code, -32603);
        assert_eq!(e.data.map(|d| Value::clone(&d)), Some(Value::Int(42)));
    }
}
