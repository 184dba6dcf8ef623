//! parse_call + write_response of echo(MusicEntry) in a plain loop, for counting what
//! one call costs with valgrind's cachegrind (instruction counts hold still on a busy
//! machine where times do not): `valgrind --tool=cachegrind --cache-sim=no
//! target/release/examples/xmlrpc_codec_loop 20000`.
use rpcmux_xmlrpc::{parse_call, write_response, Limits};
use std::hint::black_box;

// The allocator `rpcmux serve` runs with: glibc's costs differently.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CALL: &[u8] = include_bytes!("../tests/fixtures/music_entry_call.xml");

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(100_000, |a| a.parse().expect("a count"));
    let limits = Limits::default();
    let mut out = Vec::with_capacity(4096);
    for _ in 0..n {
        let mut call = parse_call(black_box(CALL), &limits).expect("the fixture parses");
        out.clear();
        write_response(&mut out, &call.params.swap_remove(0));
        black_box(&out);
    }
}
