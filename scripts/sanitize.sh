#!/usr/bin/env bash
# Builds and tests Herd under a sanitizer: scripts/sanitize.sh address (ASan+UBSan, default) or
# scripts/sanitize.sh thread (TSan). Builds into build-<sanitizer>/; extra arguments go to ctest.
# TSan leaves out the tests labelled caf: Debian's libcaf_core is not built with TSan, so the
# synchronisation of its mailboxes is invisible and every message between threads reads as a
# race (measured: hundreds of reports, all in CAF's mailbox_element). The thread-safety of
# Herd's own concurrent code outside CAF (compute_thread, buffer_pool, the local and Gloo data planes, the watchdog, the metric
# registry, the metrics endpoint, the control gate) is covered.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer="${1:-address}"
shift || true
build_dir="build-${sanitizer}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHERD_SANITIZERS="$sanitizer" \
  -DHERD_BUILD_BENCH=OFF -DHERD_WITH_CUDA=OFF
cmake --build "$build_dir" -j "$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
# CAF's middleman leaks on some shutdown paths (scripts/lsan.supp says which); ours are checked.
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Gloo synchronises a buffer's destruction in code TSan cannot see (scripts/tsan.supp says how).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp"
excluded="slow"
[ "$sanitizer" = thread ] && excluded="slow|caf"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -LE "$excluded" "$@"
