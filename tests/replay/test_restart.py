"""A replica as its broker loads it at restart (docs/replay-at-restart.md R1-R7), on hand-built replicas.

Each expectation comes from the rule cited beside it; the numbers are those of the
scenarios in docs/replay-at-restart.md section 4.
"""

from __future__ import annotations

import pytest

from kforensics.epoch.versions import KAFKA_0_10, KAFKA_0_11, KAFKA_2_0_0, KAFKA_2_0_1, LATEST, parse_kafka_version
from kforensics.recovery.plan import RecoveryPlan
from kforensics.replay.replica import BatchLog, Replica
from kforensics.replay.restart import restart

KAFKA_2_3 = parse_kafka_version("2.3")
KAFKA_2_4 = parse_kafka_version("2.4")
KAFKA_2_8 = parse_kafka_version("2.8")
EPOCH_MODES = [KAFKA_0_11, KAFKA_2_0_0, KAFKA_2_0_1, KAFKA_2_8, LATEST]
SEG = "00000000000000000000.log"


def on_disk(broker: int, spec, *, crc_valid=None, plan: RecoveryPlan | None = None, **kw) -> Replica:
    """A one-segment replica: one-record batches ``(offset, epoch)``, 100 bytes each, at positions 0, 100, ..."""
    rows = []
    for i, (off, epoch) in enumerate(spec):
        ok = 1 if crc_valid is None else crc_valid[i]
        rows.append([off, off, epoch, 7000 + 31 * off + epoch, 1, 100, -1, 2, ok, 0, 100 * i])
    return Replica(broker, BatchLog.from_rows(rows), segments=[SEG], recovery=plan or RecoveryPlan(), **kw)


def entries(rs):
    return rs.cache.entries


# ---------------------------------------------------------------- R6: the epoch cache at load


@pytest.mark.parametrize("mode", EPOCH_MODES)
def test_an_entry_that_survived_a_crash_without_its_records_is_dropped_at_load(mode):
    # 4.1, broker 1: checkpoint {0:0, 1:2, 4:3}, log 0:0 1:0 2:1 (truncateFromEnd(LEO 3) in every version)
    r = on_disk(1, [(0, 0), (1, 0), (2, 1)], epoch_checkpoint=[(0, 0), (1, 2), (4, 3)], high_watermark=0,
                plan=RecoveryPlan(recovers=True, from_segment=0))
    rs = restart(r, mode)
    assert entries(rs) == [(0, 0), (1, 2)]
    assert (rs.log_end_offset, rs.high_watermark, len(rs.lost_to_recovery)) == (3, 0, 0)


@pytest.mark.parametrize("mode", EPOCH_MODES)
def test_the_new_leaders_unused_entry_at_its_log_end_is_dropped_at_load(mode):
    # 4.1, broker 2: {3:0, 4:3, 8:10} with LEO 10 (8:10 was written at election; nothing followed)
    spec = [(i, 3) for i in range(3)] + [(i, 4) for i in range(3, 10)]
    r = on_disk(2, spec, epoch_checkpoint=[(3, 0), (4, 3), (8, 10)], high_watermark=10,
                plan=RecoveryPlan(clean_shutdown=True))
    assert entries(restart(r, mode)) == [(3, 0), (4, 3)]


def test_before_kip101_there_is_no_cache_at_all():
    r = on_disk(1, [(0, 0), (1, 1)], epoch_checkpoint=[(0, 0), (1, 1)], plan=RecoveryPlan(clean_shutdown=True))
    assert entries(restart(r, KAFKA_0_10)) == []


# epochs go backwards on disk (0:5 1:5 2:3) and the checkpoint says {3:2}; recovery re-reads the segment
BACKWARDS = dict(spec=[(0, 5), (1, 5), (2, 3)], epoch_checkpoint=[(3, 2)], high_watermark=3,
                 plan=RecoveryPlan(recovers=True, from_segment=0))


