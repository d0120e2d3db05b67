"""Real-Kafka golden incidents: kforensics on evidence the lab froze, against what Kafka then did.

Each set under fixtures/lab/<name>/ was produced by the lab (a real 3-broker cluster, KRaft or ZooKeeper): the frozen
evidence, the state after Kafka restarted on it, and Kafka's observed outcome.  The expected values are
Kafka's, never kforensics' own output.  Checks where kforensics agreed when the set was recorded must
keep agreeing; checks where it disagreed are strict xfails carrying both values, so a fix shows up as
XPASS (then re-record the expectation).  No Java or Maven is needed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from kflab.fixtures import recheck

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lab"
SETS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists()) if FIXTURES.exists() else []


def _key(c: dict) -> tuple:
    return (c["check"], c["topic"], c["partition"], c["broker"])


def _expected(name: str) -> dict:
    return {_key(c): c for c in json.loads((FIXTURES / name / "expected.json").read_text())["checks"]}


def _groups() -> list:
    """(set, check, agreed?) triples, one test each."""
    out = []
    for name in SETS:
        seen = defaultdict(set)
        for (check, *_), c in _expected(name).items():
            seen[check].add(c["agree"])
        for check, flags in sorted(seen.items()):
            for agreed in sorted(flags, reverse=True):
                marks = [] if agreed else [pytest.mark.xfail(strict=True, reason=_reason(name, check))]
                out.append(
                    pytest.param(
                        name,
                        check,
                        agreed,
                        marks=marks,
                        id=f"{name}-{check}-{'agreed' if agreed else 'known-disagreement'}",
                    )
                )
    return out


def _reason(name: str, check: str) -> str:
    bad = [c for c in _expected(name).values() if c["check"] == check and not c["agree"]]
    parts = [
        f"{c['topic']}-{c['partition']}"
        + (f"@{c['broker']}" if c["broker"] else "")
        + f": kforensics {json.dumps(c['predicted_then'])[:60]} vs Kafka {json.dumps(c['observed'])[:60]}"
        for c in bad[:4]
    ]
    return f"known disagreement with real Kafka ({len(bad)}): " + "; ".join(parts)


_CACHE: dict = {}


def _now(name: str, tmp_path_factory) -> dict:
    """kforensics' checks on this set, computed once per session."""
    if name not in _CACHE:
        checks = recheck(FIXTURES / name, tmp_path_factory.mktemp(name))
        _CACHE[name] = {_key(c): c for c in checks}
    return _CACHE[name]


@pytest.mark.skipif(not SETS, reason="no lab fixture sets under fixtures/lab")
@pytest.mark.parametrize("name,check,agreed", _groups())
def test_against_kafka(name, check, agreed, tmp_path_factory):
    expected = {k: c for k, c in _expected(name).items() if k[0] == check and c["agree"] == agreed}
    now = _now(name, tmp_path_factory)
    wrong = []
    for k, exp in sorted(expected.items(), key=str):
        got = now.get(k)
        if got is None:
            wrong.append(f"{k}: no longer checked (kforensics gave no prediction)")
            continue
        assert got["observed"] == exp["observed"], f"{k}: the lab's reading of Kafka's outcome changed"
        if not got["agree"]:
            wrong.append(f"{k}: kforensics {got['predicted']} vs Kafka {got['observed']}")
    assert not wrong, "disagrees with what Kafka did:\n" + "\n".join(wrong)


def test_fixture_sets_are_small():
    """Each set stays small enough to ship with the repository."""
    for name in SETS:
        size = sum(p.stat().st_size for p in (FIXTURES / name).rglob("*") if p.is_file())
        assert size < 400_000, f"{name}: {size} bytes"


def test_open_transactions_are_judged_both_ways():
    """The open-transaction sets hold what they are kept for: a transaction Kafka still reports open after the
    restart (a long timeout), and one the restarted coordinator aborted (a short timeout, passed by then)."""
    wanted = {"open-transaction-4.4.0": "Ongoing", "open-transaction-3.9.1": "CompleteAbort"}
    if not set(wanted) <= set(SETS):
        pytest.skip("the open-transaction fixture sets are not in this checkout")
    for name, state in wanted.items():
        outcome = json.loads((FIXTURES / name / "outcome.json").read_text())["outcome"]
        left_open = [t for t in outcome["transactions"]["list"] if t["TransactionalId"].endswith("-open")]
        assert [t["TransactionState"] for t in left_open] == [state], name
        seen = [c["observed"] for c in _expected(name).values() if c["check"] == "open_transactions"]
        assert any(seen) == (state == "Ongoing"), name
