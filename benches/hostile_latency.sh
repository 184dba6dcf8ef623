#!/usr/bin/env bash
# Bystander ping latency while two clients loop 16 MiB echos sent as ~16 KB gzip bodies
# (issue 11, "starvation"): p50 / p99 / max of a paced JSON-RPC/HTTP ping (one every
# 20 ms, a fresh connection each), first on a quiet server, then under the attack.
# tests/hostile/starvation.rs asserts only that every ping is answered; the latency
# figures live here because a shared machine is too noisy to assert them.
#
# Usage: benches/hostile_latency.sh [--bin PATH] [--duration SECS]
#   --bin       server binary (default target/release/rpcmux, built if missing)
#   --duration  seconds of each run (default 20)
# Needs: curl, python3.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${RPCMUX_BIN:-$root/target/release/rpcmux}
duration=20
while (($#)); do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
if [[ ! -x $bin ]]; then
    echo "==> cargo build --release" >&2
    (cd "$root" && cargo build --release -q)
fi

work=$(mktemp -d)
server_pid=
attackers=()
cleanup() {
    for p in "${attackers[@]}"; do kill "$p" 2>/dev/null || true; done
    [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The attack body: echo([1,1,...]) inflating to just under 16 MiB.
python3 - "$work/echo.json.gz" <<'EOF'
import gzip, sys
head = b'{"jsonrpc":"2.0","method":"echo","id":1,"params":['
n = (16 * 1024 * 1024 - 64 - len(head) - 2) // 2
body = head + b"[" + b",".join([b"1"] * n) + b"]" + b"]}"
open(sys.argv[1], "wb").write(gzip.compress(body, 9))
EOF

"$bin" serve --listen 127.0.0.1:0 >"$work/out" 2>"$work/log" &
server_pid=$!
for _ in $(seq 100); do
    grep -q "listening on" "$work/out" 2>/dev/null && break
    sleep 0.05
done
addr=$(sed -n 's/^listening on //p' "$work/out" | head -1)
[[ -n $addr ]] || { echo "server did not start" >&2; cat "$work/log" >&2; exit 1; }
echo "server $bin on $addr; attack body $(stat -c %s "$work/echo.json.gz") bytes gzip"

# bystander SECS LABEL: paced pings, prints percentiles.
bystander() {
    python3 - "$addr" "$1" "$2" <<'EOF'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
secs, label = float(sys.argv[2]), sys.argv[3]
body = b'{"jsonrpc":"2.0","method":"ping","id":1}'
req = (b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
       b"Content-Length: %d\r\n\r\n" % len(body)) + body
lat, failed = [], 0
end = time.time() + secs
while time.time() < end:
    t = time.perf_counter()
    try:
        s = socket.create_connection((host, int(port)), timeout=30)
        s.sendall(req)
        got = b""
        while b'"result":true' not in got:
            c = s.recv(4096)
            if not c:
                break
            got += c
        s.close()
        if b'"result":true' in got:
            lat.append(time.perf_counter() - t)
        else:
            failed += 1
    except OSError:
        failed += 1
    time.sleep(0.02)
lat.sort()
def pct(p):
    return lat[min(len(lat) - 1, int(p / 100 * len(lat)))] * 1000 if lat else float("nan")
print(f"{label:>22}: {len(lat)} pings, {failed} failed; p50 {pct(50):.2f} ms, "
      f"p99 {pct(99):.2f} ms, max {lat[-1] * 1000 if lat else float('nan'):.2f} ms")
EOF
}

rss() { awk '/VmHWM/ {printf "%.0f MiB", $2/1024}' "/proc/$server_pid/status"; }

bystander "$duration" "quiet server"

# Two attackers, each looping the echo for the duration (bounded), counting replies.
for i in 1 2; do
    (
        end=$((SECONDS + duration))
        n=0
        while ((SECONDS < end)); do
            curl -s -o /dev/null --max-time 60 -H 'Content-Type: application/json' \
                -H 'Content-Encoding: gzip' --data-binary @"$work/echo.json.gz" "http://$addr/" && n=$((n + 1))
        done
        echo "$n" >"$work/attacker$i"
    ) &
    attackers+=($!)
done
sleep 1
bystander "$((duration - 1))" "under two 16 MiB loops"
wait "${attackers[@]}" 2>/dev/null || true
attackers=()
echo "attackers: $(cat "$work/attacker1" 2>/dev/null || echo ?) and $(cat "$work/attacker2" 2>/dev/null || echo ?) echos answered; server peak RSS $(rss)"
