#!/usr/bin/env bash
# Every `switchyard` command answers --help with its usage on stdout and exit status 0,
# and refuses an unknown option with exit status 2 and a message on stderr. The commands
# are the ones `switchyard` (no arguments) lists, so a new command is checked too.
# Usage: help_test.sh PATH/TO/switchyard
set -uo pipefail
SY=${1:?usage: help_test.sh PATH/TO/switchyard}
fail=0
commands=$("$SY" 2>&1 | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
[ -n "$commands" ] || { echo "FAIL: no commands listed by '$SY'"; exit 1; }
for c in $commands; do
  out=$("$SY" "$c" --help 2>/dev/null); rc=$?
  if [ $rc -ne 0 ] || ! grep -q "usage\|switchyard" <<<"$out"; then
    echo "FAIL: '$c --help' exited $rc with stdout: $out"; fail=1
  fi
  [ "$c" = version ] && continue  # takes no options
  err=$("$SY" "$c" --no-such-option x 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 2 ] || [ -z "$err" ]; then
    echo "FAIL: '$c --no-such-option x' exited $rc (want 2) with stderr: $err"; fail=1
  fi
done
[ $fail -eq 0 ] && echo "OK: $(wc -w <<<"$commands") commands"
exit $fail
