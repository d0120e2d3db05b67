"""The election timeline: real KRaft brokers' leader epochs against their checkpoints, epoch replay rules,
snapshots before the log, unclean elections, cross-check findings and the ``timeline`` command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kforensics.cli.timeline import timeline
from kforensics.findings import Severity
from kforensics.formats import checkpoint, meta_properties, partition_metadata
from kforensics.formats.control import encode_control_key, encode_snapshot_footer, encode_snapshot_header
from kforensics.formats.metadata_records import encode_metadata_record
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.kraft import grants
from kforensics.kraft.timeline import Timeline, build_timeline
from kforensics.log.log_dir import open_log_dir
from kforensics.log.segment_reader import SegmentReader
from kforensics.serialize import to_jsonable
from tests.conftest import REALDATA

KRAFT_BROKERS = [
    "hiage__kafka-raft__c5f680e/data/kafka1",
    "hiage__kafka-raft__c5f680e/data/kafka2",
    "hiage__kafka-raft__c5f680e/data/kafka3",
    "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1/kafka_data",
    "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1/kafka_2.13-3.5.0/kraft-combined-logs",
    "Niloufar1171__LDI-POC__8030792",
    "ronem123__rupia-transaction-service__5d88e97/kafka-logs",
]
T0 = 1_700_000_000_000


def need_realdata() -> Path:
    if not REALDATA.exists():
        pytest.skip(f"{REALDATA} is absent: the real broker data in ../shared is not beside this checkout")
    return REALDATA


def above_info(tl: Timeline) -> list:
    return [(f.code, f.message) for f in tl.findings if f.severity > Severity.INFO]


def replicas_on_disk(root: Path):
    """(partition dir, topic id, checkpoint entries, batch epochs) of every user partition with a checkpoint."""
    for pd in open_log_dir(root).partitions:
        if pd.is_metadata_log or pd.leader_epoch_checkpoint is None:
            continue
        cp = checkpoint.decode(pd.leader_epoch_checkpoint.read_bytes(), "leader_epoch_checkpoint")
        assert not cp.findings
        tid = partition_metadata.decode(pd.partition_metadata.read_bytes()).topic_id if pd.partition_metadata else None
        epochs = sorted({b.partition_leader_epoch for seg in pd.sorted_segments() if seg.log
                         for b in SegmentReader(seg.log).batches() if b.partition_leader_epoch >= 0})
        yield pd, tid, cp.epochs(), epochs


# --------------------------------------------------------------------------- real brokers
def check_replica_epochs(tl, replica: dict):
    """The grant check for a replica given as a dict of what a scan knows about it."""
    return grants.check_replica_epochs(tl, topic=replica["topic"], partition=replica["partition"],
                                       topic_id=replica.get("topic_id"), broker_id=replica.get("broker_id"),
                                       checkpoint=replica.get("epoch_cache_written"),
                                       batch_epochs=replica.get("epochs_seen") or [], file=replica.get("file"))


@pytest.mark.parametrize("broker", KRAFT_BROKERS)
def test_real_timeline_matches_the_leader_epoch_checkpoints(broker):
    root = need_realdata() / broker
    tl = build_timeline(root)
    assert tl.records > 2_000 and tl.complete
    assert not above_info(tl)
    # one node's copy: the lineage, nothing deposed, nothing lost; committed by LeaderState.maybeUpdateHighWatermark's
    # rule (a majority of voters, past the start of the last epoch)
    (copy,) = tl.quorum.copies
    assert (copy.deposed, copy.missing, tl.tail_missing) == (None, (), False) and tl.trusted_end == tl.log_end
    if tl.quorum.voters == (1,):  # the only voter (quorum-state): a majority of one holds everything, committed
        assert tl.committed_end == tl.log_end
    else:  # hiage: one of three voters' copies proves nothing committed (no snapshot)
        assert tl.quorum.voters == (1, 2, 3) and tl.committed_end is None
    node = meta_properties.decode((root / "meta.properties").read_bytes()).node_id
    checked = 0
    for pd, tid, cp, batch_epochs in replicas_on_disk(root):
        entries = tl.entries(pd.topic, pd.partition, tid)
        assert entries, pd.path
        assert entries[-1].topic_id == tid  # partition.metadata holds the controller's topic id
        for epoch, _start in cp:
            assert tl.was_granted(pd.topic, pd.partition, epoch, tid), (pd.path, epoch, tl.granted_epochs(
                pd.topic, pd.partition, tid))
        for epoch in batch_epochs:
            assert tl.was_granted(pd.topic, pd.partition, epoch, tid), (pd.path, epoch)
        if cp:
            mine = [e.leader_epoch for e in entries if e.leader_changed and e.leader == node]
            led = [e.leader_epoch for e in entries if e.leader_changed and e.leader >= 0]
            if mine:  # a leader writes its epoch into the cache when it is elected
                assert cp[-1][0] == max(mine), (pd.path, cp, mine)
            elif node in entries[-1].isr:  # an in-sync follower has the last leader's epoch
                assert cp[-1][0] == max(led), (pd.path, cp, led)
        replica = {"topic": pd.topic, "partition": pd.partition, "topic_id": tid, "broker_id": node,
                   "epoch_cache_written": cp, "epochs_seen": batch_epochs}
        assert check_replica_epochs(tl, replica) == []
        checked += 1
    assert checked >= 1


def test_real_copies_of_one_metadata_log_merge():
    data = need_realdata() / "hiage__kafka-raft__c5f680e" / "data"
    alone = [build_timeline(data / f"kafka{i}") for i in (1, 2, 3)]
    merged = build_timeline([data / "kafka1", data / "kafka2", data / "kafka3"])
    assert not above_info(merged)
    assert merged.log_end == max(t.log_end for t in alone) == 2989
    # each copy a prefix of kafka3's (one Raft epoch): nothing diverges, nothing is lost; two of the three voters hold
    # 0-2985, so the committed bound is 2986 and the 2986-2988 only kafka3 holds are not shown committed
    q = merged.quorum
    assert q.reference.endswith("kafka3/__cluster_metadata-0") and not merged.tail_missing
    assert [(c.node_id, c.valid_end, c.deposed, c.missing) for c in q.copies] == [
        (1, 2982, None, ()), (2, 2986, None, ()), (3, 2989, None, ())]
    assert (q.committed_end, q.committed_by) == (2986, "majority of voters [1, 2, 3]")
    assert [f.code for f in merged.findings] == ["METADATA_UNCOMMITTED"]
    assert merged.partitions.keys() == alone[2].partitions.keys()
    assert {p["topic"] for p in to_jsonable(merged)["partitions"]} == {"__consumer_offsets", "test1", "test5"}


def test_real_epoch_replay_rules_hold_on_every_change():
    base = need_realdata()
    changes = 0
    for broker in KRAFT_BROKERS[3:]:
        tl = build_timeline(base / broker)
        for entries in tl.partitions.values():
            for a, b in zip(entries, entries[1:]):
                if b.source == "snapshot" or a.topic_id != b.topic_id:
                    continue
                assert b.record == "PartitionChangeRecord"
                assert b.partition_epoch == a.partition_epoch + 1
                assert b.leader_epoch == a.leader_epoch + (1 if b.leader_changed else 0)
                changes += 1
    assert changes > 100


def test_real_snapshots_are_checked_or_loaded():
    base = need_realdata()
    tl = build_timeline(base / "Danielowo2000__BigDataTechnologies-Version-2__63c2bf1" / "kafka_data")
    assert len(tl.snapshots_checked) == 2 and not tl.snapshots_loaded  # the log reaches both without a gap
    tl = build_timeline(base / "ronem123__rupia-transaction-service__5d88e97" / "kafka-logs")
    # 125 snapshots: the log (from 1725413) reaches the last one; the older ones follow deleted segments
    assert len(tl.snapshots_loaded) + len(tl.snapshots_checked) == 125 and len(tl.snapshots_checked) == 1
    assert [f.code for f in tl.findings] == ["METADATA_RECORDS_SUPERSEDED"]
    es = tl.entries("topic_transactions", 0)
    assert [(e.leader, e.leader_epoch, e.source) for e in es][-2:] == [(1, 10, "snapshot"), (-1, 11, "log")]
    assert es[-1].elr == [1] and es[-1].isr == []  # ELR (KIP-966) written by Kafka 4


def test_mutated_real_metadata_log_gives_findings_not_exceptions(tmp_path):
    src = need_realdata() / "hiage__kafka-raft__c5f680e" / "data" / "kafka1" / "__cluster_metadata-0"
    dst = tmp_path / "__cluster_metadata-0"
    shutil.copytree(src, dst)
    seg = dst / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    for pos in range(1000, len(raw), 7919):
        raw[pos] ^= 0x5A
    seg.write_bytes(bytes(raw[: len(raw) - 100]))
    tl = build_timeline(dst)
    assert tl.findings and tl.records > 0
    json.dumps(to_jsonable(tl))


# --------------------------------------------------------------------------- synthetic metadata logs
TID = "AAAAAAAAAAAAAAAAAAAABw"
TID2 = "AAAAAAAAAAAAAAAAAAAACA"


def topic(name="t", tid=TID):
    return encode_metadata_record("TopicRecord", 0, {"name": name, "topicId": tid})


def part(leader=1, isr=(1, 2, 3), replicas=(1, 2, 3), epoch=0, pepoch=0, tid=TID, p=0, version=0, **tags):
    return encode_metadata_record("PartitionRecord", version, {
        "partitionId": p, "topicId": tid, "replicas": list(replicas), "isr": list(isr), "removingReplicas": [],
        "addingReplicas": [], "leader": leader, "leaderEpoch": epoch, "partitionEpoch": pepoch, **tags})


def change(tid=TID, p=0, version=0, **fields):
    return encode_metadata_record("PartitionChangeRecord", version, {"partitionId": p, "topicId": tid, **fields})


def write_log(root: Path, values: list[bytes], start: int = 0, raft_epoch: int = 1) -> Path:
    d = root / "__cluster_metadata-0"
    d.mkdir(parents=True, exist_ok=True)
    batches = [build_batch([RecordData(start + i, T0 + i, None, v)], partition_leader_epoch=raft_epoch)
               for i, v in enumerate(values)]
    (d / f"{start:020d}.log").write_bytes(b"".join(batches))
    return d


def write_snapshot(root: Path, end: int, values: list[bytes], epoch: int = 1, footer: bool = True) -> Path:
    d = root / "__cluster_metadata-0"
    d.mkdir(parents=True, exist_ok=True)
    ts = T0 + end
    batches = [build_batch([RecordData(0, ts, encode_control_key("SNAPSHOT_HEADER"), encode_snapshot_header(ts))],
                           control=True, partition_leader_epoch=epoch),
               build_batch([RecordData(1 + i, ts, None, v) for i, v in enumerate(values)],
                           partition_leader_epoch=epoch)]
    if footer:
        batches.append(build_batch([RecordData(1 + len(values), ts, encode_control_key("SNAPSHOT_FOOTER"),
                                               encode_snapshot_footer())], control=True, partition_leader_epoch=epoch))
    f = d / f"{end:020d}-{epoch:010d}.checkpoint"
    f.write_bytes(b"".join(batches))
    return f


def rows(tl: Timeline, key=("t", 0)):
    return [(e.offset, e.leader, e.leader_epoch, e.partition_epoch, e.isr, e.unclean)
            for e in tl.partitions[key]]


def test_epochs_are_replayed_as_the_controller_increments_them(tmp_path):
    write_log(tmp_path, [
        topic(),
        part(),  # 1: leader 1, epochs 0/0
        change(isr=[1, 2]),  # 2: ISR shrink: partition epoch only
        change(leader=2),  # 3: clean election (2 was in the ISR)
        change(leader=2, isr=[2]),  # 4: the same leader set again still bumps the leader epoch
        change(leader=-1),  # 5: no leader: an epoch nobody can write in
        change(leader=2),  # 6: 2 comes back (still in the ISR)
        change(leader=3, isr=[3]),  # 7: 3 was not in the ISR [2]: unclean
        change(leaderRecoveryState=1),  # 8: becoming RECOVERING is unclean too
        change(leaderRecoveryState=0, isr=[3, 2]),  # 9: recovered
        change(leader=-2, isr=[3]),  # 10: Leader = -2 means unchanged, even when written
    ])
    tl = build_timeline(tmp_path)
    assert not tl.findings and tl.complete and tl.topic_names == {TID: "t"}
    assert rows(tl) == [
        (1, 1, 0, 0, [1, 2, 3], False), (2, 1, 0, 1, [1, 2], False), (3, 2, 1, 2, [1, 2], False),
        (4, 2, 2, 3, [2], False), (5, -1, 3, 4, [2], False), (6, 2, 4, 5, [2], False),
        (7, 3, 5, 6, [3], True), (8, 3, 5, 7, [3], True), (9, 3, 5, 8, [3, 2], False), (10, 3, 5, 9, [3], False)]
    assert [e.leader_recovery_state for e in tl.partitions[("t", 0)]][6:9] == [0, 1, 0]
    assert tl.granted_epochs("t", 0) == {0: 1, 1: 2, 2: 2, 3: -1, 4: 2, 5: 3}
    assert tl.was_granted("t", 0, 4) and not tl.was_granted("t", 0, 3) and not tl.was_granted("t", 0, 6)


def test_elr_members_are_clean_leaders_and_clear_elr_bumps_the_partition_epoch(tmp_path):
    write_log(tmp_path, [
        topic(),
        part(version=2, directories=[TID] * 3, eligibleLeaderReplicas=[], lastKnownElr=[]),
        change(version=2, leader=-1, isr=[], eligibleLeaderReplicas=[1, 2], lastKnownElr=[1]),
        change(version=2, leader=2, isr=[2], eligibleLeaderReplicas=[1]),  # from the ELR: clean
        encode_metadata_record("ClearElrRecord", 0, {"topicName": "t"}),
        encode_metadata_record("ClearElrRecord", 0, {"topicName": ""}),  # nothing left to clear
    ])
    tl = build_timeline(tmp_path)
    es = tl.partitions[("t", 0)]
    assert [(e.record, e.leader, e.leader_epoch, e.partition_epoch, e.elr, e.last_known_elr, e.unclean)
            for e in es] == [
        ("PartitionRecord", 1, 0, 0, [], [], False),
        ("PartitionChangeRecord", -1, 1, 1, [1, 2], [1], False),
        ("PartitionChangeRecord", 2, 2, 2, [1], [1], False),
        ("ClearElrRecord", 2, 2, 3, [], [], False)]


def test_topics_are_named_removed_and_recreated(tmp_path):
    write_log(tmp_path, [
        topic(), part(leader=1, p=0), part(leader=2, p=1), change(leader=2),
        encode_metadata_record("RemoveTopicRecord", 0, {"topicId": TID}),
        topic(tid=TID2), part(leader=3, tid=TID2),
        change(tid=TID, leader=1),  # a change for the deleted incarnation: no registration to apply it to
    ])
    tl = build_timeline(tmp_path)
    assert tl.topic_names == {TID: "t", TID2: "t"} and tl.removed_topics[TID]["offset"] == 4
    assert [(e.topic_id, e.leader, e.leader_epoch) for e in tl.partitions[("t", 0)]] == [
        (TID, 1, 0), (TID, 2, 1), (TID2, 3, 0)]
    assert tl.entries("t", 0)[-1].topic_id == TID2 and len(tl.entries("t", 0, TID)) == 2
    assert [f.code for f in tl.findings] == ["CHANGE_WITHOUT_PARTITION"]
    # a replica of the old incarnation is recognised by its topic id
    old = {"topic": "t", "partition": 1, "topic_id": TID, "epoch_cache_written": [(0, 0)], "broker_id": 2}
    assert [f.code for f in check_replica_epochs(tl, old)] == ["REPLICA_OF_DELETED_TOPIC"]
    stray = {"topic": "t", "partition": 0, "topic_id": "AAAAAAAAAAAAAAAAAAAACQ", "epoch_cache_written": [(0, 0)]}
    assert [f.code for f in check_replica_epochs(tl, stray)] == ["TOPIC_ID_MISMATCH"]


def test_metadata_transactions_apply_on_end_and_vanish_on_abort(tmp_path):
    write_log(tmp_path, [
        topic(),
        encode_metadata_record("BeginTransactionRecord", 0, {"name": "a"}),
        part(p=0),
        encode_metadata_record("AbortTransactionRecord", 0, {"reason": "test"}),
        encode_metadata_record("BeginTransactionRecord", 0, {}),
        part(p=1),
        encode_metadata_record("EndTransactionRecord", 0, {}),
        encode_metadata_record("BeginTransactionRecord", 0, {}),
        part(p=2),
    ])
    tl = build_timeline(tmp_path)
    assert sorted(tl.partitions) == [("t", 1)]
    assert [f.code for f in tl.findings] == ["METADATA_TRANSACTION_ABORTED", "METADATA_TRANSACTION_OPEN"]


def test_unknown_and_damaged_records_are_findings(tmp_path):
    write_log(tmp_path, [topic(), b"\x01\x06\x00\x00", b"\x00\x02\x00", part(), b"\x01\x05\x00\x01", change(leader=2)])
    tl = build_timeline(tmp_path)
    assert [(f.code, f.severity, f.facts["offset"]) for f in tl.findings] == [
        ("UNKNOWN_METADATA_RECORD", Severity.MEDIUM, 1), ("BAD_METADATA_FRAME", Severity.MEDIUM, 2),
        ("METADATA_RECORD_DECODE_ERROR", Severity.MEDIUM, 4)]
    assert rows(tl) == [(3, 1, 0, 0, [1, 2, 3], False), (5, 2, 1, 1, [1, 2, 3], False)]


def test_snapshot_first_then_the_log_after_it(tmp_path):
    # older segments are gone: the snapshot at end offset 10 is the start; the log copy begins at 8
    write_snapshot(tmp_path, 10, [topic(), part(leader=2, epoch=4, pepoch=6, isr=[2, 3])])
    write_log(tmp_path, [change(leader=9), change(leader=9), change(leader=3), change(isr=[3])], start=8)
    tl = build_timeline(tmp_path)
    assert rows(tl) == [(9, 2, 4, 6, [2, 3], False), (10, 3, 5, 7, [2, 3], False), (11, 3, 5, 8, [3], False)]
    assert tl.entries("t", 0)[0].source == "snapshot" and tl.complete and tl.log_start == 10
    assert [(f.code, f.facts) for f in tl.findings] == [("METADATA_RECORDS_SUPERSEDED", {"first": 8, "last": 9})]
    # epochs below the snapshot's first one are history it does not show, not ungranted epochs
    replica = {"topic": "t", "partition": 0, "epoch_cache_written": [(1, 0), (4, 10), (5, 30)], "epochs_seen": [5]}
    assert check_replica_epochs(tl, replica) == []


def test_snapshots_are_checked_against_the_log_and_close_gaps(tmp_path):
    log = [topic(), part(), change(leader=2), change(leader=3)]  # offsets 0..3: epochs 0, 1, 2
    write_log(tmp_path, log)
    write_snapshot(tmp_path, 3, [topic(), part(leader=2, epoch=1, pepoch=1)])  # agrees with offsets 0..2
    write_snapshot(tmp_path, 4, [topic(), part(leader=3, epoch=7, pepoch=2)])  # disagrees: epoch 7
    tl = build_timeline(tmp_path)
    assert [f.code for f in tl.findings] == ["SNAPSHOT_DISAGREES_WITH_LOG"]
    assert len(tl.snapshots_checked) == 2
    # a snapshot after a gap: the state jumps, the epochs in between were granted to unknown leaders
    gap = tmp_path / "gap"
    write_log(gap, log)
    write_snapshot(gap, 20, [topic(), part(leader=1, epoch=6, pepoch=9, isr=[1])])
    tl = build_timeline(gap)
    assert [(e.leader, e.leader_epoch, e.source) for e in tl.partitions[("t", 0)]] == [
        (1, 0, "log"), (2, 1, "log"), (3, 2, "log"), (1, 6, "snapshot")]
    assert tl.was_granted("t", 0, 4) and not tl.was_granted("t", 0, 7)


def test_incomplete_snapshot_is_not_used(tmp_path):
    write_snapshot(tmp_path, 5, [topic(), part()], footer=False)
    tl = build_timeline(tmp_path)
    assert [f.code for f in tl.findings] == ["SNAPSHOT_INCOMPLETE"] and not tl.partitions


def test_check_replica_epochs_findings(tmp_path):
    write_log(tmp_path, [topic(), part(leader=1), change(leader=-1), change(leader=2), change(leader=1),
                         change(replicas=[1, 2], isr=[1, 2])])
    tl = build_timeline(tmp_path)  # epochs: 0 (leader 1), 1 (none), 2 (leader 2), 3 (leader 1)

    def codes(**kw):
        replica = {"topic": "t", "partition": 0, **kw}
        return sorted((f.code, f.facts.get("epoch")) for f in check_replica_epochs(tl, replica))

    assert codes(epoch_cache_written=[(0, 0), (2, 5), (3, 9)], epochs_seen=[0, 2, 3], broker_id=1) == []
    assert codes(epoch_cache_written=[(0, 0), (4, 9)], epochs_seen=[]) == [("EPOCH_NOT_GRANTED", 4)]
    assert codes(epoch_cache_written=[(0, 0)], epochs_seen=[1]) == [("EPOCH_NOT_GRANTED", 1)]
    assert codes(epoch_cache_written=[(0, 0), (2, 5)], broker_id=1) == [("GRANT_NOT_SEEN", 3)]
    assert codes(epoch_cache_written=[(0, 0)], broker_id=3) == [("REPLICA_NOT_ASSIGNED", None)]
    assert codes(epoch_cache_written=None, epochs_seen=[0], broker_id=1) == []  # no checkpoint: nothing to miss
    assert check_replica_epochs(tl, {"topic": "other", "partition": 0, "epoch_cache_written": [(0, 0)]})[0].code == \
        "PARTITION_NOT_IN_METADATA"
    old = check_replica_epochs(tl, {"topic": "t", "partition": 0, "broker_id": 2,
                                    "epoch_cache_written": [(0, 0), (9, 3)],
                                    "epochs_seen": [9], "file": "/x/t-0"})
    assert [(f.code, f.facts["epoch"], f.file) for f in old] == [("EPOCH_NOT_GRANTED", 9, "/x/t-0")]
    assert old[0].severity == Severity.HIGH


def test_only_one_cluster_is_replayed(tmp_path):
    for name, cluster, leader in (("a", "c1", 1), ("b", "c2", 2)):
        write_log(tmp_path / name, [topic(), part(leader=leader)])
        (tmp_path / name / "meta.properties").write_bytes(meta_properties.encode(1, 1, cluster))
    (tmp_path / "c").mkdir()
    write_log(tmp_path / "c", [topic(), part(leader=1)])
    (tmp_path / "c" / "meta.properties").write_bytes(meta_properties.encode(1, 2, "c1"))
    tl = build_timeline(tmp_path)
    assert [f.code for f in tl.findings] == ["METADATA_CLUSTERS_DIFFER"]
    assert rows(tl) == [(1, 1, 0, 0, [1, 2, 3], False)]


def test_a_copy_of_an_older_raft_epoch_throughout_is_a_deposed_lineage(tmp_path):
    # b1 holds epoch 1 at offsets 0-2, b2 epoch 2 there: they share no epoch, so b1 diverges from its first offset
    # (ReplicatedLog.truncateToEndOffset, 3.8.0: no end offset for epoch 1 in the leader's log) and none of it is
    # replayed
    write_log(tmp_path / "b1", [topic(), part(), change(leader=2)], raft_epoch=1)
    write_log(tmp_path / "b2", [topic(), part(), change(leader=3)], raft_epoch=2)
    tl = build_timeline([tmp_path / "b1", tmp_path / "b2"])
    assert [(f.code, f.facts["first"], f.facts["end"]) for f in tl.findings] == [("METADATA_TAIL_DEPOSED", 0, 3)]
    assert [e.leader for e in tl.partitions[("t", 0)]] == [1, 3]


def test_missing_path_raises_and_bootstrap_alone_is_read(tmp_path):
    with pytest.raises(FileNotFoundError):
        build_timeline(tmp_path / "nope")
    boot = write_snapshot(tmp_path, 0, [topic(), part()])
    boot.rename(tmp_path / "bootstrap.checkpoint")
    tl = build_timeline(tmp_path / "bootstrap.checkpoint")
    assert rows(tl)[0][1:3] == (1, 0)


# --------------------------------------------------------------------------- the command
def test_timeline_command_text_json_and_exit_codes(tmp_path):
    write_log(tmp_path / "ok", [topic(), part(isr=[1, 2]), change(leader=3, isr=[3]), topic("u", TID2), part(tid=TID2)])
    r = CliRunner().invoke(timeline, [str(tmp_path / "ok"), "--topic", "t"])
    assert r.exit_code == 0, r.output
    answer, *lines, summary = r.stdout.splitlines()
    assert answer == "answer: 1 unclean election: t-0 at metadata offset 2 (leader 3, epoch 1)"
    assert len(lines) == 2 and all(line.startswith("t-0 offset: ") for line in lines)
    assert "leader: 3 leaderEpoch: 1 partitionEpoch: 1 isr: [3]" in lines[1] and lines[1].endswith("UNCLEAN")
    assert summary == "5 metadata records, 1 partition, 2 entries, 1 unclean election; no findings"
    r = CliRunner().invoke(timeline, [str(tmp_path / "ok"), "--format", "json", "--partition", "0"])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and [(p["topic"], len(p["entries"])) for p in doc["partitions"]] == [("t", 2), ("u", 1)]
    write_log(tmp_path / "bad", [topic(), b"\x01\x1f\x00\x00", part()])
    r = CliRunner().invoke(timeline, [str(tmp_path / "bad")])
    assert r.exit_code == 1 and "UNKNOWN_METADATA_RECORD" in r.stderr
    (tmp_path / "empty").mkdir()
    assert CliRunner().invoke(timeline, [str(tmp_path / "empty")]).exit_code == 2
    assert CliRunner().invoke(timeline, [str(tmp_path / "nope")]).exit_code == 2
    assert CliRunner().invoke(timeline, ["--format", "xml", str(tmp_path / "ok")]).exit_code == 2


def test_timeline_command_on_a_real_broker():
    root = need_realdata() / "Niloufar1171__LDI-POC__8030792"
    r = CliRunner().invoke(timeline, [str(root), "--topic", "TestTopicPatient", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    [p] = doc["partitions"]
    assert [(e["leader"], e["leader_epoch"]) for e in p["entries"]] == [(1, 0), (-1, 1)]
