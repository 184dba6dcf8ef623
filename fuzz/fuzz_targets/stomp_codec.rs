//! `StompCodec` (tokio-util `Decoder`), fed the same stream whole and in fuzzer-chosen
//! pieces (then `decode_eof`): the items, the error (if any) and the bytes consumed must
//! be identical; after an error every later `decode` fails too.
#![no_main]
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::Chunked;
use rpcmux_stomp::{Item, Limits, StompCodec};
use tokio_util::codec::Decoder;

/// Items, the first error, and the bytes consumed (fed minus still buffered) when
/// decoding stopped.
fn run(pieces: &[&[u8]], limits: Limits) -> (Vec<Item>, Option<String>, usize) {
    let mut codec = StompCodec::new(limits);
    let mut buf = BytesMut::new();
    let mut items = Vec::new();
    let mut fed = 0;
    for piece in pieces {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => break,
                Err(e) => {
                    assert!(
                        codec.decode(&mut buf).is_err(),
                        "a failed codec decoded again"
                    );
                    return (items, Some(e.to_string()), fed - buf.len());
                }
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return (items, None, fed - buf.len()),
            Err(e) => return (items, Some(e.to_string()), fed - buf.len()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Chunked::new(data) else {
        return;
    };
    let limits = if input.small_limits {
        Limits {
            max_frame: 64,
            max_headers: 3,
            max_header_line: 24,
        }
    } else {
        Limits::default()
    };
    let whole = run(&[input.stream], limits);
    let cut = run(&input.pieces(), limits);
    assert_eq!(whole, cut, "whole vs cut into {:?}", input.sizes);
});
