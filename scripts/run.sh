#!/usr/bin/env bash
# The main job of Switchyard, with embedded defaults.
#
# At this stage of the project (see README "Main job"), it: installs dependencies,
# builds Release, shows the build and the topology it can discover, converts the
# committed sample of real coding-agent sessions into a Switchyard workflow trace,
# validates and analyses every workflow in it with the real program_graph code, and
# analyses one example agent workflow. The HTTP service and the replay benchmark take
# over this script as their issues land.
# Environment: BUILD_DIR (default build-release/), OUT_DIR (default var/).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-release}
OUT_DIR=${OUT_DIR:-var}
JOBS=${JOBS:-$(nproc)}

scripts/bootstrap.sh
echo "== building Release in $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSWITCHYARD_BUILD_TESTS=OFF \
  -DSWITCHYARD_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target switchyard
SY="$BUILD_DIR/bin/switchyard"
mkdir -p "$OUT_DIR"

echo; echo "== $("$SY" version)"
if "$SY" help | grep -q '^  topo '; then
  echo; echo "== topology discovered on this machine (switchyard topo)"
  "$SY" topo || echo "(topology discovery failed; see the error above)"
fi

echo; echo "== converting the committed agent-session sample into a workflow trace"
"$SY" convert --from agent-sessions tests/fixtures/agent_sessions_sample.jsonl \
  -o "$OUT_DIR/sample_trace.jsonl" --arrival poisson --rate 0.05 --repeat 5 --tenants 2 \
  --seed 1 --deadline-factor 3
echo; echo "== validating every workflow of the trace (switchyard graph)"
"$SY" graph "$OUT_DIR/sample_trace.jsonl"
echo; echo "== analysing an example coding-agent workflow"
"$SY" graph examples/workflows/coding_agent.json
echo; echo "== an invalid workflow is rejected with the reason:"
"$SY" graph examples/workflows/invalid_cycle.json || true
echo; echo "done: trace in $OUT_DIR/sample_trace.jsonl"
