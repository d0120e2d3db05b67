"""Quiet when healthy: the answer first, notes below medium counted per code, every finding at medium and above
still listed, and a healthy real cluster's scan and replay on one screen.

Golden transcripts of a healthy multi-broker real corpus (``../shared``) live in ``tests/golden/realdata``;
regenerate them with ``KFORENSICS_UPDATE_GOLDEN=1`` and read the diff before committing it.
"""

from __future__ import annotations

import json
import os
import shlex

import pytest
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.cli.common import finding_line, plural, summary_line
from kforensics.findings import Finding
from kforensics.severity import Severity
from tests.conftest import REALDATA, ROOT, need_shared

GOLDEN = ROOT / "tests" / "golden" / "realdata"
BROKERS = ROOT / "fixtures" / "brokers"
SCENARIOS = ROOT / "fixtures" / "scenarios"
HIAGE = "../shared/realdata/hiage__kafka-raft__c5f680e/data"
#: golden transcript name -> command line, run from the repository root (three healthy KRaft brokers, Kafka 3.3.1)
GOLDENS = {
    "scan-hiage-kafka1": f"kforensics scan {HIAGE}/kafka1",
    "replay-hiage": f"kforensics replay {HIAGE}/kafka1 {HIAGE}/kafka2 {HIAGE}/kafka3",
}
#: what fits on one screen
SCREEN = 40


def run(args: list[str]):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_a_healthy_real_cluster_fits_on_one_screen_with_the_answer_first(name):
    need_shared(REALDATA / "hiage__kafka-raft__c5f680e")
    r = run(shlex.split(GOLDENS[name])[1:])
    assert r.exit_code == 0, r.output
    got = f"$ {GOLDENS[name]}\n{r.output}"
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("KFORENSICS_UPDATE_GOLDEN"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")
    lines = r.output.splitlines()
    assert len(lines) <= SCREEN, len(lines)
    # CATALOG.md: replicated partitions identical, no damage: nothing is lost, and the first line says so
    assert lines[0].startswith("answer: nothing lost"), lines[0]
    # no note is listed one per partition: nothing below medium appears as a finding line
    assert not [line for line in lines if line.lstrip("! ").startswith(("LOW ", "INFO "))]


def test_every_golden_transcript_is_checked():
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(GOLDENS)


def _listed(text: str) -> set[str]:
    return {line.removeprefix("  ! ").removeprefix("! ") for line in text.splitlines()}


def _counted(text: str) -> dict[tuple[str, str], int]:
    """(SEVERITY, CODE) -> count, from the counted lines (``  17 INFO EPOCH_EMPTY_AT_LEO, e.g. ...``)."""
    out = {}
    for line in text.splitlines():
        parts = line.split(" ", 5)
        if line.startswith("  ") and len(parts) > 4 and parts[2].isdigit() and parts[4].endswith(","):
            out[(parts[3], parts[4].rstrip(","))] = int(parts[2])
    return out


def _findings(doc: dict) -> list[Finding]:
    found = list(doc["findings"]) + [f for p in doc.get("partitions", []) for f in p.get("findings", [])]
    return [Finding(f["code"], Severity.parse(f["severity"]), f["message"], f.get("file"), f.get("position"),
                    f.get("line"), f.get("facts", {})) for f in found]


def _check_listed_and_counted(text: str, findings: list[Finding]) -> None:
    listed = _listed(text)
    counted = _counted(text)
    expected: dict[tuple[str, str], int] = {}
    for f in findings:
        if f.severity >= Severity.MEDIUM:
            assert finding_line(f) in listed, finding_line(f)
        else:
            assert finding_line(f) not in listed, finding_line(f)
            key = (str(f.severity).upper(), f.code)
            expected[key] = expected.get(key, 0) + 1
    assert counted == expected


@pytest.mark.parametrize("broker", sorted(p.name for p in BROKERS.iterdir() if p.is_dir()))
def test_scan_lists_every_finding_at_medium_and_above_and_counts_the_rest(broker):
    d = f"fixtures/brokers/{broker}"
    text = run(["scan", d]).output
    doc = json.loads(run(["scan", d, "--format", "json"]).output)
    _check_listed_and_counted(text, _findings(doc))
    assert text.splitlines()[0].startswith("answer: ")


@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.iterdir() if (p / "scenario.json").exists()))
def test_replay_lists_every_finding_at_medium_and_above_and_counts_the_rest(scenario):
    s = f"fixtures/scenarios/{scenario}"
    text = run(["replay", "--scenario", s]).output
    doc = json.loads(run(["replay", "--scenario", s, "--format", "json"]).output)
    _check_listed_and_counted(text, _findings(doc))
    assert text.splitlines()[0].startswith("answer: ")
    # --verbose lists every finding
    verbose = run(["replay", "--scenario", s, "--verbose"]).output
    assert all(finding_line(f) in _listed(verbose) for f in _findings(doc))
    assert not _counted(verbose)


