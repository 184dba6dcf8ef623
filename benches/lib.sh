# Shell helpers the benchmark scripts share (sourced by compare.sh, gateway_ab.sh and
# metrics_ab.sh).

# wrk's latency figures in ms ("1.23ms", "850.00us", "1.02s").
to_ms() {
    awk -v v="$1" 'BEGIN {
        if (v ~ /us$/) { sub(/us$/, "", v); print v / 1000 }
        else if (v ~ /ms$/) { sub(/ms$/, "", v); print v + 0 }
        else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000 }
        else print v }'
}

# The median of the numbers on stdin, one a line.
median() { sort -n | awk '{a[NR] = $1} END {print (a[int((NR + 1) / 2)] + a[int(NR / 2) + 1]) / 2}'; }
