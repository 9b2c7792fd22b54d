#!/usr/bin/env bash
# The README's second command (and what CI runs): install what is missing, build, and run every
# test. GPU tests skip where there is no device. Extra arguments go to ctest, e.g. -L data.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh -DHERD_WERROR=ON # a warning in Herd's code fails the tests too
# The dataset was just installed: its tests must run, not skip.
HERD_REQUIRE_DATA=1 HERD_REQUIRE_PROMETHEUS=1 ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" "$@"