def test_the_answer_names_what_the_replay_loses():
    # kip101-s2 (KIP-101's second scenario): broker 1's offset 1, committed (HW 2), is truncated: LOSS_COMMITTED
    text = run(["replay", "--scenario", "fixtures/scenarios/kip101-s2-two-hard-failures"]).output
    assert text.splitlines()[0] == "answer: 1 partition loses records or cannot recover: orders-0 (LOSS_COMMITTED)"
    # an unreadable leader-epoch checkpoint: Kafka's LogLoader throws, the broker does not start (LOG_LOAD_FAILS)
    text = run(["replay", "--scenario", "fixtures/scenarios/unreadable-epoch-checkpoint"]).output
    assert text.splitlines()[0].startswith("answer: broker ") and "will not start" in text.splitlines()[0]


def test_scan_min_severity_low_lists_the_low_ones_and_verbose_every_one():
    d = "fixtures/brokers/damaged"
    doc = json.loads(run(["scan", d, "--format", "json"]).output)
    findings = _findings(doc)
    low = run(["scan", d, "--min-severity", "low"]).output
    assert all(finding_line(f) in _listed(low) for f in findings if f.severity >= Severity.LOW)
    assert set(_counted(low)) == {("INFO", f.code) for f in findings if f.severity == Severity.INFO}
    verbose = run(["scan", d, "--verbose"]).output
    assert all(finding_line(f) in _listed(verbose) for f in findings) and not _counted(verbose)
    assert "indexonly-0 " in verbose and "hold no batch" not in verbose


def test_counts_say_what_they_count_in_the_right_number():
    assert plural(1, "finding") == "1 finding" and plural(2, "finding") == "2 findings"
    assert plural(1, "entry", "entries") == "1 entry" and plural(0, "entry", "entries") == "0 entries"
    assert summary_line({"low": 1}) == "summary: 1 finding (1 low)"
    assert summary_line({"low": 0}) == "summary: no findings"


# ------------------------------------------------------------------------------------------- GRANT_NOT_SEEN
def _timeline(tmp_path):
    from kforensics.kraft.timeline import build_timeline
    from tests.kraft.test_timeline import change, part, topic, write_log

    # epochs as the controller increments them: 0 leader 1, 1 leader 2, 2 leader 1
    write_log(tmp_path, [topic(), part(leader=1), change(leader=2), change(leader=1)])
    return build_timeline(tmp_path)


def _grant(tl, **kw):
    from kforensics.kraft.grants import check_replica_epochs

    return [f for f in check_replica_epochs(tl, topic="t", partition=0, **kw) if f.code == "GRANT_NOT_SEEN"]


def test_an_epoch_a_broker_never_appended_in_is_an_info_note_that_says_an_empty_checkpoint_is_empty(tmp_path):
    tl = _timeline(tmp_path)
    # broker 2 elected in epoch 1, then a follower of broker 1 in epoch 2, with an empty log: Kafka's election
    # entry (2, 0) started at its log end, and UnifiedLog.truncateTo (target >= log end) truncated the cache from
    # the log end (2.8.0 Log.scala, 3.3.1 / 3.8.0 UnifiedLog.scala): its checkpoint is empty
    (f,) = _grant(tl, broker_id=2, checkpoint=[], batch_epochs=[])
    assert f.severity == Severity.INFO and f.facts["epoch"] == 1
    assert "is empty" in f.message and "-1" not in f.message
    # broker 1 re-elected in epoch 2 with a log whose batches carry epoch 0 only: the checkpoint stops at 0
    (f,) = _grant(tl, broker_id=1, checkpoint=[(0, 0)], batch_epochs=[0])
    assert f.severity == Severity.INFO and "stops at epoch 0" in f.message


def test_an_epoch_the_broker_appended_in_but_its_checkpoint_lacks_stays_low(tmp_path):
    tl = _timeline(tmp_path)
    # LeaderEpochFileCache.assign runs on every append and writes the checkpoint: batches of epoch 2 with a
    # checkpoint that stops at 0 is a checkpoint that lost an entry
    (f,) = _grant(tl, broker_id=1, checkpoint=[(0, 0)], batch_epochs=[0, 2])
    assert f.severity == Severity.LOW
    assert _grant(tl, broker_id=1, checkpoint=[(0, 0), (2, 5)], batch_epochs=[0, 2]) == []
