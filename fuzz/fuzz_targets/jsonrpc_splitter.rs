//! The raw-TCP JSON `Splitter`, fed the same stream whole and in fuzzer-chosen pieces,
//! driven as `stream/jsonrpc_tcp.rs` drives it. Checked: no panic; every answer is sane
//! (a value starts with `{`/`[` after only whitespace and byte order marks, and ends
//! with `}`/`]`, within the cap; a garbage skip ends at a newline); and CHUNK
//! INVARIANCE: the outcomes and bytes consumed do not depend on how the stream is cut.
//!
//! The invariance assertion is the `CHECK_CHUNK_INVARIANCE` switch. It was written
//! switched off while protocols/jsonrpc/src/split.rs was being made chunk-independent,
//! and switched on once that landed (commit c4c7ee1); set it to false only to fuzz the
//! other checks of a splitter known to break it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::Chunked;
use rpcmux_jsonrpc::{Split, Splitter};

/// The chunk-invariance assertion (see the module docs).
const CHECK_CHUNK_INVARIANCE: bool = true;

/// Whitespace and UTF-8 byte order marks: what may come before a value.
fn is_lead(mut b: &[u8]) -> bool {
    while let Some((&c, rest)) = b.split_first() {
        if c.is_ascii_whitespace() {
            b = rest;
        } else if let Some(rest) = b.strip_prefix(b"\xEF\xBB\xBF") {
            b = rest;
        } else {
            return false;
        }
    }
    true
}

#[derive(Debug, PartialEq)]
enum Out {
    Value(Vec<u8>),
    Garbage(Vec<u8>),
    TooLarge,
}

/// Outcomes in order, then the bytes consumed (fed minus still buffered) at the end.
fn run(pieces: &[&[u8]], max: usize) -> (Vec<Out>, usize) {
    let mut sp = Splitter::new(max);
    let mut buf: Vec<u8> = Vec::new();
    let mut outs = Vec::new();
    let mut fed = 0;
    for piece in pieces {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match sp.next(&buf) {
                Split::Value { start, end } => {
                    assert!(
                        start < end && end <= buf.len(),
                        "{start}..{end} of {}",
                        buf.len()
                    );
                    assert!(is_lead(&buf[..start]), "{:?} before a value", &buf[..start]);
                    assert!(matches!(buf[start], b'{' | b'['));
                    assert!(matches!(buf[end - 1], b'}' | b']'));
                    assert!(
                        end - start <= max,
                        "value of {} bytes over the cap {max}",
                        end - start
                    );
                    outs.push(Out::Value(buf[start..end].to_vec()));
                    buf.drain(..end);
                }
                Split::Garbage { skip } if skip > 0 => {
                    assert!(skip <= buf.len());
                    assert_eq!(buf[skip - 1], b'\n');
                    outs.push(Out::Garbage(buf[..skip].to_vec()));
                    buf.drain(..skip);
                }
                Split::Garbage { .. } | Split::Incomplete => break,
                Split::TooLarge => {
                    outs.push(Out::TooLarge);
                    return (outs, fed - buf.len());
                }
            }
        }
    }
    (outs, fed - buf.len())
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Chunked::new(data) else {
        return;
    };
    let max = if input.small_limits { 16 } else { 1 << 20 };
    let whole = run(&[input.stream], max);
    let cut = run(&input.pieces(), max);
    if CHECK_CHUNK_INVARIANCE {
        assert_eq!(whole, cut, "whole vs cut into {:?}", input.sizes);
    }
});
