#!/usr/bin/env python3
"""Server memory per connection: RSS of `rpcmux serve` holding 10,000 connections.

Phases, each on a fresh server:
  idle    10,000 connections that have sent nothing (still sniffing)
  http    10,000 keep-alive connections after one JSON-RPC/HTTP ping each
  msgpack 10,000 msgpack-rpc connections after one ping each
  jsontcp 10,000 raw-TCP JSON-RPC connections after one ping each
  stomp   10,000 STOMP connections after CONNECT, SUBSCRIBE and one SEND (ping) each
  ws      10,000 WebSocket sessions (JSON-RPC) after one ping each

KiB per connection = (RSS with the connections open - RSS before them) / connections.
With a server built with `--features count-allocs`, the heap bytes the connections hold
(allocated and not freed, free of the allocator's page-level rounding) are shown too.
The target is at most 8 KiB after a call (nginx holds 10,000 idle keep-alive connections
in about 2.5 MB; issue 41 brought every protocol under 8 KiB, docs/benchmarks.md).

Usage: benches/idle_memory.py [--bin PATH] [--connections N] [--phases idle,http,...]
Default binary: target/release/rpcmux (build it with `cargo build --release`).
Stdlib only (python3). Raises its own open-file limit and the server's.
"""

import argparse
import os
import resource
import selectors
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# KiB per connection after a call, at most.
TARGET_KIB = 8

PING_JSON = b'{"jsonrpc":"2.0","method":"ping","id":1}'
HTTP_PING = (
    b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
    + str(len(PING_JSON)).encode()
    + b"\r\n\r\n"
    + PING_JSON
)
# [0, 1, "ping", []]
MSGPACK_PING = bytes([0x94, 0x00, 0x01, 0xA4]) + b"ping" + bytes([0x90])
STOMP_PING = (
    b"CONNECT\naccept-version:1.2\nhost:x\n\n\x00"
    b"SUBSCRIBE\nid:r\ndestination:jms.topic.vdsm_responses\n\n\x00"
    b"SEND\ndestination:jms.topic.vdsm_requests\ncontent-length:"
    + str(len(PING_JSON)).encode()
    + b"\n\n"
    + PING_JSON
    + b"\x00"
)

def ws_frame(payload):
    """One masked text frame (a client's), payload under 126 bytes."""
    mask = b"\x01\x02\x03\x04"
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x81, 0x80 | len(payload)]) + mask + masked


WS_PING = (
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    + ws_frame(PING_JSON)
)

# What each phase sends, and a byte string whose arrival means its reply is complete.
PHASES = {
    "idle": (b"", None),
    "http": (HTTP_PING, b'"id":1}'),
    "msgpack": (MSGPACK_PING, bytes([0xC0, 0xC3])),  # error nil, result true
    "jsontcp": (PING_JSON + b"\n", b'"id":1}\n'),
    "stomp": (STOMP_PING, b'"id":1}'),
    "ws": (WS_PING, b'"id":1}'),
}


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, n)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def start_server(binary, n):
    help_text = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True).stdout
    args = [
        binary, "serve", "--listen", "127.0.0.1:0",
        "--max-connections", str(n + 1000),
        "--max-sniffing", str(n + 1000),
        "--sniff-timeout", "600", "--idle-timeout", "600",
    ]
    # Per-address caps (issue 11) would refuse 10,000 connections from one address.
    if "--max-connections-per-ip" in help_text:
        args += ["--max-connections-per-ip", "0"]
    if "--max-sniffing-per-ip" in help_text:
        args += ["--max-sniffing-per-ip", "0"]
    limit = n + 1000

    def lift():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, max(limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1])))

    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=lift)
    line = p.stdout.readline().decode()
    if not line.startswith("listening on "):
        p.kill()
        sys.exit(f"server did not start: {line!r}")
    host, port = line.split()[-1].rsplit(":", 1)
    return p, (host, int(port))


