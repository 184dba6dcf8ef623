#!/usr/bin/env python3
"""The same Python function, echo(MusicEntry), served by the standard library's
SimpleXMLRPCServer, its threading variant, and rpcmux.server.SimpleXMLRPCServer (issue 48).

Each server runs in a process of its own pinned to core 0 (taskset); the load generator,
`rpcmux bench --payload musicentry` (which checks every answer), is pinned to core 1.
Figures: calls per second with the server on one core, and calls per server CPU-second
(utime + stime of the server process over the measured run, from /proc), so a server
that cannot fill its core is not flattered. The stdlib servers are given HTTP/1.1
keep-alive (their default, HTTP/1.0, closes after every call), the fairest setting for
them. rpcmux is also measured over JSON-RPC (HTTP) and msgpack-rpc, the same function.
Then memory: server RSS per connection with CONNS connections open (idle, nothing sent),
and with each after one call (keep-alive); not for the single-threaded stdlib server,
which takes one connection at a time (a backlog of 5: it cannot hold CONNS at all).

Usage: benches/python_xmlrpc.py [--python PATH] [--rpcmux BIN] [--seconds S]
       [--connections N] [--conns CONNS]
  --python: an interpreter with the release wheel of python/ installed (default: the
            running one); --rpcmux: the load generator (default target/release/rpcmux).
Prints one table (markdown) for docs/benchmarks.md. Runs once; check `uptime` first.
"""

import argparse
import csv
import io
import os
import resource
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from payload import MUSIC_ENTRY  # noqa: E402

SERVER = r"""
import sys
kind = sys.argv[1]
if kind == "rpcmux":
    from rpcmux.server import SimpleXMLRPCServer
    server = SimpleXMLRPCServer(("127.0.0.1", 0), logRequests=False)
else:
    import socketserver
    from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

    class Handler(SimpleXMLRPCRequestHandler):
        protocol_version = "HTTP/1.1"

    cls = SimpleXMLRPCServer
    if kind == "stdlib-threading":
        class cls(socketserver.ThreadingMixIn, SimpleXMLRPCServer):
            daemon_threads = True
    server = cls(("127.0.0.1", 0), Handler, logRequests=False)

def echo(x):
    return x

server.register_function(echo)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def cpu_seconds(pid):
    """utime + stime of process `pid` (all its threads), in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def start(python, kind):
    proc = subprocess.Popen(
        ["taskset", "-c", "0", python, "-c", SERVER, kind], stdout=subprocess.PIPE, text=True
    )
    port = int(proc.stdout.readline())
    return proc, port


def bench(rpcmux, proto, port, seconds, connections, pid):
    addr = "http://127.0.0.1:%d/" % port if proto in ("xmlrpc", "jsonrpc") else "127.0.0.1:%d" % port
    cmd = [
        "taskset", "-c", "1", rpcmux, "bench", "--proto", proto, "--payload", "musicentry",
        "-c", str(connections), "-d", str(seconds), "--warmup", "1", "--threads", "1",
        "--csv", "-q", addr,
    ]
    # CPU over the measured part only: the warm-up second is left out by sampling after it.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    out, _ = p.communicate(timeout=seconds + 60)
    cpu1, t1 = cpu_seconds(pid), time.monotonic()
    row = next(csv.DictReader(io.StringIO(out)))
    calls = float(row["calls_per_sec"])
    errors = int(row["errors"])
    if errors or not calls:
        raise RuntimeError("%s on %s: %d errors" % (proto, port, errors))
    return calls, calls * (t1 - t0) / max(cpu1 - cpu0, 1e-9)


def call_once(sock):
    body = (
        "<?xml version='1.0'?><methodCall><methodName>echo</methodName><params><param>"
        "<value><int>1</int></value></param></params></methodCall>"
    ).encode()
    sock.sendall(
        b"POST /RPC2 HTTP/1.1\r\nHost: x\r\nContent-Type: text/xml\r\nContent-Length: "
        + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    data = b""
    while b"</methodResponse>" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("closed")
        data += chunk


def memory(pid, port, conns, after_call):
    """KiB of server RSS per connection, CONNS connections open."""
    before = rss_kib(pid)
    socks = []
    try:
        for _ in range(conns):
            s = socket.create_connection(("127.0.0.1", port))
            if after_call:
                call_once(s)
            socks.append(s)
        # Let the server take the connections in (accept, a thread or task each); then read.
        deadline = time.monotonic() + 5
        last = -1
        while time.monotonic() < deadline:
            now = rss_kib(pid)
            if now == last:
                break
            last = now
            time.sleep(0.5)
        return (rss_kib(pid) - before) / conns
    finally:
        for s in socks:
            s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rpcmux", default=os.path.join(ROOT, "target", "release", "rpcmux"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--conns", type=int, default=1000)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * a.conns)), hard))
    load = os.getloadavg()[0]
    print("load average before: %.2f" % load, file=sys.stderr)

    rows = []
    # The single-threaded stdlib server serves one keep-alive connection at a time (the
    # others would wait for ever): it is measured on one connection, and so is rpcmux
    # beside it; the others on --connections.
    many = a.connections
    for kind, runs in [
        ("stdlib", [("xmlrpc", 1)]),
        ("stdlib-threading", [("xmlrpc", many)]),
        ("rpcmux", [("xmlrpc", 1), ("xmlrpc", many), ("jsonrpc", many), ("msgpack", many)]),
    ]:
        proc, port = start(a.python, kind)
        try:
            for proto, conns in runs:
                calls, per_cpu = bench(a.rpcmux, proto, port, a.seconds, conns, proc.pid)
                rows.append((kind, "%s, %d conn." % (proto, conns), calls, per_cpu))
                print("%s %s x%d: %.0f calls/s, %.0f per CPU-second" % (kind, proto, conns, calls, per_cpu),
                      file=sys.stderr)
            # The single-threaded server accepts one connection at a time (its backlog is
            # 5): it holds no memory per connection, and no more connections either.
            if kind != "stdlib":
                idle = memory(proc.pid, port, a.conns, False)
                called = memory(proc.pid, port, a.conns, True)
                rows.append((kind, "memory", idle, called))
        finally:
            proc.kill()
            proc.wait()

    base = rows[0][2]
    base_cpu = rows[0][3]
    print("| server | protocol | calls/s (server on 1 core) | vs stdlib | calls per CPU-second | vs stdlib |")
    print("|---|---|---:|---:|---:|---:|")
    for kind, proto, x, y in rows:
        if proto == "memory":
            continue
        print("| %s | %s | %s | **%.2fx** | %s | %.2fx |" % (
            kind, proto, format(round(x), ","), x / base, format(round(y), ","), y / base_cpu))
    print()
    print("| server | KiB per idle connection (nothing sent) | KiB per connection after one call |")
    print("|---|---:|---:|")
    for kind, proto, idle, called in rows:
        if proto == "memory":
            print("| %s | %.1f | %s |" % (kind, idle, "-" if called is None else "%.1f" % called))
    print()
    print("load average before: %.2f, after: %.2f" % (load, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
