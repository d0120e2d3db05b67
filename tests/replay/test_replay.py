"""Replay: every scenario x Kafka version against its expected verdicts, reasoning, CLI, properties."""

from __future__ import annotations

import json
import zlib

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import file_tree, run_generator, ROOT
from kforensics.cli import main
from kforensics.replay.engine import replay_partition
from kforensics.replay.inputs import load_replicas
from kforensics.replay.report import replay_all
from kforensics.replay.replica import BatchLog, Replica
from kforensics.scenario import load_scenario
from kforensics.epoch.versions import parse_kafka_version

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())
CASES = [(s, v) for s in SCENARIOS for v in load_scenario(s).expected]
_loaded: dict = {}


def replicas_of(sdir):
    if sdir not in _loaded:
        sc = load_scenario(sdir)
        _loaded[sdir] = (sc, load_replicas(sc.brokers).groups[(sc.topic, sc.partition)])
    return _loaded[sdir]


@pytest.mark.parametrize("sdir,version", CASES, ids=[f"{s.name}@{v}" for s, v in CASES])
def test_scenario_verdicts(sdir, version):
    # the path `kforensics replay --scenario` takes: scan the disks, read the controller's record, replay
    sc = load_scenario(sdir)
    report = replay_all(sc.brokers, kafka_version=parse_kafka_version(version), events=sc.events or None, metadata=sc.metadata)
    (r,) = report.partitions
    assert r.verdict_codes() == sc.expected[version]


def test_all_required_scenarios_exist():
    names = {s.name for s in SCENARIOS}
    assert names >= {"kip101-s1-hw-truncation", "kip101-s2-two-hard-failures", "kip279-fast-failover",
                     "kafka-7415-leader-not-written", "three-round-truncation", "unclean-leader-election",
                     "healthy-3-brokers", "lagging-follower", "compaction-differs",
                     # the restart cases of docs/replay-at-restart.md section 4
                     "unflushed-tail-checkpoints-survive", "clean-election-leader-lost-tail",
                     "not-converging-diverging-epoch-cycle", "not-converging-kip279-checkpoint"}
    damaged = {n for n in names if n.startswith("damaged-batches-")}
    assert len(damaged) == 12  # {leader, follower} x {crc, zero, torn} x {unclean, marker}


def test_every_scenario_expects_every_version_mode_and_says_where_restart_verdicts_come_from():
    for s in SCENARIOS:
        sc = load_scenario(s)
        assert set(sc.expected) == {"0.10", "0.11", "2.0.0", "2.0.1", "2.8", "latest"}, s.name
        if any(c in code for exp in sc.expected.values() for codes in exp.values() for code in codes
               for c in ("RECOVERY", "LOAD", "CONVERGING", "LACKS")):
            assert any("@" in src for src in sc.doc.get("sources", [])), s.name  # a Kafka function at a tag
            assert any("replay-at-restart.md" in src for src in sc.doc["sources"]), s.name


def test_old_rules_lose_or_fork_where_epochs_keep_logs_consistent():
    sc, reps = replicas_of(ROOT / "fixtures" / "scenarios" / "kip101-s1-hw-truncation")
    old = replay_partition("orders", 0, reps, kafka_version=parse_kafka_version("0.10"), events=sc.events)
    new = replay_partition("orders", 0, reps, kafka_version=parse_kafka_version("0.11"), events=sc.events)
    assert "LOSS_COMMITTED" in old.verdict_codes()[1] and new.verdict_codes() == {1: ["OK"], 2: ["OK"]}
    sc, reps = replicas_of(ROOT / "fixtures" / "scenarios" / "kip101-s2-two-hard-failures")
    old = replay_partition("orders", 0, reps, kafka_version=parse_kafka_version("0.10"), events=sc.events)
    assert old.verdict_codes()[1] == ["FORK"]
    assert any(f.code == "LOG_MATCHING_VIOLATED" for f in old.findings)


def test_three_round_vector_reasoning():
    sc, reps = replicas_of(ROOT / "fixtures" / "scenarios" / "three-round-truncation")
    r = replay_partition("orders", 0, reps, kafka_version=parse_kafka_version("2.0.1"), events=sc.events)
    (d,) = next(x for x in r.replicas if x.broker_id == 1).decisions
    assert [(x["asked_epoch"], x["leader_answer"], x["truncate_to"]) for x in d.rounds] == [
        (4, [3, 2], 2), (2, [1, 1], 1), (0, [0, 0], 0)]
    r = replay_partition("orders", 0, reps, kafka_version=parse_kafka_version("2.8"), events=sc.events)
    (d,) = next(x for x in r.replicas if x.broker_id == 1).decisions
    assert d.path == "diverging-epoch"
    assert [(x["fetch_offset"], x["last_fetched_epoch"], x["leader_answer"]) for x in d.rounds[:3]] == [
        (3, 4, [3, 2]), (2, 2, [1, 1]), (1, 0, [0, 0])]
    # then it fetches from 0 with no epoch, appends the leader's 0..2 and names epoch 5 in the next fetch
    assert d.rounds[3] == {"fetch_offset": 0, "last_fetched_epoch": None, "appended": [0, 2]}
    assert d.rounds[4] == {"fetch_offset": 3, "last_fetched_epoch": 5, "leader_answer": [5, 3]}
    r = replay_partition("orders", 0, reps, kafka_version=parse_kafka_version("2.0.0"), events=sc.events)
    (d,) = next(x for x in r.replicas if x.broker_id == 1).decisions
    assert d.rounds[-1]["leader_answer"] == [-1, -1]  # below the leader's first epoch: UNDEFINED before 2.0.1
    # ... which truncates to the current fetch offset: the offset round 2 truncated to, not the HW 0
    assert [x["truncate_to"] for x in d.rounds] == [2, 1, 1] and d.leo_after == 1


