//! decode + dispatch-free encode of echo(MusicEntry), the reference payload.
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rpcmux_jsonrpc::{parse, write_result, Incoming};
use rpcmux_value::Params;

const BODY: &str = r#"{"jsonrpc": "2.0", "method": "echo", "params": [["MusicEntry", {"email": "lalcorn@ultranet", "time": "7:30pm", "tickets": "", "program": "", "state": "MA", "start": "2002-01-26", "venueurl": "", "country": "", "performers": ["An Evening with Karen Savoca"], "addressid": 7283, "name": "", "zip": "", "city": "Sudbury", "info": "Reservations required. Please call (978)443-3253 or e-mail Laurie at lal...@ultranet.com.", "merchandise": [], "event": "", "keywords": [".zyx.41"], "submit_time": "2001-08-28", "key": 325629, "active": 1, "end": "2002-01-26", "price": "$17", "address3": "", "address1": "", "venue": "Fox Run House Concerts", "address2": "", "update_time": "2001-09-22:19:28:44"}]], "id": 1}"#;

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
