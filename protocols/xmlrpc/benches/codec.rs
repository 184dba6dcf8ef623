//! XML-RPC codec cost of one echo(MusicEntry): parse the exact request Python's
//! xmlrpc.client sends, write the response. Run: `cargo bench -p rpcmux-xmlrpc`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rpcmux_xmlrpc::{parse_call, parse_response, write_call, write_response, Limits};
use std::hint::black_box;

const CALL: &[u8] = include_bytes!("../tests/fixtures/music_entry_call.xml");

fn codec(c: &mut Criterion) {
    let limits = Limits::default();
    let call = parse_call(CALL, &limits).unwrap();
    let mut response = Vec::new();
    write_response(&mut response, &call.params[0]);

    let mut g = c.benchmark_group("xmlrpc");
    g.throughput(Throughput::Bytes(CALL.len() as u64));
    g.bench_function("parse_call/music_entry", |b| {
        b.iter(|| parse_call(black_box(CALL), &limits).unwrap())
    });
    g.bench_function("write_response/music_entry", |b| {
        let mut out = Vec::with_capacity(4096);
        b.iter(|| {
            out.clear();
            write_response(&mut out, black_box(&call.params[0]));
            black_box(&out);
        })
    });
    // What the server does per request: decode, hand the value back, encode.
    g.bench_function("echo/music_entry (parse_call + write_response)", |b| {
        let mut out = Vec::with_capacity(4096);
        b.iter(|| {
            let mut call = parse_call(black_box(CALL), &limits).unwrap();
            out.clear();
            write_response(&mut out, &call.params.swap_remove(0));
            black_box(&out);
        })
    });
    // The client side, for rpcmux's own load generator.
    g.bench_function("client write_call + parse_response/music_entry", |b| {
        let mut out = Vec::with_capacity(4096);
        b.iter(|| {
            out.clear();
            write_call(&mut out, "echo", black_box(&call.params));
            black_box(&out);
            parse_response(black_box(&response), &limits).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
