"""Copies of the metadata log written as controllers write them (kforensics.scenario.metadata_copies) and what the
timeline makes of them: the committed bound, a lost tail another copy holds, a new epoch begun at the log end, and a
quorum-state ahead of the log.  The rules and their Kafka sources: docs/metadata-quorum.md."""

from __future__ import annotations

from pathlib import Path

from kforensics.kraft.timeline import build_timeline
from kforensics.scenario.metadata_copies import MetadataCopy, MetadataLineage

VOTERS = [101, 102, 103]


def lineage() -> MetadataLineage:
    ln = MetadataLineage("copies", "orders", 0, VOTERS)
    ln.lead(1, 101).create([1, 2, 3], leader=1)  # 0-3
    ln.lead(2, 102).change(Leader=2).change(Isr=[2, 3])  # 4-6
    return ln


def write(root: Path, *copies: MetadataCopy) -> list[Path]:
    for c in copies:
        c.write(root, "c", VOTERS)
    return [root / f"controller-{c.node_id}" / "__cluster_metadata-0" for c in copies]


def test_what_a_majority_holds_past_the_leaders_epoch_start_is_committed_and_the_rest_is_not(tmp_path):
    ln = lineage()
    # 102 leads epoch 2 and holds 0-6; 103 fetched 0-5; 101 0-3. A majority (102, 103) holds 0-5, past the start of
    # epoch 2 (4): committed to 6 (LeaderState.maybeUpdateHighWatermark, 3.8.0); offset 6 only the leader holds
    dirs = write(tmp_path, MetadataCopy(101, ln.records[:4], 101, 1), MetadataCopy(102, ln.records, 102, 2),
                 MetadataCopy(103, ln.records[:6], 102, 2))
    tl = build_timeline(dirs)
    assert (tl.committed_end, tl.quorum.committed_by) == (6, "majority of voters [101, 102, 103]")
    assert [(e.offset, e.committed) for e in tl.partitions[("orders", 0)]] == [(3, True), (5, True), (6, False)]
    (f,) = tl.findings
    assert f.code == "METADATA_UNCOMMITTED" and (f.facts["committed_end"], f.facts["entries"]) == (6, 1)
    # with 103 holding only 0-3, as 101 does, the majority's offset is 4, not past the start of epoch 2: unknown
    tl = build_timeline(write(tmp_path / "b", MetadataCopy(101, ln.records[:4], 101, 1),
                              MetadataCopy(102, ln.records, 102, 2), MetadataCopy(103, ln.records[:4], 102, 2)))
    assert (tl.committed_end, tl.quorum.committed_by) == (None, "unknown")
    assert all(e.committed is None for e in tl.partitions[("orders", 0)]) and not tl.findings


def test_a_lost_tail_another_copy_holds_is_low_and_the_timeline_still_vouches(tmp_path):
    ln = lineage()
    # 103 held 0-6 (its checkpoint says epoch 2 from 4) but its segment keeps 0-3: lost 4-6, which 102 holds
    dirs = write(tmp_path, MetadataCopy(102, ln.records, 102, 2), MetadataCopy(103, ln.records, 102, 2, kept=4))
    tl = build_timeline(dirs)
    (f,) = [f for f in tl.findings if f.code == "METADATA_LOG_INCOMPLETE"]
    assert f.severity.name == "LOW" and f.facts["covered_by_another_copy"] is True
    assert not tl.tail_missing and tl.complete and tl.trusted_end == 7
    assert [e.leader for e in tl.partitions[("orders", 0)]] == [1, 2, 2]


def test_a_new_epoch_begun_at_the_log_end_without_its_record_is_a_lost_tail(tmp_path):
    ln = lineage()
    # 102's checkpoint has (2, 4) but its segment ends at 4: initializeLeaderEpoch assigns the epoch at the log end
    # and the LeaderChange record written there is not on disk (KafkaRaftClient.onBecomeLeader, 3.8.0)
    (d,) = write(tmp_path, MetadataCopy(102, ln.records, 102, 2, kept=4))
    tl = build_timeline([d])
    assert tl.tail_missing and tl.trusted_end == 4 and not tl.complete
    assert "starts epoch 2 at its log end 4" in tl.quorum.copies[0].missing[0]


def test_a_quorum_state_ahead_of_the_log_is_a_note_not_a_loss(tmp_path):
    ln = lineage()
    # a candidate raises its epoch and writes quorum-state before any record of that epoch exists
    (d,) = write(tmp_path, MetadataCopy(103, ln.records, -1, 5))
    tl = build_timeline([d])
    assert not tl.tail_missing and not [f for f in tl.findings if f.code == "METADATA_LOG_INCOMPLETE"]
    assert "quorum-state is at epoch 5" in tl.quorum.copies[0].notes[0]


def test_the_copies_real_kafka_left_in_the_lab_agree_and_lost_nothing():
    # fixtures/lab: each incident's evidence as real Kafka (3.9.1, 4.4.0) left it, one controller and three brokers,
    # every one with its copy of the metadata log (brokers fetch it as observers).  Kafka restarted on them (outcome.
    # json): no copy diverges from the controller's lineage, none lost a tail its witnesses show, and the controller,
    # the only voter, holds everything committed
    from kforensics.log.sources import resolve
    from tests.conftest import ROOT

    # KRaft sets only: a ZooKeeper-mode set has no controller and no metadata log
    cases = sorted(b for b in (ROOT / "fixtures" / "lab").glob("*/before") if (b / "controller-100.tgz").exists())
    assert len(cases) >= 10
    for before in cases:
        tl = build_timeline([resolve(str(p)) for p in sorted(before.glob("*.tgz"))])
        q = tl.quorum
        assert not [f for f in tl.findings if f.code.startswith("METADATA_")], before
        assert len(q.copies) == 4 and all(c.deposed is None and not c.missing for c in q.copies), before
        assert q.voters == (100,) and tl.committed_end == tl.trusted_end == tl.log_end, before
        assert next(c.log_end for c in q.copies if c.node_id == 100) == max(c.log_end for c in q.copies), before
