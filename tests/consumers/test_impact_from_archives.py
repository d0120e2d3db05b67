"""The replay report carries the log dirs it read (path objects, also inside archives), so the consumer and
transaction analyses read the same evidence however it was given: here each broker as one .tgz holding both of its
log dirs (the partition replayed, and the internal topics')."""

from __future__ import annotations

import tarfile

from kforensics.consumers.impact import committed_offsets_of, consumer_impact
from kforensics.consumers.read_committed import transactions_after_replay
from kforensics.replay.report import replay_all
from kforensics.scenario import load_scenario
from kforensics.serialize import to_jsonable
from tests.conftest import ROOT

SCENARIOS = ROOT / "fixtures" / "scenarios"
KEYS = ("group", "committed_offset", "consumed_lost", "outcome", "next_position", "skipped", "reread")


def _archives(tmp_path, sdir):
    out = {}
    for b in (1, 2):
        path = tmp_path / f"broker-{b}.tgz"
        with tarfile.open(path, "w:gz") as tar:
            tar.add(sdir / f"broker-{b}", arcname=f"broker-{b}")
            tar.add(sdir / "coordinators" / f"broker-{b}", arcname=f"coordinators/broker-{b}")
        out[b] = path
    return out


def test_impact_from_archived_brokers_equals_the_scenarios(tmp_path):
    sdir = SCENARIOS / "transaction-marker-lost"
    sc = load_scenario(sdir)
    archives = _archives(tmp_path, sdir)
    report = replay_all([str(archives[1]), str(archives[2])], events=sc.events, metadata=sc.metadata)
    assert sorted(report.log_dirs) == [1, 2] and all(len(d) == 2 for d in report.log_dirs.values())
    assert report.timeline is not None
    p = next(p for p in report.partitions if p.topic == "orders")
    assert p.verdict_codes() == sc.expected["latest"]
    got = consumer_impact(report, committed_offsets_of(report, report.log_dirs))
    want = sc.doc["expected_impact"]["latest"]
    assert [{k: to_jsonable(getattr(i, k)) for k in KEYS} for i in got] == [{k: w[k] for k in KEYS} for w in want]
    assert all(".tgz" in i.commit_file for i in got)  # read in place, inside the archive
    after = [a for a in transactions_after_replay(report, log_dirs=report.log_dirs) if a.topic == "orders"]
    (a,) = after
    assert [(r.producer_id, r.marker.offset, r.verdict) for r in a.reopened] == [(500, 3, "LOSS_COMMITTED")]
    assert a.leader_transactions.open[0].coordinator_state == "CompleteCommit"


def test_the_report_without_private_fields_in_json():
    sc = load_scenario(SCENARIOS / "consumer-group-resets")
    report = replay_all(sc.brokers, events=sc.events, metadata=sc.metadata)
    # min_insync_replicas: --min-insync-replicas as given (null without it), a public field
    assert set(to_jsonable(report)) == {"kafka_version", "brokers", "partitions", "findings", "min_insync_replicas"}
    assert {b: [d.name for d in ds] for b, ds in report.log_dirs.items()} == {1: ["broker-1"], 2: ["broker-2"]}
