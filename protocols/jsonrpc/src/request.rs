//! Parsing requests and batches, with the JSON-RPC 2.0 error classification. A request
//! without `"jsonrpc"` (or with `"jsonrpc": "1.0"`) is JSON-RPC 1.0: accepted, and
//! marked so that it is answered in 1.0's shape ([`Version`]).

use crate::exact::{first_inexact_integer, Checked};
use crate::id::{present_raw, Id};
use crate::wire::{ParamsIn, Wire, WireSeed};
use rpcmux_value::{Params, RpcError, Str, Value};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::cell::Cell;

/// Which JSON-RPC a request spoke, and so the shape its reply takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// JSON-RPC 1.0: no `"jsonrpc"` member (or `"jsonrpc": "1.0"`, as Bitcoin-style
    /// clients send). `"id": null` is a notification; the reply carries both `result`
    /// and `error`, one of them `null`, and no `"jsonrpc"`.
    V1,
    /// JSON-RPC 2.0: `"jsonrpc": "2.0"`.
    #[default]
    V2,
}

/// One well-formed call. `id: None` is a notification (no reply is sent).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The JSON-RPC the request spoke: its reply is written in the same one.
    pub version: Version,
    /// The id to answer under; `None` for a notification.
    pub id: Option<Id>,
    /// The method name.
    pub method: Str,
    /// By position (an array) or by name (an object); absent params are empty.
    pub params: Params,
    /// The params as text instead (then `params` is empty), for a method the caller of
    /// [`parse_for`] said reads them itself: an array or an object, not yet parsed.
    pub raw_params: Option<RawParams>,
}

/// Params kept as their JSON text (an array or an object).
#[derive(Debug, Clone)]
pub struct RawParams(Box<RawValue>);

impl RawParams {
    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for RawParams {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// A request that could not be accepted, with the id to answer it under.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// The JSON-RPC to answer in: 1.0 for an object without `"jsonrpc"`, else 2.0.
    pub version: Version,
    /// The request's id if it could be read, else `Null`.
    pub id: Id,
    /// What was wrong (-32600 and friends).
    pub error: RpcError,
}

/// What a JSON-RPC body holds: one request or a batch. A batch is answered as an
/// array even when it has one element (VDSM got that wrong).
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// One request object.
    Single(Result<Request, Failed>),
    /// An array of requests, each judged on its own.
    Batch(Vec<Result<Request, Failed>>),
}

/// Only the members whose exact text a slow path needs again.
#[derive(Deserialize)]
struct RawMembers<'a> {
    #[serde(default, borrow, deserialize_with = "present_raw")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present_raw")]
    params: Option<&'a RawValue>,
}

impl<'a> RawMembers<'a> {
    /// From a JSON object's text (anything else gives no members).
    fn of(text: &'a str) -> RawMembers<'a> {
        let object = text.bytes().find(|b| !b.is_ascii_whitespace()) == Some(b'{');
        object
            .then(|| serde_json::from_str(text).ok())
            .flatten()
            .unwrap_or(RawMembers {
                id: None,
                params: None,
            })
    }
}

/// What a body may cause, checked while parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// Members per batch. A bigger batch is refused whole (-32600, "batch of more than
    /// N calls") as soon as member N+1 is met: no member is built, and the rest of the
    /// body is not even read, so an 8-million-member batch costs what N members do.
    pub max_batch: usize,
}

impl ParseLimits {
    /// The defaults, usable in a `const`.
    pub const DEFAULT: ParseLimits = ParseLimits { max_batch: 1000 };
}

impl Default for ParseLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Parse a body with the default [`ParseLimits`].
pub fn parse(body: &[u8]) -> Result<Incoming, RpcError> {
    parse_with(body, &ParseLimits::DEFAULT)
}

/// A batch's members as unparsed text, at most `max` of them: meeting one more sets
/// `over` and stops the parse at once.
struct Members<'c> {
    max: usize,
    over: &'c Cell<bool>,
}

impl<'de> serde::de::Visitor<'de> for Members<'_> {
    type Value = Vec<&'de RawValue>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a batch of at most {} requests", self.max)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> Result<Vec<&'de RawValue>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(self.max).min(1024));
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            if items.len() == self.max {
                self.over.set(true);
                return Err(serde::de::Error::custom("too many batch members"));
            }
            items.push(item);
        }
        Ok(items)
    }
}

