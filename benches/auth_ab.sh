#!/usr/bin/env bash
# What authentication costs (issue 30: at most 5 % more server CPU per call on every
# path): release servers side by side, pinned to the same server core, one plain and two
# with `--auth FILE` (anonymous callers may call nothing; alice has a password; tokens
# are HS256 on one and ES256 on the other, as a credentials file takes one `[jwt]` key),
# loaded in turn with `rpcmux bench` (6 interleaved rounds of 3 s per path, the first
# server alternating, so drift and neighbours hit both alike), calling ping, for:
#   basic     JSON-RPC over HTTP keep-alive, Authorization: Basic     (16 connections)
#   hs256     JSON-RPC over HTTP keep-alive, Authorization: Bearer HS256
#   es256     JSON-RPC over HTTP keep-alive, Authorization: Bearer ES256
#   stomp     JSON-RPC over STOMP, CONNECT login/passcode             (16 x 8 in flight)
#   msgpack   msgpack-rpc after rpc.login [user, password]            (16 x 8 in flight)
# against the same load without credentials on the plain server. Connections are opened
# (and log in) inside each measured run; a password's argon2 verification is paid before
# it by one `rpcmux call` (the server remembers a verified password for 60 s by a keyed
# digest), so what is measured is calls on logged-in connections, as keep-alive clients
# make them. Tokens are minted by scripts/mint-jwt (Python's HMAC, openssl's ECDSA).
#
# Prints calls per server CPU-second per round and the medians; writes them to
# $OUT/auth_ab.csv (default bench-out/), which benches/report.py puts in
# docs/benchmarks.md ("What authentication costs").
#
# Usage: benches/auth_ab.sh [ROUNDS]   (after `cargo build --release`; needs openssl, python3)
#        PAYLOAD=musicentry benches/auth_ab.sh   (echo(MusicEntry) instead of ping)
#        PATHS="msgpack stomp" benches/auth_ab.sh   (some paths only)
set -euo pipefail
# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${CARGO_TARGET_DIR:-$root/target}/release/rpcmux
out=${OUT:-$root/bench-out}
rounds=${1:-6}
payload=${PAYLOAD:-ping}
hz=$(getconf CLK_TCK)
ncpu=$(nproc)
server_cpu=$((ncpu - 1))
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT

# --- credentials ---------------------------------------------------------------------
password=bench-secret
printf '%s\n' "$password" >"$tmp/password"
hash=$(printf '%s\n' "$password" | "$B" passwd)
openssl rand -hex 32 >"$tmp/jwt.hex"
openssl ecparam -name prime256v1 -genkey -noout -out "$tmp/es256.key" 2>/dev/null
openssl ec -in "$tmp/es256.key" -pubout -out "$tmp/es256.pub" 2>/dev/null
"$root/scripts/mint-jwt" hs256 "$tmp/jwt.hex" alice 86400 >"$tmp/hs256.token"
"$root/scripts/mint-jwt" es256 "$tmp/es256.key" alice 86400 >"$tmp/es256.token"
for key in hs256 es256; do
    if [[ $key == hs256 ]]; then jwt="hs256_secret_file = \"$tmp/jwt.hex\""; else jwt="public_key_file = \"$tmp/es256.pub\""; fi
    cat >"$tmp/auth-$key.toml" <<TOML
[users.alice]
password = "$hash"
allow = ["*"]
[jwt]
$jwt
TOML
done

# --- servers -------------------------------------------------------------------------
declare -A PID ADDR
start() {
    local name=$1; shift
    TOKIO_WORKER_THREADS=1 taskset -c "$server_cpu" "$B" serve --threads 1 --listen 127.0.0.1:0 "$@" \
        >"$tmp/$name.log" 2>&1 &
    pids+=($!)
    PID[$name]=$!
    local i
    for i in $(seq 100); do
        if grep -q '^listening on ' "$tmp/$name.log"; then
            ADDR[$name]=$(sed -n 's/^listening on //p' "$tmp/$name.log" | head -1)
            return
        fi
        sleep 0.1
    done
    echo "auth_ab.sh: $name did not start:" >&2
    cat "$tmp/$name.log" >&2
    exit 1
}
start plain
start auth-hs256 --auth "$tmp/auth-hs256.toml"
start auth-es256 --auth "$tmp/auth-es256.toml"

