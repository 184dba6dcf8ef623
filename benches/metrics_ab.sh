#!/usr/bin/env bash
# What metrics cost, measured closely: two release servers side by side, metrics on and
# `--no-metrics`, each pinned to the server core, loaded in turn (6 rounds of 3 s each,
# interleaved, so drift and neighbours hit both alike), msgpack-rpc echo(MusicEntry) at
# 16 x 8 with `rpcmux bench` and XML-RPC echo(MusicEntry) at 64 connections with wrk.
# Prints calls per server CPU-second per round and the medians. benches/compare.sh has the
# same comparison with its other workloads; on a shared 2-core VM its 3 runs spread by
# about 10 %, which is why this exists.
#
# Usage: benches/metrics_ab.sh   (after `cargo build --release`)
set -euo pipefail
# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${CARGO_TARGET_DIR:-$root/target}/release/rpcmux
hz=$(getconf CLK_TCK)
tmp=$(mktemp -d)
TOKIO_WORKER_THREADS=1 taskset -c 1 "$B" serve --threads 1 --listen 127.0.0.1:0 >"$tmp/on.log" 2>&1 &
on_pid=$!
TOKIO_WORKER_THREADS=1 taskset -c 1 "$B" serve --threads 1 --listen 127.0.0.1:0 --no-metrics >"$tmp/off.log" 2>&1 &
off_pid=$!
trap 'kill $on_pid $off_pid 2>/dev/null; rm -rf "$tmp"' EXIT
sleep 1
on_addr=$(sed -n 's/^listening on //p' "$tmp/on.log" | head -1)
off_addr=$(sed -n 's/^listening on //p' "$tmp/off.log" | head -1)

# one PID ADDR KIND: calls per server CPU-second of one 3 s run.
one() {
    local s0 s1 r
    s0=$(awk '{print $14 + $15}' "/proc/$1/stat")
    if [[ $3 == msgpack ]]; then
        r=$(taskset -c 0 "$B" bench --threads 1 -q --csv --proto msgpack --connections 16 --pipeline 8 \
            --duration 3 --warmup 0 --payload musicentry "$2" | tail -1 | awk -F, '{print $8}')
    else
        r=$(taskset -c 0 wrk -t1 -c64 -d3s -s "$root/benches/wrk_post.lua" "http://$2/RPC2" -- \
            "$root/benches/data/xmlrpc_echo_req.xml" text/xml | awk '/Requests\/sec/ {print $2}')
    fi
    s1=$(awk '{print $14 + $15}' "/proc/$1/stat")
    awk -v r="$r" -v t=$((s1 - s0)) -v hz="$hz" 'BEGIN { printf "%d\n", r / (t / hz / 3) }'
}

for kind in msgpack xml; do
    on=() off=()
    for _ in 1 2 3 4 5 6; do
        on+=("$(one $on_pid "$on_addr" $kind)")
        off+=("$(one $off_pid "$off_addr" $kind)")
    done
    mo=$(printf '%s\n' "${on[@]}" | median)
    mf=$(printf '%s\n' "${off[@]}" | median)
    printf '%s: metrics on %s | off %s | medians %s vs %s: cost %.1f %%\n' "$kind" "${on[*]}" "${off[*]}" \
        "$mo" "$mf" "$(awk -v a="$mo" -v b="$mf" 'BEGIN {print (1 - a / b) * 100}')"
done
