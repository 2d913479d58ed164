#!/usr/bin/env bash
# Installs the Debian packages Switchyard builds against, idempotently: packages already
# present are skipped, and `apt-get update` runs only when something is missing.
# Usage: scripts/bootstrap.sh [--with-browser]   (--with-browser adds headless Chromium,
# used by the dashboard test)
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libboost-dev libboost-system-dev      # Asio event loop, Beast HTTP
  libprotobuf-dev protobuf-compiler     # schema, JSON mapping, persistence records
  librocksdb-dev                        # disk tier, durable workflow state
  libspdlog-dev libfmt-dev              # structured logging
  libxxhash-dev                         # block checksums (xxHash64)
  libucx-dev ucx-utils                  # peer transport (TCP, shared memory, verbs)
  libibverbs-dev librdmacm-dev          # RDMA verbs, used by UCX where a device exists
  libgtest-dev libgmock-dev             # tests
  libbenchmark-dev                      # microbenchmarks
  clang-format                          # style check
  iproute2                              # network-namespace integration tests
  python3                               # Python client and its tests
)
if [[ "${1:-}" == "--with-browser" ]]; then
  PACKAGES+=(chromium)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "bootstrap: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "bootstrap: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
echo "bootstrap: done"