@pytest.mark.parametrize("mode", [KAFKA_2_0_1, KAFKA_2_8, LATEST])
def test_recovery_assigns_only_epochs_newer_than_the_latest_cached_and_2_0_1_drops_conflicts(mode):
    # LogSegment.recover @2.0.1/@2.8.0: assign(5, 0) as 5 > 3; KAFKA-7415's assign drops 3:2; 3 is then not > 5
    r = on_disk(1, **BACKWARDS)
    assert entries(restart(r, mode)) == [(5, 0)]


@pytest.mark.parametrize("mode", [KAFKA_0_11, KAFKA_2_0_0])
def test_before_kafka_7415_recovery_cannot_insert_an_epoch_below_the_latest_start(mode):
    # the old assign also needs the start offset >= the latest entry's start (0 < 2): ignored
    r = on_disk(1, **BACKWARDS)
    assert entries(restart(r, mode)) == [(3, 2)]


def test_with_the_marker_recovery_adds_no_epoch():
    r = on_disk(1, **{**BACKWARDS, "plan": RecoveryPlan(clean_shutdown=True)})
    assert entries(restart(r, LATEST)) == [(3, 2)]


def test_from_2_7_the_checkpoint_is_read_through_assign():
    # offsets that do not increase (1 0 / 5 9 / 3 1): 2.7+ drops 5:9 on reading; up to 2.6 it stays as written
    spec = [(0, 1), (1, 3), (2, 3)]
    lines = [(1, 0), (5, 9), (3, 1)]
    plan = RecoveryPlan(clean_shutdown=True)
    assert entries(restart(on_disk(1, spec, epoch_checkpoint=lines, plan=plan), KAFKA_2_0_1)) == lines
    assert entries(restart(on_disk(1, spec, epoch_checkpoint=lines, plan=plan), parse_kafka_version("2.7"))) == [
        (1, 0), (3, 1)]


def test_a_missing_checkpoint_loads_empty_and_recovery_fills_it_from_the_recovered_batches():
    # Kafka creates the missing file empty; with the marker nothing is recovered, so the cache stays empty
    spec = [(0, 1), (1, 2)]
    assert entries(restart(on_disk(1, spec, plan=RecoveryPlan(clean_shutdown=True)), LATEST)) == []
    assert entries(restart(on_disk(1, spec, plan=RecoveryPlan(recovers=True, from_segment=0)), LATEST)) == [
        (1, 0), (2, 1)]


def test_the_cache_is_truncated_from_the_start_at_the_log_start():
    r = on_disk(1, [(4, 1), (5, 2)], epoch_checkpoint=[(0, 0), (1, 2), (2, 5)], log_start=4,
                plan=RecoveryPlan(clean_shutdown=True))
    assert entries(restart(r, LATEST)) == [(1, 4), (2, 5)]


# ---------------------------------------------------------------- R7: the high watermark


def test_the_high_watermark_is_capped_at_the_log_end_and_from_2_4_raised_to_the_log_start():
    r = on_disk(1, [(5, 0), (6, 0), (7, 0)], epoch_checkpoint=[(0, 5)], log_start=5, high_watermark=2,
                plan=RecoveryPlan(clean_shutdown=True))
    assert restart(r, KAFKA_2_3).high_watermark == 2  # min(checkpoint, LEO), no lower clamp
    assert restart(r, KAFKA_2_4).high_watermark == 5  # clamp(checkpoint, [log start, LEO])
    r.high_watermark = 100
    assert restart(r, KAFKA_2_3).high_watermark == restart(r, KAFKA_2_4).high_watermark == 8


# ---------------------------------------------------------------- R2/R3: recovery's cut


def test_recovery_cuts_at_the_planned_position_and_everything_after_it_is_lost():
    r = on_disk(1, [(i, 0) for i in range(6)], crc_valid=[1, 1, 0, 1, 1, 1], epoch_checkpoint=[(0, 0)],
                high_watermark=6, plan=RecoveryPlan(recovers=True, from_segment=0, truncate_segment=f"/x/{SEG}",
                                                    truncate_position=200, lost_first_offset=2, lost_last_offset=5))
    rs = restart(r, LATEST)
    assert rs.log.col("base_offset").tolist() == [0, 1]
    assert rs.lost_to_recovery.col("base_offset").tolist() == [2, 3, 4, 5]
    assert (rs.log_end_offset, rs.high_watermark, rs.lost_unread, rs.read_fails_from) == (2, 2, [], None)
    assert "cuts the log at offset 2" in rs.notes[0]


