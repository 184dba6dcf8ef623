//! The sniffer's probes, and decode + verb dispatch + encode of echo(MusicEntry)
//! through the real verb table, for each protocol's wire format: what one call costs the
//! server apart from its socket. The codec-only benches live in each protocol crate.
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rpcmux::{CallContext, EventHub, Params, VerbTable};
use rpcmux_jsonrpc::{parse, write_error, write_result, Incoming};
use rpcmux_sniff::{Probe, ProbeFn};
use std::sync::Arc;

const BODY: &[u8] = include_bytes!("data/jsonrpc_echo_req.json");
const XML_BODY: &[u8] = include_bytes!("data/xmlrpc_echo_req.xml");
const MSGPACK_REQUEST: &[u8] =
    include_bytes!("../protocols/msgpack-rpc/tests/fixtures/echo_music_request.msgpack");

/// The plain listener's probes, in the server's order.
const PROBES: [ProbeFn; 3] = [
    rpcmux_sniff::http,
    rpcmux_sniff::json,
    rpcmux_sniff::msgpack_rpc,
];

/// What the server's probe table does on each read (`Probes::decide` in src/sniff): the
/// first probe that matches, else whether any needs more.
fn decide(prefix: &[u8]) -> Option<usize> {
    let mut need_more = false;
    for (i, probe) in PROBES.iter().enumerate() {
        match probe(prefix) {
            Probe::Match => return Some(i),
            Probe::NeedMore => need_more = true,
            Probe::NoMatch => {}
        }
    }
    black_box(need_more);
    None
}

fn sniffer(c: &mut Criterion) {
    let mut g = c.benchmark_group("sniff");
    for (name, bytes) in [
        ("http", &b"POST /RPC2 HTTP/1.1\r\n"[..]),
        ("json", &b"{\"jsonrpc\""[..]),
        ("msgpack", &[0x94, 0x00, 0x01][..]),
        ("unknown", &b"\x00\x01\x02"[..]),
    ] {
        g.bench_function(name, |b| b.iter(|| decide(black_box(bytes))));
    }
    g.finish();
}

fn jsonrpc_dispatch(c: &mut Criterion) {
    let (verbs, ctx, rt) = table();
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

fn xmlrpc_dispatch(c: &mut Criterion) {
    let (verbs, ctx, rt) = table();
    let limits = rpcmux_xmlrpc::Limits::default();
    let mut out = Vec::with_capacity(4096);
    c.bench_function("xmlrpc decode+dispatch+encode echo(MusicEntry)", |b| {
        b.iter(|| {
            let call = rpcmux_xmlrpc::parse_call(black_box(XML_BODY), &limits).unwrap();
            let params = Params::Positional(call.params);
            let r = rt.block_on(verbs.call(&call.method, params, ctx.clone()));
            out.clear();
            match r {
                Ok(v) => rpcmux_xmlrpc::write_response(&mut out, &v),
                Err(e) => rpcmux_xmlrpc::write_fault(&mut out, &e),
            }
            black_box(&out);
        })
    });
}

fn msgpack_dispatch(c: &mut Criterion) {
    use rpcmux_msgpack_rpc::{decode_message, encode_response, Limits, Message};
    let (verbs, ctx, rt) = table();
    let limits = Limits::default();
    let mut out = bytes::BytesMut::with_capacity(4096);
    c.bench_function("msgpack-rpc decode+dispatch+encode echo(MusicEntry)", |b| {
        b.iter(|| {
            let Ok(Message::Request {
                msgid,
                method,
                params,
            }) = decode_message(black_box(MSGPACK_REQUEST), &limits)
            else {
                panic!("bad request")
            };
            let params = Params::Positional(params);
            let r = rt.block_on(verbs.call(&method, params, ctx.clone()));
            out.clear();
            encode_response(&mut out, msgid, r.as_ref());
            black_box(&out);
        })
    });
}

/// The demo verb table, a call context and a runtime to run verbs on.
fn table() -> (Arc<VerbTable>, CallContext, tokio::runtime::Runtime) {
    let mut verbs = VerbTable::new();
    rpcmux::demo::register(&mut verbs).unwrap();
    let ctx = CallContext::new("bench", Arc::new(EventHub::default()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    (Arc::new(verbs), ctx, rt)
}

criterion_group!(
    benches,
    sniffer,
    jsonrpc_dispatch,
    xmlrpc_dispatch,
    msgpack_dispatch
);
criterion_main!(benches);
