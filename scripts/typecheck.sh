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
  kforensics/kraft/metadata_log_records.py kforensics/kraft/grants.py kforensics/kraft/controller_choice.py
  kforensics/replay/leadership.py kforensics/replay/acknowledgements.py
  kforensics/salvage kforensics/payloads kforensics/tiered
  kforensics/scan kforensics/consumers kforensics/log/paths.py kforensics/log/partition.py kforensics/log/listing.py
  kforensics/log/archive_spool.py kforensics/log/arrow_path.py kforensics/log/batch_table.py kforensics/log/file_hash.py
  kforensics/log/file_kinds.py kforensics/log/log_dir.py kforensics/log/log_entry.py kforensics/log/metadata_log.py
  kforensics/log/read_window.py kforensics/log/record_offsets.py kforensics/log/record_types.py
  kforensics/log/records.py kforensics/log/side_files.py kforensics/log/segment_reader.py kforensics/log/kernels
  kforensics/log/object_store.py
)
.venv/bin/ruff check --output-format concise "${TYPED[@]}"
# errors are reported for these files only; the modules they import are read, not judged
.venv/bin/mypy --follow-imports=silent "${TYPED[@]}"
