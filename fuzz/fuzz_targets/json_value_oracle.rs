//! Differential: rpcmux's JSON-RPC request reader (its typed envelope path `wire.rs`,
//! the exact-number rules `exact.rs`, batches) against serde_json's value tree, mapped
//! by `src/json_ref.rs`; and the writer against serde_json reading it back.
//!
//! - A parse error (-32700) only where serde_json cannot decode the body (or member);
//!   any other answer only for JSON by the grammar (serde_json skips it as `IgnoredAny`).
//! - A request rpcmux accepts has the method and params serde_json decodes from its
//!   members (struct members compared in any order); in a batch, member by member.
//! - A refusal for an inexact integer (-32602 "beyond the 64-bit signed range") only
//!   where the params' text holds a u64 no double holds or a doubtful double
//!   (`json_ref::Read`), counting a member a repeat of its name overrides (the tree
//!   keeps only the last; rpcmux judges every number written); an accepted request
//!   holds no inexact u64.
//! - Writing: `write_result` of a value made from the same bytes reads back through
//!   serde_json as that value, mapped as documented (`json_ref::as_written`).
#![no_main]
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::gen;
use rpcmux_fuzz::json_ref::{as_written, every_number, read, same_unordered};
use rpcmux_jsonrpc::{parse, write_result, Id, Incoming, Request};
use rpcmux_value::{Params, RpcError, Value};
use serde_json::value::RawValue;
use serde_json::Value as Json;
use std::collections::BTreeMap;

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A request object's members, raw: serde_json decodes only the members a request uses
/// (`method`, `params`), as rpcmux does. A member rpcmux ignores is checked against
/// JSON's grammar, not decoded, on both sides (a number beyond f64 or an escaped lone
/// surrogate there refuses nothing: an intended difference from decoding the whole
/// body, pinned in `protocols/jsonrpc/tests/oracle_regressions.rs`).
fn members(json: &str) -> Option<BTreeMap<String, &RawValue>> {
    serde_json::from_str(json).ok()
}

/// An accepted request against the members serde_json reads.
fn same_request(req: &Request, json: &str) {
    let o = members(json).unwrap_or_else(|| panic!("{json:?}: rpcmux read {req:?}, no object"));
    let method: Option<String> = o
        .get("method")
        .and_then(|m| serde_json::from_str(m.get()).ok());
    assert_eq!(method.as_deref(), Some(req.method.as_str()), "{json:?}");
    let tree: Option<Json> = o
        .get("params")
        .map(|p| serde_json::from_str(p.get()).unwrap_or_else(|e| panic!("{json:?}: params: {e}")));
    let (mine, theirs) = match (&req.params, &tree) {
        (Params::Positional(p), None) if p.is_empty() => return,
        // `"params": null` is no params, as an absent member is (wire.rs).
        (Params::Positional(p), Some(Json::Null)) if p.is_empty() => return,
        (Params::Positional(p), Some(t @ Json::Array(_))) => (Value::Array(p.clone()), read(t)),
        (Params::Named(m), Some(t @ Json::Object(_))) => {
            (Value::Struct(Box::new(m.clone())), read(t))
        }
        (p, t) => panic!("{json:?}: rpcmux params {p:?}, serde_json's {t:?}"),
    };
    assert!(
        !theirs.inexact,
        "{json:?}: an inexact integer accepted as {mine:?}"
    );
    assert!(
        same_unordered(&mine, &theirs.value),
        "{json:?}: rpcmux params {mine:?}, serde_json's {:?}",
        theirs.value
    );
}

/// A refused request: no parse error for JSON serde_json decodes, and a refusal for an
/// inexact integer only where the params may hold one.
fn check_refusal(e: &RpcError, json: &str) {
    let raw_params: Option<&str> = members(json).and_then(|o| o.get("params").map(|p| p.get()));
    if e.code == RpcError::PARSE_ERROR {
        assert!(
            serde_json::from_str::<Json>(json).is_err(),
            "{json:?}: JSON, yet {e:?}"
        );
    }
    if e.code == RpcError::INVALID_PARAMS && e.message.contains("beyond the 64-bit") {
        let r = raw_params.map(every_number).unwrap_or_default();
        assert!(
            r.doubt || r.inexact,
            "{json:?}: refused ({e:?}) for no inexact integer"
        );
    }
}

fn one(item: &Result<Request, rpcmux_jsonrpc::Failed>, json: &str) {
    match item {
        Ok(req) => same_request(req, json),
        Err(f) => check_refusal(&f.error, json),
    }
}

fn read_body(body: &[u8]) {
    let json = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    match (parse(body), std::str::from_utf8(json)) {
        (Err(e), Ok(text)) if e.code == RpcError::PARSE_ERROR => {
            let tree = serde_json::from_str::<Json>(text);
            assert!(tree.is_err(), "{text:?}: serde_json reads it, rpcmux {e:?}")
        }
        (Err(_), Err(_)) => {}
        (got, Err(_)) => panic!("{:?}: not UTF-8, rpcmux {got:?}", show(body)),
        (Err(e), Ok(text)) => {
            let json = serde_json::from_str::<serde::de::IgnoredAny>(text);
            assert!(json.is_ok(), "{text:?}: no JSON, rpcmux {e:?}")
        }
        (Ok(Incoming::Single(item)), Ok(text)) => one(&item, text),
        (Ok(Incoming::Batch(items)), Ok(text)) => {
            let raw: Vec<&RawValue> = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("{text:?}: {e}, rpcmux read {items:?}"));
            assert_eq!(items.len(), raw.len(), "{text:?}");
            items
                .iter()
                .zip(&raw)
                .for_each(|(item, m)| one(item, m.get()));
        }
    }
}

fn write(u: &mut Unstructured<'_>) {
    let Ok(v) = gen::value(u, 4) else { return };
    let mut out = Vec::new();
    write_result(&mut out, &Id::Null, &v);
    let tree: Json = serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("{v:?} wrote {:?}: {e}", show(&out)));
    let back = read(&tree["result"]).value;
    let want = as_written(&v);
    assert!(
        same_unordered(&back, &want),
        "{v:?} wrote {:?}, read back {back:?}",
        show(&out)
    );
}

fuzz_target!(|data: &[u8]| {
    read_body(data);
    write(&mut Unstructured::new(data));
});
