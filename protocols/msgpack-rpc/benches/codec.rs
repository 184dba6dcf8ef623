//! The server's per-call codec cost for echo(MusicEntry) (/work/shared/reference/payload.py):
//! decode the request from the connection buffer, encode the reply into the output buffer.
//!
//! `cargo bench -p rpcmux-msgpack-rpc --bench codec`

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use rpcmux_msgpack_rpc::{encode_response, Message, MsgpackRpcCodec};
use tokio_util::codec::Decoder;

/// `msgpack.packb([0, 1, "echo", [MUSIC_ENTRY]])`, as Python writes it.
const REQUEST: &[u8] = include_bytes!("../tests/fixtures/echo_music_request.msgpack");

fn decode_one(codec: &mut MsgpackRpcCodec, buf: &mut BytesMut) -> Message {
    buf.extend_from_slice(REQUEST);
    codec.decode(buf).unwrap().unwrap()
}

fn bench(c: &mut Criterion) {
    let mut codec = MsgpackRpcCodec::default();
    let mut inbuf = BytesMut::with_capacity(4096);
    let Message::Request { params, .. } = decode_one(&mut codec, &mut inbuf) else {
        unreachable!()
    };
    let entry = params.into_iter().next().unwrap();

    let mut g = c.benchmark_group("msgpack_rpc_echo_music_entry");
    g.throughput(Throughput::Elements(1));

    g.bench_function("decode_request", |b| {
        b.iter(|| black_box(decode_one(&mut codec, &mut inbuf)))
    });

    let mut out = BytesMut::with_capacity(4096);
    g.bench_function("encode_response", |b| {
        b.iter(|| {
            out.clear();
            encode_response(&mut out, 1, Ok(black_box(&entry)));
            black_box(out.len())
        })
    });

    // What a server does per call: decode, then reply with the first param.
    g.bench_function("decode_and_encode_response", |b| {
        b.iter(|| {
            let Message::Request { msgid, params, .. } = decode_one(&mut codec, &mut inbuf) else {
                unreachable!()
            };
            out.clear();
            encode_response(&mut out, msgid, Ok(&params[0]));
            black_box(out.len())
        })
    });

    // A pipelined read: 64 requests in one buffer, as a busy connection delivers them.
    let batch: Vec<u8> = REQUEST.repeat(64);
    g.throughput(Throughput::Elements(64));
    g.bench_function("decode_64_pipelined", |b| {
        b.iter(|| {
            inbuf.extend_from_slice(&batch);
            let mut n = 0;
            while let Some(m) = codec.decode(&mut inbuf).unwrap() {
                black_box(m);
                n += 1;
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
