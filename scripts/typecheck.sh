#!/usr/bin/env bash
# ruff and mypy over the modules that pass them (mypy --strict where pyproject.toml's override lists them).
# A module joins TYPED when it is clean; the rest of the package is listed in the structure issue's closing note.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TYPED=(
  kforensics/__init__.py kforensics/__main__.py kforensics/severity.py kforensics/catalogue.py
  kforensics/findings.py kforensics/serialize.py kforensics/outputs.py kforensics/errors.py kforensics/verdict_rules.py
  kforensics/formats kforensics/epoch kforensics/recovery kforensics/transactions kforensics/tables
  kforensics/cli kforensics/checks kforensics/scenario kforensics/report kforensics/dump
  kforensics/plots.py kforensics/plots_fleet.py kforensics/log/segment.py
  kforensics/kraft/election.py kforensics/kraft/cluster_state.py kforensics/kraft/quorum.py
  kforensics/kraft/metadata_log_copies.py kforensics/kraft/timeline_model.py kforensics/kraft/timeline.py
  kforensics/kraft/timeline_registrations.py kforensics/kraft/timeline_snapshots.py kforensics/kraft/timeline_replay.py
  kforensics/kraft/metadata_log_records.py kforensics/kraft/grants.py
  kforensics/salvage kforensics/payloads
)
.venv/bin/ruff check --output-format concise "${TYPED[@]}"
# errors are reported for these files only; the modules they import are read, not judged
.venv/bin/mypy --follow-imports=silent "${TYPED[@]}"
