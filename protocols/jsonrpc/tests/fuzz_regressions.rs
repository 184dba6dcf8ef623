//! Inputs the fuzzer found (fuzz/fuzz_targets/*.rs, docs/fuzzing.md), replayed on every
//! `cargo test` with the target's checks. Add one by copying the minimised input into
//! `tests/fuzz_regressions/<target>/` under a name that says what it is.

use rpcmux_jsonrpc::{parse, parse_response, write_result, Id, Incoming};
use rpcmux_value::{Params, Value};
use std::path::PathBuf;

fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_regressions")
        .join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir:?}: {e}"))
        .map(|e| {
            let path = e.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            (path, data)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no inputs in {dir:?}");
    out
}

/// Doubles compare by bit pattern (NaN equal to NaN).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => {
            (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Struct(x), Value::Struct(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => a == b,
    }
}

/// fuzz_targets/jsonrpc_roundtrip.rs: a request's params, written as a result and read
/// back, are the same values (a double once came back one ulp off).
#[test]
fn jsonrpc_roundtrip() {
    for (path, data) in inputs("jsonrpc_roundtrip") {
        let reqs = match parse(&data) {
            Ok(Incoming::Single(r)) => vec![r],
            Ok(Incoming::Batch(rs)) => rs,
            Err(_) => continue,
        };
        for req in reqs.into_iter().flatten() {
            let v = match req.params {
                Params::Positional(v) => Value::Array(v),
                Params::Named(m) => Value::Struct(Box::new(m)),
            };
            let mut out = Vec::new();
            write_result(&mut out, &Id::Null, &v);
            let back = parse_response(&out).unwrap().outcome.unwrap();
            assert!(same(&v, &back), "{path:?}: {v:?} came back as {back:?}");
        }
    }
}
