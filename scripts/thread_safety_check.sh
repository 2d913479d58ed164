#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety) over every translation unit that uses the
# annotations of base/thread_annotations.h: each .cc of the build that uses the lock types of
# base/mutex.h or the annotations, or includes an annotated header of its folder. The code is
# only parsed and analysed (-fsyntax-only), with the flags the build compiles it with
# (compile_commands.json); nothing is code-generated, so this costs a fraction of a second
# clang build (docs/design.md, "Thread-safety annotations"). Fails on any thread-safety
# warning, and on a file clang cannot parse.
#
# Usage: thread_safety_check.sh [BUILD_DIR]   (default: build; must hold compile_commands.json
#        and the generated headers, i.e. a configured and built tree)
# Environment: CLANGXX (default clang++-14, else clang++), JOBS (default: nproc),
#              ONLY (a regex: only the matching source paths, while fixing warnings).
# Exit status: 0 clean, 1 warnings or parse errors, 77 no clang++ (ctest: skipped).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
clangxx="${CLANGXX:-}"
if [[ -z "$clangxx" ]]; then
  for c in clang++-14 clang++; do
    if command -v "$c" >/dev/null; then clangxx="$c"; break; fi
  done
fi
if [[ -z "$clangxx" ]]; then
  echo "thread_safety: SKIPPED: no clang++ on PATH (set CLANGXX); the analysis needs clang"
  exit 77
fi
if [[ ! -f "$build/compile_commands.json" ]]; then
  echo "thread_safety: $build/compile_commands.json missing (configure with CMake first)" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# One shell command per translation unit: the build's command with clang, syntax only, and
# every warning off but the thread-safety ones (which are errors).
python3 - "$root" "$build" "$clangxx" "$work" <<'PY'
import json, os, re, shlex, sys
root, build, clangxx, work = sys.argv[1:]
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
annotation = re.compile(r'\b(GUARDED_BY|PT_GUARDED_BY|REQUIRES|REQUIRES_SHARED|EXCLUDES|ACQUIRE|'
                        r'RELEASE|CAPABILITY|SCOPED_CAPABILITY)\b')
def read(path):
    try:
        return open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
    except OSError:
        return None
locks = re.compile(r'\b(Mutex|SharedMutex|MutexLock|ReaderMutexLock|WriterMutexLock|CondVar)\b')
def uses(rel):
    """A .cc is analysed when it uses the lock types or annotations itself, or includes
    directly an annotated header of its own folder (or below it): the files that define
    annotated classes' functions. A file elsewhere that only calls them cannot break their
    rules (an inline function is analysed with its own folder's files), so the many files
    that only include, say, base/metrics.h need not be parsed."""
    text = read(rel) or ""
    if annotation.search(text) or locks.search(text):
        return True
    folder = os.path.dirname(rel) + "/"
    for inc in include.findall(text):
        if inc.startswith(folder) and inc.endswith(".h"):
            h = read(inc)
            if h is not None and annotation.search(h):
                return True
    return False
def sources(f):
    """The .cc files the entry compiles: f itself, or those a unity build's batch file
    (SWITCHYARD_UNITY_BUILD) includes, each analysed alone with the batch's flags."""
    if not re.search(r"/Unity/unity_\w+\.cxx$", f):
        return [f]
    return [os.path.realpath(s) for s in re.findall(r'^#include "(.+\.cc)"', open(f).read(), re.M)]
units = []
for entry, f in ((e, s) for e in json.load(open(os.path.join(build, "compile_commands.json")))
                 for s in sources(os.path.realpath(os.path.join(e["directory"], e["file"])))):
    rel = os.path.relpath(f, root)
    if rel.startswith("..") or not rel.endswith(".cc") or rel.startswith("build"):
        continue
    if os.environ.get("ONLY") and not re.search(os.environ["ONLY"], rel):
        continue
    if not uses(rel):
        continue
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    out, skip = [clangxx], False
    for i, a in enumerate(args[1:], start=1):
        if skip: skip = False; continue
        if a == "-o": skip = True; continue
        # The test binaries' precompiled header is GCC's (tests/common/pch.h); clang parses
        # each source's own includes instead.
        if a == "-include" and args[i + 1:i + 2] and args[i + 1].endswith("cmake_pch.hxx"):
            skip = True; continue
        if a in ("-c", f, entry["file"]) or a.startswith("-W") or a.startswith("-fsanitize"):
            continue
        out.append(a)
    out += ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety",
            "-Wno-thread-safety-negative", f]
    units.append((rel, "cd %s && %s" % (shlex.quote(entry["directory"]), shlex.join(out))))
units.sort()
os.makedirs(os.path.join(work, "units"))
for i, (rel, cmd) in enumerate(units):
    with open(os.path.join(work, "units", "%04d.sh" % i), "w") as w:
        w.write("# %s\n%s\n" % (rel, cmd))
PY
n=$(find "$work/units" -name '*.sh' | wc -l)
jobs="${JOBS:-$(nproc)}"
echo "thread_safety: $n translation units with $clangxx, $jobs at a time"
start=$(date +%s)
# Each unit writes its output beside its script; any output or a failure makes a .fail.
find "$work/units" -name '*.sh' | sort | xargs -P "$jobs" -I{} bash -c \
  'bash "$1" >"$1.out" 2>&1 && [[ ! -s "$1.out" ]] || { head -1 "$1"; cat "$1.out"; } >"$1.fail"' \
  _ {}
echo "thread_safety: done in $(( $(date +%s) - start )) s"
shopt -s nullglob
fails=("$work"/units/*.fail)
if [[ ${#fails[@]} -gt 0 ]]; then
  cat "${fails[@]}"
  echo "thread_safety: FAILED in ${#fails[@]} of $n translation units"
  exit 1
fi
echo "thread_safety: $n translation units clean"
