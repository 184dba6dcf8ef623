#!/usr/bin/env bash
# What the event log (`--events-dir`, issue 46) costs a publish: `Host.publishEvent`
# throughput and latency with the log off, on, and on with `--events-fsync`, one fresh
# server per run (its log in a fresh directory on the disk the repository is on, not
# tmpfs), rounds interleaved so drift hits all alike. Load: `rpcmux bench`, 4
# connections x 16 in flight, one event of ~250 bytes per call; one `rpcmux watch`
# subscribed to every event (its output to /dev/null), so each publish is delivered too.
# Prints calls/s and p50/p99 per run and the medians per variant. On demand, not in CI.
#
# Usage: benches/events_log.sh [ROUNDS] [SECS]   (default 3 rounds of 5 s; builds release,
# or measures the binary RPCMUX_BIN names)
set -euo pipefail
# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-3}
secs=${2:-5}
target=${CARGO_TARGET_DIR:-$root/target}
rpcmux=${RPCMUX_BIN:-}
if [[ -z $rpcmux ]]; then
    (cd "$root" && cargo build --release -q -p rpcmux)
    rpcmux=$target/release/rpcmux
fi
tmp=$(mktemp -d "$target/events-log-bench.XXXXXX")
pid= wpid=
trap '[[ -n $wpid ]] && kill "$wpid" 2>/dev/null; [[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
pad=$(head -c 200 /dev/zero | tr '\0' x)
printf '{"jsonrpc":"2.0","method":"Host.publishEvent","params":{"name":"|bench|1","params":{"pad":"%s"}},"id":1}\n' \
    "$pad" >"$tmp/publish.json"

# one VARIANT: "CALLS_PER_S P50_MS P99_MS" of one run on a fresh server.
one() {
    local extra=() dir=$tmp/log-$RANDOM
    case $1 in
    off) ;;
    on) extra=(--events-dir "$dir") ;;
    fsync) extra=(--events-dir "$dir" --events-fsync) ;;
    esac
    "$rpcmux" serve --listen 127.0.0.1:0 "${extra[@]}" >"$tmp/server.out" 2>"$tmp/server.log" &
    pid=$!
    local addr=
    for _ in $(seq 100); do
        addr=$(sed -n 's/^listening on \([0-9.]*:[0-9]*\)$/\1/p' "$tmp/server.out" | head -1)
        [[ -n $addr ]] && break
        sleep 0.1
    done
    [[ -n $addr ]] || { echo "events_log.sh: the server did not listen:" >&2; cat "$tmp/server.log" >&2; return 1; }
    "$rpcmux" watch "$addr" '*' >/dev/null 2>&1 &
    wpid=$!
    sleep 0.5
    "$rpcmux" bench -c 4 -p 16 --payload "$tmp/publish.json" --duration "$secs" --warmup 1 --csv -q "$addr" |
        awk -F, 'NR == 2 { if ($9 != 0) { print "errors: " $0 > "/dev/stderr"; exit 1 } print $8, $13, $15 }'
    kill "$wpid" "$pid"
    wait "$wpid" "$pid" 2>/dev/null || true
    wpid= pid=
    rm -rf "$dir"
}

declare -A rate p50 p99
variants=(off on fsync)
for r in $(seq "$rounds"); do
    for v in "${variants[@]}"; do
        out=$(one "$v") || { echo "events_log.sh: $v failed" >&2; exit 1; }
        read -r c a b <<<"$out"
        printf 'round %d %-6s %8.0f publishes/s  p50 %.3f ms  p99 %.3f ms\n' "$r" "$v" "$c" "$a" "$b"
        rate[$v]+="$c " p50[$v]+="$a " p99[$v]+="$b "
    done
done

# shellcheck disable=SC2086
med() { printf '%s\n' $1 | median; }
echo
echo "medians over $rounds rounds of ${secs}s:"
for v in "${variants[@]}"; do
    printf '  log %-6s %8.0f publishes/s  p50 %.3f ms  p99 %.3f ms\n' "$v" \
        "$(med "${rate[$v]}")" "$(med "${p50[$v]}")" "$(med "${p99[$v]}")"
done
