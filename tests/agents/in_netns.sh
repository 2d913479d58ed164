#!/usr/bin/env bash
# Runs a command in a new network namespace that has only loopback (`unshare -n`, `lo` up),
# so that whatever it starts — `switchyard serve` and an agent client pointed at it — can
# reach 127.0.0.1 and nothing else: a client cannot phone home, and a test cannot pass by
# reaching a hosted API.
#
#   tests/agents/in_netns.sh node tests/node/claude_code_test.mjs
#
# Needs root (or an unprivileged user namespace with CAP_NET_ADMIN in it) and iproute2's
# `ip`. Without them it prints why and exits 77 (ctest: skipped), unless
# SY_REQUIRE_NPM_TOKENIZERS=1 is set (CI that must run the agent tests), then it fails.
# The command's exit status is passed on.
set -euo pipefail

skip() {
  echo "SKIP: $1"
  if [[ "${SY_REQUIRE_NPM_TOKENIZERS:-}" == 1 ]]; then
    echo "SY_REQUIRE_NPM_TOKENIZERS=1: failing" >&2
    exit 1
  fi
  exit 77
}

[[ $# -ge 1 ]] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }
command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) is not installed"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) is not installed (scripts/bootstrap.sh installs it)"
ns=(unshare -n)
if [[ $(id -u) -ne 0 ]]; then ns=(unshare -r -n); fi  # a user namespace maps us to root
"${ns[@]}" true 2>/dev/null ||
  skip "cannot create a network namespace (${ns[*]} failed: run as root, or allow user namespaces)"

# Inside: loopback up, and no other interface (the namespace is new, so none can exist; the
# check guards against an unshare that did not isolate).
exec "${ns[@]}" -- bash -c '
  set -e
  ip link set lo up
  others=$(ip -o link show | awk -F": " "{print \$2}" | grep -vx lo || true)
  if [[ -n "$others" ]]; then echo "in_netns.sh: interfaces other than lo: $others" >&2; exit 1; fi
  exec "$@"' in_netns "$@"
