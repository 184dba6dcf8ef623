#!/usr/bin/env bash
# Measure rpcmux against the servers a user would pick instead, and against bare ceilings,
# in ONE run on this machine. Writes bench-out/results.csv (every run), then
# docs/benchmarks.md and docs/benchmarks.png (medians and ratios) via benches/report.py.
#
#   peers     Python SimpleXMLRPCServer (threading, HTTP/1.1)  XML-RPC       benches/peers/xmlrpc_server.py
#             jsonrpsee HTTP server                            JSON-RPC/HTTP benches/peers/jsonrpsee-echo
#             jsonrpsee WebSocket server (--ws)                JSON-RPC/WS   benches/peers/jsonrpsee-echo
#             msgpack-rpc-python (tornado)                     msgpack-rpc   benches/peers/msgpackrpc_server.py
#   ceilings  bare hyper "ok" server (reads the body)          HTTP          benches/peers/ceilings
#             bare tokio TCP echo (same bytes back)            streams       benches/peers/ceilings
#   sniffing  rpcmux with every protocol enabled vs `--protocol <one>`: same load, same run.
#   auth      rpcmux without and with `--auth`, per way of logging in: benches/auth_ab.sh.
#   HTTP/2    rpcmux over h2 vs HTTP/1.1 vs jsonrpsee h2c vs bare hyper h2 (h2load): benches/h2_ab.sh,
#             run on its own (not by this script).
#   unix      msgpack-rpc and JSON-RPC over a Unix socket vs loopback TCP, one rpcmux on both
#             (rpcmux bench): benches/unix_ab.sh, run on its own (not by this script).
#
# HTTP load comes from wrk, stream load from `rpcmux bench` (the ceilings with
# --echo-server). Server and load generator are pinned to different cores with taskset,
# each given one thread, so neither steals the other's CPU. One more XML-RPC workload
# gives rpcmux and Python's server the whole machine (nothing pinned, rpcmux with a
# runtime thread per core, wrk with one per core): what a user gets on this box. Runs are
# interleaved (run 1 of every target, then run 2, ...) so drift spreads over all targets.
#
# Each run also records the CPU the server, the load generator and anything else used;
# a run disturbed by something else (more than --max-other cores, default 0.15) is
# measured again, twice at most.
#
# Usage: benches/compare.sh [--runs N] [--duration SECS] [--max-other CORES] [--no-build] [--no-report]
#                           [--only SCENARIO]   (one workload's rows alone, e.g. jsonrpc-ws-echo,
#                                                or auth-ab for benches/auth_ab.sh alone;
#                                                with --no-report, as the report wants them all)
# Needs: wrk, taskset, /usr/bin/time, python3, openssl, .venvs/msgpackrpc (scripts/setup-test-env), cargo.
set -euo pipefail
# shellcheck source=benches/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$root/bench-out}
runs=3
dur=5
build=1
report=1
max_other=0.15
only=
while (($#)); do
    case $1 in
        --runs) runs=$2; shift ;;
        --duration) dur=$2; shift ;;
        --no-build) build=0 ;;
        --no-report) report=0 ;;
        --max-other) max_other=$2; shift ;;
        --only) only=$2; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

# Two cores: the server gets the last one, the load generator the first. On a machine
# with one core both share it (and the doc says so).
ncpu=$(nproc)
server_cpu=$((ncpu - 1))
load_cpu=0
target=${CARGO_TARGET_DIR:-$root/target}
peers_target=${PEERS_TARGET_DIR:-$target/peers}
rpcmux=$target/release/rpcmux
ceil=$peers_target/release
msgpack_py=${RPCMUX_PY_MSGPACKRPC:-$root/.venvs/msgpackrpc/bin/python}
data=$root/benches/data

log() { printf '[compare %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# Is scenario $1 measured in this run (--only)?
wanted() { [[ -z $only || $only == "$1" ]]; }
die() { log "ERROR: $*"; exit 1; }

command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install time)"
[[ -x $msgpack_py ]] || die "$msgpack_py not found: run scripts/setup-test-env"

if ((build)); then
    log "building rpcmux and the peers (release)"
    (cd "$root" && cargo build --release -q -p rpcmux)
    (cd "$root/benches/peers/ceilings" && CARGO_TARGET_DIR=$peers_target cargo build --release -q)
    (cd "$root/benches/peers/jsonrpsee-echo" && CARGO_TARGET_DIR=$peers_target cargo build --release -q)
fi

mkdir -p "$out/logs"
rm -f "$out/auth_ab.csv"  # written again below: the doc shows this run's figures only
results=$out/results.csv
echo "scenario,target,run,calls_per_sec,p50_ms,p99_ms,errors,server_cpu,load_cpu,other_cpu" >"$results"