# path -> protocol, load shape, server with --auth, credentials flags
declare -A PROTO=([basic]=jsonrpc [hs256]=jsonrpc [es256]=jsonrpc [stomp]=stomp [msgpack]=msgpack)
declare -A SHAPE=([basic]="-c 16 -p 1" [hs256]="-c 16 -p 1" [es256]="-c 16 -p 1"
    [stomp]="-c 16 -p 8" [msgpack]="-c 16 -p 8")
declare -A SERVER=([basic]=auth-hs256 [hs256]=auth-hs256 [es256]=auth-es256 [stomp]=auth-hs256 [msgpack]=auth-hs256)
user=(--user alice --password-file "$tmp/password")
declare -A NAME=(
    [basic]="JSON-RPC over HTTP keep-alive, Authorization: Basic"
    [hs256]="JSON-RPC over HTTP keep-alive, Authorization: Bearer (HS256 JWT)"
    [es256]="JSON-RPC over HTTP keep-alive, Authorization: Bearer (ES256 JWT)"
    [stomp]="JSON-RPC over STOMP, CONNECT login/passcode"
    [msgpack]="msgpack-rpc over TCP after rpc.login"
)
creds() {
    case $1 in
        hs256) echo --token-file "$tmp/hs256.token" ;;
        es256) echo --token-file "$tmp/es256.token" ;;
        *) echo "${user[@]}" ;;
    esac
}

# one PATH SERVER [CREDENTIAL FLAGS...]: calls per server CPU-second of one 3 s run.
one() {
    local path=$1 server=$2; shift 2
    local pid=${PID[$server]} addr=${ADDR[$server]} s0 s1 row calls errors
    # Pays a password's verification outside the measured run (see the top).
    taskset -c 0 "$B" call --proto "${PROTO[$path]}" "$@" "$addr" ping >/dev/null
    s0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    # shellcheck disable=SC2086
    row=$(taskset -c 0 "$B" bench --threads 1 -q --csv --proto "${PROTO[$path]}" ${SHAPE[$path]} \
        --duration 3 --warmup 0 --payload "$payload" "$@" "$addr" | tail -1)
    s1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    calls=$(cut -d, -f8 <<<"$row")
    errors=$(cut -d, -f9 <<<"$row")
    if ((errors > 0)); then
        echo "auth_ab.sh: $path on $server: $errors errors in a run" >&2
        exit 1
    fi
    awk -v r="$calls" -v t=$((s1 - s0)) -v hz="$hz" 'BEGIN { printf "%d\n", r / (t / hz / 3) }'
}

mkdir -p "$out"
csv=$out/auth_ab.csv
echo "path,workload,payload,rounds,plain_per_cpu_s,auth_per_cpu_s,cost_pct" >"$csv"
for path in ${PATHS:-basic hs256 es256 stomp msgpack}; do
    plain=() auth=()
    # shellcheck disable=SC2046
    for round in $(seq "$rounds"); do
        # ABBA: which server goes first alternates, so neither always has the warmer cache.
        if ((round % 2)); then
            plain+=("$(one "$path" plain)")
            auth+=("$(one "$path" "${SERVER[$path]}" $(creds "$path"))")
        else
            auth+=("$(one "$path" "${SERVER[$path]}" $(creds "$path"))")
            plain+=("$(one "$path" plain)")
        fi
    done
    mp=$(printf '%s\n' "${plain[@]}" | median | awk '{printf "%d", $1}')
    ma=$(printf '%s\n' "${auth[@]}" | median | awk '{printf "%d", $1}')
    cost=$(awk -v a="$ma" -v b="$mp" 'BEGIN {printf "%.1f", (b / a - 1) * 100}')
    printf '%s: plain %s | --auth %s | medians %s vs %s: %s %% more server CPU per call\n' \
        "$path" "${plain[*]}" "${auth[*]}" "$mp" "$ma" "$cost"
    echo "$path,\"${NAME[$path]} (${SHAPE[$path]})\",$payload,$rounds,$mp,$ma,$cost" >>"$csv"
done
echo "written: $csv"
