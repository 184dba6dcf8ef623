#!/usr/bin/env python3
"""Events fanned out across instances through Redis, against one instance's in-process hub.

Same workload in both modes: 3 publishers (raw-TCP JSON-RPC connections calling
Host.publishEvent, pipelined WINDOW calls at a time) and 3 x SUBS subscribers (raw-TCP
JSON-RPC connections that called subscribe), each publisher and subscriber a process of
its own.
  inproc  one rpcmux, no --events: every publisher and subscriber on it
  redis   a redis-server and 3 rpcmux with --events: one publisher and SUBS subscribers
          on each instance, so each event crosses Redis to 2 of the 3 instances

One run per rate (--rates, events/s in all, for --secs seconds): the publishers send
every 10 ms their share of the rate, pipelined, each event carrying its send time
(CLOCK_MONOTONIC, shared by every process here); every subscriber should receive every
event. Each run prints deliveries/s, events lost (a subscriber dropped as too slow, or
an instance behind on what Redis brings), and publish->receive p50/p99 over every
delivery. The highest rate with nothing lost is the fan-out throughput.

Usage: benches/events_fanout.py [--bin PATH] [--rates R,R,...] [--subs N] [--secs S] [--modes inproc,redis]
Default binary: target/release/rpcmux. Needs redis-server on PATH. Stdlib only.
The Python subscribers and publishers share the machine with the servers: on a small
machine they are part of what is measured (say so with the figures).
"""

import argparse
import json
import os
import socket
import subprocess
import multiprocessing
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Calls in flight per publisher: enough to keep the servers busy, few enough that the
# Python subscribers are not outrun (a subscriber 256 events behind is dropped, by design).
WINDOW = 32


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listening on {port}")


def start_rpcmux(binary, extra):
    p = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", *extra],
        stdout=subprocess.PIPE, stderr=open(os.environ.get("RPCMUX_LOG", os.devnull), "a"), text=True,
    )
    line = p.stdout.readline()
    assert line.startswith("listening on "), line
    host, port = line.split()[-1].rsplit(":", 1)
    return p, (host, int(port))


def metric(addr, name):
    with socket.create_connection(addr) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    for line in data.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def subscriber(addr, expect, timed, ready, results):
    """One subscriber, in a process of its own (threads of one interpreter could not keep
    up with the servers, and a subscriber 256 events behind is dropped, by design)."""
    sock = socket.create_connection(addr)
    sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"pattern":"|bench"}}\n')
    buf = b""
    while b"\n" not in buf:
        buf += sock.recv(4096)
    buf = buf.split(b"\n", 1)[1]
    ready.put(1)
    sock.settimeout(3)
    count, latencies, last = buf.count(b"\n"), [], 0
    try:
        while count < expect:
            data = sock.recv(1 << 20)
            if not data:
                break
            now = time.monotonic_ns()
            if timed:
                lines = (buf + data).split(b"\n")
                buf = lines.pop()
                # An events.lost notice (the subscriber fell behind and is closed) is not
                # an event: what it lost shows as missing deliveries.
                events = [json.loads(line)["params"] for line in lines]
                events = [e for e in events if "t" in e]
                count += len(events)
                latencies += [(now - e["t"]) / 1e6 for e in events]
            else:
                count += data.count(b"\n")
            last = now
    except socket.timeout:
        pass
    results.put((count, last, latencies))


def publish_line(i, t):
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": "Host.publishEvent",
                       "params": {"name": f"|bench|{i}", "params": {"t": t, "i": i}}},
                      separators=(",", ":")).encode() + b"\n"


def read_replies(sock, n, buf):
    while buf.count(b"\n") < n:
        buf += sock.recv(1 << 20)
    for _ in range(n):
        buf = buf.split(b"\n", 1)[1]
    return buf


def publisher(addr, n, tick, batch):
    """Publish n events, `batch` of them pipelined every `tick` seconds, each carrying
    its send time."""
    s = socket.create_connection(addr)
    buf = b""
    nxt = time.monotonic()
    for start in range(0, n, batch):
        nxt += tick
        time.sleep(max(0.0, nxt - time.monotonic()))
        now = time.monotonic_ns()
        k = min(batch, n - start)
        s.sendall(b"".join(publish_line(i, now) for i in range(start, start + k)))
        buf = read_replies(s, k, buf)
    s.close()


def phase(pub_addrs, sub_addrs, subs, rate, secs):
    """`rate` events/s in all for `secs` seconds, spread over the publishers, in ticks of
    10 ms. Returns every subscriber's (count, last receive, latencies) and the events
    each should have received."""
    mp = multiprocessing.get_context("fork")
    n_per_pub = int(rate * secs) // len(pub_addrs)
    batch = max(1, round(rate / len(pub_addrs) / 100))
    tick = batch * len(pub_addrs) / rate
    expect = n_per_pub * len(pub_addrs)
    ready, results = mp.Queue(), mp.Queue()
    ss = [mp.Process(target=subscriber, args=(a, expect, True, ready, results))
          for a in sub_addrs for _ in range(subs)]
    for s in ss:
        s.start()
    for _ in ss:
        ready.get(timeout=10)
    pubs = [mp.Process(target=publisher, args=(a, n_per_pub, tick, batch)) for a in pub_addrs]
    for p in pubs:
        p.start()
    got = [results.get(timeout=secs + 60) for _ in ss]
    for p in pubs + ss:
        p.join(10)
    return got, expect


def run_mode(mode, args):
    procs, redis = [], None
    try:
        if mode == "redis":
            port = free_port()
            redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                      "--save", "", "--appendonly", "no"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_port(port)
            extra = ["--events", f"redis://127.0.0.1:{port}", "--events-channel", "bench"]
            addrs = []
            for _ in range(3):
                p, a = start_rpcmux(args.bin, extra)
                procs.append(p)
                addrs.append(a)
            for a in addrs:
                end = time.time() + 10
                while metric(a, "rpcmux_events_backend_up") != 1:
                    assert time.time() < end, "instance not connected to redis"
                    time.sleep(0.05)
            pub_addrs, sub_addrs = addrs, addrs
        else:
            p, a = start_rpcmux(args.bin, [])
            procs.append(p)
            pub_addrs, sub_addrs = [a] * 3, [a] * 3
        n_subs = args.subs * 3
        for rate in (int(r) for r in args.rates.split(",")):
            got, expect = phase(pub_addrs, sub_addrs, args.subs, rate, args.secs)
            lat = sorted(x for _, _, l in got for x in l)
            lost = sum(expect - c for c, _, _ in got)
            p50 = lat[len(lat) // 2] if lat else float("nan")
            p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
            print(f"{mode:7} {rate:7,} events/s x {n_subs} subscribers: "
                  f"{len(lat) / args.secs:10,.0f} deliveries/s, lost {lost} of {expect * n_subs}; "
                  f"publish->receive p50 {p50:.2f} ms, p99 {p99:.2f} ms", flush=True)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if redis:
            redis.kill()
            redis.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/rpcmux"))
    ap.add_argument("--subs", type=int, default=2, help="subscribers per instance (x3 in all)")
    ap.add_argument("--rates", default="1000,10000,20000,40000",
                    help="events/s in all, one run each")
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--modes", default="inproc,redis")
    args = ap.parse_args()
    for mode in args.modes.split(","):
        run_mode(mode, args)


if __name__ == "__main__":
    main()
