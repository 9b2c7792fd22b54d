#!/usr/bin/env bash
# The README's first command: install what is missing (no test tools: scripts/test.sh adds them),
# build, and train the quick-start job
# (herd train with config/quickstart.ini). Extra arguments go to herd train, e.g.
# scripts/quickstart.sh --train.workers=8
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --minimal
scripts/build.sh
echo "built build/cli/herd; training:"
exec build/cli/herd train --config config/quickstart.ini --report build/quickstart-report.json "$@"
