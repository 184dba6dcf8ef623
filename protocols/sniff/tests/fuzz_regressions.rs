//! Inputs the fuzzer found (fuzz/fuzz_targets/*.rs, docs/fuzzing.md), replayed on every
//! `cargo test` with the target's checks. Add one by copying the minimised input into
//! `tests/fuzz_regressions/<target>/` under a name that says what it is.

use rpcmux_sniff::proxy_header::{parse, Parsed};
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
