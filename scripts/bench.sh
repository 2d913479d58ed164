#!/usr/bin/env bash
# Builds Release and runs benchmark suites.
# Usage: scripts/bench.sh SUITE... [--json]
#   SUITE: program_graph, kv_tiers, net_budget, scheduler, engine (the CPU engine's math,
#   the tokenizer), replay, api (`scripts/bench.sh --list` shows those built). With --json
#   every result is one JSON object per line: {"suite","name","value","unit","baseline",
#   "baseline_value","ratio"}; the baseline was measured in the same run on the same data.
# Environment: BENCH_BUILD_DIR (default build-release/), JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BENCH_BUILD_DIR:-build-release}
JOBS=${JOBS:-$(nproc)}

json=()
suites=()
list=0
for a in "$@"; do
  case "$a" in
    --json) json=(--json) ;;
    --list) list=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) suites+=("$a") ;;
  esac
done

scripts/bootstrap.sh >&2
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_BUILD_TESTS=OFF >&2
cmake --build "$BUILD_DIR" -j "$JOBS" >&2

available=()
for b in "$BUILD_DIR"/bin/bench_*; do
  [[ -x "$b" ]] && available+=("${b##*/bench_}")
done
if [[ $list -eq 1 || ${#suites[@]} -eq 0 ]]; then
  echo "suites: ${available[*]}" >&2
  [[ $list -eq 1 ]] && exit 0
  echo "usage: scripts/bench.sh SUITE... [--json]" >&2
  exit 2
fi

for s in "${suites[@]}"; do
  bin="$BUILD_DIR/bin/bench_$s"
  if [[ ! -x "$bin" ]]; then
    echo "bench: unknown suite '$s' (available: ${available[*]})" >&2
    exit 2
  fi
  "$bin" "${json[@]}"
done
