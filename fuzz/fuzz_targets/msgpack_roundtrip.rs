//! msgpack decode -> encode -> decode gives the same thing: a value read by `read_value`
//! and written by `write_value`, and a message read by `decode_message` and written by
//! `Message::encode` (requests, responses, notifications; an `Invalid` encodes as an
//! error reply, so it is not expected back).
#![no_main]
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rpcmux_fuzz::same_value;
use rpcmux_msgpack_rpc::{decode_message, read_value, write_value, Limits, Message};

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    if let Ok((v, _)) = read_value(data, limits.max_depth) {
        let mut out = BytesMut::new();
        write_value(&mut out, &v)
            .unwrap_or_else(|e| panic!("{v:?} read but cannot be written: {e}"));
        let (back, n) = read_value(&out, limits.max_depth)
            .unwrap_or_else(|e| panic!("{v:?} wrote {out:?} which reads as {e}"));
        assert_eq!(n, out.len());
        assert!(same_value(&v, &back), "{v:?} came back as {back:?}");
    }
    if let Ok(msg) = decode_message(data, &limits) {
        if matches!(msg, Message::Invalid { .. }) {
            return;
        }
        let mut out = BytesMut::new();
        msg.encode(&mut out)
            .unwrap_or_else(|e| panic!("{msg:?} read but cannot be written: {e}"));
        let back = decode_message(&out, &limits)
            .unwrap_or_else(|e| panic!("{msg:?} wrote {out:?} which reads as {e}"));
        assert_eq!(format!("{back:?}"), format!("{msg:?}"));
    }
});
