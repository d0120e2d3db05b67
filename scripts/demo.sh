#!/usr/bin/env bash
# Installs everything (see setup.sh), then runs the main job on the bundled fixtures:
# a scan of a damaged broker log dir, with Parquet tables written to /tmp/kforensics-demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
set +e
.venv/bin/kforensics scan fixtures/brokers/damaged --out /tmp/kforensics-demo
code=$?
set -e
echo "exit code $code (1 = findings at or above --fail-on high); Parquet tables in /tmp/kforensics-demo"
[ "$code" -le 1 ]
