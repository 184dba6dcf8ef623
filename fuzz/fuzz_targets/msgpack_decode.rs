//! `decode_message` and `read_value` on any bytes: never panic; `read_value` never
//! claims more bytes than it was given; a message `decode_message` accepts is what the
//! stream codec makes of the same bytes.
#![no_main]
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rpcmux_msgpack_rpc::{decode_message, read_value, Limits, MsgpackRpcCodec};
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let (limits, data) = match data.split_first() {
        Some((&b, rest)) if b & 1 == 1 => (
            Limits {
                max_message: 64,
                max_depth: 4,
            },
            rest,
        ),
        Some((_, rest)) => (Limits::default(), rest),
        None => return,
    };
    if let Ok((_, n)) = read_value(data, limits.max_depth) {
        assert!(n <= data.len());
    }
    if let Ok(msg) = decode_message(data, &limits) {
        let mut buf = BytesMut::from(data);
        let mut codec = MsgpackRpcCodec::new(limits);
        let streamed = codec
            .decode(&mut buf)
            .expect("the codec refuses what decode_message accepts");
        assert_eq!(format!("{:?}", streamed), format!("{:?}", Some(msg)));
        assert!(buf.is_empty());
    }
});
