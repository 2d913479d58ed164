#!/usr/bin/env bash
# Installs Switchyard from a build dir into a temporary prefix, then configures, builds and
# runs examples/embed (a separate CMake project using find_package(Switchyard CONFIG)): a
# toy engine with its own KV memory registered through the embedding API, run through a
# demotion and a prefetch (tiny-llama-2l, random weights). Fails on any error, and when
# the engine's memory after the prefetch differs from before the demotion. Usage: scripts/embed_example.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-${BUILD_DIR:-build}}
JOBS=${JOBS:-2}
[ -f "$BUILD_DIR/CMakeCache.txt" ] || { echo "embed_example: $BUILD_DIR is not a build dir" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sy_embed.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
PREFIX="$TMP/prefix"

echo "== building the installed libraries in $BUILD_DIR"
cmake --build "$BUILD_DIR" -j "$JOBS" --target sy_service
echo "== installing into $PREFIX"
# Installs only what sy_service needs (the `switchyard` binary too, when it is built).
cmake --install "$BUILD_DIR" --prefix "$PREFIX" >"$TMP/install.log" || {
  cat "$TMP/install.log"; exit 1; }
# Flags the libraries were built with (sanitizers) apply to the example too.
CXX_FLAGS=$(sed -n 's/^CMAKE_CXX_FLAGS:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
SANITIZE=$(sed -n 's/^SWITCHYARD_SANITIZE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
EXTRA=()
if [ -n "$SANITIZE" ]; then
  EXTRA+=("-DCMAKE_CXX_FLAGS=$CXX_FLAGS -fsanitize=$SANITIZE -fno-omit-frame-pointer"
          "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=$SANITIZE")
fi
echo "== configuring and building examples/embed against the installed package"
cmake -S examples/embed -B "$TMP/build" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_BUILD_TYPE=Release "${EXTRA[@]}" >"$TMP/configure.log" || {
  cat "$TMP/configure.log"; exit 1; }
cmake --build "$TMP/build" -j "$JOBS"
echo "== running the example"
"$TMP/build/embed_example" "$TMP/data" "$PWD/configs/models/tiny-llama-2l.json"
echo "embed_example: OK"
