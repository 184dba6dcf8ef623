"""Turn benches/compare.sh's raw runs into docs/benchmarks.md (tables) and docs/benchmarks.png.

Usage: python3 benches/report.py BENCH_OUT_DIR DOCS_DIR

Reads BENCH_OUT_DIR/results.csv (one row per run) and machine.txt. Every figure in the
doc is a median over the runs; ratios are ratios of medians from the same run of
compare.sh. A hand-written part of an existing docs/benchmarks.md, between the
`<!-- notes -->` and `<!-- /notes -->` markers, is kept as it is.
"""
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

SCENARIOS = {
    "xmlrpc-echo": ("XML-RPC over HTTP", "echo(MusicEntry)", "wrk, 64 connections"),
    "jsonrpc-http-echo": ("JSON-RPC over HTTP", "echo(MusicEntry)", "wrk, 64 connections"),
    "jsonrpc-http-ping-newconn": (
        "JSON-RPC over HTTP, new connection per call",
        "ping",
        "wrk, 16 connections, `Connection: close`",
    ),
    "msgpack-echo": ("msgpack-rpc over TCP", "echo(MusicEntry)", "rpcmux bench, 16 connections x 8 in flight"),
    "jsonrpc-tcp-echo": ("JSON-RPC over TCP", "echo(MusicEntry)", "rpcmux bench, 16 connections x 8 in flight"),
    "stomp-echo": ("JSON-RPC over STOMP", "echo(MusicEntry)", "rpcmux bench, 16 connections x 8 in flight"),
    "stomp-echo-1conn": ("JSON-RPC over STOMP, one connection", "echo(MusicEntry)", "rpcmux bench, 1 connection x 1 in flight"),
    "jsonrpc-ws-echo": ("JSON-RPC over WebSocket", "echo(MusicEntry)", "rpcmux bench, 16 connections x 8 in flight"),
    "gateway-python": (
        "Gateway: JSON-RPC through rpcmux to Python's XML-RPC server, or XML-RPC straight to it",
        "echo(MusicEntry)",
        "wrk, 64 connections",
    ),
    "gateway-python-1conn": (
        "Gateway, one connection: JSON-RPC through rpcmux to Python's XML-RPC server, or XML-RPC straight to it",
        "echo(MusicEntry)",
        "wrk, 1 connection",
    ),
    "gateway-rust": (
        "Gateway: JSON-RPC over TCP through rpcmux to jsonrpsee's HTTP server",
        "echo(MusicEntry)",
        "rpcmux bench, 16 connections x 8 in flight",
    ),
    "xmlrpc-echo-machine": (
        "XML-RPC over HTTP, whole machine",
        "echo(MusicEntry)",
        "wrk with a thread per core, 64 connections, nothing pinned",
    ),
}

TARGETS = {
    "rpcmux-all": "rpcmux (all protocols sniffed)",
    "rpcmux-http": "rpcmux `--protocol http`",
    "rpcmux-jsonrpc-tcp": "rpcmux `--protocol jsonrpc-tcp`",
    "rpcmux-msgpack": "rpcmux `--protocol msgpack`",
    "rpcmux-typed": "rpcmux, typed verb `echoMusicEntry` (all protocols sniffed)",
    "rpcmux-nometrics": "rpcmux `--no-metrics` (all protocols sniffed)",
    "rpcmux-gateway": "rpcmux gateway, upstream Python SimpleXMLRPCServer",
    "rpcmux-gateway-rust": "rpcmux gateway, upstream jsonrpsee",
    "python-xmlrpc": "Python SimpleXMLRPCServer (threading, HTTP/1.1)",
    "jsonrpsee": "jsonrpsee 0.26 HTTP server",
    "jsonrpsee-ws": "jsonrpsee 0.26 WebSocket server",
    "msgpack-rpc-python": "msgpack-rpc-python 0.4.1 (tornado)",
    "hyper-ok": "ceiling: bare hyper \"ok\"",
    "tcp-echo": "ceiling: bare tokio TCP echo",
    "rpcmux-machine": "rpcmux, whole machine (a runtime thread per core)",
    "python-xmlrpc-machine": "Python SimpleXMLRPCServer, whole machine",
}

