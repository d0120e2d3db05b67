"""``spark --restart-order`` gives ``replay --restart-order``'s leaders, and those are Kafka's.

The evidence is the lab set fixtures/lab/leader-crash-4.4.0 (real Kafka 4.4.0; see
tests/replay/test_restart_order.py): with the order the lab restarted it in, both front ends name the leader Kafka
elected for each lab partition and say it was predicted, not read from the controller's record.
"""

from __future__ import annotations

import json
import tarfile

import pytest

from kforensics.epoch.versions import parse_kafka_version
from kforensics.replay.report import replay_all
from kforensics.spark.inputs import Snapshot
from kforensics.spark.job import JobOptions, run
from kforensics.spark.tables import read_pandas
from tests.conftest import ROOT

SET = ROOT / "fixtures" / "lab" / "leader-crash-4.4.0"


def test_spark_and_replay_name_kafkas_leaders_for_the_order_given(spark, tmp_path):
    if not SET.exists():
        pytest.skip("fixtures/lab/leader-crash-4.4.0 is not in this checkout")
    outcome = json.loads((SET / "outcome.json").read_text())["outcome"]
    order = tuple(outcome["order"])
    with tarfile.open(SET / "before" / "controller-100.tgz") as t:
        t.extractall(tmp_path / "controller", filter="data")
    meta = next((tmp_path / "controller").rglob("__cluster_metadata-0"))
    brokers = sorted(str(p) for p in (SET / "before").glob("broker-*.tgz"))
    version = parse_kafka_version("4.4.0")
    report = replay_all(brokers, kafka_version=version, metadata=[str(meta)], order=order)
    run(spark, [Snapshot(b, f"b{i}") for i, b in enumerate(brokers)], str(tmp_path / "out"),
        JobOptions(kafka_version=version, metadata=[str(meta)], restart_order=order, tables=("verdicts",)))
    v = read_pandas(str(tmp_path / "out"), "verdicts")
    spark_leaders = {(r.topic, int(r.partition)): (int(r.leader), r.leader_how) for r in v.itertuples()}
    checked = 0
    for p in report.partitions:
        key = (p.topic, p.partition)
        want = (p.leader, p.election.how + (f":{p.election.rule}" if p.election.rule else ""))
        assert spark_leaders[key] == want, key
        if p.topic in outcome["states"]:
            assert p.leader == outcome["states"][p.topic][str(p.partition)]["leader"], key
            checked += 1
    assert checked == sum(len(parts) for parts in outcome["states"].values()) >= 4  # the lab's and internal topics


@pytest.mark.parametrize("order, why", [((1, 9), "9"), ((2, 2), "2")])
def test_a_bad_restart_order_is_refused_before_any_jvm_starts(tmp_path, order, why):
    """An order naming a broker the evidence lacks, or one broker twice, is refused as replay refuses it (exit 2:
    UsageError), while the session is still a callable nobody called."""
    from kforensics.errors import UsageError

    if not SET.exists():
        pytest.skip("fixtures/lab/leader-crash-4.4.0 is not in this checkout")
    with tarfile.open(SET / "before" / "controller-100.tgz") as t:
        t.extractall(tmp_path / "controller", filter="data")
    meta = next((tmp_path / "controller").rglob("__cluster_metadata-0"))
    brokers = sorted(str(p) for p in (SET / "before").glob("broker-*.tgz"))
    started = []

    def no_session():
        started.append(True)
        raise AssertionError("a JVM was started for a job that must be refused")

    with pytest.raises(UsageError, match=why):
        run(no_session, [Snapshot(b, f"b{i}") for i, b in enumerate(brokers)], str(tmp_path / "out"),
            JobOptions(kafka_version=parse_kafka_version("4.4.0"), metadata=[str(meta)], restart_order=order,
                       tables=("verdicts",)))
    assert not started and not (tmp_path / "out").exists()
