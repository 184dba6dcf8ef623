#!/usr/bin/env bash
# Unix-domain sockets measured: msgpack-rpc and JSON-RPC (jsonrpc-tcp, one message a
# line) over a socket file against the same over loopback TCP, from ONE rpcmux server
# listening on both (127.0.0.1:0 and unix:$tmp/rpcmux.sock). One load generator for all,
# `rpcmux bench` (16 connections x 8 in flight, --check-bytes, `echo` of a 64-byte
# string). The server runs with one runtime thread on one pinned core (1), the load on
# the other (0); rounds of 3 s interleaved, so drift and neighbours hit all alike.
# Prints calls per server CPU-second per round and the medians, the unix/TCP ratio per
# protocol, and plain calls/s with the server's CPU use (below about 0.9 of a core the
# load generator, not the server, is the limit of calls/s).
#
# Usage: benches/unix_ab.sh [ROUNDS] [SECS]   (default 5 rounds of 3 s; builds rpcmux, release)
set -euo pipefail
# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-5}
secs=${2:-3}
target=${CARGO_TARGET_DIR:-$root/target}
(cd "$root" && cargo build --release -q -p rpcmux)
rpcmux=$target/release/rpcmux
hz=$(getconf CLK_TCK)
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

taskset -c 1 "$rpcmux" serve --threads 1 --listen 127.0.0.1:0 --listen "unix:$tmp/rpcmux.sock" \
    >"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
    (($(grep -c '^listening on ' "$tmp/server.log") >= 2)) && break
    sleep 0.1
done
tcp=$(sed -n 's/^listening on \([0-9.]*:[0-9]*\)$/\1/p' "$tmp/server.log" | head -1)
unix=$(sed -n 's/^listening on \(unix:.*\)$/\1/p' "$tmp/server.log" | head -1)
[[ -n $tcp && -n $unix ]] || { echo "unix_ab.sh: the server did not listen:" >&2; cat "$tmp/server.log" >&2; exit 1; }
echo "server pid $pid on core 1: $tcp and $unix"
printf '"%s"\n' "$(head -c 64 /dev/zero | tr '\0' x)" >"$tmp/echo.json"

# one PROTO ADDR: "CALLS_PER_SERVER_CPU_S CALLS_PER_S SERVER_CORES" of one run. No
# warmup: the server ticks are read around the whole bench process, so every call it
# answers is counted (the first round warms the server up for the rest).
one() {
    local s0 s1 calls
    s0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    calls=$(taskset -c 0 "$rpcmux" bench --proto "$1" -c 16 -p 8 --threads 1 --check-bytes \
        --payload "$tmp/echo.json" --duration "$secs" --warmup 0 --csv -q "$2" |
        awk -F, 'NR == 2 { if ($9 != 0) { print "errors: " $0 > "/dev/stderr"; exit 1 } print $7 }') || return 1
    s1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    awk -v c="$calls" -v t=$((s1 - s0)) -v hz="$hz" -v d="$secs" \
        'BEGIN { printf "%d %d %.2f\n", c / (t / hz), c / d, t / hz / d }'
}

declare -A eff rate cores
cases=("msgpack tcp" "msgpack unix" "jsonrpc-tcp tcp" "jsonrpc-tcp unix")
for r in $(seq "$rounds"); do
    for c in "${cases[@]}"; do
        read -r proto net <<<"$c"
        addr=$tcp
        [[ $net == unix ]] && addr=$unix
        out=$(one "$proto" "$addr") || { echo "unix_ab.sh: $c failed" >&2; exit 1; }
        read -r e p u <<<"$out"
        eff[$c]+="$e "
        rate[$c]+="$p "
        cores[$c]+="$u "
    done
    echo "round $r/$rounds done" >&2
done

# shellcheck disable=SC2086
med() { printf '%s\n' $1 | median; }
echo
echo "calls per server CPU-second (rounds | median):"
for c in "${cases[@]}"; do
    printf '  %-18s %s| median %.0f\n' "$c" "${eff[$c]}" "$(med "${eff[$c]}")"
done
echo "calls/s (rounds | median), and the server's CPU in cores (median):"
for c in "${cases[@]}"; do
    printf '  %-18s %s| median %.0f  server %s cores\n' "$c" "${rate[$c]}" "$(med "${rate[$c]}")" \
        "$(med "${cores[$c]}")"
done
echo "unix/TCP, median calls per server CPU-s (per round, same round's pair):"
for proto in msgpack jsonrpc-tcp; do
    # shellcheck disable=SC2206
    t=(${eff[$proto tcp]}) u=(${eff[$proto unix]})
    per=()
    for i in "${!t[@]}"; do per+=("$(awk -v a="${u[$i]}" -v b="${t[$i]}" 'BEGIN { printf "%.3f", a / b }')"); done
    printf '  %-12s %.3f   (rounds: %s; min %s max %s)\n' "$proto" \
        "$(awk -v a="$(med "${eff[$proto unix]}")" -v b="$(med "${eff[$proto tcp]}")" 'BEGIN { print a / b }')" \
        "${per[*]}" "$(printf '%s\n' "${per[@]}" | sort -n | head -1)" "$(printf '%s\n' "${per[@]}" | sort -n | tail -1)"
done
echo "(server below about 0.9 cores: the load generator on core 0 limits calls/s, not the server)"
