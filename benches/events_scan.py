#!/usr/bin/env python3
"""What one client pipelining `subscribe` with a too-old `since` costs everyone else
(issue 46, case 10): before, each such request scanned the retained window under the
hub's global lock, so 65,536 retained events made every delivery to other subscribers
wait behind the scans.

One rpcmux per binary: 70,000 events are published (the window keeps 65,536), then for
SECS seconds a publisher sends 2,000 events/s carrying their send time and a subscriber
measures publish->receive latency, first alone, then while an attacker pipelines
`subscribe` with a since older than the window (answered -32007 each time). Prints
p50/p99 per phase and the attacker's requests answered.

Usage: benches/events_scan.py BINARY [BINARY...] [--secs S]
"""

import argparse
import json
import re
import socket
import statistics
import subprocess
import threading
import time


def start(binary):
    p = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        m = re.search(r"listening on (?:\S+ )?(127\.0\.0\.1:\d+)", line)
        if m:
            host, port = m.group(1).split(":")
            return p, (host, int(port))
    raise RuntimeError("no listening line")


def call(sock, f, method, params, id_):
    sock.sendall((json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n").encode())
    return json.loads(f.readline())


def fill(addr, n):
    s = socket.create_connection(addr)
    f = s.makefile("rb")
    batch = 500
    for start_n in range(0, n, batch):
        reqs = "".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "Host.publishEvent",
                                   "params": {"name": "|fill", "params": {"i": i}}}) + "\n"
                       for i in range(start_n, min(n, start_n + batch)))
        s.sendall(reqs.encode())
        for _ in range(start_n, min(n, start_n + batch)):
            f.readline()
    s.close()


def origin_of(addr):
    s = socket.create_connection(addr)
    f = s.makefile("rb")
    call(s, f, "subscribe", {"pattern": "|probe", "resumable": True}, 1)
    p = socket.create_connection(addr)
    pf = p.makefile("rb")
    call(p, pf, "Host.publishEvent", {"name": "|probe"}, 1)
    while True:
        v = json.loads(f.readline())
        if v.get("method") == "|probe":
            return v["params"]["event_id"].rsplit("-", 1)[0]


def phase(addr, secs, attack_since):
    lat = []
    stop = threading.Event()
    sub = socket.create_connection(addr)
    sf = sub.makefile("rb")
    call(sub, sf, "subscribe", {"pattern": "|lat"}, 1)

    def reader():
        while not stop.is_set():
            try:
                line = sf.readline()
            except OSError:
                return
            if not line:
                return
            v = json.loads(line)
            if v.get("method") == "|lat":
                lat.append((time.time() - v["params"]["t"]) * 1000)

    answered = [0]

    def attacker():
        req = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscribe",
                           "params": {"pattern": "*", "since": attack_since}}) + "\n").encode()
        while not stop.is_set():
            try:
                a = socket.create_connection(addr)
                af = a.makefile("rb")
                while not stop.is_set():
                    a.sendall(req * 16)
                    for _ in range(16):
                        if not af.readline():
                            raise ConnectionError("closed")
                        answered[0] += 1
            except OSError:
                continue  # closed by the server: connect again

    threads = [threading.Thread(target=reader, daemon=True)]
    if attack_since:
        threads.append(threading.Thread(target=attacker, daemon=True))
    for t in threads:
        t.start()
    pub = socket.create_connection(addr)
    pf = pub.makefile("rb")
    end = time.time() + secs
    n = 0
    while time.time() < end:
        call(pub, pf, "Host.publishEvent", {"name": "|lat", "params": {"t": time.time()}}, n)
        n += 1
        time.sleep(0.0005)
    time.sleep(0.5)
    stop.set()
    lat.sort()
    return lat, answered[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--secs", type=float, default=5.0)
    args = ap.parse_args()
    for binary in args.binaries:
        proc, addr = start(binary)
        try:
            fill(addr, 70_000)
            origin = origin_of(addr)
            for name, since in [("alone", None), ("attacked", f"{origin}-1")]:
                lat, answered = phase(addr, args.secs, since)
                p50 = statistics.median(lat) if lat else float("nan")
                p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
                print(f"{binary}: {name:8} deliveries {len(lat):6}, p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {lat[-1] if lat else 0:.1f} ms, too-old subscribes answered {answered}", flush=True)
        finally:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
