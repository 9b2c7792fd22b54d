#!/usr/bin/env bash
# Checks formatting (clang-format, .clang-format) and runs clang-tidy (.clang-tidy) over Herd's
# sources using build/compile_commands.json. `scripts/lint.sh --fix` reformats in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.cu')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${sources[@]}"
  exit 0
fi
status=0
clang-format --dry-run --Werror "${sources[@]}" || status=1
[ -f build/compile_commands.json ] || scripts/build.sh >/dev/null
# bench/ is left out: Google Benchmark's `for (auto _ : state)` idiom reads as a dead store.
mapfile -t tidy_sources < <(git ls-files '*.cpp' ':!bench/*')
clang-tidy -p build --quiet "${tidy_sources[@]}" 2>/dev/null | grep -E "warning:|error:" && status=1
exit $status
