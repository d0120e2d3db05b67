"""A replica as its broker loads it at restart (docs/replay-at-restart.md R1-R7), on hand-built replicas.

Each expectation comes from the rule cited beside it; the numbers are those of the
scenarios in docs/replay-at-restart.md section 4.
"""

from __future__ import annotations

import pytest

from kforensics.epoch.versions import KAFKA_0_10, KAFKA_0_11, KAFKA_2_0_0, KAFKA_2_0_1, LATEST, parse_kafka_version
from kforensics.recovery.plan import RecoveryPlan
from kforensics.replay.replica import BatchLog, Replica
from kforensics.replay.restart import recovered_transitions, restart

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


# ---------------------------------------------------------------- R6 on a windowed replica: recovery below the window
# A crashed broker recovers from the segment holding its recovery point; below a replay window the restart needs only
# the epoch transitions of the batches recovery re-reads, which the prefix gives (Prefix.segment_starts): a window
# above the recovered segment's start loads the same cache as the whole log, and reads nothing more.


def segmented(broker: int, segments, plan: RecoveryPlan, names=None, **kw) -> Replica:
    """A replica of several segments: per segment, its batches ``(offset, epoch)`` or ``(offset, epoch, magic)`` or
    ``(base, last, epoch, magic)``; named by their first offset unless ``names`` (offsets) says otherwise (a segment
    with no batch needs a name)."""
    rows, segs = [], []
    for i, spec in enumerate(segments):
        name = names[i] if names is not None else spec[0][0]
        segs.append(f"/d/t-0/{name:020d}.log")
        for j, b in enumerate(spec):
            base, last, epoch, magic = (b[0], b[0], b[1], 2) if len(b) == 2 else (
                (b[0], b[0], b[1], b[2]) if len(b) == 3 else b)
            rows.append([base, last, epoch, 7000 + 31 * last + epoch, last - max(base, 0) + 1, 100, -1, magic, 1, i,
                         100 * j])
    return Replica(broker, BatchLog.from_rows(rows), segments=segs, recovery=plan, **kw)


def restarted_alike(whole, windowed, elided: int) -> None:
    """A windowed replica's restart is the whole one's: the same cache, high watermark, cut and notes, and the
    batches kept are the whole log's beyond those ``elided``."""
    assert windowed.cache.entries == whole.cache.entries
    if whole.load_fails:
        assert windowed.load_fails and windowed.notes == whole.notes and not len(windowed.log)
        return
    assert (windowed.high_watermark, windowed.log_end_offset, windowed.load_fails, windowed.lost_unread,
            windowed.read_fails_from, windowed.notes) == (whole.high_watermark, whole.log_end_offset,
                                                          whole.load_fails, whole.lost_unread, whole.read_fails_from,
                                                          whole.notes)
    assert (windowed.log.data == whole.log.data[elided:]).all() and len(windowed.log) == len(whole.log) - elided
    assert (windowed.lost_to_recovery.data == whole.lost_to_recovery.data).all()


def windowed_restarts(r: Replica, modes=(KAFKA_0_10, *EPOCH_MODES), floors=None) -> dict[int, int]:
    """Restart ``r`` windowed at every floor (each offset up to its last: summaries of one-offset ranges could pick
    any, and a window floor keeps the last batch) in every mode, with the prefix ``elide`` makes and the one its
    summary gives; each restart that does not ask for rows equals the whole log's.  Returns, per floor that asked
    for rows, the offset asked for."""
    from kforensics.replay.replica import NeedRows, elide
    from kforensics.replay.summary import summarize

    summary = summarize(r, 1)
    asked = {}
    for floor in floors if floors is not None else range(int(r.log.col("last_offset").max(initial=0)) + 1):
        w = elide(r, floor)
        count, prefix = summary.below(floor)
        assert prefix == w.prefix  # the summary's prefix is elide's (segment starts included)
        elided = len(r.log) - len(w.log)
        assert count == elided
        for mode in modes:
            whole = restart(r, mode)
            try:
                got = restart(w, mode)
            except NeedRows as e:
                asked[floor] = e.offset
                continue
            restarted_alike(whole, got, elided)
            if mode.has_epochs:  # the recovered batches' transitions, exactly (not only those the cache takes)
                assert recovered_transitions(w, got.log) == recovered_transitions(r, whole.log)
    return asked


def recovering(from_segment: int, **kw) -> RecoveryPlan:
    return RecoveryPlan(recovers=True, from_segment=from_segment, **kw)


# stale checkpoints (a crash before the checkpoint was written, or an old file): recovery's assigns show in the cache
STALE = [None, [], [(0, 0)]]


