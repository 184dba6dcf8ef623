#!/usr/bin/env bash
# The gateway against calling its upstream directly, measured closely (issue 15): Python's
# SimpleXMLRPCServer (benches/peers/xmlrpc_server.py) alone on one core; XML-RPC straight
# to it ("direct") against JSON-RPC over HTTP to rpcmux in front of it ("gateway"), rpcmux
# pinned to the other core (off the upstream's, beside wrk), runs interleaved round by
# round (direct, then each gateway) so drift and neighbours hit all alike. The same
# echo(MusicEntry) body as benches/compare.sh, wrk with 64 connections.
#
# Prints each run's calls/s, p50 and p99, then per target the medians and, against direct,
# the throughput ratio and the p50 difference. The issue's targets: at least 0.9x of the
# direct throughput, at most +0.2 ms at p50.
#
# Usage: benches/gateway_ab.sh [CONNECTIONS...]   (after `cargo build --release`)
#   CONNECTIONS  one gateway per value, its upstream `connections` setting (idle
#                connections kept per address; default: "8 64")
# Environment: ROUNDS (4), DUR seconds per run (5), CONNS client connections (64),
#   BASE_PORT (24100: the upstream, then one port per gateway), UPSTREAM_CPU (1),
#   LOAD_CPU (0; wrk), GATEWAY_CPU (LOAD_CPU; "none": rpcmux not pinned, as compare.sh
#   runs it, free to land on the upstream's core), RPCMUX (the rpcmux binary).
set -euo pipefail
# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${RPCMUX:-${CARGO_TARGET_DIR:-$root/target}/release/rpcmux}
rounds=${ROUNDS:-4} dur=${DUR:-5} conns=${CONNS:-64} base=${BASE_PORT:-24100}
up_cpu=${UPSTREAM_CPU:-1} load_cpu=${LOAD_CPU:-0}
gw_pin=(taskset -c "${GATEWAY_CPU:-$load_cpu}")
[[ ${GATEWAY_CPU:-} == none ]] && gw_pin=()
variants=("$@")
((${#variants[@]})) || variants=(8 64)
command -v wrk >/dev/null || { echo "wrk not found" >&2; exit 1; }
[[ -x $B ]] || { echo "$B not found: cargo build --release" >&2; exit 1; }

tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT

# wait_listening LOG: the address a server printed as "listening on ADDR".
wait_listening() {
    local i
    for i in $(seq 100); do
        if grep -q '^listening on ' "$1"; then
            sed -n 's/^listening on //p' "$1" | head -1
            return
        fi
        sleep 0.1
    done
    echo "no server: $(cat "$1")" >&2
    exit 1
}

taskset -c "$up_cpu" python3 "$root/benches/peers/xmlrpc_server.py" "$base" >"$tmp/up.log" 2>&1 &
pids+=($!)
declare -A URL
URL[direct]="http://$(wait_listening "$tmp/up.log")/RPC2"
targets=(direct)
port=$base
for n in "${variants[@]}"; do
    port=$((port + 1))
    cat >"$tmp/gw$n.toml" <<TOML
listen = ["127.0.0.1:$port"]
demo = false
[[upstream]]
url = ["xmlrpc+http://127.0.0.1:$base/RPC2"]
connections = $n
TOML
    TOKIO_WORKER_THREADS=1 "${gw_pin[@]}" "$B" serve --threads 1 --config "$tmp/gw$n.toml" \
        >"$tmp/gw$n.log" 2>&1 &
    pids+=($!)
    URL[gw$n]="http://$(wait_listening "$tmp/gw$n.log")/RPC2"
    targets+=("gw$n")
done

# run TARGET ROUND: one wrk run (1 s unmeasured first); appends "target rps p50 p99".
run() {
    local t=$1 body=$root/benches/data/xmlrpc_echo_req.xml ctype=text/xml f=$tmp/$1.$2.wrk
    if [[ $t != direct ]]; then
        body=$root/benches/data/jsonrpc_echo_req.json ctype=application/json
    fi
    local w=(taskset -c "$load_cpu" wrk -t1 -c"$conns" -s "$root/benches/wrk_post.lua")
    "${w[@]}" -d1s "${URL[$t]}" -- "$body" "$ctype" >/dev/null 2>&1 || true
    "${w[@]}" -d"${dur}s" --latency "${URL[$t]}" -- "$body" "$ctype" >"$f" 2>&1 || true
    local rps p50 p99 bad
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$f")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$f")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$f")")
    bad=$(awk '/Non-2xx|Socket errors/ {print}' "$f")
    printf '%-8s round %d: %8.0f calls/s  p50 %8.2f ms  p99 %8.2f ms %s\n' "$t" "$2" "$rps" "$p50" "$p99" "$bad"
    echo "$t $rps $p50 $p99" >>"$tmp/results"
}

echo "upstream on CPU $up_cpu; wrk on CPU $load_cpu, rpcmux on ${GATEWAY_CPU:-$load_cpu}; $conns connections, ${dur} s runs, $rounds rounds"
for r in $(seq "$rounds"); do
    for t in "${targets[@]}"; do run "$t" "$r"; done
done

col() { awk -v t="$1" -v c="$2" '$1 == t {print $c}' "$tmp/results" | median; }
d_rps=$(col direct 2) d_p50=$(col direct 3)
echo
printf '%-8s %10s %10s %10s %10s %12s\n' target calls/s p50_ms p99_ms ratio p50_delta_ms
for t in "${targets[@]}"; do
    rps=$(col "$t" 2) p50=$(col "$t" 3) p99=$(col "$t" 4)
    awk -v t="$t" -v r="$rps" -v a="$p50" -v b="$p99" -v dr="$d_rps" -v da="$d_p50" 'BEGIN {
        printf "%-8s %10.0f %10.2f %10.2f %9.2fx %+12.2f\n", t, r, a, b, r / dr, a - da }'
done
