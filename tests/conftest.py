"""Shared test helpers: where ../shared lives, and skips when it is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
ORACLE = SHARED / "oracle" / "fixtures"
REALDATA = SHARED / "realdata"


def need_shared(path: Path) -> Path:
    """Skip the calling test when a ../shared resource is missing (a user's fresh clone)."""
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared (oracle fixtures, real broker data) is not beside this checkout")
    return path


def oracle_cases() -> list[str]:
    index = ORACLE / "index.json"
    if not index.exists():
        return []
    return [c["case"] for c in json.loads(index.read_text(encoding="utf-8"))["cases"]]


def load_manifest(case: str) -> dict:
    return json.loads((need_shared(ORACLE) / "manifests" / f"{case}.json").read_text(encoding="utf-8"))


@pytest.fixture
def oracle_dir() -> Path:
    return need_shared(ORACLE)


@pytest.fixture
def realdata_dir() -> Path:
    return need_shared(REALDATA)