# --- servers --------------------------------------------------------------------------
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME CMD... : run CMD on the server core, wait for its "listening on ADDR" line,
# and set ADDR[NAME].
declare -A ADDR PID
pin_server=1
start() {
    local name=$1; shift
    local logf=$out/logs/$name.log
    if ((pin_server)); then
        TOKIO_WORKER_THREADS=1 taskset -c "${pin_cpu:-$server_cpu}" "$@" >"$logf" 2>&1 &
    else
        "$@" >"$logf" 2>&1 &
    fi
    pids+=($!)
    PID[$name]=$!  # taskset execs the server: same pid
    local i
    for i in $(seq 100); do
        if grep -q '^listening on ' "$logf"; then
            ADDR[$name]=$(sed -n 's/^listening on //p' "$logf" | head -1)
            log "$name on ${ADDR[$name]}"
            return
        fi
        sleep 0.1
    done
    die "$name did not start; see $logf"
}

start rpcmux-all "$rpcmux" serve --threads 1 --listen 127.0.0.1:0
start rpcmux-http "$rpcmux" serve --threads 1 --listen 127.0.0.1:0 --protocol http
start rpcmux-jsonrpc-tcp "$rpcmux" serve --threads 1 --listen 127.0.0.1:0 --protocol jsonrpc-tcp
start rpcmux-msgpack "$rpcmux" serve --threads 1 --listen 127.0.0.1:0 --protocol msgpack
# The same server with metrics off: what counting costs (XML-RPC and msgpack-rpc rows).
start rpcmux-nometrics "$rpcmux" serve --threads 1 --listen 127.0.0.1:0 --no-metrics
# The typed echo (echoMusicEntry: the same bytes, read into a Rust struct and written
# back from it) runs on the rpcmux-all server, beside the dynamic echo it is compared to.
ADDR[rpcmux-typed]=${ADDR[rpcmux-all]}
PID[rpcmux-typed]=${PID[rpcmux-all]}
start python-xmlrpc python3 "$root/benches/peers/xmlrpc_server.py" "$(free_port)"
start jsonrpsee "$ceil/jsonrpsee-echo" 127.0.0.1:0
start jsonrpsee-ws "$ceil/jsonrpsee-echo" --ws 127.0.0.1:0
start msgpack-rpc-python "$msgpack_py" "$root/benches/peers/msgpackrpc_server.py" "$(free_port)"
start hyper-ok "$ceil/hyper-ok" 127.0.0.1:0
start tcp-echo "$ceil/tcp-echo" 127.0.0.1:0
# The gateway (docs/gateway.md): rpcmux in front of the Python XML-RPC peer (JSON-RPC in,
# XML-RPC out), as one would deploy it: pinned off the peer's core, beside the load
# generator (the peer keeps the server core to itself, as in the direct rows; left
# unpinned, rpcmux can land on the peer's core: one benches/gateway_ab.sh run gave 0.95x
# and +3.4 ms at p50 so), with a connection to the peer per client connection; and in
# front of jsonrpsee (the gateway's own ceiling, pinned as usual).
cat >"$out/gateway-python.toml" <<TOML
listen = ["127.0.0.1:0"]
demo = false
[[upstream]]
url = ["xmlrpc+http://${ADDR[python-xmlrpc]}/RPC2"]
connections = 64
TOML
pin_cpu=$load_cpu
start rpcmux-gateway "$rpcmux" serve --threads 1 --config "$out/gateway-python.toml"
pin_cpu=
cat >"$out/gateway-jsonrpsee.toml" <<TOML
listen = ["127.0.0.1:0"]
demo = false
[[upstream]]
url = ["jsonrpc+http://${ADDR[jsonrpsee]}/"]
methods = ["echo", "ping"]
# Room for the load's 16 x 8 calls: with the defaults (64 in flight, 8 connections) most
# calls were refused -32012 (overloaded), and the row counted those error replies.
max_in_flight = 128
connections = 128
TOML
start rpcmux-gateway-rust "$rpcmux" serve --threads 1 --config "$out/gateway-jsonrpsee.toml"
# The whole machine, nothing pinned: what a user gets on this box. rpcmux runs a runtime
# thread per core; the GIL keeps the Python server on one core whatever it is given.
pin_server=0
start rpcmux-machine "$rpcmux" serve --listen 127.0.0.1:0
start python-xmlrpc-machine python3 "$root/benches/peers/xmlrpc_server.py" "$(free_port)"
pin_server=1

