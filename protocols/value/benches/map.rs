//! What a struct of n members costs to build from decoded pairs (`Map::from_pairs`, as
//! every decoder does), alone (an echo) and then read back member by member (a verb
//! reading its fields): the figures behind `INDEX_AT`, the member count from which a map keeps a hash
//! index. To see the crossover, run it with `INDEX_AT` set high (never index) and low
//! (always index) and compare per n (docs/benchmarks.md, "Map index threshold").
//!
//! `cargo bench -p rpcmux-value --bench map`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use rpcmux_value::{Map, Str, Value};

/// Names shaped like real ones (MusicEntry's and VDSM's: 4-20 bytes, shared prefixes).
fn names(n: usize) -> Vec<String> {
    const STEMS: [&str; 8] = [
        "title",
        "artist",
        "vmId",
        "memGuaranteedSize",
        "display",
        "tags",
        "duration_ms",
        "id",
    ];
    (0..n)
        .map(|i| format!("{}{}", STEMS[i % STEMS.len()], i / STEMS.len()))
        .collect()
}

/// A decoded struct's pairs: every member an int.
fn pairs(names: &[String]) -> Vec<(Str, Value)> {
    names
        .iter()
        .map(|k| (Str::from(k.as_str()), Value::Int(1)))
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("map_build_and_read_every_member");
    for n in [4, 8, 12, 16, 20, 24, 32, 48, 64] {
        let names = names(n);
        let pairs = pairs(&names);
        g.bench_with_input(BenchmarkId::from_parameter(n), &pairs, |b, pairs| {
            b.iter_batched(
                || pairs.clone(),
                |pairs| {
                    let m = Map::from_pairs(pairs);
                    let mut sum = 0;
                    for k in &names {
                        if let Some(Value::Int(i)) = m.get(k) {
                            sum += i;
                        }
                    }
                    black_box((m, sum))
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
    g.finish();

    // What an echo or a forwarding verb does: build the map, read no member.
    let mut g = c.benchmark_group("map_build_only");
    for n in [4, 8, 12, 16, 20, 24, 32, 48, 64] {
        let pairs = pairs(&names(n));
        g.bench_with_input(BenchmarkId::from_parameter(n), &pairs, |b, pairs| {
            b.iter_batched(
                || pairs.clone(),
                |pairs| black_box(Map::from_pairs(pairs)),
                criterion::BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
