#!/usr/bin/env bash
# ruff and mypy over the whole package (mypy --strict on the modules pyproject.toml's strict override lists).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
.venv/bin/ruff check --output-format concise kforensics
.venv/bin/mypy kforensics