@pytest.mark.parametrize("checkpoint", STALE)
def test_an_epoch_change_at_the_recovered_segments_start(checkpoint):
    r = segmented(1, [[(0, 0), (1, 0), (2, 0)], [(3, 1), (4, 1), (5, 1)], [(6, 1), (7, 2)]], recovering(3),
                  epoch_checkpoint=checkpoint, high_watermark=8)
    assert entries(restart(r, LATEST)) == ([(0, 0)] if checkpoint else []) + [(1, 3), (2, 7)]
    assert windowed_restarts(r) == {}


@pytest.mark.parametrize("checkpoint", STALE)
def test_an_epoch_change_inside_the_recovered_batches_below_the_window(checkpoint):
    # recovery reads from offset 2 (epoch 0, the same as the batch before it); epoch 1 starts at 3, 2 at 5
    r = segmented(1, [[(0, 0), (1, 0)], [(2, 0), (3, 1), (4, 1)], [(5, 2), (6, 2), (7, 2)]], recovering(2),
                  epoch_checkpoint=checkpoint, high_watermark=8)
    assert entries(restart(r, LATEST)) == ([(0, 0)] if checkpoint is not None and checkpoint else [(0, 2)]) + [
        (1, 3), (2, 5)]
    assert windowed_restarts(r) == {}


@pytest.mark.parametrize("checkpoint", STALE)
def test_the_first_recovered_batch_starts_its_epoch_at_its_own_offset(checkpoint):
    # epoch 1 starts at 1 in the log, but recovery from the segment at 2 meets it first at 2: assign(1, 2)
    r = segmented(1, [[(0, 0), (1, 1)], [(2, 1), (3, 1)], [(4, 1), (5, 2)]], recovering(2),
                  epoch_checkpoint=checkpoint)
    assert entries(restart(r, LATEST)) == ([(0, 0)] if checkpoint else []) + [(1, 2), (2, 5)]
    assert windowed_restarts(r) == {}


@pytest.mark.parametrize("checkpoint", STALE)
def test_an_epoch_change_only_inside_the_window(checkpoint):
    spec = [[(o, 0) for o in range(0, 6)], [(o, 0) for o in range(6, 12)], [(o, 0) for o in range(12, 16)] + [
        (16, 3), (17, 3)]]
    r = segmented(1, spec, recovering(6), epoch_checkpoint=checkpoint, high_watermark=18)
    assert entries(restart(r, LATEST)) == ([(0, 0)] if checkpoint else [(0, 6)]) + [(3, 16)]
    assert windowed_restarts(r) == {}


@pytest.mark.parametrize("from_segment", [0, 2, 4])
def test_legacy_batches_in_the_recovered_batches(from_segment):
    # a v0 wrapper whose first offset is unknown (-1) opens the log; v0 and v1 batches (one legacy run, whatever the
    # magic) up to 5, then v2 batches; recovery assigns no epoch to a legacy batch
    spec = [[(-1, 1, -1, 0), (2, 2, -1, 1)], [(4, 4, -1, 0), (5, 5, -1, 1), (6, 6, 0, 2)], [(8, 8, 0, 2), (9, 9, 2, 2)]]
    r = segmented(1, spec, recovering(from_segment), names=[0, 4, 8] if from_segment != 2 else [0, 2, 8],
                  epoch_checkpoint=None)
    assert r.log.is_sorted()
    assert entries(restart(r, LATEST)) == ([(0, 6), (2, 9)] if from_segment != 8 else [(0, 8), (2, 9)])
    assert windowed_restarts(r) == {}


def test_a_recovered_segment_whose_first_batches_were_compacted_away():
    # the segment named 3 starts at 6 after compaction: recovery meets epoch 1 first at 6
    r = segmented(1, [[(0, 0), (1, 0), (2, 1)], [(6, 1), (7, 1)], [(9, 1), (10, 2)]], recovering(3),
                  names=[0, 3, 9], epoch_checkpoint=[(0, 0)])
    assert entries(restart(r, LATEST)) == [(0, 0), (1, 6), (2, 10)]
    assert windowed_restarts(r) == {}


def test_a_recovered_segment_holding_no_batch():
    # the segment named 2 holds no batch (its file lists none): recovery's first batch is the next segment's, at 5
    r = segmented(1, [[(0, 0), (1, 0)], [], [(5, 1), (6, 2)]], recovering(2), names=[0, 2, 5],
                  epoch_checkpoint=None)
    assert entries(restart(r, LATEST)) == [(1, 5), (2, 6)]
    assert windowed_restarts(r) == {}
    # the last segment, empty: recovery reads no batch
    r = segmented(1, [[(0, 0), (1, 0)], [(2, 1), (3, 1)], []], recovering(4), names=[0, 2, 4], epoch_checkpoint=None)
    assert entries(restart(r, LATEST)) == []
    assert windowed_restarts(r) == {}


