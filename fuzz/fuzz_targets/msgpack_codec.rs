//! The incremental `MsgpackRpcCodec` (tokio-util `Decoder`), fed the same stream whole
//! and in fuzzer-chosen pieces (then `decode_eof`): the messages, the error (if any) and
//! the bytes consumed must be identical.
#![no_main]
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::Chunked;
use rpcmux_msgpack_rpc::{Limits, MsgpackRpcCodec};
use tokio_util::codec::Decoder;

/// Messages (as Debug text, so NaN compares equal to itself), the first error, and the
/// bytes consumed (fed minus still buffered) when decoding stopped.
fn run(pieces: &[&[u8]], limits: Limits) -> (Vec<String>, Option<String>, usize) {
    let mut codec = MsgpackRpcCodec::new(limits);
    let mut buf = BytesMut::new();
    let mut msgs = Vec::new();
    let mut fed = 0;
    for piece in pieces {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(m)) => msgs.push(format!("{m:?}")),
                Ok(None) => break,
                Err(e) => return (msgs, Some(e.to_string()), fed - buf.len()),
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(m)) => msgs.push(format!("{m:?}")),
            Ok(None) => return (msgs, None, fed - buf.len()),
            Err(e) => return (msgs, Some(e.to_string()), fed - buf.len()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(input) = Chunked::new(data) else {
        return;
    };
    let limits = if input.small_limits {
        Limits {
            max_message: 64,
            max_depth: 4,
        }
    } else {
        Limits::default()
    };
    let whole = run(&[input.stream], limits);
    let cut = run(&input.pieces(), limits);
    assert_eq!(whole, cut, "whole vs cut into {:?}", input.sizes);
});
