//! Differential: rpcmux's XML-RPC reader (`lex.rs` and the grammar over it) against a
//! reference reader on quick-xml (`src/xml_ref/`). Every input is read by both as a
//! call and as a response: both accept with the same method, values and fault, or both
//! refuse. Then the writers: a value made from the same bytes, written by rpcmux as a
//! call, a response and a fault, reads back the same through the reference; and typed
//! results (`src/typed_params.rs`) written straight to XML read back as their `Value`.
//!
//! XML-RPC's XML is stricter than XML in one place (any DTD refused) and laxer in a
//! few (names, attributes, comments); the rules are in `src/xml_ref/tokens.rs` and
//! docs/protocols.md, and the reference applies them, so they never show as
//! divergences. rpcmux runs with its default depth limit (the reference's too) and no
//! element or string limit.
#![no_main]
use libfuzzer_sys::arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::typed_params::{Ints, Nested};
use rpcmux_fuzz::{gen, same_value, same_values, xml_ref};
use rpcmux_value::to_value;
use rpcmux_value::{RpcError, Value};
use rpcmux_xmlrpc::Limits;
use rpcmux_xmlrpc::{parse_call, parse_response, try_write_call, try_write_response, write_fault};
use rpcmux_xmlrpc::{try_write_typed_response, Written};
use std::fmt::Debug;

const LIMITS: Limits = Limits {
    max_depth: xml_ref::MAX_DEPTH,
    max_elements: usize::MAX,
    max_string: usize::MAX,
};

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn same_outcome(a: &Result<Value, RpcError>, b: &Result<Value, RpcError>) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => same_value(x, y),
        (Err(x), Err(y)) => x.code == y.code && x.message == y.message,
        _ => false,
    }
}

type RefCall = Result<(String, Vec<Value>), String>;
type RefResponse = Result<Result<Value, RpcError>, String>;

fn read_call(doc: &[u8], reference: RefCall) {
    match (parse_call(doc, &LIMITS), reference) {
        (Ok(c), Ok((method, params))) => assert!(
            c.method == method && same_values(&c.params, &params),
            "{:?}: rpcmux read {c:?}, the reference {method:?} {params:?}",
            show(doc)
        ),
        (Err(_), Err(_)) => {}
        (mine, theirs) => panic!("{:?}: rpcmux {mine:?}, the reference {theirs:?}", show(doc)),
    }
}

fn read_response(doc: &[u8], reference: RefResponse) {
    match (parse_response(doc, &LIMITS), reference) {
        (Ok(a), Ok(b)) => assert!(
            same_outcome(&a, &b),
            "{:?}: rpcmux read {a:?}, the reference {b:?}",
            show(doc)
        ),
        (Err(_), Err(_)) => {}
        (mine, theirs) => panic!("{:?}: rpcmux {mine:?}, the reference {theirs:?}", show(doc)),
    }
}

/// Whether every string in `v` is XML 1.0 text (else rpcmux must refuse to write it).
fn xml_text(v: &Value) -> bool {
    match v {
        Value::String(s) => s.chars().all(xml_ref::is_xml_char),
        Value::Array(items) => items.iter().all(xml_text),
        Value::Struct(m) => m
            .iter()
            .all(|(k, v)| k.chars().all(xml_ref::is_xml_char) && xml_text(v)),
        _ => true,
    }
}

fn write(u: &mut Unstructured<'_>) -> Option<()> {
    let v = gen::value(u, 3).ok()?;
    let name: String = u.arbitrary().ok()?;
    let method = if name.is_empty() || name.trim() != name {
        "m"
    } else {
        &name
    };
    let carried = xml_text(&v) && method.chars().all(xml_ref::is_xml_char);

    let mut out = Vec::new();
    match try_write_call(&mut out, method, std::slice::from_ref(&v)) {
        Ok(()) => {
            assert!(carried, "{v:?} holds a non-XML character yet was written");
            let (m, params) = xml_ref::parse_call(&out)
                .unwrap_or_else(|e| panic!("{v:?} wrote {:?}, refused: {e}", show(&out)));
            assert!(
                m == method && same_values(&params, std::slice::from_ref(&v)),
                "{v:?} wrote {:?}, read back {m:?} {params:?}",
                show(&out)
            );
        }
        Err(e) => assert!(!carried, "{v:?} refused ({e}) though XML can carry it"),
    }

    out.clear();
    if try_write_response(&mut out, &v).is_ok() {
        let back = xml_ref::parse_response(&out)
            .unwrap_or_else(|e| panic!("{v:?} wrote {:?}, refused: {e}", show(&out)));
        assert!(
            same_outcome(&back, &Ok(v.clone())),
            "{v:?} read back as {back:?}"
        );
    }

    let code: i64 = u.arbitrary().ok()?;
    let message: String = u.arbitrary().ok()?;
    if message.chars().all(xml_ref::is_xml_char) {
        out.clear();
        write_fault(&mut out, &RpcError::new(code, message.clone()));
        let want = RpcError::new(code.clamp(i32::MIN.into(), i32::MAX.into()), message);
        let back = xml_ref::parse_response(&out)
            .unwrap_or_else(|e| panic!("fault wrote {:?}, refused: {e}", show(&out)));
        assert!(
            same_outcome(&back, &Err(want.clone())),
            "{want:?} read back as {back:?}"
        );
    }
    Some(())
}

/// A typed result written straight to XML (`typed.rs`) reads back through the reference
/// as the `Value` it converts to (`to_value`), or is refused exactly when that value
/// holds a character XML cannot carry.
fn write_typed<T: serde::Serialize + Debug + for<'a> Arbitrary<'a>>(u: &mut Unstructured<'_>) {
    let Ok(t) = T::arbitrary(u) else { return };
    let Ok(want) = to_value(&t) else { return };
    let mut out = Vec::new();
    match try_write_typed_response(&mut out, &t) {
        Ok(Written::Done) => {
            let back = xml_ref::parse_response(&out)
                .unwrap_or_else(|e| panic!("{t:?} wrote {:?}, refused: {e}", show(&out)));
            assert!(
                same_outcome(&back, &Ok(want)),
                "{t:?} read back as {back:?}"
            );
        }
        Ok(Written::Fallback) => {}
        Err(e) => assert!(
            !xml_text(&want),
            "{t:?} refused ({e}) though XML can carry it"
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    let (call, response) = xml_ref::parse_both(data);
    read_call(data, call);
    read_response(data, response);
    let mut u = Unstructured::new(data);
    write(&mut u);
    write_typed::<Nested>(&mut u);
    write_typed::<Ints>(&mut u);
});
