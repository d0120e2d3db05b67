"""``kforensics report`` on real Kafka's evidence (the lab's sets, #24): it takes what ``replay`` takes, so a
ZooKeeper-mode cluster's report names the leaders Kafka elected, and an open transaction's row says what the
restarted coordinator does with it.  Expected leaders and epochs are Kafka's (the sets' ``expected.json``)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT
from tests.report.helpers import md_tables, replay_json, report

LAB = ROOT / "fixtures" / "lab"
ZOOKEEPER_SETS = ["controller-kill-2.8.2", "unclean-election-2.8.2"]


def _inputs(name: str) -> list[str]:
    """The set's frozen evidence, with ZooKeeper's data dir, the order Kafka's brokers were restarted in and the
    version's rules: what the lab told ``replay``."""
    before = LAB / name / "before"
    outcome = json.loads((LAB / name / "outcome.json").read_text())
    zk = [a for z in sorted(before.glob("zookeeper*.tgz")) for a in ("--zookeeper", str(z))]
    order = outcome["outcome"].get("order")
    return [*map(str, sorted(before.glob("broker-*.tgz"))), *zk,
            *(["--restart-order", ",".join(map(str, order))] if order else []),
            "--kafka-version", outcome["kafka_version_flag"]]


def _observed(name: str, check: str) -> dict[str, int]:
    checks = json.loads((LAB / name / "expected.json").read_text())["checks"]
    return {f"{c['topic']}-{c['partition']}": c["observed"] for c in checks if c["check"] == check}


@pytest.mark.parametrize("name", ZOOKEEPER_SETS)
def test_zookeeper_mode_report_names_kafkas_leaders(tmp_path, name):
    if not (LAB / name).exists():
        pytest.skip(f"the lab set {name} is not in this checkout")
    _html, md, r = report(tmp_path, name, *_inputs(name))
    tables = md_tables(md)
    chosen = next(rows for caption, rows in tables.items() if caption.startswith("Who leads after the restart"))
    shown = {row["partition"].replace("\\_", "_"): (int(row["leader"]), int(row["epoch"])) for row in chosen}
    leaders, epochs = _observed(name, "leader"), _observed(name, "leader_epoch")
    assert leaders and set(leaders) <= set(shown), (sorted(leaders), sorted(shown))
    assert {p: shown[p] for p in leaders} == {p: (leaders[p], epochs[p]) for p in leaders}
    assert "ZooKeeper's data dir" in md and "default choice" not in md


def test_without_zookeeper_the_report_says_the_leaders_are_guessed(tmp_path):
    name = "controller-kill-2.8.2"
    if not (LAB / name).exists():
        pytest.skip(f"the lab set {name} is not in this checkout")
    _html, md, _r = report(tmp_path, name, *map(str, sorted((LAB / name / "before").glob("broker-*.tgz"))))
    assert "default choice" in md and "ZooKeeper's data dir" not in md


def test_open_transactions_say_what_the_restarted_coordinator_does(tmp_path):
    name = "open-transaction-4.4.0"
    if not (LAB / name).exists():
        pytest.skip(f"the lab set {name} is not in this checkout")
    inputs = _inputs(name)
    _html, md, _r = report(tmp_path, name, *inputs)
    rows = md_tables(md)["Open transactions on the new leader"]
    doc = replay_json(*inputs)
    want = sorted((t["topic"], o["producer_id"], o["at_restart"], o["coordinator_timeout_at"])
                  for t in doc["transactions"] for o in (t.get("leader_transactions") or {}).get("open") or [])
    assert want and all(w[2] == "aborted once timed out" for w in want), want  # Ongoing in the coordinator's record
    got = sorted((row["partition"].replace("\\_", "_").rsplit("-", 1)[0], int(row["producer"]), row["at a restart"])
                 for row in rows)
    assert [(t, p) for t, p, _ in got] == [(t, p) for t, p, _, _ in want]
    assert all(cell.startswith("aborted once timed out (at 20") and cell.endswith("Z)") for _, _, cell in got), got
