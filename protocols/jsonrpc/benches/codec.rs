//! decode + dispatch-free encode of echo(MusicEntry), the reference payload.
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rpcmux_jsonrpc::{parse, write_result, Incoming};
use rpcmux_value::Params;

const BODY: &str = include_str!("music_entry.json");

fn echo_music_entry(c: &mut Criterion) {
    let mut out = Vec::with_capacity(1024);
    c.bench_function("jsonrpc decode+encode echo(MusicEntry)", |b| {
        b.iter(|| {
            let Ok(Incoming::Single(Ok(req))) = parse(black_box(BODY.as_bytes())) else {
                panic!("bad body")
            };
            let Params::Positional(mut p) = req.params else {
                panic!()
            };
            out.clear();
            write_result(&mut out, req.id.as_ref().unwrap(), &p.swap_remove(0));
            black_box(&out);
        })
    });
}

criterion_group!(benches, echo_music_entry);
criterion_main!(benches);
