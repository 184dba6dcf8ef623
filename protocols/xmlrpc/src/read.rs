//! Whole documents: `<methodCall>` (server side) and `<methodResponse>` (client side).

use crate::cursor::{Cursor, Tok};
use crate::read_value::read_value;
use crate::tag::Tag;
use crate::{Limits, MethodCall};
use rpcmux_value::{RpcError, Str, Value};

/// Parse a `<methodCall>`.
///
/// Errors: malformed XML, non-UTF-8 bodies and any `<!DOCTYPE>` are parse errors
/// (-32700); well-formed XML that is not a method call, bad scalar text and exceeded
/// [`Limits`] are invalid requests (-32600). `<params>` may be absent or empty.
pub fn parse_call(body: &[u8], limits: &Limits) -> Result<MethodCall, RpcError> {
    let mut cur = Cursor::new(body, limits)?;
    let method = read_method_name(&mut cur)?;
    let params = match cur.next_markup()? {
        Tok::Open(Tag::Params) => {
            let params = read_params(&mut cur)?;
            cur.expect_close(Tag::MethodCall)?;
            params
        }
        Tok::Close(Tag::MethodCall) => Vec::new(),
        tok => return Err(cur.unexpected(&tok, "<params> or </methodCall>")),
    };
    cur.expect_eof()?;
    Ok(MethodCall { method, params })
}

/// A `<methodCall>`'s start, through its `<methodName>`: the name.
pub(crate) fn read_method_name(cur: &mut Cursor<'_>) -> Result<Str, RpcError> {
    cur.expect_root(Tag::MethodCall)?;
    cur.expect_open(Tag::MethodName)?;
    // Names never hold whitespace; trimming forgives pretty-printing writers. A `Str`:
    // a name of up to 24 bytes (nearly every one) is held inline, not allocated.
    let method = Str::from(cur.read_text(Tag::MethodName)?.trim());
    if method.is_empty() {
        return Err(cur.invalid("empty <methodName>"));
    }
    Ok(method)
}

/// Parse a `<methodResponse>`: `Ok(Ok(value))` for a result, `Ok(Err(fault))` for a
/// `<fault>`, `Err(..)` when the response itself is malformed (codes as for
/// [`parse_call`]). An empty `<params/>` reads as nil; more than one param is an error.
pub fn parse_response(body: &[u8], limits: &Limits) -> Result<Result<Value, RpcError>, RpcError> {
    let mut cur = Cursor::new(body, limits)?;
    cur.expect_root(Tag::MethodResponse)?;
    let result = match cur.next_markup()? {
        Tok::Open(Tag::Params) => {
            let mut params = read_params(&mut cur)?;
            if params.len() > 1 {
                return Err(cur.invalid("a response holds at most one <param>"));
            }
            Ok(params.pop().unwrap_or(Value::Nil))
        }
        Tok::Open(Tag::Fault) => {
            cur.expect_open(Tag::Value)?;
            let fault = fault_from_value(read_value(&mut cur)?)?;
            cur.expect_close(Tag::Fault)?;
            Err(fault)
        }
        tok => return Err(cur.unexpected(&tok, "<params> or <fault>")),
    };
    cur.expect_close(Tag::MethodResponse)?;
    cur.expect_eof()?;
    Ok(result)
}

/// After `<params>`: each `<param><value>…</value></param>`, through `</params>`.
fn read_params(cur: &mut Cursor<'_>) -> Result<Vec<Value>, RpcError> {
    let mut params = Vec::new();
    loop {
        match cur.next_markup()? {
            Tok::Open(Tag::Param) => {
                cur.expect_open(Tag::Value)?;
                params.push(read_value(cur)?);
                cur.expect_close(Tag::Param)?;
            }
            Tok::Close(Tag::Params) => return Ok(params),
            tok => return Err(cur.unexpected(&tok, "<param> or </params>")),
        }
    }
}

/// A fault's struct → [`RpcError`]. `faultCode` must be an int (a numeric string is
/// forgiven); `faultString` may be missing. Other members are ignored.
fn fault_from_value(v: Value) -> Result<RpcError, RpcError> {
    let Value::Struct(mut m) = v else {
        return Err(RpcError::invalid_request("<fault> does not hold a struct"));
    };
    let code = match m.get("faultCode") {
        Some(Value::Int(c)) => *c,
        Some(Value::String(s)) => s.trim().parse().map_err(|_| {
            RpcError::invalid_request(format_args!("fault has a non-numeric faultCode {s:?}"))
        })?,
        _ => return Err(RpcError::invalid_request("fault has no int faultCode")),
    };
    let message = match m.swap_remove("faultString") {
        Some(Value::String(s)) => s.into_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    };
    Ok(RpcError::new(code, message))
}
