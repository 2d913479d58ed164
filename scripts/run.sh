#!/usr/bin/env bash
# The main job of Switchyard, with embedded defaults.
#
# Installs dependencies (scripts/bootstrap.sh), builds Release, starts `switchyard serve`
# with the embedded defaults (127.0.0.1:8470, one simulated worker, emulated HBM/host/disk
# tiers, loopback topology, the simulated engine for LLM nodes, the simulated KV
# mover), then drives a sample agent workload through the HTTP API with the Python client:
# the committed sample of real coding-agent sessions (tests/fixtures/agent_sessions_sample.jsonl;
# source and licence in tests/fixtures/README.md), converted with `switchyard convert`.
# Tool waits are real sleeps of the sessions' recorded tool durations compressed by
# TIME_SCALE (default 0.1: ten times faster); arrivals are compressed by the same factor.
# LLM calls take the simulated engine's time (roofline of Llama-3.1-8B on an H100).
# A live progress line runs while it plays; then a summary (JCT, decisions by kind, bytes
# moved per tier) and the dashboard URL. Keeps serving until Ctrl-C; `--once` exits after
# the workload.
# Environment: BUILD_DIR (build-release/), OUT_DIR (var/), LISTEN (127.0.0.1:8470),
# TIME_SCALE (0.1), JOBS (nproc), SKIP_BOOTSTRAP=1 to skip installing dependencies,
# SWITCHYARD_BIN=path to use an already built binary (no bootstrap, no build).
set -euo pipefail
cd "$(dirname "$0")/.."
ONCE=0
for arg in "$@"; do
  case "$arg" in
    --once) ONCE=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg' (use --once)" >&2; exit 2 ;;
  esac
done
BUILD_DIR=${BUILD_DIR:-build-release}
OUT_DIR=${OUT_DIR:-var}
LISTEN=${LISTEN:-127.0.0.1:8470}
TIME_SCALE=${TIME_SCALE:-0.1}
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
"$SY" convert --from agent-sessions tests/fixtures/agent_sessions_sample.jsonl \
  -o "$OUT_DIR/sample_trace.jsonl" --arrival poisson --rate 0.05 --tenants 1 --seed 1 \
  --deadline-factor 0

DATA_DIR="$OUT_DIR/service"
LOG="$OUT_DIR/serve.log"
echo; echo "== starting switchyard serve (log: $LOG, data: $DATA_DIR)"
"$SY" serve --listen "$LISTEN" --data-dir "$DATA_DIR" >"$LOG" 2>&1 &
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
