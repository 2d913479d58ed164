#!/usr/bin/env bash
# clang-format over every tracked or new C++/CUDA file. --check fails on any unformatted
# file and lists them; without it, files are reformatted in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
  '*.h' '*.cc' '*.cpp' '*.cu' '*.cuh' | grep -v '^examples/.*/build/' || true)
if [[ ${#files[@]} -eq 0 ]]; then echo "format: no files"; exit 0; fi
if [[ "${1:-}" == "--check" ]]; then
  bad=()
  for f in "${files[@]}"; do
    [[ -f "$f" ]] || continue
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [[ ${#bad[@]} -gt 0 ]]; then
    echo "format: ${#bad[@]} file(s) need clang-format (run scripts/format.sh):"
    printf '  %s\n' "${bad[@]}"
    exit 1
  fi
  echo "format: ${#files[@]} files clean"
else
  clang-format -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
fi
