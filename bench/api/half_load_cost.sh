#!/bin/bash
# CPU per answered event at a fixed open-loop rate, per server thread and for the whole
# machine (server, load generator, kernel): the figure behind bench api's "half load" rows,
# steadier than a P99 on a small shared machine, so two builds or settings can be compared
# in interleaved runs.
#
# usage: bench/api/half_load_cost.sh SWITCHYARD_BIN [RATE] [EXTRA_CONFIG_JSON]
#   e.g. bench/api/half_load_cost.sh build/bin/switchyard 30000 '"commitDelayUs": -1,'
# Starts a fresh server (data under a temp dir), 3 s of closed-loop warmup, then two
# 5-second open-loop phases of the events workload at RATE (default 30000) over 192
# connections; prints, per phase, answers, client P99, and CPU µs per answer.
set -euo pipefail
BIN=${1:?usage: half_load_cost.sh SWITCHYARD_BIN [RATE] [EXTRA_CONFIG_JSON]}
RATE=${2:-30000}
EXTRA=${3:-}
PORT=${PORT:-18471}
TOK=0123456789abcdef0123456789abcdef
DIR=$(mktemp -d)
trap 'kill $SP 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DIR"' EXIT
echo "{\"threads\":2,\"maxInflight\":256,$EXTRA\"tenants\":[{\"name\":\"bench\",\"token\":\"$TOK\",\"rateLimitPerS\":10000000,\"rateBurst\":10000000,\"maxWorkflows\":1000000}]}" >"$DIR/cfg.json"
"$BIN" serve --config "$DIR/cfg.json" --listen 127.0.0.1:$PORT --data-dir "$DIR/data" >"$DIR/serve.log" 2>&1 &
SP=$!
sleep 1.5
lg() { "$BIN" loadgen --target 127.0.0.1:$PORT --token $TOK --connections 192 --warmup 0 "$@" 2>/dev/null; }
threads() {  # name ticks, summed over the server's threads of that name
  for t in /proc/$SP/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done |
    awk '{a[$1]+=$2} END {for (k in a) print k, a[k]}' | sort
}
machine() { head -1 /proc/stat | awk '{print $2+$3+$4+$7+$8}'; }  # user nice system irq softirq
lg --duration 3 >/dev/null
HZ=$(getconf CLK_TCK)
for phase in 1 2; do
  threads >"$DIR/t0"; M0=$(machine)
  lg --duration 5 --rate "$RATE" >"$DIR/out"
  threads >"$DIR/t1"; M1=$(machine)
  read -r N P99 < <(python3 -c "import json,sys; d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); print(d['answers'], d['p99Ms'])" "$DIR/out")
  S=$(join "$DIR/t0" "$DIR/t1" | awk -v n="$N" -v hz="$HZ" '{s += $3-$2; if ($3 > $2) printf "%s %.1f ", $1, ($3-$2)*1e6/hz/n} END {printf "| server %.1f", s*1e6/hz/n}')
  echo "phase $phase: $N answers, P99 $P99 ms; CPU us/answer: $S | machine $(awk -v a="$M0" -v b="$M1" -v n="$N" -v hz="$HZ" 'BEGIN {printf "%.1f", (b-a)*1e6/hz/n}')"
done