# (scenario, peer, ceiling, single-protocol rpcmux[, rpcmux target]) for the summary table.
SUMMARY = [
    ("xmlrpc-echo", "python-xmlrpc", "hyper-ok", "rpcmux-http"),
    ("xmlrpc-echo-machine", "python-xmlrpc-machine", None, None, "rpcmux-machine"),
    ("jsonrpc-http-echo", "jsonrpsee", "hyper-ok", "rpcmux-http"),
    ("jsonrpc-http-ping-newconn", None, None, "rpcmux-http"),
    ("msgpack-echo", "msgpack-rpc-python", "tcp-echo", "rpcmux-msgpack"),
    ("jsonrpc-tcp-echo", None, "tcp-echo", "rpcmux-jsonrpc-tcp"),
    ("stomp-echo", None, "tcp-echo", None),
    ("stomp-echo-1conn", None, None, None),
    ("jsonrpc-ws-echo", "jsonrpsee-ws", None, None),
]


def load(out):
    runs = defaultdict(list)
    with open(out / "results.csv") as f:
        for row in csv.DictReader(f):
            runs[(row["scenario"], row["target"])].append(row)
    machine = {}
    for line in (out / "machine.txt").read_text().splitlines():
        k, _, v = line.partition("=")
        machine[k] = v
    return runs, machine


def med(rows, key):
    vals = [float(r[key]) for r in rows if r[key] not in ("", None)]
    return statistics.median(vals) if vals else float("nan")


def fmt_rate(x):
    return f"{x:,.0f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a == a and b == b and b else "n/a"


