#!/usr/bin/env bash
# The main job of Switchyard, with embedded defaults.
#
# Installs dependencies (scripts/bootstrap.sh), builds Release, starts `switchyard serve`
# with the embedded defaults (127.0.0.1:8470, one worker, loopback topology) and the
# reference CPU engine: the demo model, a small Qwen3-architecture model with RANDOM
# weights over Qwen3's real vocabulary and chat template (demo-qwen3-random,
# configs/models/demo-qwen3-random.json: its text is meaningless; its tokenizer is the npm
# package scripts/bootstrap.sh installs) computed on this machine's CPU, its KV in real
# bytes in a 6 MiB pool (small: the sessions contend for it), demoted to / prefetched from
# the host and RocksDB disk tiers for real. Then it drives a sample agent workload through the HTTP API
# with the Python client: the committed sample of real coding-agent sessions
# (tests/fixtures/agent_sessions_sample.jsonl; source and licence in
# tests/fixtures/README.md), converted with `switchyard convert`, token counts x0.1
# (TOKEN_SCALE) so the CPU engine computes them in a minute or two. Tool waits are real
# sleeps of the sessions' recorded tool durations compressed by TIME_SCALE (default 0.1:
# ten times faster); arrivals are compressed by the same factor.
# ENGINE=simulated runs the simulated engine instead (roofline step times of Llama-3.1-8B on
# an H100, emulated tiers, full token counts).
# A live progress line runs while it plays; then a summary (JCT, decisions by kind, bytes
# moved per tier, the real KV bytes copied, each worker's engine and pool) and the dashboard
# URL. Keeps serving until Ctrl-C; `--once` exits after the workload.
# Environment: BUILD_DIR (build-release/), OUT_DIR (var/), LISTEN (127.0.0.1:8470),
# TIME_SCALE (0.1), ENGINE (cpu|simulated), MODEL (demo-qwen3-random; or a shape file or
# a checkpoint directory), TOKEN_SCALE (0.1), KV_POOL_MIB (6), JOBS (nproc),
# SKIP_BOOTSTRAP=1 to skip installing dependencies,
# SWITCHYARD_BIN=path to use an already built binary (no bootstrap, no build).
set -euo pipefail
cd "$(dirname "$0")/.."
ONCE=0
for arg in "$@"; do
  case "$arg" in
    --once) ONCE=1 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg' (use --once)" >&2; exit 2 ;;
  esac
done
BUILD_DIR=${BUILD_DIR:-build-release}
OUT_DIR=${OUT_DIR:-var}
LISTEN=${LISTEN:-127.0.0.1:8470}
TIME_SCALE=${TIME_SCALE:-0.1}
ENGINE=${ENGINE:-cpu}  # cpu: the reference CPU engine computes the calls; simulated
MODEL=${MODEL:-demo-qwen3-random}  # the embedded demo model, a shape file or a checkpoint dir
TOKEN_SCALE=${TOKEN_SCALE:-0.1}
KV_POOL_MIB=${KV_POOL_MIB:-6}
JOBS=${JOBS:-$(nproc)}

if [ -n "${SWITCHYARD_BIN:-}" ]; then
  SY="$SWITCHYARD_BIN"  # an existing binary: no bootstrap, no build
else
  [ "${SKIP_BOOTSTRAP:-0}" = 1 ] || scripts/bootstrap.sh
  echo "== building Release in $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_BUILD_TESTS=OFF \
    -DSWITCHYARD_BUILD_BENCH=OFF >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS" --target switchyard
  SY="$BUILD_DIR/bin/switchyard"
fi
mkdir -p "$OUT_DIR"
echo; echo "== $("$SY" version)"

echo; echo "== converting the committed agent-session sample into a workflow trace"
SCALE_ARGS=()
ENGINE_ARGS=()
if [ "$ENGINE" = cpu ]; then
  # The CPU engine computes every token: the sessions' token counts x TOKEN_SCALE.
  # Nodes name the served model (its shape file's "name"), which the server checks.
  # The served model's name: a shape file's "name", a checkpoint directory's own name, or
  # the embedded demo model's.
  MODEL_ID=$(python3 -c 'import json, os, sys
p = sys.argv[1]
print(json.load(open(p))["name"] if os.path.isfile(p) else os.path.basename(os.path.normpath(p)))' "$MODEL")
  SCALE_ARGS=(--token-scale "$TOKEN_SCALE" --model "$MODEL_ID")
  ENGINE_ARGS=(--engine cpu --model "$MODEL" --kv-pool-mib "$KV_POOL_MIB")
  echo "   (token counts x$TOKEN_SCALE for the cpu engine: $MODEL, random weights)"
fi
"$SY" convert --from agent-sessions tests/fixtures/agent_sessions_sample.jsonl \
  -o "$OUT_DIR/sample_trace.jsonl" --arrival poisson --rate 0.05 --tenants 1 --seed 1 \
  --deadline-factor 0 --output-cap recorded "${SCALE_ARGS[@]}"

DATA_DIR="$OUT_DIR/service"
LOG="$OUT_DIR/serve.log"
echo; echo "== starting switchyard serve (log: $LOG, data: $DATA_DIR)"
"$SY" serve --listen "$LISTEN" --data-dir "$DATA_DIR" "${ENGINE_ARGS[@]}" >"$LOG" 2>&1 &
SERVER=$!
stop_server() {
  if kill -0 "$SERVER" 2>/dev/null; then
    kill -TERM "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
  fi
}
trap stop_server EXIT
trap 'echo; echo "run.sh: interrupted, stopping the server"; exit 130' INT TERM
URL="http://$LISTEN"
healthy() {
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + "/healthz", timeout=1)' \
    "$URL" >/dev/null 2>&1
}
for _ in $(seq 1 100); do
  healthy && break
  kill -0 "$SERVER" 2>/dev/null || { cat "$LOG"; echo "run.sh: the server exited" >&2; exit 1; }
  sleep 0.1
done
healthy || { cat "$LOG"; echo "run.sh: the server did not come up" >&2; exit 1; }
grep -E "^(switchyard serving|scheduler:)" "$LOG" || true
TOKEN=$(cat "$DATA_DIR/tokens/default")

echo; echo "== playing $(wc -l <"$OUT_DIR/sample_trace.jsonl") agent sessions through the HTTP API" \
  "(tool waits x$TIME_SCALE of their recorded durations)"
STATUS=0
python3 clients/python/run_workload.py --url "$URL" --token "$TOKEN" \
  --trace "$OUT_DIR/sample_trace.jsonl" --time-scale "$TIME_SCALE" || STATUS=$?

echo; echo "dashboard: $URL/  (tenant token in $DATA_DIR/tokens/default)"
if [ "$ONCE" = 1 ]; then
  exit "$STATUS"
fi
echo "serving until Ctrl-C"
wait "$SERVER"
