#!/usr/bin/env bash
# Configures and builds Herd into build/ (Release, Ninja). Extra arguments go to cmake's configure
# step, e.g. scripts/build.sh -DHERD_WITH_CUDA=OFF. BUILD_DIR overrides the directory.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
jobs="$(nproc)"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@"
cmake --build "$build_dir" -j "$jobs"
