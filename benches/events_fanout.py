#!/usr/bin/env python3
"""Events fanned out across instances through Redis, against one instance's in-process hub.

Same workload in both modes: 3 publishers (raw-TCP JSON-RPC connections calling
Host.publishEvent, pipelined 256 calls at a time) and 3 x SUBS subscribers (raw-TCP
JSON-RPC connections that called subscribe).
  inproc  one rpcmux, no --events: every publisher and subscriber on it
  redis   a redis-server and 3 rpcmux with --events: one publisher and SUBS subscribers
          on each instance, so each event crosses Redis to 2 of the 3 instances

Two phases per mode:
  throughput  EVENTS events published as fast as the publishers go; events/s is EVENTS
              divided by the time from the first publish to the last subscriber having
              received all of them (deliveries/s = that times the subscriber count)
  latency     RATE events/s in all for SECS seconds, each carrying its send time
              (CLOCK_MONOTONIC, shared by every process here); p50/p99 of receive - send
              over every delivery

Usage: benches/events_fanout.py [--bin PATH] [--events N] [--subs N] [--rate N] [--secs S]
Default binary: target/release/rpcmux. Needs redis-server on PATH. Stdlib only.
The Python subscribers and publishers share the machine with the servers: on a small
machine they are part of what is measured (say so with the figures).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import threading
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
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
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


class Subscriber(threading.Thread):
    def __init__(self, addr, expect, timed):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(addr)
        self.sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"pattern":"|bench"}}\n')
        self.buf = b""
        while b"\n" not in self.buf:
            self.buf += self.sock.recv(4096)
        self.buf = self.buf.split(b"\n", 1)[1]
        self.expect, self.timed = expect, timed
        self.count, self.last, self.latencies = 0, 0, []

    def run(self):
        self.sock.settimeout(30)
        while self.count < self.expect:
            data = self.buf + self.sock.recv(1 << 20)
            now = time.monotonic_ns()
            lines = data.split(b"\n")
            self.buf = lines.pop()
            self.count += len(lines)
            if self.timed:
                for line in lines:
                    sent = json.loads(line)["params"]["t"]
                    self.latencies.append((now - sent) / 1e6)
        self.last = time.monotonic_ns()


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


def publisher_fast(addr, n):
    s = socket.create_connection(addr)
    buf = b""
    for start in range(0, n, WINDOW):
        batch = b"".join(publish_line(i, 0) for i in range(start, min(n, start + WINDOW)))
        s.sendall(batch)
        buf = read_replies(s, min(WINDOW, n - start), buf)
    s.close()


def publisher_paced(addr, n, interval):
    s = socket.create_connection(addr)
    buf = b""
    nxt = time.monotonic()
    for i in range(n):
        nxt += interval
        time.sleep(max(0.0, nxt - time.monotonic()))
        s.sendall(publish_line(i, time.monotonic_ns()))
        buf = read_replies(s, 1, buf)
    s.close()


def phase(pub_addrs, sub_addrs, subs, n_per_pub, timed, interval=0.0):
    expect = n_per_pub * len(pub_addrs)
    ss = [Subscriber(a, expect, timed) for a in sub_addrs for _ in range(subs)]
    for s in ss:
        s.start()
    t0 = time.monotonic_ns()
    pubs = [threading.Thread(target=(publisher_paced if timed else publisher_fast),
                             args=(a, n_per_pub, interval) if timed else (a, n_per_pub))
            for a in pub_addrs]
    for p in pubs:
        p.start()
    for p in pubs:
        p.join()
    for s in ss:
        s.join(60)
        assert s.count == expect, f"subscriber got {s.count} of {expect}"
    end = max(s.last for s in ss)
    return ss, (end - t0) / 1e9


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
        _, secs = phase(pub_addrs, sub_addrs, args.subs, args.events // 3, False)
        events = (args.events // 3) * 3
        n_lat = int(args.rate * args.secs) // 3
        ss, _ = phase(pub_addrs, sub_addrs, args.subs, n_lat, True, 3 / args.rate)
        lat = sorted(x for s in ss for x in s.latencies)
        p50 = lat[len(lat) // 2]
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        not_sent = sum(metric(a, 'rpcmux_events_fanout_total{outcome="not_sent"}') for a in set(pub_addrs))
        print(f"{mode:7} {n_subs} subscribers: {events / secs:9,.0f} events/s "
              f"({events * n_subs / secs:10,.0f} deliveries/s, {events} events in {secs:.2f} s); "
              f"latency at {args.rate}/s: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
              f"(mean {statistics.fmean(lat):.2f}, {len(lat)} deliveries); not fanned out: {not_sent:.0f}",
              flush=True)
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
    ap.add_argument("--events", type=int, default=30_000)
    ap.add_argument("--subs", type=int, default=2, help="subscribers per instance (x3 in all)")
    ap.add_argument("--rate", type=int, default=1_000)
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--modes", default="inproc,redis")
    args = ap.parse_args()
    for mode in args.modes.split(","):
        run_mode(mode, args)


if __name__ == "__main__":
    main()
