"""Salvage on the scenario fixtures and on built scenarios: which records, from where, with what status.

Expected records come from each scenario's story and Kafka's rules, not from
kforensics' output: in ``unclean-leader-election`` broker 3 left the ISR at
offset 2 and is elected uncleanly, so brokers 1 and 2 truncate 2..4 to it
(``AbstractFetcherThread.truncateToEpochEndOffsets`` @3.9.0: the follower
truncates to the leader's end offset for its epoch) and those records exist
nowhere else.  Transactional status follows Kafka's markers: a transaction's
data is committed or aborted by the first COMMIT/ABORT control record of
its producer after it (``ControlRecordType``, ``EndTransactionMarker``,
clients/src/main/java/org/apache/kafka/common/record/ @3.9.0;
``ProducerStateManager.completeTxn`` storage/src/main/java/org/apache/kafka/
storage/internals/log/ProducerStateManager.java @3.9.0), open without one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from kforensics.replay.report import replay_all
from kforensics.salvage.reading import ReadRecord, content_digest, digest64
from kforensics.salvage.records import LeaderIndex, Salvage
from kforensics.scenario import ScenarioBuilder, load_scenario
from tests.conftest import ROOT

SCENARIOS = ROOT / "fixtures" / "scenarios"


def salvage_of(path: Path, committed=None):
    sc = load_scenario(path)
    report = replay_all(sc.brokers, events=sc.events or None, metadata=sc.metadata)
    if committed == "read":
        from kforensics.consumers.replay_impact import replay_impact

        committed = replay_impact(report, sc.log_dirs).committed
    s = Salvage(report, committed)
    return list(s.records()), s.summary


def test_unclean_election_salvages_what_brokers_1_and_2_held_beyond_the_new_leader_once():
    recs, summary = salvage_of(SCENARIOS / "unclean-leader-election")
    assert [r.offset for r in recs] == [2, 3, 4]
    for r in recs:
        assert r.key == f"k{r.offset}".encode()
        assert r.value == f"unclean-leader-election offset {r.offset} epoch 0 broker 1".encode()
        assert r.brokers == [1, 2] and r.verdicts == {1: "LOSS_COMMITTED", 2: "LOSS_COMMITTED"}
        assert r.leader_epoch == 0 and r.timestamp_type == "CreateTime" and r.transactional == "none"
    assert summary.records == 3 and summary.duplicates == 3 and summary.kept_by_leader == 0


def test_healthy_cluster_salvages_nothing():
    recs, summary = salvage_of(SCENARIOS / "healthy-3-brokers")
    assert recs == [] and summary.partitions_read == 0


def test_consumer_groups_named_are_those_committed_beyond_the_record():
    # the scenario: broker 1 wrote 3-5 alone; 'billing' and 'audit' committed 6, 'reports' committed 2
    recs, summary = salvage_of(SCENARIOS / "consumer-group-resets", committed="read")
    assert [r.offset for r in recs] == [3, 4, 5]
    assert all(r.groups == ["audit", "billing"] for r in recs)
    assert summary.rows[0].groups == ["audit", "billing"]


def _txn_scenario(tmp_path: Path) -> Path:
    sb = ScenarioBuilder("salvage-txn", brokers=[1, 2])
    sb.elect(1, epoch=0).produce(1).replicate(2).isr([1])
    sb.produce_txn(2, producer_id=500).end_txn(500, commit=True)  # 1-2 data, 3 COMMIT
    sb.produce_txn(1, producer_id=600).end_txn(600, commit=False)  # 4 data, 5 ABORT
    sb.produce_txn(1, producer_id=700)  # 6: no marker follows
    sb.produce(1)  # 7
    sb.high_watermark(1, 8).high_watermark(2, 1)
    sb.then("down", broker=1).then("elect", leader=2, epoch=1, unclean=True)
    sb.then("up", broker=1).then("follow", broker=1)
    return sb.write(tmp_path / "sc")


def test_transactional_status_comes_from_the_holders_markers_and_markers_are_not_records(tmp_path):
    recs, _summary = salvage_of(_txn_scenario(tmp_path))
    got = {r.offset: (r.producer_id, r.transactional) for r in recs}
    assert got == {1: (500, "committed"), 2: (500, "committed"), 4: (600, "aborted"), 6: (700, "open"),
                   7: (-1, "none")}
    assert all(r.sequence >= 0 and r.producer_epoch >= 0 for r in recs if r.producer_id >= 0)
    from kforensics.salvage.produce import produce

    plan = produce(iter(recs), "localhost:1", tmp_path, topic_map={"orders": "back"})
    assert plan.aborted_left_out == 1 and plan.to_send == {"back-0": 4}  # the aborted record is left out
    plan = produce(iter(recs), "localhost:1", tmp_path, topic_map={}, include_aborted=True)
    assert plan.aborted_left_out == 0 and plan.to_send == {"orders-0": 5}


def _rec(offset, value, pid=-1, seq=-1):
    d = content_digest(b"k", value, [], pid, 0 if pid >= 0 else -1, seq)
    return ReadRecord(offset, 0, 0, "CreateTime", b"k", value, [], pid, 0 if pid >= 0 else -1, seq, False, 10, d)


def test_leader_keeps_same_content_at_the_offset_or_an_idempotent_record_anywhere():
    same = _rec(5, b"a")
    moved = _rec(9, b"b", pid=7, seq=3)  # the leader holds it at offset 12
    plain_moved = _rec(9, b"c")  # not idempotent: at another offset it is another record
    index = LeaderIndex(np.array([5, 12], dtype=np.int64),
                        np.array([digest64(same.digest), digest64(_rec(12, b"c").digest)], dtype=np.int64),
                        np.array([digest64(moved.digest)], dtype=np.int64))
    assert index.keeps(same)
    assert index.keeps(moved)
    assert not index.keeps(plain_moved)
    assert not index.keeps(_rec(5, b"other"))


def test_headers_and_producer_sequence_are_part_of_the_content():
    base = content_digest(b"k", b"v", [("h", b"1")], 7, 0, 3)
    assert base != content_digest(b"k", b"v", [("h", b"2")], 7, 0, 3)
    assert base != content_digest(b"k", b"v", [("h", b"1")], 7, 0, 4)
    assert base != content_digest(b"k", b"v", [], 7, 0, 3)
    assert content_digest(b"ab", b"c", [], -1, -1, -1) != content_digest(b"a", b"bc", [], -1, -1, -1)
    assert content_digest(None, b"", [], -1, -1, -1) != content_digest(b"", b"", [], -1, -1, -1)


def test_evidence_is_untouched_by_a_salvage(tmp_path):
    from click.testing import CliRunner

    from kforensics.cli import main

    sdir = SCENARIOS / "unclean-leader-election"

    def hashes():
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(sdir.rglob("*")) if p.is_file()}

    def stats():
        return {p: (p.stat().st_mtime_ns, p.stat().st_mode) for p in sorted(sdir.rglob("*"))}

    before, st = hashes(), stats()
    r = CliRunner().invoke(main, ["salvage", "--scenario", str(sdir), "--out", str(tmp_path / "out"),
                                  "--produce", "localhost:1"])
    assert r.exit_code == 1, r.output
    assert hashes() == before and stats() == st
    assert not any("ledger" in p.name for p in sdir.rglob("*"))


def test_a_batch_that_no_longer_reads_back_is_a_finding_and_the_other_copy_is_salvaged(tmp_path):
    import shutil

    sdir = tmp_path / "sc"
    shutil.copytree(SCENARIOS / "unclean-leader-election", sdir)
    sc = load_scenario(sdir)
    report = replay_all(sc.brokers, events=sc.events or None, metadata=sc.metadata)
    seg = sdir / "broker-1" / "orders-0" / "00000000000000000000.log"
    data = seg.read_bytes()
    seg.write_bytes(data[: len(data) - 30])  # broker 1's copy changed after the replay read it: its last batch is cut
    s = Salvage(report)
    recs = list(s.records())
    assert [r.offset for r in recs] == [2, 3, 4]
    assert [r.brokers for r in recs] == [[1, 2], [1, 2], [2]]
    assert [(f.code, f.facts["broker_id"], f.facts["base_offset"]) for f in s.summary.findings] == [
        ("SALVAGE_BATCH_NOT_READ", 1, 4)]


def test_a_copy_from_a_batch_failing_its_crc_is_flagged_and_never_put_back(tmp_path):
    # the scenario: broker 1's batch at offset 2 has a byte of its value flipped (its CRC no longer matches); broker 1
    # is elected, its recovery cuts 2 onwards (LOST_TO_RECOVERY), and broker 2 truncates its intact 2..5 to it
    recs, _summary = salvage_of(SCENARIOS / "damaged-batches-leader-crc-unclean")
    at2 = sorted((r.brokers, r.crc_valid) for r in recs if r.offset == 2)
    assert at2 == [([1], False), ([2], True)]
    assert all(r.crc_valid for r in recs if r.offset != 2)
    from kforensics.salvage.produce import produce

    plan = produce(iter(recs), "localhost:1", tmp_path, topic_map={})
    assert plan.damaged_left_out == 1 and plan.to_send == {"orders-0": len(recs) - 1}


def _retry_scenario(tmp_path: Path, producer_id: int) -> Path:
    """Broker 1 alone appends one record at offset 2; broker 2, elected uncleanly, holds the same record (key, value,
    producer id, epoch and sequence) at offset 3, as a producer's retry to the new leader lands."""
    from kforensics.formats.record_batch import RecordData, build_batch

    def batch(offset: int, epoch: int, key: bytes, value: bytes, pid: int, seq: int) -> tuple[int, int, int, bytes]:
        data = build_batch([RecordData(offset, 1_700_000_000_000 + offset, key, value)], partition_leader_epoch=epoch,
                           producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)
        return offset, offset, epoch, data

    seq = 5 if producer_id >= 0 else -1
    sb = ScenarioBuilder(f"retry-{producer_id}", brokers=[1, 2])
    sb.elect(1, epoch=0).produce(2).replicate(2).isr([1])
    sb.brokers[1].append(batch(2, 0, b"x", b"retry me", producer_id, seq))
    sb.high_watermark(1, 3).high_watermark(2, 2)
    sb.elect(2, epoch=1, record_epoch=True, unclean=True)
    sb.brokers[2].append(batch(2, 1, b"y", b"another", 9, 0))
    sb.brokers[2].append(batch(3, 1, b"x", b"retry me", producer_id, seq))
    sb.then("follow", broker=1)
    return sb.write(tmp_path / f"sc{producer_id}")


