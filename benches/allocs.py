#!/usr/bin/env python3
"""Heap allocations per call, per protocol path, counted inside `rpcmux serve`.

The server is a build with feature `count-allocs` (src/observe/alloc_count.rs): its
allocator counts allocations, reallocations, frees and bytes and `/metrics` shows them
(`rpcmux_alloc_*`). For every path and verb (the dynamic `echo` and the typed
`echoMusicEntry`, both given the MusicEntry struct) this script

  1. warms the path up (a short unmeasured run: connections, buffers, the verb's
     metric series and caches are made once),
  2. reads /metrics, runs the load, reads /metrics again,
  3. divides the counters' growth by the calls the server handled in between (its own
     `rpcmux_calls_handled_total`, so the count is exact, whatever the load generator
     saw), after taking off what the two scrapes cost themselves (measured first, with
     no calls in between).

The load generator is `rpcmux bench` (another process: its allocations are not
counted), or h2load for JSON-RPC over HTTP/2. The measured run opens its connections
and closes them, so what a connection costs is in the figures too, spread over its
calls (a few thousand each). Allocations per call are counts and do not depend on the
machine's speed; the only thing that moves them a little is how many calls a read or a
write carries (pipelining), so the load shape is fixed (see --connections, --pipeline).

Usage:
  benches/allocs.py                       # the work tree as it is, built into target/allocs
  benches/allocs.py --rev before=edaa439 --rev after=HEAD
  benches/allocs.py --bin before=/tmp/a/rpcmux --bin after=target/allocs/release/rpcmux
  benches/allocs.py --paths jsonrpc-tcp,msgpack --duration 3

With neither --bin nor --rev it builds the work tree, uncommitted changes and all, with
`CARGO_TARGET_DIR=target/allocs cargo build --release --features count-allocs`, so the
normal release build in target/release is left alone. --rev builds a commit's own tree
(git archive into target/allocs-src/, built in target/allocs-rev, where the commits
share their compiled dependencies; the binary is kept as target/allocs-rev/rpcmux-SHA),
patching the feature into a commit older than it. A --bin must have been built with
`--features count-allocs`. Two or more builds give a column each and the ratio of the
last to the first. Prints a markdown table on stdout (progress on stderr). Stdlib only
(python3); h2load (nghttp2-client) for the HTTP/2 row, which is skipped without it.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "benches", "data")

# name (`rpcmux bench --proto`, or jsonrpc-h2 for h2load), what the table calls it
PATHS = [
    ("xmlrpc", "XML-RPC over HTTP/1.1"),
    ("jsonrpc", "JSON-RPC over HTTP/1.1"),
    ("jsonrpc-h2", "JSON-RPC over HTTP/2 (h2c, h2load)"),
    ("jsonrpc-tcp", "JSON-RPC over raw TCP"),
    ("stomp", "JSON-RPC over STOMP"),
    ("jsonrpc-ws", "JSON-RPC over WebSocket"),
    ("stomp-ws", "JSON-RPC over STOMP over WebSocket"),
    ("msgpack", "msgpack-rpc over TCP"),
]
HTTP = {"xmlrpc", "jsonrpc"}
# verb, `rpcmux bench --payload`, the h2load body
VERBS = [
    ("echo", "musicentry", "jsonrpc_echo_req.json"),
    ("echoMusicEntry", "musicentry-typed", "jsonrpc_echo_typed_req.json"),
]
COUNTERS = ["allocations", "reallocations", "deallocations", "bytes"]

SAMPLE = re.compile(r"^(rpcmux_[a-z_]+?)(?:_total)?(\{[^}]*\})? ([0-9.e+]+)$")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout.strip()


def git_state():
    """HEAD's short hash, and the files the work tree changes (what a build of it adds)."""
    try:
        head = sh("git", "-C", ROOT, "rev-parse", "--short", "HEAD")
        dirty = sh("git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown", []
    return head, [line[3:] for line in dirty.splitlines()]


def build():
    head, dirty = git_state()
    log(f"building the work tree at {head} with --features count-allocs into target/allocs ...")
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "target", "allocs"))
    subprocess.run(
        ["cargo", "build", "--release", "--features", "count-allocs", "--bin", "rpcmux"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    if dirty:
        log(f"note: the work tree had uncommitted changes: {', '.join(dirty)}")
        head += "+changes"
    return head, os.path.join(ROOT, "target", "allocs", "release", "rpcmux")


def build_rev(label, rev):
    """A commit's tree (`git archive`, so uncommitted work in the tree is left out), built
    with --features count-allocs; a commit from before the feature gets it patched in."""
    sha = sh("git", "-C", ROOT, "rev-parse", "--short", f"{rev}^{{commit}}")
    # A target directory of their own: cargo knows a source file by its path inside the
    # package, so a commit's export would pass for the work tree's sources (or the other
    # way round) wherever their files are the older, and be kept.
    allocs = os.path.join(ROOT, "target", "allocs-rev")
    binary = os.path.join(allocs, f"rpcmux-{sha}")
    if os.path.exists(binary):
        return label or sha, binary
    # Outside the target directory: cargo records the sources under its target directory
    # by their path from it, so an export in there would pass for the previous one and
    # not be rebuilt. Every file gets the time of extraction (tar -m), not the commit's:
    # the sources of an older commit would otherwise look older than the previous
    # export's build, and cargo would keep that.
    src = os.path.join(ROOT, "target", "allocs-src", sha)
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    archive = subprocess.Popen(["git", "-C", ROOT, "archive", sha], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-m", "-C", src], stdin=archive.stdout, check=True)
    if archive.wait():
        sys.exit(f"git archive {sha} failed")
    with open(os.path.join(src, "Cargo.toml")) as f:
        has_feature = "count-allocs" in f.read()
    if not has_feature:
        added = sh("git", "-C", ROOT, "log", "--diff-filter=A", "--format=%h", "--",
                   "src/observe/alloc_count.rs").split()
        if not added:
            sys.exit(f"{sha} has no count-allocs feature and no commit adds it")
        log(f"{sha} predates count-allocs: applying {added[-1]} to it")
        patch = sh("git", "-C", ROOT, "show", "--format=", added[-1])
        # As plain `patch`: src is inside this repository's work tree (target/), where
        # `git apply` would take the paths as the repository's.
        env = dict(os.environ, GIT_CEILING_DIRECTORIES=os.path.dirname(src))
        subprocess.run(["git", "apply"], input=patch + "\n", text=True, cwd=src, env=env, check=True)
    log(f"building {sha} (git archive in {src}) with --features count-allocs ...")
    env = dict(os.environ, CARGO_TARGET_DIR=allocs)
    subprocess.run(
        ["cargo", "build", "--release", "--features", "count-allocs", "--bin", "rpcmux"],
        cwd=src,
        env=env,
        check=True,
    )
    shutil.copy(os.path.join(allocs, "release", "rpcmux"), binary)
    return label or sha, binary


def scrape(addr):
    """Every counter and gauge of /metrics, by name and labels."""
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def snapshot(addr):
    """The allocator's counters and the calls handled so far (by label set)."""
    s = scrape(addr)
    if ("rpcmux_alloc_allocations", "") not in s:
        sys.exit("the server's /metrics has no rpcmux_alloc_*: build it with --features count-allocs")
    alloc = {c: s[(f"rpcmux_alloc_{c}", "")] for c in COUNTERS}
    calls = {labels: v for (name, labels), v in s.items() if name == "rpcmux_calls_handled"}
    return alloc, calls


def delta(a, b):
    alloc = {c: b[0][c] - a[0][c] for c in COUNTERS}
    calls = {k: v - a[1].get(k, 0) for k, v in b[1].items() if v != a[1].get(k, 0)}
    return alloc, calls


class Server:
    def __init__(self, binary, threads):
        self.out = tempfile.NamedTemporaryFile(prefix="rpcmux-allocs-", suffix=".log")
        self.proc = subprocess.Popen(
            [binary, "serve", "--threads", str(threads), "--listen", "127.0.0.1:0"],
            stdout=self.out,
            stderr=subprocess.STDOUT,
        )
        self.addr = None
        deadline = time.time() + 20
        while not self.addr and time.time() < deadline and self.proc.poll() is None:
            time.sleep(0.1)
            with open(self.out.name) as f:
                m = re.search(r"listening on (\S+)", f.read())
            self.addr = m and m.group(1)
        if not self.addr:
            self.stop()
            sys.exit(f"{binary} serve did not say where it listens")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()


def load(client, addr, path, verb, seconds, args):
    """One run of the load on path; returns what the load generator saw (for errors)."""
    _, payload, body = next(v for v in VERBS if v[0] == verb)
    if path == "jsonrpc-h2":
        # h2load counts requests, not seconds.
        n = args.h2_calls if seconds == args.duration else max(1000, args.h2_calls // 4)
        out = sh(
            "h2load", "-n", str(n), "-c", "4", "-m", "32",
            "-d", os.path.join(DATA, body), "-H", "content-type: application/json",
            f"http://{addr}/",
        )
        m = re.search(r"status codes: (\d+) 2xx", out)
        ok = int(m.group(1)) if m else 0
        return {"calls": ok, "errors": n - ok}
    conns = args.http_connections if path in HTTP else args.connections
    pipeline = 1 if path in HTTP else args.pipeline
    out = sh(
        client, "bench", "--proto", path, "--payload", payload,
        "-c", str(conns), "-p", str(pipeline), "-d", str(seconds), "--warmup", "0",
        "--threads", "1", "--json", "-q", addr,
    )
    return json.loads(out)


def measure(binary, client, paths, args):
    """{(path, verb): per-call figures} for one server build."""
    srv = Server(binary, args.threads)
    try:
        addr = srv.addr
        # What the two scrapes around a run cost by themselves: the median of a few.
        base = []
        for _ in range(5):
            a = snapshot(addr)
            b = snapshot(addr)
            base.append(delta(a, b)[0])
        scrape_cost = {c: sorted(x[c] for x in base)[len(base) // 2] for c in COUNTERS}
        a = snapshot(addr)
        time.sleep(args.duration)
        idle = delta(a, snapshot(addr))[0]["allocations"] - scrape_cost["allocations"]
        log(
            f"  server {addr}: two scrapes cost {scrape_cost['allocations']:.0f} allocations; "
            f"idle, it made {idle:.0f} in {args.duration:g} s"
        )
        res = {}
        for path in paths:
            for verb, _, _ in VERBS:
                load(client, addr, path, verb, args.warmup, args)
                a = snapshot(addr)
                seen = load(client, addr, path, verb, args.duration, args)
                b = snapshot(addr)
                alloc, calls = delta(a, b)
                n = sum(calls.values())
                bad = {k: v for k, v in calls.items() if 'code="ok"' not in k or f'method="{verb}"' not in k}
                if seen.get("errors") or bad or n <= 0:
                    sys.exit(f"{path} {verb}: errors ({seen.get('errors')}) or other calls: {bad}")
                per = {c: (alloc[c] - scrape_cost[c]) / n for c in COUNTERS}
                per["calls"] = n
                res[(path, verb)] = per
                log(
                    f"  {path:12} {verb:15} {int(n):8} calls  "
                    f"{per['allocations']:7.1f} allocs  {per['reallocations']:6.1f} reallocs  "
                    f"{per['bytes']:9.0f} bytes per call  (frees {per['deallocations']:.1f})"
                )
        return res
    finally:
        srv.stop()


def table(runs, paths):
    """A markdown table: allocations, reallocations and bytes per call per build."""
    labels = [label for label, _ in runs]
    head = ["path", "verb"]
    for what in ("allocations", "reallocations", "bytes allocated"):
        head += [f"{what} per call" + (f" ({label})" if len(runs) > 1 else "") for label in labels]
        if len(runs) > 1:
            head.append(f"{what}: {labels[-1]} / {labels[0]}")
    rows = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 2)]
    names = dict(PATHS)
    for path in paths:
        for verb, _, _ in VERBS:
            cells = [names[path], f"`{verb}`"]
            for key, fmt in (("allocations", "{:.1f}"), ("reallocations", "{:.1f}"), ("bytes", "{:,.0f}")):
                vals = [res[(path, verb)][key] for _, res in runs]
                cells += [fmt.format(v) for v in vals]
                if len(runs) > 1:
                    # A ratio of near-nothings (a stray reallocation per thousand calls) says nothing.
                    cells.append(f"{vals[-1] / vals[0]:.2f}x" if vals[0] >= 0.5 else "-")
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", dest="builds", action="append", default=[], metavar="[LABEL=]PATH",
                   type=lambda s: ("bin", s),
                   help="an rpcmux built with --features count-allocs (repeatable, to compare builds)")
    p.add_argument("--rev", dest="builds", action="append", metavar="[LABEL=]REV",
                   type=lambda s: ("rev", s),
                   help="a commit, exported with git archive and built into target/allocs (repeatable; "
                   "mixes with --bin, columns in the order given)")
    p.add_argument("--client", help="the rpcmux whose `bench` makes the load (default: the first --bin)")
    p.add_argument("--paths", default=",".join(n for n, _ in PATHS),
                   help="comma-separated, of: " + ", ".join(n for n, _ in PATHS))
    p.add_argument("--duration", type=float, default=2.0, help="seconds of measured load per path and verb")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds of unmeasured load first")
    p.add_argument("--connections", type=int, default=16, help="stream paths' connections")
    p.add_argument("--pipeline", type=int, default=8, help="stream paths' calls in flight per connection")
    p.add_argument("--http-connections", type=int, default=16, help="HTTP/1.1 paths' connections")
    p.add_argument("--h2-calls", type=int, default=40000, help="HTTP/2 calls per measured run (4 connections x 32 streams)")
    p.add_argument("--threads", type=int, default=1, help="the server's worker threads")
    args = p.parse_args()

    paths = [x for x in args.paths.split(",") if x]
    unknown = set(paths) - {n for n, _ in PATHS}
    if unknown:
        sys.exit(f"unknown paths: {', '.join(sorted(unknown))}")
    if "jsonrpc-h2" in paths and not shutil.which("h2load"):
        log("h2load not found (apt-get install nghttp2-client): skipping jsonrpc-h2")
        paths.remove("jsonrpc-h2")

    bins = []
    for kind, b in args.builds:
        label, _, what = b.rpartition("=")
        if kind == "rev":
            bins.append(build_rev(label, what))
        else:
            bins.append((label or what, os.path.abspath(what)))
    if not bins:
        bins.append(build())
    client = args.client or bins[0][1]

    runs = []
    for label, binary in bins:
        log(f"measuring {label} ({binary})")
        runs.append((label, measure(binary, client, paths, args)))

    head, _ = git_state()
    print(table(runs, paths))
    print()
    print(
        f"Allocations per call counted in the server (`benches/allocs.py`, {args.duration:g} s per row "
        f"after {args.warmup:g} s of warm-up; stream paths {args.connections} connections x "
        f"{args.pipeline} in flight, HTTP/1.1 {args.http_connections} connections, HTTP/2 4 x 32 "
        f"streams; server --threads {args.threads}); builds: "
        + ", ".join(f"{label} = {binary}" for label, binary in bins)
        + f"; HEAD was {head}."
    )


if __name__ == "__main__":
    main()