def settle_rss(pid):
    """RSS once it stops moving (the server may still be finishing work)."""
    last = status_kib(pid, "VmRSS")
    for _ in range(20):
        time.sleep(0.25)
        now = status_kib(pid, "VmRSS")
        if abs(now - last) < 64:
            return now
        last = now
    return last


def live_heap_kib(addr):
    """The server's live heap (rpcmux_alloc_live_bytes), or None without count-allocs."""
    s = socket.create_connection(addr, timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    got = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
    s.close()
    for line in got.decode(errors="replace").splitlines():
        if line.startswith("rpcmux_alloc_live_bytes "):
            return float(line.split()[1]) / 1024
    return None


def run_phase(binary, name, n):
    request, done = PHASES[name]
    p, addr = start_server(binary, n)
    try:
        # Warm up: one call of each kind, so first-use allocations are not charged to
        # the connections.
        for warm in ("http", "msgpack", "jsontcp", "stomp"):
            req, end = PHASES[warm]
            s = socket.create_connection(addr, timeout=10)
            s.sendall(req)
            got = b""
            while end not in got:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
            s.close()
        time.sleep(0.5)
        before = settle_rss(p.pid)
        live_before = live_heap_kib(addr)
        socks = []
        sel = selectors.DefaultSelector()
        t0 = time.time()
        for i in range(n):
            s = socket.create_connection(addr, timeout=30)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            socks.append(s)
            if request:
                s.sendall(request)
                s.setblocking(False)
                sel.register(s, selectors.EVENT_READ, [b""])
        pending = n if request else 0
        closed = 0
        deadline = time.time() + 120
        while pending and time.time() < deadline:
            for key, _ in sel.select(timeout=1):
                try:
                    chunk = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fileobj)
                    pending -= 1
                    closed += 1
                    continue
                key.data[0] += chunk
                if done in key.data[0]:
                    sel.unregister(key.fileobj)
                    pending -= 1
        if closed:
            print(f"  {name}: {closed} connections were closed", file=sys.stderr)
        if pending:
            print(f"  {name}: {pending} calls unanswered", file=sys.stderr)
        took = time.time() - t0
        # HTTP connections give their buffers back after 1-2 s idle (see docs/limits.md).
        time.sleep(3.0)
        alive = sum(1 for s in socks if s.fileno() >= 0)
        after = settle_rss(p.pid)
        hwm = status_kib(p.pid, "VmHWM")
        per = (after - before) / n
        live_after = live_heap_kib(addr)
        live = ""
        if live_before is not None and live_after is not None:
            live = f", live heap {(live_after - live_before) / n:.2f} KiB per connection"
        print(
            f"{name:8} {n} connections ({alive} open, {took:.1f}s): RSS {before / 1024:.1f} -> "
            f"{after / 1024:.1f} MiB (peak {hwm / 1024:.1f}), {per:.1f} KiB per connection{live}"
        )
        for s in socks:
            s.close()
        return per
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("RPCMUX_BIN", os.path.join(ROOT, "target/release/rpcmux")))
    ap.add_argument("--connections", type=int, default=10_000)
    ap.add_argument("--phases", default="idle,http,msgpack,jsontcp,stomp,ws")
    a = ap.parse_args()
    if not os.path.exists(a.bin):
        sys.exit(f"{a.bin} not found: cargo build --release (or --bin PATH)")
    got = raise_nofile(a.connections + 1000)
    if got < a.connections + 100:
        sys.exit(f"open-file limit {got} is too low for {a.connections} connections (raise the hard limit)")
    print(f"binary {a.bin}")
    results = {}
    for name in a.phases.split(","):
        results[name] = run_phase(a.bin, name, a.connections)
    worst = max(v for k, v in results.items() if k != "idle") if len(results) > 1 else None
    if worst is not None:
        verdict = "within" if worst <= TARGET_KIB else "OVER"
        print(f"worst after a call: {worst:.1f} KiB per connection ({verdict} the {TARGET_KIB} KiB target)")


if __name__ == "__main__":
    main()
