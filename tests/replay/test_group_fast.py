"""The replay of replicas in sync (kforensics.replay.in_sync) gives what the engine gives, and is taken when it may.

The expected answer is the full engine's (``replay_partition`` for every group, with the fast path switched off):
the whole ``replay_all`` report, through ``to_jsonable``, must be the same on the bench's fleet of small partitions,
every scenario, every election case, the tiered-storage cases and random election histories, at several Kafka
versions.  A test that the fast path is taken counts it, and one diverged or damaged replica must keep its group out.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

import numpy as np
import pytest

from kforensics.epoch.versions import LATEST, parse_kafka_version
from kforensics.replay import group as group_mod
from kforensics.replay import in_sync
from kforensics.replay.engine import replay_partition
from kforensics.replay.inputs import load_replicas
from kforensics.replay.replica import BatchLog
from kforensics.replay.report import replay_all
from kforensics.scenario import load_scenario
from kforensics.serialize import to_jsonable
from tests.conftest import ROOT
from tests.kraft.election_histories import write_history

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if (p / "scenario.json").exists())
ELECTIONS = sorted(p for p in (ROOT / "fixtures" / "elections").iterdir() if (p / "scenario.json").exists())
TIERED = sorted(p for p in (ROOT / "fixtures" / "tiered").iterdir() if (p / "scenario.json").exists())
#: release lines the scenarios are replayed at besides the latest: before KIP-101, one OffsetsForLeaderEpoch round,
#: the KIP-279 rounds, and truncation during fetch before the latest
OLDER = ("0.10", "0.11", "2.0", "2.7", "3.9")


def _bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_spark import build
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return build


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The bench's small partitions (3 brokers, 240 partitions of 10 batches over 12 topics), as bench_spark builds
    them."""
    return _bench()(tmp_path_factory.mktemp("fleet"), "small240", 3, 240, 10, topics=12)


def _both(monkeypatch, run):
    """``run()``'s report with the fast path, then with every group through the engine; the fast path's count."""
    taken = []
    fast_fn = in_sync.replay_in_sync

    def counting(*a, **kw):
        out = fast_fn(*a, **kw)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(in_sync, "replay_in_sync", counting)
    monkeypatch.setattr(in_sync, "ENABLED", True)
    fast = json.dumps(to_jsonable(run()), sort_keys=True)
    monkeypatch.setattr(in_sync, "ENABLED", False)
    full = json.dumps(to_jsonable(run()), sort_keys=True)
    return fast, full, sum(taken)


def test_the_fleet_replays_the_same_and_every_group_takes_the_fast_path(fleet, monkeypatch):
    fast, full, taken = _both(monkeypatch, lambda: replay_all([str(d) for d in fleet]))
    assert fast == full
    assert taken == 240


@pytest.mark.parametrize("version", ["0.10", "2.0", "2.7"])
def test_the_fleet_at_older_versions_and_with_what_if(fleet, monkeypatch, version):
    mode = parse_kafka_version(version)
    fast, full, taken = _both(monkeypatch, lambda: replay_all([str(d) for d in fleet], kafka_version=mode,
                                                             topic="t3", what_if=True))
    assert fast == full
    assert taken == 20 * 4  # each of t3's partitions, and its what-if replays with each broker leading


def _scenario_run(sdir, version):
    sc = load_scenario(sdir)
    alive = tuple(sc.doc["alive"]) if "alive" in sc.doc else None
    return lambda: replay_all(sc.brokers, kafka_version=parse_kafka_version(version), events=sc.events or None,
                              metadata=sc.metadata, alive=alive, running=tuple(sc.doc.get("running", ())))


CASES = [(p, v) for i, p in enumerate(SCENARIOS + ELECTIONS + TIERED) for v in ("latest", OLDER[i % len(OLDER)])]


@pytest.mark.parametrize("sdir,version", CASES, ids=[f"{p.name}@{v}" for p, v in CASES])
def test_scenarios_elections_and_tiered_sets_replay_the_same(sdir, version, monkeypatch):
    fast, full, _taken = _both(monkeypatch, _scenario_run(sdir, version))
    assert fast == full


@pytest.mark.parametrize("seed", range(10))
def test_random_election_histories_replay_the_same(seed, tmp_path, monkeypatch):
    h = write_history(tmp_path, f"random-{seed}", seed)
    sc = load_scenario(h)
    fast, full, _taken = _both(monkeypatch, lambda: replay_all(sc.brokers, metadata=sc.metadata))
    assert fast == full


