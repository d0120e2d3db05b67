#!/usr/bin/env bash
# ruff and mypy over the whole package (mypy --strict on the modules pyproject.toml's strict override lists).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Files another engineer is changing at this moment, judged again once their change lands: mypy still reads
# them (other modules import them), their own errors are not counted.  Each says why; the list is meant to be empty.
EXCLUDED=(
  # the lead's (replay's restart, in progress): the recovery plan and the window's prefix narrowed from Optional
  kforensics/replay/restart.py
  # another engineer's (salvage, #25): the leader-unsettled finding reads the election's returning brokers from a
  # value found by getattr (None when absent) without narrowing it
  kforensics/salvage/records.py
)
.venv/bin/ruff check --output-format concise kforensics
status=0
report=$(.venv/bin/mypy kforensics) || status=$?
if [ "$status" -gt 1 ]; then  # 2: mypy itself failed (a crash, a bad configuration), not the code
  printf '%s\n' "$report"
  exit "$status"
fi
errors=$(printf '%s\n' "$report" | grep -E '^kforensics/[^:]+:[0-9]+: error:' || true)
for f in "${EXCLUDED[@]}"; do
  errors=$(printf '%s\n' "$errors" | grep -vF "$f:" || true)
done
if [ -n "$errors" ]; then
  printf '%s\n' "$errors"
  echo "mypy: $(printf '%s\n' "$errors" | wc -l) error(s) (excluded: ${EXCLUDED[*]})"
  exit 1
fi
echo "mypy: no errors in kforensics (excluded: ${EXCLUDED[*]})"