def test_cli_json_carries_broker_ids_and_verdicts():
    sdir = ROOT / "fixtures" / "scenarios" / "unclean-leader-election"
    r = CliRunner().invoke(main, ["replay", "--scenario", str(sdir), "--format", "json"])
    assert r.exit_code == 1
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 3
    (p,) = doc["partitions"]
    by = {x["broker_id"]: x for x in p["replicas"]}
    assert [v["code"] for v in by[1]["verdicts"]] == ["LOSS_COMMITTED"]
    assert by[1]["verdicts"][0]["offsets"] == [[2, 4]]
    assert by[3]["verdicts"][0]["code"] == "UNCLEAN_ELECTION"


def test_cli_what_if_and_broker_ids():
    sdir = ROOT / "fixtures" / "scenarios" / "unclean-leader-election"
    args = ["replay", "--format", "json", "--what-if"] + [f"--broker={i}={sdir / f'broker-{i}'}" for i in (1, 2, 3)]
    doc = json.loads(CliRunner().invoke(main, args).stdout)
    (p,) = doc["partitions"]
    assert p["least_loss_leader"] in (1, 2)
    lost = {w["leader"]: w["lost_records"]["LOSS_COMMITTED"] for w in p["what_if"]}
    assert lost[3] > 0 and lost[1] == lost[2] == 0
    # a topic or leader that is not in the evidence is a mistake in the command, not an empty answer
    r = CliRunner().invoke(main, ["replay", str(sdir / "broker-1"), str(sdir / "broker-2"), "--topic", "nope"])
    assert r.exit_code == 2 and "nope" in r.output
    r = CliRunner().invoke(main, ["replay", str(sdir / "broker-1"), str(sdir / "broker-2"), "--leader", "9"])
    assert r.exit_code == 2 and "9" in r.output


# ------------------------------------------------------------------ properties on random valid histories
def history(draw_ops, n_brokers=3):
    """A valid Kafka history: a controller hands out increasing epochs, the leader appends in its epoch,
    followers copy a prefix of the current leader's log, crashes drop unflushed suffixes."""
    logs = {b: [] for b in range(1, n_brokers + 1)}
    hws = {b: 0 for b in logs}
    epoch = -1
    leader = None
    for op, b, k in draw_ops:
        if op == "elect" or leader is None:
            epoch += 1
            leader = b
        elif op == "append":
            start = len(logs[leader])
            for i in range(k):
                logs[leader].append((start + i, epoch, zlib.crc32(f"{leader}:{start + i}:{epoch}".encode())))
        elif op == "replicate" and b != leader:
            src = logs[leader]
            # truncate to the common prefix first (a follower only ever holds a prefix of some leader)
            common = 0
            while common < min(len(src), len(logs[b])) and src[common] == logs[b][common]:
                common += 1
            logs[b] = src[: max(common, min(len(src), common + k))]
            hws[b] = min(len(logs[b]), hws[leader])
        elif op == "commit":
            hws[leader] = len(logs[leader])
        elif op == "crash":
            logs[b] = logs[b][: max(0, len(logs[b]) - k)]
            hws[b] = min(hws[b], len(logs[b]))
    reps = []
    for b, log in logs.items():
        rows = [[o, o, e, c, 1, 100, -1, 2] for o, e, c in log]
        reps.append(Replica(b, BatchLog.from_rows(rows), high_watermark=hws[b]))
    return reps