def test_offsets_recovery_cuts_that_no_readable_batch_shows_are_kept_as_ranges():
    # zeros where batch 2 was: no row for it; the plan says offsets 2..5 go
    r = on_disk(1, [(0, 0), (1, 0), (3, 0), (4, 0)], high_watermark=5,
                plan=RecoveryPlan(recovers=True, from_segment=0, truncate_segment=SEG, truncate_position=200,
                                  lost_first_offset=2, lost_last_offset=5))
    r.log.col("position")[2:] = [300, 400]
    rs = restart(r, LATEST)
    assert rs.lost_to_recovery.col("base_offset").tolist() == [3, 4]
    assert rs.lost_unread == [(2, 2), (5, 5)]  # the zeroed batch and a torn last one


def test_a_plan_that_cuts_nothing_keeps_the_log():
    r = on_disk(1, [(0, 0), (1, 0)], plan=RecoveryPlan(recovers=True, from_segment=0))
    rs = restart(r, LATEST)
    assert len(rs.log) == 2 and len(rs.lost_to_recovery) == 0 and rs.lost_unread == []


# ---------------------------------------------------------------- R5: damage kept, logs that do not load


def test_a_kept_corrupt_batch_makes_reads_from_its_offset_fail():
    r = on_disk(1, [(i, 0) for i in range(4)], crc_valid=[1, 1, 0, 1],
                plan=RecoveryPlan(clean_shutdown=True, damage_kept=SEG, damage_kept_position=200))
    rs = restart(r, LATEST)
    assert len(rs.log) == 4 and rs.read_fails_from == 2


def test_kept_zeros_followed_by_valid_batches_make_reads_fail_where_the_zeros_start():
    r = on_disk(1, [(0, 0), (1, 0), (3, 0)],
                plan=RecoveryPlan(clean_shutdown=True, damage_kept=SEG, damage_kept_position=200))
    r.log.col("position")[2] = 300
    assert restart(r, LATEST).read_fails_from == 2


def test_a_kept_torn_final_batch_does_not_make_reads_fail():
    r = on_disk(1, [(0, 0), (1, 0)],
                plan=RecoveryPlan(clean_shutdown=True, damage_kept=SEG, damage_kept_position=200,
                                  damage_kept_is_torn_tail=True))
    rs = restart(r, LATEST)
    assert rs.read_fails_from is None and rs.log_end_offset == 2


@pytest.mark.parametrize("mode", [KAFKA_0_10] + EPOCH_MODES)
def test_a_log_that_cannot_load_takes_no_part(mode):
    r = on_disk(1, [(0, 0), (1, 0)], high_watermark=2, epoch_checkpoint=[(0, 0)],
                plan=RecoveryPlan(clean_shutdown=True, load_fails=True, damage_kept=SEG, damage_kept_position=100))
    rs = restart(r, mode)
    assert rs.load_fails and len(rs.log) == 0 and rs.cache.entries == [] and "does not start" in rs.notes[0]


def test_a_replica_without_a_disk_is_taken_as_its_checkpoint_and_batches_say():
    # tests and benchmarks build replicas with no recovery plan: nothing is cut, the checkpoint stands
    r = Replica(1, BatchLog.from_rows([[0, 0, 3, 1, 1, 100, -1, 2], [1, 1, 4, 2, 1, 100, -1, 2]]),
                epoch_checkpoint=[(3, 0), (4, 1), (9, 2)], high_watermark=5)
    rs = restart(r, LATEST)
    assert entries(rs) == [(3, 0), (4, 1)] and rs.high_watermark == 2 and len(rs.lost_to_recovery) == 0
