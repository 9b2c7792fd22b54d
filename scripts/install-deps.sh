#!/usr/bin/env bash
# Installs the Debian 12 packages Herd needs that are not installed yet (apt-get; root or sudo).
# Idempotent: when everything is present it changes nothing and needs no network.
#
#   scripts/install-deps.sh            what building, running and testing Herd needs (CI, test.sh)
#   scripts/install-deps.sh --minimal  what building Herd and training on Fashion-MNIST needs
#                                      (the quick start, a cluster's machines): not what only the
#                                      tests run (a Prometheus server, which Debian would start as
#                                      a service on port 9090, openssl, iproute2, curl), nor the
#                                      optional data (fortunes) and tools (gnuplot, python3)
set -euo pipefail

minimal=0
case "${1:-}" in
  "") ;;
  --minimal) minimal=1 ;;
  --help | -h) sed -n 2,10p "$0" | cut -c3-; exit 0 ;;
  *) echo "install-deps: unknown argument '$1' (usage: scripts/install-deps.sh [--minimal])" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config
  libcaf-dev              # actors (CAF 0.17)
  libgloo-dev             # the gloo data plane (Gloo's TCP transport, CMake target gloo)
  libopenblas-dev         # CPU GEMM
  zlib1g-dev              # gzip IDX files
  nlohmann-json3-dev      # the JSON report
  libcereal-dev           # checkpoints' archives (header-only, CMake target cereal::cereal)
  libgtest-dev libgmock-dev libbenchmark-dev  # the default build has the tests and benchmarks
  libcpp-httplib-dev      # the tests' HTTP client and examples/job_service's server (pkg-config cpp-httplib)
  libssl-dev              # control-plane TLS in the gate (OpenSSL)
  dataset-fashion-mnist   # the data of the quick start
)
extras=(
  fortunes fortunes-de fortunes-it fortunes-es fortunes-pl fortunes-cs fortunes-ru  # data.dataset = fortunes (docs/text.md)
  gnuplot-nox             # herd bench plots accuracy against wall time
  python3                 # scripts/plot-step-times reads a report's JSON
  curl                    # the job service example's test talks to it as a user would
  prometheus              # promtool and a real server for the metrics tests
  openssl                 # the cluster tests make a CA and certificates for control-plane TLS
  iproute2                # the cluster tests join network namespaces with veth (ip netns)
)

((minimal)) || packages+=("${extras[@]}")

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (or install sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