/// Parse a body. `Err` is an error that answers the whole body: a parse error, an
/// empty batch, or a batch over `limits.max_batch` (all answered with a null id).
/// A UTF-8 byte order mark before the JSON is skipped; a body that is not UTF-8 is a
/// parse error, wherever the bad byte is.
pub fn parse_with(body: &[u8], limits: &ParseLimits) -> Result<Incoming, RpcError> {
    parse_for(body, limits, &|_| false)
}

/// [`parse_with`], keeping the params of the methods `raw_for` names as text
/// ([`Request::raw_params`]) for the caller to deserialize into its own types.
pub fn parse_for(
    body: &[u8],
    limits: &ParseLimits,
    raw_for: &dyn Fn(&str) -> bool,
) -> Result<Incoming, RpcError> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    // UTF-8 is checked once, here, over the whole body, and the JSON is then read as
    // text (serde_json's `StrRead` checks no string again). Reading bytes instead would
    // check only the strings serde_json decodes: one in an ignored member or a batch
    // member's raw text would pass, and a body that is no JSON be served.
    let body = utf8(body)?;
    let first = body.bytes().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') {
        use serde::Deserializer as _;
        let over = Cell::new(false);
        let mut de = serde_json::Deserializer::from_str(body);
        let members = de
            .deserialize_seq(Members {
                max: limits.max_batch,
                over: &over,
            })
            .and_then(|m| de.end().map(|()| m));
        let items = match members {
            Ok(items) => items,
            Err(_) if over.get() => {
                return Err(RpcError::invalid_request(format_args!(
                    "batch of more than {} calls",
                    limits.max_batch
                )))
            }
            Err(e) => return Err(RpcError::parse_error(e)),
        };
        if items.is_empty() {
            return Err(RpcError::invalid_request("empty batch"));
        }
        let reqs = items
            .into_iter()
            .map(|raw| parse_one(raw.get(), raw_for))
            .collect();
        return Ok(Incoming::Batch(reqs));
    }
    match read_wire(body, raw_for) {
        Ok(w) => Ok(Incoming::Single(validate(w, body, raw_for))),
        Err(_) => {
            // Slow path only on failure: is it bad JSON, or valid JSON that is no request?
            let tree: serde_json::Value =
                serde_json::from_str(body).map_err(RpcError::parse_error)?;
            Ok(Incoming::Single(Err(invalid_from_tree(&tree, body))))
        }
    }
}

/// The body as text, or the parse error that names the first byte that is not UTF-8.
fn utf8(body: &[u8]) -> Result<&str, RpcError> {
    // simdutf8's check is several times std's on the ASCII most JSON is; its error
    // says only "invalid", so std's names the byte on that cold path.
    simdutf8::basic::from_utf8(body).map_err(|_| {
        let at = std::str::from_utf8(body).map_or_else(|e| e.valid_up_to(), |s| s.len());
        RpcError::parse_error(format_args!("body is not valid UTF-8 (at byte {at})"))
    })
}

/// Read a request object's members in one pass (see `wire.rs`).
fn read_wire<'a>(text: &'a str, raw_for: &dyn Fn(&str) -> bool) -> serde_json::Result<Wire<'a>> {
    use serde::de::DeserializeSeed as _;
    let mut de = serde_json::Deserializer::from_str(text);
    let w = WireSeed { raw_for }.deserialize(&mut de)?;
    de.end()?;
    Ok(w)
}

/// Parse one batch element (already known to be valid JSON, with no space around it).
fn parse_one(text: &str, raw_for: &dyn Fn(&str) -> bool) -> Result<Request, Failed> {
    // Only an object can be a request (serde would read a struct from an array too).
    if !text.starts_with('{') {
        return Err(Failed {
            version: Version::V2,
            id: Id::Null,
            error: RpcError::invalid_request("a request must be an object"),
        });
    }
    match read_wire(text, raw_for) {
        Ok(w) => validate(w, text, raw_for),
        Err(_) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(tree) => Err(invalid_from_tree(&tree, text)),
            Err(e) => Err(Failed {
                version: Version::V2,
                id: Id::Null,
                error: RpcError::parse_error(e),
            }),
        },
    }
}

