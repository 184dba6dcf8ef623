//! Inputs the fuzzer found (fuzz/fuzz_targets/*.rs, docs/fuzzing.md), replayed on every
//! test run with the target's checks. Add one by copying the minimised input into
//! `tests/fuzz_regressions/<target>/` under a name that says what it is; a new target gets
//! a module here with its checks.

use rpcmux_value::Value;
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

mod jsonrpc {
    use super::{inputs, same};
    use rpcmux_jsonrpc::{parse, parse_response, write_result, Id, Incoming};
    use rpcmux_value::{Params, Value};

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
}

mod xmlrpc {
    use super::{inputs, same};
    use rpcmux_xmlrpc::{parse_call, parse_response, write_call, write_response, Limits};

    /// fuzz_targets/xmlrpc_roundtrip.rs: a parsed call written back with `write_call`, and
    /// each param written with `write_response`, reads back the same (a leap-second
    /// dateTime once came back as second 59).
    #[test]
    fn xmlrpc_roundtrip() {
        let limits = Limits::DEFAULT;
        for (path, data) in inputs("xmlrpc_roundtrip") {
            if let Ok(call) = parse_call(&data, &limits) {
                let mut out = Vec::new();
                write_call(&mut out, &call.method, &call.params);
                let back = parse_call(&out, &limits).unwrap();
                assert_eq!(back.method, call.method, "{path:?}");
                assert_eq!(back.params.len(), call.params.len(), "{path:?}");
                for (a, b) in call.params.iter().zip(&back.params) {
                    assert!(same(a, b), "{path:?}: {a:?} came back as {b:?}");
                }
                for p in &call.params {
                    let mut out = Vec::new();
                    write_response(&mut out, p);
                    let back = parse_response(&out, &limits).unwrap().unwrap();
                    assert!(same(p, &back), "{path:?}: {p:?} came back as {back:?}");
                }
            }
            if let Ok(Ok(v)) = parse_response(&data, &limits) {
                let mut out = Vec::new();
                write_response(&mut out, &v);
                let back = parse_response(&out, &limits).unwrap().unwrap();
                assert!(same(&v, &back), "{path:?}: {v:?} came back as {back:?}");
            }
        }
    }
}

mod proxy_header {
    use super::inputs;
    use rpcmux_sniff::proxy_header::{parse, Parsed};

    /// fuzz_targets/proxy_header.rs: a header's length does not depend on the bytes after it.
    #[test]
    fn proxy_header() {
        for (path, data) in inputs("proxy_header") {
            if let Parsed::Header(h) = parse(&data) {
                assert!(h.len <= data.len(), "{path:?}");
                assert_eq!(parse(&data[..h.len]), Parsed::Header(h), "{path:?}");
                let mut longer = data[..h.len].to_vec();
                longer.extend(b"\r\n\r\n\0\r\nQUIT\nPROXY TCP4 ");
                assert_eq!(parse(&longer), Parsed::Header(h), "{path:?}");
            }
        }
    }
}
