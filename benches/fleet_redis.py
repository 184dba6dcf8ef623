#!/usr/bin/env python3
"""A two-instance fleet through Redis: the Redis Streams fan-out against the old pub/sub.

Two rpcmux builds, each run the same way: a redis-server (no persistence) and instances a
and b with `--events`; one publisher on a (a raw-TCP JSON-RPC connection calling
Host.publishEvent, paced every 10 ms, each event carrying its send time) and SUBS
subscribers on b (raw-TCP JSON-RPC `subscribe`), so every event crosses Redis once. The
workload and its measurement are benches/events_fanout.py's (its helpers are imported):
per rate, deliveries/s, deliveries lost (at the end), and publish->receive p50/p99 over
every delivery. Rounds are interleaved (round 1 of each build, then round 2, ...) so
drift spreads over both; the medians of the rounds are printed, and new/old ratios.

  old  a binary from before the stream (pub/sub): e.g. a release build of 66b9142
  new  this tree's (target/release/rpcmux)

Usage: benches/fleet_redis.py --old PATH [--new PATH] [--rates R,R,...] [--subs N]
                              [--secs S] [--rounds N]
Needs redis-server on PATH. Stdlib only. Never in CI: the Python publisher and
subscribers share the machine with the servers (say so with the figures).
"""

import argparse
import importlib.util
import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("events_fanout", os.path.join(ROOT, "benches/events_fanout.py"))
ef = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ef)


def fleet(binary):
    """A redis-server and two instances on it; returns (processes, a, b)."""
    port = ef.free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ef.wait_port(port)
    extra = ["--events", f"redis://127.0.0.1:{port}", "--events-channel", "bench"]
    procs, addrs = [redis], []
    for _ in range(2):
        p, a = ef.start_rpcmux(binary, extra)
        procs.append(p)
        addrs.append(a)
    for a in addrs:
        end = time.time() + 10
        while ef.metric(a, "rpcmux_events_backend_up") != 1:
            assert time.time() < end, "instance not connected to redis"
            time.sleep(0.05)
    return procs, addrs[0], addrs[1]


def one(binary, rate, args):
    procs, a, b = fleet(binary)
    try:
        got, expect = ef.phase([a], [b], args.subs, rate, args.secs)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    lat = sorted(x for _, _, l in got for x in l)
    lost = sum(expect - c for c, _, _ in got)
    p50 = lat[len(lat) // 2] if lat else float("nan")
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
    return lost, expect * len(got), p50, p99


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="an rpcmux from before the stream (pub/sub)")
    ap.add_argument("--new", default=os.path.join(ROOT, "target/release/rpcmux"))
    ap.add_argument("--subs", type=int, default=2, help="subscribers on b")
    ap.add_argument("--rates", default="1000,5000,10000,20000", help="events/s, one run each")
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    builds = [("old", args.old), ("new", args.new)]
    rates = [int(r) for r in args.rates.split(",")]
    results = {(name, rate): [] for name, _ in builds for rate in rates}
    for rnd in range(args.rounds):
        for rate in rates:
            for name, binary in builds:
                r = one(binary, rate, args)
                results[(name, rate)].append(r)
                print(f"round {rnd + 1} {name} {rate:6,}/s: lost {r[0]} of {r[1]}, "
                      f"p50 {r[2]:.2f} ms, p99 {r[3]:.2f} ms", flush=True)
    print()
    print("| events/s | pub/sub: lost, p50 / p99 ms | stream: lost, p50 / p99 ms | p50 stream / pub/sub | p99 stream / pub/sub |")
    print("|---:|---|---|---:|---:|")
    for rate in rates:
        row = []
        med = {}
        for name, _ in builds:
            rs = results[(name, rate)]
            lost = max(r[0] for r in rs)
            of = rs[0][1]
            p50 = statistics.median(r[2] for r in rs)
            p99 = statistics.median(r[3] for r in rs)
            med[name] = (p50, p99)
            row.append(f"{lost} of {of:,}, {p50:.2f} / {p99:.2f}")
        print(f"| {rate:,} | {row[0]} | {row[1]} | {med['new'][0] / med['old'][0]:.2f}x "
              f"| {med['new'][1] / med['old'][1]:.2f}x |")
    print(f"\n(medians of {args.rounds} rounds; lost: the worst round; {args.subs} subscribers on b, "
          f"{args.secs:g} s per run)")


if __name__ == "__main__":
    main()