# --- load -----------------------------------------------------------------------------
# CPU accounting for each run, in cores (1.00 = one core busy for the whole run):
#   server_cpu  the server process (user + system, all threads). Near 1.00 the server was
#               the limit; below, the load generator was.
#   load_cpu    the load generator (wrk or rpcmux bench).
#   other_cpu   everything else on the machine (other processes, the hypervisor's steal).
#               A run with more than --max-other of it is measured again (twice at most):
#               on a shared machine a neighbour's build must not pass for a slow server.
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/${PID[$1]}/stat"; }
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
now_ms() { date +%s%3N; }

# timed TARGET CMD...: run the load generator CMD on its core; set SERVER_CPU, LOAD_CPU
# and OTHER_CPU for that run.
load_pin=(taskset -c "$load_cpu")
wrk_threads=1
timed() {
    local tgt=$1
    shift
    local s0 m0 w0 s1 m1 w1
    s0=$(cpu_ticks "$tgt")
    m0=$(machine_ticks)
    w0=$(now_ms)
    /usr/bin/time -f '%U %S' -o "$out/load.time" "${load_pin[@]}" "$@" || true
    s1=$(cpu_ticks "$tgt")
    m1=$(machine_ticks)
    w1=$(now_ms)
    read -r SERVER_CPU LOAD_CPU OTHER_CPU < <(tail -1 "$out/load.time" | awk \
        -v s=$((s1 - s0)) -v m=$((m1 - m0)) -v secs="$(((w1 - w0)))" -v hz="$hz" '{
            secs /= 1000; g = $1 + $2; o = ((m - s) / hz - g) / secs
            printf "%.2f %.2f %.2f\n", s / hz / secs, g / secs, (o < 0 ? 0 : o) }')
}

# disturbed: was the last run shared with something else?
disturbed() { awk -v o="$OTHER_CPU" -v max="$max_other" 'BEGIN { exit !(o > max) }'; }

# wrk_load SCENARIO TARGET RUN BODY CTYPE CONNS [close]
wrk_load() {
    local scen=$1 tgt=$2 run=$3 body=$4 ctype=$5 conns=$6 close=${7:-}
    wanted "$scen" || return 0
    local url="http://${ADDR[$tgt]}/RPC2" f=$out/logs/$scen.$tgt.$run.wrk
    # One second unmeasured first: connections open, caches and allocators warm.
    "${load_pin[@]}" wrk -t"$wrk_threads" -c"$conns" -d1s -s "$root/benches/wrk_post.lua" "$url" -- "$body" "$ctype" $close >/dev/null 2>&1 || true
    local attempt
    for attempt in 1 2 3; do
        timed "$tgt" wrk -t"$wrk_threads" -c"$conns" -d"${dur}s" --latency -s "$root/benches/wrk_post.lua" "$url" -- "$body" "$ctype" $close >"$f" 2>&1
        # Through the gateway the upstream's own CPU shows as "other": not a disturbance.
        [[ -n ${UPSTREAM_BUSY:-} ]] && break
        disturbed || break
        log "$scen $tgt run $run: disturbed (other CPU $OTHER_CPU cores), measuring again"
    done
    local rps p50 p99 non2xx sockerr
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$f")
    p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$f")")
    p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$f")")
    non2xx=$(awk '/Non-2xx/ {print $NF}' "$f")
    sockerr=$(awk '/Socket errors/ {n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) n += $i; print n}' "$f")
    echo "$scen,$tgt,$run,$rps,$p50,$p99,$((${non2xx:-0} + ${sockerr:-0})),$SERVER_CPU,$LOAD_CPU,$OTHER_CPU" >>"$results"
    log "$scen $tgt run $run: $rps req/s (p50 ${p50} ms, errors $((${non2xx:-0} + ${sockerr:-0})), CPU server $SERVER_CPU load $LOAD_CPU other $OTHER_CPU)"
}

# wrk_check SCENARIO TARGET BODY CTYPE: a short run that reads every reply and fails on
# any fault or error (wrk counts those as successes).
wrk_check() {
    local scen=$1 tgt=$2 body=$3 ctype=$4 f=$out/logs/$1.$2.check
    wanted "$scen" || return 0
    taskset -c "$load_cpu" wrk -t1 -c4 -d1s -s "$root/benches/wrk_check.lua" "http://${ADDR[$tgt]}/RPC2" -- "$body" "$ctype" >"$f" 2>&1
    grep -q 'checked replies: ok=[1-9][0-9]* fault_or_error=0$' "$f" || die "$scen $tgt: bad replies: $(grep checked "$f")"
}

