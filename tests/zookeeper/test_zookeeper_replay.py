"""ZooKeeper-mode Kafka 2.8.2 as the judge: with ZooKeeper's data dir and the lab's restart order, the replay names
the leader and leader epoch Kafka gave every partition (the lab's topics and the internal ones), and Spark names
the replay's.

The evidence and Kafka's outcome are the lab's sets fixtures/lab/unclean-election-2.8.2 and controller-kill-2.8.2
(real Kafka 2.8.2 with ZooKeeper 3.5.9: the frozen dirs, then what Kafka did when restarted on a copy).
"""

from __future__ import annotations

import json
import tarfile

import pytest

from kforensics.epoch.versions import parse_kafka_version
from kforensics.replay.report import replay_all
from tests.conftest import ROOT

SETS = ["unclean-election-2.8.2", "controller-kill-2.8.2"]
VERSION = parse_kafka_version("2.8.2")


def _set(name: str, tmp_path):
    where = ROOT / "fixtures" / "lab" / name
    if not where.exists():
        pytest.skip(f"fixtures/lab/{name} is not in this checkout")
    outcome = json.loads((where / "outcome.json").read_text())["outcome"]
    with tarfile.open(where / "before" / "zookeeper.tgz") as t:
        t.extractall(tmp_path, filter="data")
    brokers = sorted(str(p) for p in (where / "before").glob("broker-*.tgz"))
    return outcome, brokers, tmp_path / "zookeeper"


@pytest.mark.parametrize("name", SETS)
def test_replay_names_kafkas_leader_and_epoch_from_zookeeper(name, tmp_path):
    outcome, brokers, zk = _set(name, tmp_path)
    report = replay_all(brokers, kafka_version=VERSION, zookeeper=[str(zk)], order=tuple(outcome["order"]))
    checked = 0
    for p in report.partitions:
        want = outcome["states"][p.topic][str(p.partition)]["leader"], outcome["epochs"][p.topic][str(p.partition)]
        assert (p.leader, p.leader_epoch) == want, (p.topic, p.partition, p.election.detail)
        assert p.election.how in ("controller-record", "predicted") and "ZooKeeper" in p.election.detail
        checked += 1
    assert checked == sum(len(parts) for parts in outcome["states"].values()) >= 5
    assert not [f for f in report.findings if f.code.startswith("ZOOKEEPER")]


def test_the_data_dir_among_the_inputs_is_found_and_an_archive_of_it_is_read_in_place(tmp_path):
    outcome, brokers, zk = _set("unclean-election-2.8.2", tmp_path)
    archive = str(ROOT / "fixtures" / "lab" / "unclean-election-2.8.2" / "before" / "zookeeper.tgz")
    order = tuple(outcome["order"])
    for report in (replay_all([*brokers, str(zk)], kafka_version=VERSION, order=order, topic="events"),
                   replay_all(brokers, kafka_version=VERSION, order=order, topic="events", zookeeper=[archive])):
        assert [(p.leader, p.leader_epoch, p.election.rule) for p in report.partitions] == [(3, 7, "unclean")]


def test_spark_names_the_replays_leaders(spark, tmp_path):
    from kforensics.spark.inputs import Snapshot
    from kforensics.spark.job import JobOptions, run
    from kforensics.spark.tables import read_pandas

    outcome, brokers, zk = _set("unclean-election-2.8.2", tmp_path)
    order = tuple(outcome["order"])
    report = replay_all(brokers, kafka_version=VERSION, zookeeper=[str(zk)], order=order)
    run(spark, [Snapshot(b, f"b{i}") for i, b in enumerate(brokers)], str(tmp_path / "out"),
        JobOptions(kafka_version=VERSION, zookeeper=(str(zk),), restart_order=order, tables=("verdicts",)))
    v = read_pandas(str(tmp_path / "out"), "verdicts")
    got = {(r.topic, int(r.partition)): (int(r.leader), int(r.leader_epoch), r.leader_how) for r in v.itertuples()}
    want = {(p.topic, p.partition): (p.leader, p.leader_epoch,
                                     p.election.how + (f":{p.election.rule}" if p.election.rule else ""))
            for p in report.partitions}
    assert got == want
