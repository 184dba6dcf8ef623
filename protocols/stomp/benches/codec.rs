//! Decode and encode of the SEND frame carrying the JSON-RPC echo(MusicEntry) request,
//! byte for byte as stomp.py 9.0.0 sent it (tests/fixtures/stomppy_send_echo.bin:
//! 3 headers, 703-byte JSON body, content-length framing).
//!
//! `cargo bench -p rpcmux-stomp --bench codec`

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use rpcmux_stomp::{Command, Frame, Item, Limits, StompCodec};
use tokio_util::codec::{Decoder, Encoder};

const SEND: &[u8] = include_bytes!("../tests/fixtures/stomppy_send_echo.bin");

fn decode_one(codec: &mut StompCodec, buf: &mut BytesMut) -> Frame {
    match codec.decode(buf) {
        Ok(Some(Item::Frame(f))) => f,
        other => panic!("fixture did not decode: {other:?}"),
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("stomp_send_echo");
    g.throughput(Throughput::Bytes(SEND.len() as u64));

    // Decode from a fresh buffer each time: what a server does per request. The copy
    // into the buffer stands in for the socket read.
    g.bench_function("decode", |b| {
        let mut codec = StompCodec::new(Limits::default());
        let mut buf = BytesMut::with_capacity(SEND.len());
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(SEND);
            black_box(decode_one(&mut codec, &mut buf));
        })
    });

    // Same, NUL-terminated (no content-length): the other body-scanning path.
    let nul_framed: Vec<u8> = {
        let head_end = SEND.windows(2).position(|w| w == b"\n\n").unwrap();
        let head = std::str::from_utf8(&SEND[..head_end]).unwrap();
        let kept: Vec<&str> = head
            .lines()
            .filter(|l| !l.starts_with("content-length:"))
            .collect();
        [kept.join("\n").as_bytes(), &SEND[head_end..]].concat()
    };
    g.bench_function("decode_nul_framed", |b| {
        let mut codec = StompCodec::new(Limits::default());
        let mut buf = BytesMut::with_capacity(nul_framed.len());
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(&nul_framed);
            black_box(decode_one(&mut codec, &mut buf));
        })
    });

    // Encode the reply a server sends: a MESSAGE with the same body to reply-to.
    let request = decode_one(&mut StompCodec::default(), &mut BytesMut::from(SEND));
    let reply = Frame::new(Command::Message)
        .header("destination", "jms.topic.vdsm_responses")
        .header("subscription", "sub-1")
        .header("message-id", "1")
        .header("content-type", "application/json")
        .with_body(request.body.clone());
    g.bench_function("encode_message", |b| {
        let mut codec = StompCodec::default();
        let mut out = BytesMut::with_capacity(1024);
        b.iter(|| {
            out.clear();
            codec.encode(black_box(&reply), &mut out).unwrap();
            black_box(&out);
        })
    });

    // The server's whole codec share of one STOMP round trip.
    g.bench_function("decode_encode_round_trip", |b| {
        let mut codec = StompCodec::default();
        let mut buf = BytesMut::with_capacity(SEND.len());
        let mut out = BytesMut::with_capacity(1024);
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(SEND);
            let req = decode_one(&mut codec, &mut buf);
            let reply = Frame::new(Command::Message)
                .header("destination", req.get("reply-to").unwrap_or_default())
                .header("subscription", "sub-1")
                .header("message-id", "1")
                .header("content-type", "application/json")
                .with_body(req.body);
            out.clear();
            codec.encode(&reply, &mut out).unwrap();
            black_box(&out);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