# bench_load SCENARIO TARGET RUN PROTO CONNS PIPELINE [--echo-server]
# (PAYLOAD=musicentry-typed in the environment: the typed echo instead of echo)
bench_load() {
    local scen=$1 tgt=$2 run=$3 proto=$4 conns=$5 pipe=$6 extra=${7:-}
    wanted "$scen" || return 0
    local f=$out/logs/$scen.$tgt.$run.csv attempt
    for attempt in 1 2 3; do
        # Warmup included in the CPU figures: the load is the same throughout.
        timed "$tgt" "$rpcmux" bench --threads 1 -q --csv --proto "$proto" \
            --connections "$conns" --pipeline "$pipe" --duration "$dur" --warmup 1 \
            --payload "${PAYLOAD:-musicentry}" $extra "${ADDR[$tgt]}" >"$f" 2>"$f.err"
        [[ -n ${UPSTREAM_BUSY:-} ]] && break
        disturbed || break
        log "$scen $tgt run $run: disturbed (other CPU $OTHER_CPU cores), measuring again"
    done
    # Columns: see `rpcmux bench --csv` (calls_per_sec 8, errors 9, p50 13, p99 15).
    local row
    row=$(tail -1 "$f" | awk -F, '{printf "%s,%s,%s,%s", $8, $13, $15, $9}')
    echo "$scen,$tgt,$run,$row,$SERVER_CPU,$LOAD_CPU,$OTHER_CPU" >>"$results"
    log "$scen $tgt run $run: $(cut -d, -f1 <<<"$row") calls/s (errors $(cut -d, -f4 <<<"$row"), CPU server $SERVER_CPU load $LOAD_CPU other $OTHER_CPU)"
}

xml_echo=$data/xmlrpc_echo_req.xml
json_echo=$data/jsonrpc_echo_req.json
json_ping=$data/jsonrpc_ping_req.json
xml_typed=$data/xmlrpc_echo_typed_req.xml
json_typed=$data/jsonrpc_echo_typed_req.json

log "checking every HTTP target answers without faults"
for t in python-xmlrpc rpcmux-all rpcmux-http rpcmux-machine python-xmlrpc-machine; do wrk_check xmlrpc-echo "$t" "$xml_echo" text/xml; done
for t in jsonrpsee rpcmux-all rpcmux-http; do wrk_check jsonrpc-http-echo "$t" "$json_echo" application/json; done
wrk_check xmlrpc-echo rpcmux-typed "$xml_typed" text/xml
wrk_check xmlrpc-echo rpcmux-nometrics "$xml_echo" text/xml
wrk_check jsonrpc-http-echo rpcmux-typed "$json_typed" application/json
wrk_check gateway-python rpcmux-gateway "$json_echo" application/json