def test_an_idempotent_record_the_new_leader_holds_at_another_offset_is_kept_a_plain_one_is_not(tmp_path):
    recs, summary = salvage_of(_retry_scenario(tmp_path, 7))
    assert recs == [] and summary.kept_by_leader == 1  # Kafka's duplicate: the same producer epoch and sequence
    recs, summary = salvage_of(_retry_scenario(tmp_path, -1))
    assert [(r.offset, r.value) for r in recs] == [(2, b"retry me")] and summary.kept_by_leader == 0


def test_a_leader_another_return_order_changes_is_a_finding():
    # the lab's unclean election (#25): with brokers 1, 2, 3 all coming back, the replay's leader is 3 and another
    # order of return elects 1 or 2; Kafka elected 2 when 2 registered first, and salvage for 3 missed its losses
    from types import SimpleNamespace

    from kforensics.salvage.records import leader_unsettled

    election = SimpleNamespace(alternatives=[1, 2, -1], returning=[1, 2, 3])
    p = SimpleNamespace(topic="events", partition=0, leader=3, election=election)
    f = leader_unsettled(p)
    assert f is not None and f.code == "SALVAGE_LEADER_UNSETTLED" and f.severity.name == "MEDIUM"
    assert f.facts["alternatives"] == [-1, 1, 2] and "broker 2" in f.message and "nobody" in f.message
    settled = SimpleNamespace(alternatives=[], returning=[3])
    assert leader_unsettled(SimpleNamespace(topic="events", partition=0, leader=3, election=settled)) is None
    assert leader_unsettled(SimpleNamespace(topic="events", partition=0, leader=3, election=None)) is None