def summary_table(runs):
    lines = [
        "| workload | rpcmux calls/s | peer | peer calls/s | **rpcmux / peer** | ceiling calls/s | **rpcmux / ceiling** | one protocol only | sniffing cost |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for scen, peer, ceil, single, *target in SUMMARY:
        ours = runs.get((scen, target[0] if target else "rpcmux-all"))
        if not ours:
            continue
        o = med(ours, "calls_per_sec")
        name, call, load = SCENARIOS[scen]
        cells = [f"{name}, {call} ({load})", fmt_rate(o)]
        if peer and runs.get((scen, peer)):
            p = med(runs[(scen, peer)], "calls_per_sec")
            cells += [TARGETS[peer], fmt_rate(p), f"**{ratio(o, p)}**"]
        else:
            cells += ["-", "-", "-"]
        if ceil and runs.get((scen, ceil)):
            c = med(runs[(scen, ceil)], "calls_per_sec")
            cells += [fmt_rate(c), f"**{ratio(o, c)}**"]
        else:
            cells += ["-", "-"]
        if single and runs.get((scen, single)):
            s = med(runs[(scen, single)], "calls_per_sec")
            cells += [fmt_rate(s), f"{(1 - o / s) * 100:+.1f} %"]
        else:
            cells += ["-", "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_cpu(rows):
    """Median over runs of calls per server CPU-second (nan when not measured)."""
    vals = [float(r["calls_per_sec"]) / float(r["server_cpu"]) for r in rows if float(r["server_cpu"] or 0) > 0]
    return statistics.median(vals) if vals else float("nan")


# (scenario, ceiling) for the typed-vs-dynamic table.
TYPED = [
    ("msgpack-echo", "tcp-echo"),
    ("jsonrpc-tcp-echo", "tcp-echo"),
    ("jsonrpc-http-echo", "hyper-ok"),
    ("xmlrpc-echo", "hyper-ok"),
]


def typed_table(runs):
    lines = [
        "| workload | dynamic `echo` calls per server CPU-s | typed `echoMusicEntry` calls per server CPU-s | **typed / dynamic** | ceiling calls per server CPU-s | **typed / ceiling** | dynamic / ceiling |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for scen, ceil in TYPED:
        dyn, typ, c = (runs.get((scen, t)) for t in ("rpcmux-all", "rpcmux-typed", ceil))
        if not (dyn and typ):
            continue
        d, t = per_cpu(dyn), per_cpu(typ)
        c = per_cpu(c) if c else float("nan")
        name, _, load = SCENARIOS[scen]
        lines.append(
            f"| {name} ({load}) | {fmt_rate(d)} | {fmt_rate(t)} | **{ratio(t, d)}** | "
            f"{fmt_rate(c)} | **{ratio(t, c)}** | {ratio(d, c)} |"
        )
    return "\n".join(lines)


def metrics_table(runs):
    lines = [
        "| workload | metrics on: calls per server CPU-s | `--no-metrics`: calls per server CPU-s | **cost of metrics** |",
        "|---|---:|---:|---:|",
    ]
    for scen in ("xmlrpc-echo", "msgpack-echo"):
        on, off = runs.get((scen, "rpcmux-all")), runs.get((scen, "rpcmux-nometrics"))
        if not (on and off):
            continue
        a, b = per_cpu(on), per_cpu(off)
        name, call, load = SCENARIOS[scen]
        lines.append(f"| {name}, {call} ({load}) | {fmt_rate(a)} | {fmt_rate(b)} | **{(1 - a / b) * 100:+.1f} %** |")
    return "\n".join(lines)


def auth_table(out):
    """benches/auth_ab.sh's medians (its own interleaved runs, written to auth_ab.csv)."""
    path = out / "auth_ab.csv"
    if not path.exists():
        return "(not measured in this run: `benches/auth_ab.sh`)"
    lines = [
        "| path | without `--auth`: calls per server CPU-s | with `--auth`: calls per server CPU-s | **server CPU per call** |",
        "|---|---:|---:|---:|",
    ]
    with open(path) as f:
        for r in csv.DictReader(f):
            plain, auth = float(r["plain_per_cpu_s"]), float(r["auth_per_cpu_s"])
            lines.append(
                f"| {r['workload']}, {r['payload']} | {fmt_rate(plain)} | {fmt_rate(auth)} | **{(plain / auth - 1) * 100:+.1f} %** |"
            )
    return "\n".join(lines)


def gateway_table(runs):
    direct, via = runs.get(("gateway-python", "python-xmlrpc")), runs.get(("gateway-python", "rpcmux-gateway"))
    if not (direct and via):
        return "(not measured)"
    d, v = med(direct, "calls_per_sec"), med(via, "calls_per_sec")
    dp, vp = med(direct, "p50_ms"), med(via, "p50_ms")
    lines = [
        "| path | calls/s | p50 ms | p99 ms |",
        "|---|---:|---:|---:|",
        f"| XML-RPC straight to Python's server | {fmt_rate(d)} | {dp:.2f} | {med(direct, 'p99_ms'):.2f} |",
        f"| JSON-RPC to rpcmux, XML-RPC on to Python's server | {fmt_rate(v)} | {vp:.2f} | {med(via, 'p99_ms'):.2f} |",
        f"| **gateway / direct** | **{ratio(v, d)}** | **{vp - dp:+.2f} ms** | |",
    ]
    d1, v1 = runs.get(("gateway-python-1conn", "python-xmlrpc")), runs.get(("gateway-python-1conn", "rpcmux-gateway"))
    if d1 and v1:
        a, b = med(d1, "p50_ms"), med(v1, "p50_ms")
        lines.append(
            f"| one connection, one call at a time: straight / through rpcmux | {fmt_rate(med(d1, 'calls_per_sec'))} / {fmt_rate(med(v1, 'calls_per_sec'))} | {a:.2f} / {b:.2f} (**{b - a:+.2f} ms**) | |"
        )
    rust = runs.get(("gateway-rust", "rpcmux-gateway-rust"))
    if rust:
        lines.append(
            f"| rpcmux in front of jsonrpsee (16 x 8, the gateway's own ceiling) | {fmt_rate(med(rust, 'calls_per_sec'))} | {med(rust, 'p50_ms'):.2f} | {med(rust, 'p99_ms'):.2f} |"
        )
    return "\n".join(lines)


def detail_table(runs):
    lines = [
        "| workload | server | calls/s (median) | min - max over runs | p50 ms | p99 ms | errors (all runs) | server CPU | load generator CPU | other CPU (max) | calls per server CPU-second |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scen in SCENARIOS:
        for tgt in TARGETS:
            rows = runs.get((scen, tgt))
            if not rows:
                continue
            rates = [float(r["calls_per_sec"]) for r in rows]
            errors = sum(int(float(r["errors"] or 0)) for r in rows)
            cpu = med(rows, "server_cpu")
            per_cpu = statistics.median(
                float(r["calls_per_sec"]) / float(r["server_cpu"]) for r in rows if float(r["server_cpu"] or 0) > 0
            ) if any(float(r["server_cpu"] or 0) > 0 for r in rows) else float("nan")
            lines.append(
                f"| {scen} | {TARGETS[tgt]} | {fmt_rate(statistics.median(rates))} | "
                f"{fmt_rate(min(rates))} - {fmt_rate(max(rates))} | {med(rows, 'p50_ms'):.2f} | "
                f"{med(rows, 'p99_ms'):.2f} | {errors} | {cpu:.2f} | {med(rows, 'load_cpu'):.2f} | "
                f"{max(float(r['other_cpu']) for r in rows):.2f} | {fmt_rate(per_cpu)} |"
            )
    return "\n".join(lines)


def plot(runs, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib not available; no plot written", file=sys.stderr)
        return False
    labels, values, colors = [], [], []
    palette = {"rpcmux": "#1f77b4", "peer": "#ff7f0e", "ceiling": "#7f7f7f"}
    for scen in SCENARIOS:
        group = [(t, runs[(scen, t)]) for t in TARGETS if (scen, t) in runs]
        if not group:
            continue
        for tgt, rows in group:
            kind = "rpcmux" if tgt.startswith("rpcmux") else ("ceiling" if tgt in ("hyper-ok", "tcp-echo") else "peer")
            labels.append(f"{scen}: {TARGETS[tgt].replace('`', '')}")
            values.append(med(rows, "calls_per_sec"))
            colors.append(palette[kind])
        labels.append("")
        values.append(0)
        colors.append("white")
    labels, values, colors = labels[:-1], values[:-1], colors[:-1]
    fig, ax = plt.subplots(figsize=(11, 0.32 * len(labels) + 1.5))
    y = list(range(len(labels)))[::-1]
    ax.barh(y, [v if v > 0 else float("nan") for v in values], color=colors)
    ticks = [(yy, lab) for yy, lab in zip(y, labels) if lab]
    ax.set_yticks([t for t, _ in ticks])
    ax.set_yticklabels([lab for _, lab in ticks], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("calls per second (median of runs, log scale)")
    for yy, v in zip(y, values):
        if v > 0:
            ax.text(v, yy, f" {v:,.0f}", va="center", fontsize=7)
    from matplotlib.patches import Patch

    ax.legend(
        handles=[Patch(color=c, label=k) for k, c in palette.items()],
        loc="lower right",
        fontsize=8,
    )
    ax.set_title("rpcmux vs peers and ceilings, one run of benches/compare.sh")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    out, docs = Path(sys.argv[1]), Path(sys.argv[2])
    runs, m = load(out)
    doc = docs / "benchmarks.md"
    notes = "<!-- notes -->\n<!-- /notes -->"
    if doc.exists():
        text = doc.read_text()
        a, b = text.find("<!-- notes -->"), text.find("<!-- /notes -->")
        if a >= 0 and b > a:
            notes = text[a : b + len("<!-- /notes -->")]
    plotted = plot(runs, docs / "benchmarks.png")
    body = f"""# Benchmarks

Measured by `benches/compare.sh` in one run on one machine: rpcmux against the servers a
user would pick instead, and against bare servers that do no RPC work at all (the
ceilings). Every figure is the **median of {m['runs']} runs** of {m['duration_s']} s; every
ratio divides two medians from the same run. Compare figures only within this page:
another machine, or another run, moves them.

**Machine:** {m['nproc']} cores, {m['cpu']}, Linux {m['kernel']}; {m['rustc']}, {m['python']},
{m['wrk'].split(' Copyright')[0].replace('debian/', '')}. Built from the work tree at commit {m['commit']}, {m['date']}. Load average (1, 5, 15 min) before the
runs: {m.get('loadavg_before', '?')}; after: {m.get('loadavg_after', '?')}.

## Summary

{summary_table(runs)}

- *rpcmux / peer*: how many times the peer's throughput rpcmux reaches on the same load.
- *rpcmux / ceiling*: the share of a bare server's throughput (no parsing, no dispatch:
  hyper answering "ok" after reading the body, or a TCP echo of the same request bytes)
  that rpcmux keeps.
- *sniffing cost*: the listener that detects every protocol against one started with
  `--protocol <only that one>`, under the same load in the same run (negative: the
  sniffing listener was faster, i.e. within noise).

{"![calls per second per workload and server](benchmarks.png)" if plotted else ""}

## Typed verbs against the dynamic path

The same MusicEntry request to the dynamic `echo` (parameters read into a `Value`
tree, the tree written back) and to the typed `echoMusicEntry` (parameters
deserialized into a Rust struct straight from the wire for every protocol; the struct
serialized straight into the reply), on the same server in the same run.
Calls per server CPU-second, so a load generator at its limit does not hide the cost.

{typed_table(runs)}

## The gateway

rpcmux in front of an existing server ([gateway.md](gateway.md)): the Python XML-RPC
peer called through rpcmux (JSON-RPC over HTTP in, XML-RPC out; rpcmux pinned beside the
load generator, the peer alone on the server core as in the direct rows, 64 upstream
connections) against XML-RPC straight to it, same load, same run; and at one connection,
the latency the gateway adds. Its *other CPU* in the detail table is the peer's, not a
disturbance. `benches/gateway_ab.sh` measures the same more closely (interleaved rounds).

{gateway_table(runs)}

## What metrics cost

The same server build with metrics on (the default: counters, the duration histogram and
byte counts per call) and with `--no-metrics`, same load, same run; positive: metrics on
was slower.

{metrics_table(runs)}

## What authentication costs

`benches/auth_ab.sh`: the same release build without `--auth` and with it (anonymous
callers may call nothing; the calls made by a user with a password or with a JWT, HS256 or
ES256), pinned to the same server core, loaded in turn by `rpcmux bench` (interleaved
rounds of 3 s; the median of each); connections open and log in inside each run, a
password's argon2 paid before it (the server remembers a verified password for 60 s).
Positive: authenticated calls cost more server CPU. The target (issue 30): at most +5 %
on every path.

{auth_table(out)}

How to read it (noise, profile): [the notes below](#what-authentication-costs-how-the-table-above-was-read).

## Every server, every workload

{detail_table(runs)}

*Server CPU* is the share of its one core the server process used during the run (user +
system time of all its threads, from `/proc`; in cores, up to {m['nproc']}, for the
whole-machine workload); *load generator CPU* the same for wrk or
`rpcmux bench`. Near 1.00 the server was the limit; with the server well below it and the
generator near 1.00, the generator was, and *calls per server CPU-second* (calls/s divided
by the server's share) is the fairer per-core comparison. *Other CPU* is what anything else
on the machine used during the run (other processes, the hypervisor's steal): a run with
more than {m.get('max_other', '?')} cores of it was measured again (twice at most), and the column
shows the worst run kept.

## How it was measured

- **Pinning.** Two cores: every server runs on core {m['server_cpu']} (`taskset`) with one
  runtime thread (`rpcmux serve --threads 1`; `TOKIO_WORKER_THREADS=1` for jsonrpsee and
  the ceilings; the Python servers are one process under the GIL anyway). The load generator
  runs on core {m['load_cpu']} with one thread (`wrk -t1`, `rpcmux bench --threads 1`). So
  each server gets one full core that the load generator never takes, and the comparison is
  per core. The one exception, *XML-RPC over HTTP, whole machine*, pins nothing: rpcmux
  runs a runtime thread per core, wrk one per core, and all share the machine, as a user's
  service would on this box (Python's server is one process under the GIL either way).
- **Load.** HTTP: `wrk` (the cheapest HTTP load generator per request), POSTing the same
  body every time (`benches/data/*`, the MusicEntry struct of `shared/reference/payload.py`),
  after a 1 s unmeasured warm-up run; before measuring, a short `wrk_check.lua` run per
  target reads every reply and stops the script on any fault or error, since wrk counts
  those as successes. Streams (msgpack-rpc, JSON-RPC over TCP, STOMP): `rpcmux bench`,
  one loop per connection keeping 8 calls in flight. It encodes one call once, copies it
  per call with that call's id written in place (ids have a fixed width, so the bytes of
  every call are the same length), decodes every answer into a value with the protocol's
  decoder, matches it to its call by id and checks it (an error reply or a result that is
  not the MusicEntry counts as an error). Against rpcmux the answer is the reply; against
  the TCP echo ceiling (`--echo-server`) it is the request itself, read as a server reads a
  request. The loop and the work per call are the same for both, so the difference between
  them is the servers'.
- **Runs.** {m['runs']} runs of every target, interleaved (run 1 of each, then run 2, ...),
  so slow drift on the machine spreads over all targets alike. Release builds
  (`cargo build --release`: thin LTO).
- **Limits of this.** The load generator has one core. Where it, not the server, is the
  limit (load generator CPU near 1.00, server CPU below: the stream workloads), the
  calls/s of rpcmux and of the ceiling both say more about the generator than about the
  servers, and *calls per server CPU-second* is the servers' own comparison. wrk costs
  far less per request than any HTTP server measured, so the HTTP figures are the servers'.

{notes}

Reproduce: `apt-get install wrk`, `scripts/setup-test-env` (for msgpack-rpc-python), then
`benches/compare.sh` (about 10 minutes; `--runs`, `--duration` to change). Raw runs land in
`bench-out/results.csv`, each tool's output in `bench-out/logs/`.
"""
    doc.write_text(body)
    print(f"wrote {doc}" + (" and benchmarks.png" if plotted else ""))


if __name__ == "__main__":
    main()
