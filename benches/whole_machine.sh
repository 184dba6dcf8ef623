#!/usr/bin/env bash
# rpcmux and Python's SimpleXMLRPCServer each given the whole machine (no pinning, rpcmux
# with a runtime thread per core), under the same wrk load: echo(MusicEntry) as XML-RPC,
# 64 connections, 3 alternating runs of 5 s each, medians printed. The per-core comparison
# (each server pinned to one core) is benches/compare.sh; this one answers "what does a user
# get on this box", where the GIL keeps the Python server on one core whatever it is given.
# Needs: wrk, python3, a release build (cargo build --release).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rpcmux=${RPCMUX:-$root/target/release/rpcmux}
body=$root/benches/data/xmlrpc_echo_req.xml
runs=${RUNS:-3}
dur=${DURATION:-5}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 "$root/benches/peers/xmlrpc_server.py" "$port" >/dev/null 2>&1 &
py=$!
out=$(mktemp)
"$rpcmux" serve --listen 127.0.0.1:0 >"$out" 2>/dev/null &
rp=$!
trap 'kill $py $rp 2>/dev/null; rm -f "$out"' EXIT
sleep 1
addr=$(sed -n 's/^listening on //p' "$out" | head -1)
rate() {
    wrk -t2 -c64 -d"${dur}s" -s "$root/benches/wrk_post.lua" "http://$1/RPC2" -- "$body" text/xml |
        awk '/Requests\/sec/ {print $2}'
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
ours=() theirs=()
for _ in $(seq "$runs"); do
    ours+=("$(rate "$addr")")
    theirs+=("$(rate "127.0.0.1:$port")")
done
m_ours=$(printf '%s\n' "${ours[@]}" | median)
m_theirs=$(printf '%s\n' "${theirs[@]}" | median)
echo "rpcmux (whole machine)              ${ours[*]} -> median $m_ours req/s"
echo "SimpleXMLRPCServer (whole machine)  ${theirs[*]} -> median $m_theirs req/s"
awk -v a="$m_ours" -v b="$m_theirs" 'BEGIN {printf "ratio %.1fx\n", a / b}'
