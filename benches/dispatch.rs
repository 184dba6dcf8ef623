//! The sniffer's decision, and JSON-RPC decode + verb dispatch + encode of
//! echo(MusicEntry) through the real verb table.
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rpcmux::sniff::{self, Detected, Probes};
use rpcmux::{CallContext, EventHub, Params, VerbTable};
use rpcmux_jsonrpc::{parse, write_error, write_result, Incoming};
use std::sync::Arc;

const BODY: &[u8] = include_bytes!("data/jsonrpc_echo_req.json");

fn probes() -> Probes {
    Probes::new()
        .with(Detected::Http, sniff::http)
        .with(Detected::JsonTcp, sniff::json)
        .with(Detected::Msgpack, sniff::msgpack_rpc)
}

fn sniffer(c: &mut Criterion) {
    let p = probes();
    let mut g = c.benchmark_group("sniff");
    for (name, bytes) in [
        ("http", &b"POST /RPC2 HTTP/1.1\r\n"[..]),
        ("json", &b"{\"jsonrpc\""[..]),
        ("msgpack", &[0x94, 0x00, 0x01][..]),
        ("unknown", &b"\x00\x01\x02"[..]),
    ] {
        g.bench_function(name, |b| b.iter(|| p.decide(black_box(bytes))));
    }
    g.finish();
}

fn jsonrpc_dispatch(c: &mut Criterion) {
    let mut verbs = VerbTable::new();
    rpcmux::demo::register(&mut verbs);
    let verbs = Arc::new(verbs);
    let ctx = CallContext::new("bench", Arc::new(EventHub::default()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut out = Vec::with_capacity(1024);
    c.bench_function("jsonrpc decode+dispatch+encode echo(MusicEntry)", |b| {
        b.iter(|| {
            let Ok(Incoming::Single(Ok(req))) = parse(black_box(BODY)) else {
                panic!("bad body")
            };
            let params: Params = req.params;
            let r = rt.block_on(verbs.call(&req.method, params, ctx.clone()));
            out.clear();
            let id = req.id.unwrap_or_default();
            match r {
                Ok(v) => write_result(&mut out, &id, &v),
                Err(e) => write_error(&mut out, &id, &e),
            }
            black_box(&out);
        })
    });
}

criterion_group!(benches, sniffer, jsonrpc_dispatch);
criterion_main!(benches);
