#!/usr/bin/env bash
# Two builds of rpcmux side by side, A and B (a change and what it changes), measured
# closely: both release servers pinned to the server core, loaded in turn (ROUNDS rounds
# of 3 s each, interleaved, so drift and neighbours hit both alike) with `rpcmux bench`
# at 16 connections x 8 in flight, echo(MusicEntry), over the stream protocols a change
# to the stream driver touches: msgpack-rpc, raw-TCP JSON-RPC, STOMP and JSON-RPC over
# WebSocket (PROTOS="xmlrpc jsonrpc" for the HTTP paths, keep-alive). Prints calls per
# server CPU-second per round, the medians and B's change.
# PAYLOAD=musicentry-typed measures the typed twin, echoMusicEntry, instead.
# On this shared 2-core VM single runs spread by 10-20 %: compare medians.
#
# Usage: benches/ab.sh A_BINARY B_BINARY [ROUNDS]   (e.g. a copy of an older
#        target/release/rpcmux, and the current one)
set -euo pipefail
# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
A=$1 B=$2 rounds=${3:-6}
hz=$(getconf CLK_TCK)
tmp=$(mktemp -d)
TOKIO_WORKER_THREADS=1 taskset -c 1 "$A" serve --threads 1 --listen 127.0.0.1:0 >"$tmp/a.log" 2>&1 &
a_pid=$!
TOKIO_WORKER_THREADS=1 taskset -c 1 "$B" serve --threads 1 --listen 127.0.0.1:0 >"$tmp/b.log" 2>&1 &
b_pid=$!
trap 'kill $a_pid $b_pid 2>/dev/null; rm -rf "$tmp"' EXIT
sleep 1
a_addr=$(sed -n 's/^listening on //p' "$tmp/a.log" | head -1)
b_addr=$(sed -n 's/^listening on //p' "$tmp/b.log" | head -1)

# one PID ADDR PROTO: calls per server CPU-second of one 3 s run (B's generator for both).
one() {
    local s0 s1 r addr=$2 shape=(--connections 16 --pipeline 8)
    [[ $3 == jsonrpc-ws ]] && addr="ws://$2/"
    # HTTP/1.1 carries one call at a time per connection: 64 keep-alive connections.
    [[ $3 == jsonrpc || $3 == xmlrpc ]] && shape=(--connections 64 --pipeline 1)
    s0=$(awk '{print $14 + $15}' "/proc/$1/stat")
    r=$(taskset -c 0 "$B" bench --threads 1 -q --csv --proto "$3" "${shape[@]}" \
        --duration 3 --warmup 0 --payload "${PAYLOAD:-musicentry}" "$addr" | tail -1 | awk -F, '{print $8}')
    s1=$(awk '{print $14 + $15}' "/proc/$1/stat")
    awk -v r="$r" -v t=$((s1 - s0)) -v hz="$hz" 'BEGIN { printf "%d\n", r / (t / hz / 3) }'
}

for proto in ${PROTOS:-msgpack jsonrpc-tcp stomp jsonrpc-ws}; do
    a=() b=()
    for ((i = 0; i < rounds; i++)); do
        a+=("$(one $a_pid "$a_addr" "$proto")")
        b+=("$(one $b_pid "$b_addr" "$proto")")
    done
    ma=$(printf '%s\n' "${a[@]}" | median)
    mb=$(printf '%s\n' "${b[@]}" | median)
    printf '%s: A %s | B %s | medians %s vs %s: B %+.1f %%\n' "$proto" "${a[*]}" "${b[*]}" \
        "$ma" "$mb" "$(awk -v a="$ma" -v b="$mb" 'BEGIN {print (b / a - 1) * 100}')"
done
