//! Differential: rpcmux's dynamic msgpack reader and writer (`decode.rs`, `encode.rs`)
//! against rmpv, mapped to rpcmux's `Value` by the crate's documented type rules
//! (`src/msgpack_ref.rs`).
//!
//! - Reading: `read_value` and rmpv read the same value and take the same number of
//!   bytes, or both refuse (depth capped at the default 64 on both sides).
//! - Writing: a value made from the same bytes, written by `write_value`, is read back
//!   by rmpv as the same value, every byte of it; and rmp-serde reads it as the same
//!   `Value` (rpcmux's own `Deserialize`), the route a Rust msgpack client would take.
#![no_main]
use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::{gen, msgpack_ref, same_value};
use rpcmux_msgpack_rpc::{read_value, write_value, Limits};
use rpcmux_value::Value;

const DEPTH: usize = Limits::DEFAULT_MAX_DEPTH;

/// rmp-serde has no timestamp type: rpcmux's `Deserialize` for `Value` sees no dateTime.
fn serde_readable(v: &Value) -> bool {
    match v {
        Value::DateTime(_) => false,
        Value::Array(items) => items.iter().all(serde_readable),
        Value::Struct(m) => m.values().all(serde_readable),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    match (read_value(data, DEPTH), msgpack_ref::read(data, DEPTH)) {
        (Ok((a, n)), Ok((b, m))) => assert!(
            n == m && same_value(&a, &b),
            "{data:02x?}: rpcmux {a:?} in {n} bytes, rmpv {b:?} in {m}"
        ),
        (Err(_), Err(_)) => {}
        (mine, theirs) => panic!("{data:02x?}: rpcmux {mine:?}, rmpv {theirs:?}"),
    }

    let Ok(v) = gen::value(&mut Unstructured::new(data), 4) else {
        return;
    };
    let mut out = Vec::new();
    write_value(&mut out, &v).unwrap_or_else(|e| panic!("{v:?} cannot be written: {e}"));
    let (back, n) = msgpack_ref::read(&out, DEPTH)
        .unwrap_or_else(|e| panic!("{v:?} wrote {out:02x?}, rmpv: {e}"));
    assert!(
        n == out.len() && same_value(&back, &v),
        "{v:?} wrote {out:02x?}, rmpv read {back:?}"
    );
    if serde_readable(&v) {
        let back: Value = rmp_serde::from_slice(&out)
            .unwrap_or_else(|e| panic!("{v:?} wrote {out:02x?}, rmp-serde: {e}"));
        assert!(
            same_value(&back, &v),
            "{v:?} wrote {out:02x?}, rmp-serde read {back:?}"
        );
    }
});