def test_the_fast_path_answers_for_agreeing_replicas_only(fleet):
    loaded = load_replicas([str(d) for d in fleet])
    (topic, partition), replicas = sorted(loaded.groups.items())[0]
    fast = in_sync.replay_in_sync(topic, partition, replicas, kafka_version=LATEST)
    assert fast is not None
    assert to_jsonable(fast) == to_jsonable(replay_partition(topic, partition, replicas, kafka_version=LATEST))
    a, b, c = replicas
    short = replace(b, log=BatchLog(b.log.data[:-2]))  # a follower two batches behind
    data = np.asfortranarray(c.log.data.copy())
    data[3, 8] = 0  # crc_valid: its fourth batch damaged
    damaged = replace(c, log=BatchLog(data))
    forked = np.asfortranarray(c.log.data.copy())
    forked[-1, 3] += 1  # its last batch another write at the same offsets
    hw = replace(b, high_watermark=(b.high_watermark or 0) - 1)
    for group in ([a, short, c], [a, b, damaged], [a, b, replace(c, log=BatchLog(forked))], [a, hw, c]):
        assert in_sync.replay_in_sync(topic, partition, group, kafka_version=LATEST) is None
        assert group_mod.replay_group(topic, partition, group).replicas  # the engine answers instead


@pytest.mark.parametrize("version", ["latest", "0.10", "2.0"])
def test_one_replica_two_replicas_and_empty_logs_answer_as_the_engine(fleet, version):
    mode = parse_kafka_version(version)
    loaded = load_replicas([str(d) for d in fleet])
    (topic, partition), (a, b, c) = sorted(loaded.groups.items())[1]
    empty = [replace(r, log=BatchLog.empty(), high_watermark=0, epoch_checkpoint=[]) for r in (a, b, c)]
    for group in ([a], [b, c], [c, a, b], empty, empty[:1]):
        fast = in_sync.replay_in_sync(topic, partition, group, kafka_version=mode)
        assert fast is not None
        assert to_jsonable(fast) == to_jsonable(replay_partition(topic, partition, group, kafka_version=mode))
        for leader in sorted(r.broker_id for r in group):
            fast = in_sync.replay_in_sync(topic, partition, group, kafka_version=mode, leader=leader)
            assert fast is not None and fast.leader == leader
            assert to_jsonable(fast) == to_jsonable(replay_partition(topic, partition, group, kafka_version=mode,
                                                                     leader=leader))


def test_a_diverged_group_in_the_fleet_goes_through_the_engine(fleet, monkeypatch, tmp_path):
    import shutil

    dirs = []
    for d in fleet:
        dirs.append(tmp_path / d.name)
        shutil.copytree(d, dirs[-1], copy_function=shutil.copy)
    seg = dirs[1] / "t0-0" / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    raw[-1] ^= 0xFF  # the last batch's last byte: a CRC mismatch on broker 2's t0-0
    seg.write_bytes(bytes(raw))
    fast, full, taken = _both(monkeypatch, lambda: replay_all([str(d) for d in dirs]))
    assert fast == full
    assert taken == 239


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """Two partitions of 40 000 batches on 3 brokers: each group's replay is windowed (its replicas carry a prefix)."""
    return _bench()(tmp_path_factory.mktemp("wide"), "wide", 3, 2, 40_000)


@pytest.mark.parametrize("version", ["latest", "0.10", "2.0"])
@pytest.mark.parametrize("hw", [None, 39_000, 20_000])
def test_windowed_groups_replay_the_same(wide, version, hw, monkeypatch, tmp_path):
    """The window's prefix is part of what the replicas share; a high watermark below the log end has followers
    truncate before KIP-101, within the window (39 000) or below it (20 000: the group is widened and replayed
    again)."""
    import shutil

    from kforensics.formats import checkpoint

    dirs = wide
    if hw is not None:
        dirs = []
        for d in wide:
            dirs.append(tmp_path / d.name)
            shutil.copytree(d, dirs[-1], copy_function=os.link)
            (dirs[-1] / "replication-offset-checkpoint").unlink()
            (dirs[-1] / "replication-offset-checkpoint").write_bytes(
                checkpoint.encode("replication_offset_checkpoint", [("t0", 0, hw), ("t0", 1, hw)]))
    mode = parse_kafka_version(version)
    fast, full, taken = _both(monkeypatch, lambda: replay_all([str(d) for d in dirs], kafka_version=mode))
    assert fast == full
    assert taken == 2