/// Check a request read by the fast path; `text` is its JSON, for the rare second look.
fn validate(w: Wire, text: &str, raw_for: &dyn Fn(&str) -> bool) -> Result<Request, Failed> {
    // `None`: a "jsonrpc" that is neither, refused below (and answered in 2.0's shape).
    let known = match w.jsonrpc.as_ref().map(|t| &*t.0) {
        Some("2.0") => Some(Version::V2),
        None | Some("1.0") => Some(Version::V1),
        Some(_) => None,
    };
    let version = known.unwrap_or(Version::V2);
    let id = match w.id.map(Id::from_raw) {
        None => None,
        Some(Some(id)) => Some(id),
        Some(None) => {
            return Err(Failed {
                version,
                id: Id::Null,
                error: RpcError::invalid_request("\"id\" must be a string, a number or null"),
            })
        }
    };
    let fail = |id: Option<Id>, error: RpcError| Failed {
        version,
        id: id.unwrap_or_default(),
        error,
    };
    if known.is_none() {
        let e =
            RpcError::invalid_request("\"jsonrpc\" must be \"2.0\" (or absent, for JSON-RPC 1.0)");
        return Err(fail(id, e));
    }
    // JSON-RPC 1.0: a null id is a notification (1.0 has no other way to say it), and
    // so is a missing one, which 1.0 does not allow and 2.0 reads so.
    let id = match (version, id) {
        (Version::V1, Some(Id::Null)) => None,
        (_, id) => id,
    };
    let Some(method) = w.method else {
        return Err(fail(id, RpcError::invalid_request("missing \"method\"")));
    };
    let Checked { value, doubt } = match w.params {
        None => {
            return Ok(Request {
                version,
                id,
                method,
                params: Params::default(),
                raw_params: None,
            })
        }
        Some(ParamsIn::Tree(c)) => c,
        Some(ParamsIn::Raw(raw)) if raw_for(&method) => {
            if !matches!(raw.get().as_bytes().first(), Some(b'[' | b'{')) {
                let e = RpcError::invalid_request("\"params\" must be an array or an object");
                return Err(fail(id, e));
            }
            return Ok(Request {
                version,
                id,
                method,
                params: Params::default(),
                raw_params: Some(RawParams(raw.to_owned())),
            });
        }
        // `params` came before `method`, and the method wants a tree after all.
        Some(ParamsIn::Raw(raw)) => match serde_json::from_str::<Checked>(raw.get()) {
            Ok(c) => c,
            Err(e) => return Err(fail(id, RpcError::invalid_request(e))),
        },
    };
    if doubt {
        if let Some(e) = inexact_integer_in_params(text) {
            return Err(fail(id, e));
        }
    }
    let params = match value {
        Value::Array(a) => Params::Positional(a),
        Value::Struct(m) => Params::Named(*m),
        _ => {
            let e = RpcError::invalid_request("\"params\" must be an array or an object");
            return Err(fail(id, e));
        }
    };
    Ok(Request {
        version,
        id,
        method,
        params,
        raw_params: None,
    })
}

/// The -32602 error for an integer literal in `params` that the data model cannot hold
/// exactly (see `exact.rs`), if there is one.
#[cold]
fn inexact_integer_in_params(text: &str) -> Option<RpcError> {
    let params = RawMembers::of(text).params?;
    let token = first_inexact_integer(params.get())?;
    let shown = if token.len() > 48 {
        format!("{}… ({} digits)", &token[..40], token.len())
    } else {
        token.to_owned()
    };
    Some(RpcError::invalid_params(format_args!(
        "integer {shown} is beyond the 64-bit signed range and no double holds it exactly"
    )))
}

