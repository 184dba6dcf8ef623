#!/usr/bin/env python3
"""What event ids and the retention window cost the in-process fan-out (issue 40).

One rpcmux per variant, rounds interleaved: the workload of benches/events_fanout.py's
`inproc` mode (3 publishers calling Host.publishEvent, pipelined, each event carrying its
send time; 3 x SUBS raw-TCP JSON-RPC subscribers; every process of its own), paced at
each rate for SECS seconds. Per run: deliveries/s, events lost, publish->receive p50/p99,
and deliveries per server CPU-second (the server's utime+stime over the run, from
/proc), which the Python clients sharing the cores do not blur as much as wall time.

Variants: `before` (--old, a build from before ids and retention), `ids+retention`
(--bin, the default window) and `ids only` (--bin with --events-retain 0).

Usage: benches/events_ab.py --old PATH [--bin PATH] [--rates R,R] [--rounds N] [--secs S]
Prints one line per run, then the medians per variant and rate and their ratios.
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import events_fanout as ef  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def run(binary, extra, rates, subs, secs):
    proc, addr = ef.start_rpcmux(binary, extra)
    out = {}
    try:
        for rate in rates:
            before = cpu_seconds(proc.pid)
            got, expect = ef.phase([addr] * 3, [addr] * 3, subs, rate, secs)
            cpu = cpu_seconds(proc.pid) - before
            lat = sorted(x for _, _, l in got for x in l)
            lost = sum(expect - c for c, _, _ in got)
            out[rate] = {
                "deliveries_s": len(lat) / secs,
                "lost": lost,
                "p50": lat[len(lat) // 2] if lat else float("nan"),
                "p99": lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan"),
                "per_cpu_s": len(lat) / cpu if cpu > 0 else float("nan"),
            }
    finally:
        proc.kill()
        proc.wait()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="a build from before ids and retention")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/rpcmux"))
    ap.add_argument("--rates", default="10000,20000")
    ap.add_argument("--subs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=float, default=3.0)
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    variants = [
        ("before", args.old, []),
        ("ids+retention", args.bin, []),
        ("ids only", args.bin, ["--events-retain", "0"]),
    ]
    results = {(v, r): [] for v, _, _ in variants for r in rates}
    for rnd in range(args.rounds):
        for name, binary, extra in variants:
            for rate, m in run(binary, extra, rates, args.subs, args.secs).items():
                results[(name, rate)].append(m)
                print(f"round {rnd + 1} {name:14} {rate:6,}/s: {m['deliveries_s']:9,.0f} deliveries/s, "
                      f"lost {m['lost']}, p50 {m['p50']:.2f} ms, p99 {m['p99']:.2f} ms, "
                      f"{m['per_cpu_s']:9,.0f} deliveries per server CPU-s", flush=True)
    print("\nmedians of the rounds:")
    med = {}
    for (name, rate), ms in results.items():
        med[(name, rate)] = {k: statistics.median(m[k] for m in ms) for k in ms[0]}
        m = med[(name, rate)]
        print(f"{name:14} {rate:6,}/s: lost {m['lost']:.0f}, p50 {m['p50']:.2f} ms, p99 {m['p99']:.2f} ms, "
              f"{m['per_cpu_s']:9,.0f} deliveries per server CPU-s")
    for rate in rates:
        b, n = med[("before", rate)], med[("ids+retention", rate)]
        print(f"{rate:6,}/s ids+retention / before: per CPU-s {n['per_cpu_s'] / b['per_cpu_s']:.2f}x, "
              f"p50 {n['p50'] / b['p50']:.2f}x, p99 {n['p99'] / b['p99']:.2f}x")


if __name__ == "__main__":
    main()
