#!/usr/bin/env bash
# HTTP/2 measured: rpcmux's JSON-RPC over HTTP/2 against the same calls over HTTP/1.1,
# against jsonrpsee's HTTP server over h2c, and against a bare hyper HTTP/2 server that
# reads the body and answers "ok" (the ceiling: same hyper and h2 crates, no RPC work).
# One load generator for all, h2load (Debian nghttp2-client): HTTP/2 with 4 connections
# x 32 streams, HTTP/1.1 (`--h1`) with 64 connections. Each server runs on one pinned
# core (1), the load on the other (0); rounds of 3 s interleaved, so drift and neighbours
# hit all alike. Prints calls per server CPU-second per round and the medians.
#
# Usage: benches/h2_ab.sh [ROUNDS]   (default 5; builds what it needs, release)
set -euo pipefail
# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-5}
target=${CARGO_TARGET_DIR:-$root/target}
peers_target=$target/peers
command -v h2load >/dev/null || { echo "h2load not found (apt-get install nghttp2-client)" >&2; exit 1; }
(cd "$root" && cargo build --release -q -p rpcmux)
(cd "$root/benches/peers/ceilings" && CARGO_TARGET_DIR=$peers_target cargo build --release -q)
(cd "$root/benches/peers/jsonrpsee-echo" && CARGO_TARGET_DIR=$peers_target cargo build --release -q)
hz=$(getconf CLK_TCK)
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT

# start NAME CMD...: a server pinned to core 1; its address in $tmp/NAME.addr.
start() {
    local name=$1
    shift
    TOKIO_WORKER_THREADS=1 taskset -c 1 "$@" >"$tmp/$name.log" 2>&1 &
    pids+=($!)
    echo $! >"$tmp/$name.pid"
}
start rpcmux "$target/release/rpcmux" serve --threads 1 --listen 127.0.0.1:0
start jsonrpsee "$peers_target/release/jsonrpsee-echo" 127.0.0.1:0
start ceiling "$peers_target/release/hyper-ok-h2" 127.0.0.1:0
sleep 1
addr() { sed -n 's/^listening on //p' "$tmp/$1.log" | head -1; }
printf '{"jsonrpc":"2.0","method":"echo","params":["%s"],"id":1}' "$(head -c 200 /dev/zero | tr '\0' x)" >"$tmp/body.json"

# one NAME MODE: calls per server CPU-second of one 3 s run (MODE h2 or h1).
one() {
    local pid s0 s1 r
    pid=$(cat "$tmp/$1.pid")
    local load=(-c 4 -m 32)
    [[ $2 == h1 ]] && load=(--h1 -c 64 -m 1)
    s0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    r=$(taskset -c 0 h2load -D 3 "${load[@]}" -d "$tmp/body.json" -H 'content-type: application/json' \
        "http://$(addr "$1")/" | awk '/^finished in/ {gsub(",", ""); print $4}')
    s1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    awk -v r="$r" -v t=$((s1 - s0)) -v hz="$hz" 'BEGIN { printf "%d\n", r * 3 / (t / hz) }'
}

declare -A runs
cases=("rpcmux h2" "rpcmux h1" "jsonrpsee h2" "ceiling h2")
for _ in $(seq "$rounds"); do
    for c in "${cases[@]}"; do
        runs[$c]+="$(one $c) "
    done
done
for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    printf '%-14s %s| median %s calls per server CPU-s\n' "$c" "${runs[$c]}" \
        "$(printf '%s\n' ${runs[$c]} | median)"
done
