#!/usr/bin/env bash
# Installs everything (see setup.sh) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
bash scripts/typecheck.sh
exec .venv/bin/python -m pytest -q "$@"
