"""Golden comparison: our decoder against what Kafka 3.9.1 itself reports for every oracle segment."""

from __future__ import annotations

import re

import pytest

from tests.conftest import deep_entry, ORACLE, load_manifest, need_shared, oracle_cases
from kforensics.log.segment_reader import SegmentReader

CASES = oracle_cases() or ["(oracle absent)"]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def compare(ours: dict, theirs: dict, where: str) -> list[str]:
    diffs = []
    for key, expected in theirs.items():
        if key == "recordsError":
            got = ours.get("records_error")
            if (got is None) != (expected is None):
                diffs.append(f"{where}.{key}: ours {got!r} kafka {expected!r}")
            continue
        if key == "control" and expected is not None:
            got = ours.get("control") or {}
            for ck, cv in expected.items():
                if got.get(ck) != cv:
                    diffs.append(f"{where}.control.{ck}: ours {got.get(ck)!r} kafka {cv!r}")
            continue
        skey = snake(key)
        got = ours.get(skey, "<missing>")
        if isinstance(expected, list) and expected and isinstance(expected[0], dict):
            if not isinstance(got, list) or len(got) != len(expected):
                diffs.append(f"{where}.{key}: ours {len(got) if isinstance(got, list) else got} items, kafka {len(expected)}")
                continue
            for i, (o, t) in enumerate(zip(got, expected)):
                diffs += compare(o, t, f"{where}.{key}[{i}]")
        elif got != expected:
            diffs.append(f"{where}.{key}: ours {got!r} kafka {expected!r}")
    return diffs


@pytest.mark.parametrize("case", CASES)
def test_deep_decode_matches_kafka_manifest(case):
    need_shared(ORACLE)
    manifest = load_manifest(case)
    for seg in manifest["segments"]:
        reader = SegmentReader(ORACLE / seg["file"])
        ours, recovered = [], []
        for b in reader.batches():
            ours.append(deep_entry(b))
            recovered.append(b.recovered)
        kafka = seg["batches"]
        # Kafka stops at the first unframeable entry; we must agree on everything it saw
        assert len(ours) >= len(kafka)
        diffs = []
        for i, (o, t) in enumerate(zip(ours, kafka)):
            diffs += compare(o, t, f"{seg['file']}#batch{i}")
        assert not diffs, "\n".join(diffs[:40])
        assert reader.summary.kafka_valid_bytes == seg["iteratedBytes"]
        # Kafka's batches are read normally; anything beyond its stop point is flagged as recovered
        assert not any(recovered[: len(kafka)])
        assert all(recovered[len(kafka) :])
        if len(ours) > len(kafka):
            assert seg["iterationError"] is not None