/// Explain why a valid JSON value is not a request, keeping its id when it has a usable
/// one (read again from `text`, so a number id keeps its spelling).
fn invalid_from_tree(tree: &serde_json::Value, text: &str) -> Failed {
    let id = RawMembers::of(text)
        .id
        .and_then(Id::from_raw)
        .unwrap_or_default();
    let version = match tree {
        serde_json::Value::Object(o) => match o.get("jsonrpc") {
            None => Version::V1,
            Some(v) if v == "1.0" => Version::V1,
            Some(_) => Version::V2,
        },
        _ => Version::V2,
    };
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
        version,
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
        let f = single(r#"{"jsonrpc":"3.0","method":"x","id":4}"#).unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::from(4), -32600));
        assert!(
            f.error.message.contains("JSON-RPC 1.0"),
            "{}",
            f.error.message
        );
        let f = single(r#"{"jsonrpc":"2.0","method":"x","params":5,"id":"k"}"#).unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::from("k"), -32600));
        let f = single("42").unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::Null, -32600));
        let f = single(r#"{"jsonrpc":"2.0","method":"x","id":{}}"#).unwrap_err();
        assert_eq!((f.id, f.error.code), (Id::Null, -32600));
    }

    #[test]
    fn version_1_requests() {
        // No "jsonrpc": 1.0, answered in 1.0; its null id is a notification.
        let r = single(r#"{"method":"echo","params":[1],"id":7}"#).unwrap();
        assert_eq!(
            (r.version, r.id, r.method.as_str()),
            (Version::V1, Some(Id::from(7)), "echo")
        );
        let r = single(r#"{"method":"echo","params":[1],"id":null}"#).unwrap();
        assert_eq!((r.version, r.id), (Version::V1, None));
        let r = single(r#"{"method":"ping","params":[]}"#).unwrap();
        assert_eq!((r.version, r.id), (Version::V1, None));
        // Bitcoin-style clients say so.
        let r = single(r#"{"jsonrpc":"1.0","method":"ping","params":[],"id":"c"}"#).unwrap();
        assert_eq!((r.version, r.id), (Version::V1, Some(Id::from("c"))));
        // JSON-RPC 1.1's "version" member is just another member.
        let r = single(r#"{"version":"1.1","method":"ping","params":[],"id":1e2}"#).unwrap();
        assert_eq!(
            (r.version, r.id.unwrap().to_string()),
            (Version::V1, "1e2".to_owned())
        );
        let r = single(r#"{"jsonrpc":"2.0","method":"ping","id":null}"#).unwrap();
        assert_eq!((r.version, r.id), (Version::V2, Some(Id::Null)));
        // A bad 1.0 request is refused in 1.0's shape, its id kept.
        let f = single(r#"{"method":5,"params":[],"id":3}"#).unwrap_err();
        assert_eq!(
            (f.version, f.id, f.error.code),
            (Version::V1, Id::from(3), -32600)
        );
        let f = single(r#"{"params":[],"id":4}"#).unwrap_err();
        assert_eq!(
            (f.version, f.id, f.error.code),
            (Version::V1, Id::from(4), -32600)
        );
        // A batch mixes them, each member in its own version.
        let Incoming::Batch(items) =
            parse(br#"[{"method":"a","params":[],"id":1},{"jsonrpc":"2.0","method":"b","id":2}]"#)
                .unwrap()
        else {
            panic!("not a batch")
        };
        let versions: Vec<_> = items.iter().map(|i| i.as_ref().unwrap().version).collect();
        assert_eq!(versions, [Version::V1, Version::V2]);
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

    #[test]
    fn raw_params_for_the_methods_asked_in_either_member_order() {
        let typed = |m: &str| m == "typed";
        let one = |body: &str| match parse_for(body.as_bytes(), &ParseLimits::DEFAULT, &typed) {
            Ok(Incoming::Single(r)) => r,
            other => panic!("{other:?}"),
        };
        for body in [
            r#"{"jsonrpc":"2.0","method":"typed","params":[1, {"a":2}],"id":1}"#,
            r#"{"params":[1, {"a":2}],"jsonrpc":"2.0","id":1,"method":"typed"}"#,
        ] {
            let r = one(body).unwrap();
            assert_eq!(r.raw_params.unwrap().get(), r#"[1, {"a":2}]"#);
            assert_eq!(r.params, Params::default());
        }
        // Another method gets its tree, params before method or after.
        for body in [
            r#"{"jsonrpc":"2.0","method":"echo","params":[7],"id":1}"#,
            r#"{"params":[7],"method":"echo","jsonrpc":"2.0","id":1}"#,
        ] {
            let r = one(body).unwrap();
            assert_eq!(r.params, Params::Positional(vec![Value::Int(7)]));
            assert!(r.raw_params.is_none());
        }
        let r = one(r#"{"jsonrpc":"2.0","method":"typed","params":null,"id":1}"#).unwrap();
        assert!(r.raw_params.is_none(), "null params are no params");
        let e = one(r#"{"jsonrpc":"2.0","method":"typed","params":5,"id":1}"#).unwrap_err();
        assert_eq!(e.error.code, -32600);
        let e = one(r#"{"jsonrpc":"2.0","method":"typed","method":"x","id":1}"#).unwrap_err();
        assert_eq!(e.error.code, -32600, "a member given twice");
    }
}
