#!/usr/bin/env bash
# Installs everything (see setup.sh) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
bash scripts/typecheck.sh
# two workers (CI has 2 cores), a test file's tests on one worker (module fixtures built once)
exec .venv/bin/python -m pytest -q -n 2 --dist loadfile "$@"