ops = st.lists(st.tuples(st.sampled_from(["elect", "append", "append", "replicate", "replicate", "commit", "crash"]),
                         st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=25)


@given(ops, st.integers(1, 3))
@settings(max_examples=int(__import__("os").environ.get("KF_EXAMPLES", "300")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_replay_terminates_and_leaves_followers_as_prefixes_of_the_leader(draw, leader):
    reps = history(draw)
    results = {}
    for v in ("0.10", "0.11", "2.0.0", "2.0.1", "2.8", "latest"):
        r = replay_partition("t", 0, reps, kafka_version=parse_kafka_version(v), leader=leader)
        results[v] = r
    for v in ("2.0.1", "2.8", "latest"):
        assert not [f for f in results[v].findings if f.code == "LOG_MATCHING_VIOLATED"], v
    # no controller record, so no election is called unclean (the lack of committed records is named instead)
    assert not any("UNCLEAN_ELECTION" in codes for r in results.values() for codes in r.verdict_codes().values())
    # the OffsetsForLeaderEpoch loop (2.0.1) and truncation on fetch (2.8+) reach the same logs
    assert results["2.0.1"].verdict_codes() == results["2.8"].verdict_codes() == results["latest"].verdict_codes()

    def rounds(r):
        return [x for o in r.replicas for d in o.decisions for x in d.rounds]

    # KAFKA-7415 changed only UNDEFINED answers (an epoch below the first cached one, on either side,
    # or the new leader's not yet written epoch)
    if results["2.0.0"].verdict_codes() != results["2.0.1"].verdict_codes():
        assert any(x["leader_answer"] == [-1, -1] or x.get("follower_answer") == [-1, -1]
                   for x in rounds(results["2.0.0"]))
    # KIP-279 changed only cases where the leader's answer names an older epoch (or several rounds are needed)
    if results["0.11"].verdict_codes() != results["2.0.0"].verdict_codes():
        assert any(x["leader_answer"][0] != x["asked_epoch"] or x["leader_answer"] == [-1, -1]
                   for x in rounds(results["2.0.0"])) or any(
            len(d.rounds) > 1 for o in results["2.0.0"].replicas for d in o.decisions)


def test_digests_of_lost_records_are_read_back_from_the_replica():
    sdir = ROOT / "fixtures" / "scenarios" / "kip101-s2-two-hard-failures"
    r = CliRunner().invoke(main, ["replay", "--scenario", str(sdir), "--format", "json", "--digests"])
    (p,) = json.loads(r.stdout)["partitions"]
    lost = next(v for x in p["replicas"] if x["broker_id"] == 1 for v in x["verdicts"])
    assert lost["code"] == "LOSS_COMMITTED"
    (rec,) = lost["digests"]
    import hashlib

    assert rec["offset"] == 1
    assert rec["key_sha256"] == hashlib.sha256(b"k1").hexdigest()
    assert rec["value_sha256"] == hashlib.sha256(b"kip101-s2-two-hard-failures offset 1 epoch 0 broker 1").hexdigest()


def test_scenarios_regenerate_byte_for_byte(tmp_path):
    run_generator(ROOT / "fixtures" / "make_scenarios.py", tmp_path)
    assert file_tree(tmp_path) == file_tree(ROOT / "fixtures" / "scenarios")


def test_scenario_metadata_logs_agree_with_the_brokers_epochs():
    from kforensics.kraft.grants import check_replica_epochs
    from kforensics.kraft.timeline import build_timeline

    with_meta = [s for s in SCENARIOS if (s / "controller").exists()]
    assert len(with_meta) >= 7  # every scenario whose elections a controller could have made
    for s in with_meta:
        sc, reps = replicas_of(s)
        tl = build_timeline(sc.metadata)
        assert tl.partitions[(sc.topic, sc.partition)]
        # the record also holds the elections after the snapshot: the disks cannot show those yet
        later = {e["epoch"] for e in sc.events if e["op"] == "elect"}
        for r in reps:
            seen = sorted({int(e) for e in r.log.col("partition_leader_epoch").tolist() if e >= 0})
            found = check_replica_epochs(tl, topic=sc.topic, partition=sc.partition, broker_id=r.broker_id,
                                         checkpoint=r.epoch_checkpoint, batch_epochs=seen)
            assert all(f.code == "GRANT_NOT_SEEN" and f.facts["epoch"] in later for f in found), (s.name, found)
    doc = json.loads(CliRunner().invoke(main, ["replay", "--scenario", str(ROOT / "fixtures" / "scenarios" /
                                                                            "kafka-7415-leader-not-written"),
                                               "--format", "json"]).stdout)
    assert [(e["leader"], e["leader_epoch"]) for e in doc["partitions"][0]["timeline"]] == [(1, 0), (2, 1), (1, 2)]


def test_brokers_of_different_clusters_or_given_twice_are_usage_errors():
    scen = ROOT / "fixtures" / "scenarios"
    r = CliRunner().invoke(main, ["replay", str(scen / "healthy-3-brokers" / "broker-1"),
                                  str(scen / "lagging-follower" / "broker-2")])
    assert r.exit_code == 2 and "different clusters" in r.output
    assert "scenario-healthy-3-brokers" in r.output and "scenario-lagging-follower" in r.output
    r = CliRunner().invoke(main, ["replay", str(scen / "healthy-3-brokers" / "broker-1"),
                                  str(scen / "healthy-3-brokers" / "broker-1")])
    assert r.exit_code == 2 and "broker 1" in r.output
    r = CliRunner().invoke(main, ["replay", "--broker", f"1={scen / 'healthy-3-brokers' / 'broker-1'}",
                                  "--broker", f"1={scen / 'healthy-3-brokers' / 'broker-2'}"])
    assert r.exit_code == 2 and "twice" in r.output
