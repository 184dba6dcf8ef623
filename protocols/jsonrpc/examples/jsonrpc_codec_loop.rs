//! decode + encode of echo(MusicEntry) in a plain loop, for counting what one call
//! costs with `perf stat -e instructions:u` (instruction counts hold still on a busy
//! machine where times do not): `cargo run --release --example jsonrpc_codec_loop -- 100000`.
use rpcmux_jsonrpc::{parse, write_result, Incoming};
use rpcmux_value::Params;
use std::hint::black_box;

// The allocator `rpcmux serve` runs with: glibc's costs differently.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BODY: &str = include_str!("../benches/music_entry.json");

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(100_000, |a| a.parse().expect("a count"));
    let mut out = Vec::with_capacity(1024);
    for _ in 0..n {
        let Ok(Incoming::Single(Ok(req))) = parse(black_box(BODY.as_bytes())) else {
            panic!("bad body")
        };
        let Params::Positional(mut p) = req.params else {
            panic!("positional params")
        };
        out.clear();
        write_result(&mut out, req.id.as_ref().expect("an id"), &p.swap_remove(0));
        black_box(&out);
    }
}