started=$(date +%s)
# Anything else running on the machine skews every figure: say how busy it was.
loadavg_before=$(cut -d' ' -f1-3 /proc/loadavg)
for run in $(seq "$runs"); do
    log "run $run of $runs"
    # XML-RPC over HTTP, echo(MusicEntry), 64 connections (as in the reference figures).
    for t in python-xmlrpc rpcmux-all rpcmux-http hyper-ok; do
        wrk_load xmlrpc-echo "$t" "$run" "$xml_echo" text/xml 64
    done
    wrk_load xmlrpc-echo rpcmux-typed "$run" "$xml_typed" text/xml 64
    wrk_load xmlrpc-echo rpcmux-nometrics "$run" "$xml_echo" text/xml 64
    # JSON-RPC over HTTP, echo(MusicEntry), 64 connections.
    for t in jsonrpsee rpcmux-all rpcmux-http hyper-ok; do
        wrk_load jsonrpc-http-echo "$t" "$run" "$json_echo" application/json 64
    done
    wrk_load jsonrpc-http-echo rpcmux-typed "$run" "$json_typed" application/json 64
    # A new connection per call: every call pays the sniffer. ping, 16 connections.
    for t in rpcmux-all rpcmux-http; do
        wrk_load jsonrpc-http-ping-newconn "$t" "$run" "$json_ping" application/json 16 close
    done
    # msgpack-rpc over TCP, echo(MusicEntry), 16 connections x 8 calls in flight.
    bench_load msgpack-echo msgpack-rpc-python "$run" msgpack 16 8
    bench_load msgpack-echo rpcmux-all "$run" msgpack 16 8
    bench_load msgpack-echo rpcmux-msgpack "$run" msgpack 16 8
    PAYLOAD=musicentry-typed bench_load msgpack-echo rpcmux-typed "$run" msgpack 16 8
    bench_load msgpack-echo rpcmux-nometrics "$run" msgpack 16 8
    bench_load msgpack-echo tcp-echo "$run" msgpack 16 8 --echo-server
    # JSON-RPC over raw TCP, echo(MusicEntry), 16 x 8.
    bench_load jsonrpc-tcp-echo rpcmux-all "$run" jsonrpc-tcp 16 8
    bench_load jsonrpc-tcp-echo rpcmux-jsonrpc-tcp "$run" jsonrpc-tcp 16 8
    PAYLOAD=musicentry-typed bench_load jsonrpc-tcp-echo rpcmux-typed "$run" jsonrpc-tcp 16 8
    bench_load jsonrpc-tcp-echo tcp-echo "$run" jsonrpc-tcp 16 8 --echo-server
    # The gateway: JSON-RPC through rpcmux to the Python XML-RPC server against XML-RPC
    # straight to it (64 connections), and rpcmux in front of jsonrpsee (16 x 8).
    wrk_load gateway-python python-xmlrpc "$run" "$xml_echo" text/xml 64
    UPSTREAM_BUSY=1 wrk_load gateway-python rpcmux-gateway "$run" "$json_echo" application/json 64
    # One connection, one call at a time: the latency the gateway itself adds.
    wrk_load gateway-python-1conn python-xmlrpc "$run" "$xml_echo" text/xml 1
    UPSTREAM_BUSY=1 wrk_load gateway-python-1conn rpcmux-gateway "$run" "$json_echo" application/json 1
    UPSTREAM_BUSY=1 bench_load gateway-rust rpcmux-gateway-rust "$run" jsonrpc-tcp 16 8
    # JSON-RPC over STOMP, echo(MusicEntry): 16 x 8, and one connection, one call at a time.
    bench_load stomp-echo rpcmux-all "$run" stomp 16 8
    bench_load stomp-echo tcp-echo "$run" stomp 16 8 --echo-server
    bench_load stomp-echo-1conn rpcmux-all "$run" stomp 1 1
    # JSON-RPC over WebSocket, echo(MusicEntry), 16 x 8: jsonrpsee's WebSocket server.
    bench_load jsonrpc-ws-echo jsonrpsee-ws "$run" jsonrpc-ws 16 8
    bench_load jsonrpc-ws-echo rpcmux-all "$run" jsonrpc-ws 16 8
    # XML-RPC again, the whole machine: nothing pinned, wrk with a thread per core.
    load_pin=() wrk_threads=$ncpu
    for t in python-xmlrpc-machine rpcmux-machine; do
        wrk_load xmlrpc-echo-machine "$t" "$run" "$xml_echo" text/xml 64
    done
    load_pin=(taskset -c "$load_cpu") wrk_threads=1
done
log "measured in $(($(date +%s) - started)) s; results in $results"
# A row answered with errors does not measure what it names (the gateway row once counted
# its upstream's "overloaded" refusals): say so where it cannot be missed.
awk -F, 'NR > 1 && $7 > 0 { print $1, $2, "run", $3 ":", $7, "errors" }' "$results" |
    while read -r line; do log "WARNING: $line (its calls/s are not all good calls)"; done

{
    echo "nproc=$ncpu"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "kernel=$(uname -r)"
    echo "rustc=$(rustc --version)"
    echo "python=$(python3 --version 2>&1)"
    echo "wrk=$(wrk -v 2>&1 | head -1)"
    echo "server_cpu=$server_cpu"
    echo "load_cpu=$load_cpu"
    echo "runs=$runs"
    echo "duration_s=$dur"
    echo "max_other=$max_other"
    echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
    echo "loadavg_before=$loadavg_before"
    echo "loadavg_after=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "commit=$(git -C "$root" rev-parse --short HEAD)"
} >"$out/machine.txt"

# What authentication costs: its own servers and interleaved rounds (benches/auth_ab.sh
# writes $out/auth_ab.csv; report.py reads it).
if wanted auth-ab; then
    log "what authentication costs: benches/auth_ab.sh"
    OUT=$out "$root/benches/auth_ab.sh" || log "WARNING: benches/auth_ab.sh failed"
fi

if ((report)); then
    # The plot needs matplotlib: a throwaway venv under bench-out when python3 lacks it.
    py=python3
    if ! python3 -c 'import matplotlib' 2>/dev/null; then
        py=$out/plot-venv/bin/python
        if [[ ! -x $py ]] || ! "$py" -c 'import matplotlib' 2>/dev/null; then
            log "installing matplotlib into $out/plot-venv"
            python3 -m venv "$out/plot-venv"
            "$py" -m pip install -q matplotlib || py=python3
        fi
    fi
    "$py" "$root/benches/report.py" "$out" "$root/docs"
fi