def test_a_recovered_segment_whose_batches_recovery_cuts():
    # the recovered segment's first batch is damaged: recovery cuts there, keeps nothing of it, deletes the next
    plan = recovering(3, truncate_segment="00000000000000000003.log", truncate_position=0, log_end_offset=3,
                      lost_first_offset=3, lost_last_offset=7)
    r = segmented(1, [[(0, 0), (1, 0), (2, 1)], [(3, 1), (4, 2)], [(5, 2), (6, 3), (7, 3)]], plan,
                  epoch_checkpoint=None, high_watermark=8)
    r.log.col("crc_valid")[3] = 0
    rs = restart(r, LATEST)
    assert entries(rs) == [] and rs.log_end_offset == 3 and len(rs.lost_to_recovery) == 5
    # a window from the cut's offset on holds cut batches only: it asks for the rows below (it would end nowhere)
    assert windowed_restarts(r) == {f: f - 1 for f in range(3, 8)}


def test_a_recovered_segment_the_replica_does_not_list_recovers_every_batch_windowed_too():
    # a from-segment name not among the replica's segments: every kept batch counts as recovered (as for the whole)
    r = segmented(1, [[(0, 0), (1, 1)], [(2, 1), (3, 2)]], recovering(7), epoch_checkpoint=None)
    assert entries(restart(r, LATEST)) == [(0, 0), (1, 1), (2, 3)]
    assert windowed_restarts(r) == {}


@pytest.mark.parametrize("checkpoint", STALE)
def test_recovery_from_the_only_segment(checkpoint):
    # the common crash: one segment, recovered whole
    r = segmented(1, [[(0, 0), (1, 0), (2, 1), (3, 1), (4, 4), (5, 4)]], recovering(0), epoch_checkpoint=checkpoint,
                  high_watermark=4)
    assert entries(restart(r, LATEST)) == ([(0, 0)] if checkpoint else [(0, 0)]) + [(1, 2), (4, 4)]
    assert windowed_restarts(r) == {}


def test_without_segment_starts_recovery_below_the_window_asks_for_the_rows():
    from dataclasses import replace

    from kforensics.replay.replica import NeedRows, elide

    r = segmented(1, [[(0, 0), (1, 0)], [(2, 0), (3, 1), (4, 1)], [(5, 2), (6, 2)]], recovering(2),
                  epoch_checkpoint=None)
    w = elide(r, 4)
    assert w.prefix.segment_starts == [(0, 0, 0, 2, 1), (1, 0, 2, 2, 1)]
    lacking = replace(w, prefix=replace(w.prefix, segment_starts=None))  # a prefix made without them
    with pytest.raises(NeedRows) as e:
        restart(lacking, LATEST)
    assert e.value.offset == 2
    assert restart(lacking, KAFKA_0_10).cache.entries == []  # no cache: recovery's epochs are not needed
    # segment indexes that go back: elide keeps no starts, the summary keeps recovery's start as a reach
    from kforensics.replay.summary import summarize

    back = segmented(1, [[(0, 0), (1, 0)], [(2, 0), (3, 1), (4, 1)], [(5, 2), (6, 2)]], recovering(2),
                     epoch_checkpoint=None)
    back.log.col("segment")[2:] = [2, 1, 1, 2, 2]
    assert elide(back, 3).prefix.segment_starts is not None and elide(back, 4).prefix.segment_starts is None
    assert summarize(back, 1).reaches == [2] and summarize(r, 1).reaches == []
    asked = windowed_restarts(back)
    assert sorted(asked) == [4, 5, 6] and set(asked.values()) == {2}


def test_a_cut_that_reaches_below_the_window_asks_for_the_rows():
    # zeros at byte 200 cut the log; the batch after them overlaps the one before (base 6 > 5, last 9 = 9): the
    # window at the cut's offset 10 leaves it below, where the cut still takes it
    plan = recovering(0, truncate_segment=SEG, truncate_position=200, log_end_offset=10, lost_first_offset=10,
                      lost_last_offset=10)
    rows = [[0, 4, 0, 1, 5, 100, -1, 2, 1, 0, 0], [5, 9, 0, 2, 5, 100, -1, 2, 1, 0, 100],
            [6, 9, 0, 3, 4, 100, -1, 2, 1, 0, 250], [10, 10, 0, 4, 1, 100, -1, 2, 1, 0, 350]]
    r = Replica(1, BatchLog.from_rows(rows), segments=[SEG], recovery=plan, epoch_checkpoint=[(0, 0)])
    assert len(restart(r, LATEST).lost_to_recovery) == 2
    asked = windowed_restarts(r)
    assert 10 in asked and asked[10] == 9
