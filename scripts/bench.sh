#!/usr/bin/env bash
# Builds Release and runs benchmark suites.
# Usage: scripts/bench.sh SUITE... [--json]
#   SUITE: program_graph, kv_tiers, net_budget, scheduler, engine (the CPU engine's math,
#   the tokenizer), replay, api (`scripts/bench.sh --list` shows those built). With --json
#   every result is one JSON object per line: {"suite","name","value","unit","baseline",
#   "baseline_value","ratio"}; the baseline was measured in the same run on the same data.
# Builds the named suites' benchmarks and the `switchyard` binary they drive (everything
# with --list or no suite).
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
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) suites+=("$a") ;;
  esac
done

scripts/bootstrap.sh >&2
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_BUILD_TESTS=OFF >&2
# Named suites: only their benchmarks and the server they drive; else everything (to list).
targets=()
for s in "${suites[@]}"; do
  if [[ "$s" == common || -z $(compgen -G "bench/$s/*.cc") ]]; then
    echo "bench: unknown suite '$s' (see scripts/bench.sh --list)" >&2
    exit 2
  fi
  targets+=("bench_$s")
done
if [[ $list -eq 0 && ${#targets[@]} -gt 0 ]]; then
  cmake --build "$BUILD_DIR" -j "$JOBS" --target switchyard "${targets[@]}" >&2
else
  cmake --build "$BUILD_DIR" -j "$JOBS" >&2
fi

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
