"""Replica summaries and windowed replay: the window saves work and never changes an answer."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kforensics.epoch.versions import parse_kafka_version
from kforensics.replay.group import replay_group
from kforensics.replay.inputs import load_replicas
from kforensics.replay.replica import BatchLog, NeedRows, Replica, elide
from kforensics.replay.restart import restart
from kforensics.replay.summary import SummaryBuilder, first_disagreement, floor_below, summarize, window_floor
from kforensics.scenario import ScenarioBuilder, load_scenario
from kforensics.serialize import to_jsonable
from tests.conftest import ROOT
from tests.replay.test_histories import MODES, History, hostile_replica
from tests.replay.test_replay import history, ops
from tests.replay.test_restart import restarted_alike, windowed_restarts

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())


def outcome(rp) -> dict:
    """Everything a replay reports, as JSON values (verdicts, decisions, logs before and after, findings)."""
    doc = to_jsonable(rp)
    doc.pop("divergence")  # compared on disk, whole, in either case; checked separately below
    return doc


def rows(spec):
    return BatchLog.from_rows([[o, o, e, 1000 + 7 * o + e, 1, 100, -1, 2] for o, e in spec])


def test_digests_are_per_offset_range_and_equal_for_equal_batches():
    a = Replica(1, rows([(o, 0) for o in range(10)]))
    b = Replica(2, rows([(o, 0) for o in range(10)]))
    c = Replica(3, rows([(o, 0) for o in range(7)] + [(7, 1), (8, 1), (9, 1)]))
    sa, sb, sc = (summarize(r, chunk_offsets=4) for r in (a, b, c))
    assert sa.chunks == [0, 1, 2] and sa.digests == sb.digests
    assert sa.digests[:1] == sc.digests[:1] and sa.digests[1] != sc.digests[1]
    assert first_disagreement([sa, sb]) is None
    assert first_disagreement([sa, sb, sc]) == 4  # the range holding offset 7
    # streaming in pieces gives the same digests as all at once
    builder = SummaryBuilder(4)
    for piece in np.array_split(np.ascontiguousarray(c.log.data), 3):
        builder.feed(piece)
    assert builder.finish(c).digests == sc.digests


def test_a_shorter_log_and_a_log_start_inside_a_range_are_where_replicas_can_differ():
    full = Replica(1, rows([(o, 0) for o in range(12)]))
    short = Replica(2, rows([(o, 0) for o in range(9)]))
    assert first_disagreement([summarize(full, 4), summarize(short, 4)]) == 8
    trimmed = Replica(3, rows([(o, 0) for o in range(6, 12)]), log_start=6)
    assert first_disagreement([summarize(full, 4), summarize(trimmed, 4)]) == 4
    # retention that removed whole ranges is no difference
    trimmed = Replica(3, rows([(o, 0) for o in range(8, 12)]), log_start=8)
    assert first_disagreement([summarize(full, 4), summarize(trimmed, 4)]) is None


def test_the_floor_reaches_down_to_recovery_damage_and_high_watermarks_without_epochs():
    from kforensics.recovery.plan import RecoveryPlan

    a = Replica(1, rows([(o, 0) for o in range(40)]), high_watermark=12)
    b = Replica(2, rows([(o, 0) for o in range(40)]), high_watermark=12,
                recovery=RecoveryPlan(recovers=True, from_segment=0, truncate_segment="x", log_end_offset=30,
                                      lost_first_offset=30, lost_last_offset=39))
    latest, old = parse_kafka_version("latest"), parse_kafka_version("0.10")
    assert window_floor([summarize(a, 8), summarize(a, 8)], latest) == 32  # the last range is always kept
    # recovery from segment 0 is no reach: below the window it needs only the prefix's epoch transitions
    assert window_floor([summarize(a, 8), summarize(b, 8)], latest) == 24
    b.recovery.recovers = False
    assert window_floor([summarize(a, 8), summarize(b, 8)], latest) == 24  # recovery's cut at 30
    assert window_floor([summarize(a, 8), summarize(b, 8)], old) == 8  # 0.10 truncates to the HW 12


def test_elided_batches_below_the_window_are_asked_for_when_the_replay_reaches_them():
    from kforensics.replay.engine import replay_partition

    lead = Replica(1, rows([(o, 0) for o in range(20)]), high_watermark=5, epoch_checkpoint=[(0, 0)])
    fol = Replica(2, rows([(o, 0) for o in range(20)]), high_watermark=5, epoch_checkpoint=[(0, 0)])
    windowed = [elide(lead, 16), elide(fol, 16)]
    assert windowed[0].prefix.end == 16 and len(windowed[0].log) == 4 and windowed[0].log_end_offset == 20
    with pytest.raises(NeedRows) as e:
        replay_partition("t", 0, windowed, kafka_version=parse_kafka_version("0.10"), leader=1)  # HW truncation to 5
    assert e.value.offset == 5
    # the group function widens the window and gives the answer the whole logs give
    got = replay_group("t", 0, windowed, kafka_version=parse_kafka_version("0.10"), leader=1,
                       reload=lambda off: [elide(lead, off), elide(fol, off)])
    want = replay_group("t", 0, [lead, fol], kafka_version=parse_kafka_version("0.10"), leader=1)
    assert outcome(got) == outcome(want)


@given(ops, st.integers(1, 3), st.sampled_from([1, 2, 3, 8]))
@settings(max_examples=int(os.environ.get("KF_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_windowed_replay_equals_the_whole_replay_on_random_histories(draw, leader, chunk):
    reps = history(draw)
    for mode in MODES:
        whole = replay_group("t", 0, reps, kafka_version=parse_kafka_version(mode), leader=leader, summaries=[
            summarize(r, 1 << 40) for r in reps])  # one range: no window
        windowed = replay_group("t", 0, reps, kafka_version=parse_kafka_version(mode), leader=leader,
                                summaries=[summarize(r, chunk) for r in reps])
        assert outcome(windowed) == outcome(whole), mode


@given(st.lists(st.sampled_from([
    ("produce", 2), ("follow", 2, 0), ("follow", 3, 1), ("commit",), ("crash", 2, 1, False), ("crash", 1, 2, True),
    ("restart", 2), ("restart", 1), ("elect", 2, False), ("elect", 3, True), ("power_loss", [0, 1, 2], True),
    ("power_loss", [0, 0, 0], False)]),
    min_size=5, max_size=30), st.integers(0, 2), st.booleans(), st.sampled_from([1, 2, 4]),
    st.sampled_from([None, 1, 3]), st.sampled_from([None, [], [(0, 0)]]))
@settings(max_examples=max(20, int(os.environ.get("KF_EXAMPLES", "150")) // 5), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_windowed_replay_equals_the_whole_replay_on_crash_histories_from_disk(ops_, pick, unclean, chunk, split,
                                                                              stale):
    """Crash histories (power losses leave every broker without its marker), their logs in one segment or cut
    into segments of ``split`` batches (recovery from a middle one), broker 3's leader-epoch checkpoint ``stale``
    (recovery then assigns epochs): windowed replays and restarts equal the whole ones."""
    from kforensics.kraft.timeline import build_timeline

    with tempfile.TemporaryDirectory() as tmp:
        root = history_on_disk(ops_, pick, unclean, stale, split, Path(tmp))
        sc = load_scenario(root)
        timeline = build_timeline(sc.metadata)
        reps = load_replicas(sc.brokers).groups[(sc.topic, sc.partition)]
        for mode in MODES:
            kw = dict(kafka_version=parse_kafka_version(mode), events=sc.events, timeline=timeline)
            whole = replay_group(sc.topic, sc.partition, reps, summaries=[summarize(r, 1 << 40) for r in reps], **kw)
            windowed = replay_group(sc.topic, sc.partition, reps, summaries=[summarize(r, chunk) for r in reps],
                                    **kw)
            assert outcome(windowed) == outcome(whole), mode
            assert [d.__dict__ for d in windowed.divergence] == [d.__dict__ for d in whole.divergence], mode
        assert_windowed_restarts(reps)


def power_loss(tmp: Path, recovery_point: int | None, split: int | None) -> Path:
    """A scenario dir: epochs 0 (offsets 0-9) and 1 (10-19) on all three brokers, then every broker loses power
    having lost nothing (no marker; recovery points ``recovery_point``, None: the log end); broker 3's checkpoint
    is stale ({0: 0}); the log in one segment or in segments of ``split`` batches."""
    sb = ScenarioBuilder("power-loss", brokers=[1, 2, 3])
    sb.elect(1, epoch=0, record_epoch=True).produce(10).follow(2).follow(3)
    sb.elect(2, epoch=1, record_epoch=True).produce(10).follow(1).follow(3)
    for b in (1, 2, 3):
        sb.high_watermark(b, 20)
        if recovery_point is not None:
            sb.recovery_point(b, recovery_point)
        sb.crash(b, keep_to=20)
    sb.epoch_checkpoint(3, [(0, 0)])
    sb.then("elect", leader=2, epoch=2).then("follow", broker=1).then("follow", broker=3)
    root = sb.write(tmp / "h")
    return split_segments(root, tmp / "split", split) if split else root


POWER_LOSS = [(rp, split) for rp in (None, 0, 9, 13) for split in (None, 4)]


@pytest.mark.parametrize("recovery_point,split", POWER_LOSS)
def test_a_power_loss_that_cuts_nothing_is_replayed_from_near_the_log_end(recovery_point, split, tmp_path):
    """Every broker loses power; nothing was lost, the replicas agree: each recovers from the segment holding its
    recovery point (one segment: the whole log), yet the window starts in the last range, and no restart asks for
    the rows below.  Broker 3's checkpoint is stale, so its recovery assigns epoch 1 where it meets it first."""
    sc = load_scenario(power_loss(tmp_path, recovery_point, split))
    loaded = load_replicas(sc.brokers)
    reps, summaries = loaded.groups[(sc.topic, sc.partition)], loaded.summaries[(sc.topic, sc.partition)]
    chunk = 8
    summaries = [summarize(r, chunk) for r in reps]  # as the scan's, in ranges of 8 offsets
    for r, s in zip(reps, summaries):
        plan = r.recovery
        assert not r.clean_shutdown and plan.recovers and not plan.truncates and s.reaches == []
        # the segment holding the recovery point (none: the log end, 20, in the last segment)
        assert plan.from_segment == (min(19 if recovery_point is None else recovery_point, 19) // split * split
                                     if split else 0)
    for mode in MODES:
        m = parse_kafka_version(mode)
        floor = window_floor(summaries, m)
        assert floor == 16, mode  # the last range: not the recovered segment's start
        for r in reps:
            w = elide(r, floor)
            assert w.window_start > r.recovery.from_segment or r.recovery.from_segment >= 16
            got = restart(w, m)  # no NeedRows
            restarted_alike(restart(r, m), got, len(r.log) - len(w.log))
        asked = []

        def reload(offset):
            asked.append(offset)
            return [elide(r, floor_below(offset, chunk)) for r in reps]

        windowed = replay_group(sc.topic, sc.partition, [elide(r, floor) for r in reps], kafka_version=parse_kafka_version(mode),
                                events=sc.events, reload=reload)
        whole = replay_group(sc.topic, sc.partition, reps, kafka_version=parse_kafka_version(mode), events=sc.events,
                             summaries=[summarize(r, 1 << 40) for r in reps])
        assert asked == [] and outcome(windowed) == outcome(whole), mode
    # broker 3's recovery met epoch 1 first at the recovered segment's first batch (10 when it holds the change)
    three = next(r for r in reps if r.broker_id == 3)
    first_met = max(10, three.recovery.from_segment)
    assert restart(three, parse_kafka_version("latest")).cache.entries == [(0, 0), (1, first_met)]


def assert_windowed_restarts(reps: list[Replica]) -> int:
    """Every replica restarted from every window a summary could give it (each offset up to its last, and up to
    where its restart cuts or finds damage) in every mode loads as the whole replica does
    (:func:`tests.replay.test_restart.windowed_restarts`), asking for the rows below only from a floor right at
    the cut; returns how many crashed replicas were compared from a window above their recovered segment's start."""
    above = 0
    for r in reps:
        s = summarize(r, 1)
        reach = min(s.reaches + ([s.first_damaged] if s.first_damaged is not None else []), default=None)
        top = int(r.log.col("last_offset").max(initial=0))
        floors = range(min(top, reach) + 1 if reach is not None else top + 1)
        asked = windowed_restarts(r, floors=floors)
        assert all(f == reach for f in asked), (asked, reach)
        plan = r.recovery
        if plan is not None and plan.recovers and plan.from_segment is not None:
            above += any(elide(r, f).window_start > plan.from_segment and f not in asked for f in floors)
    return above


@pytest.mark.parametrize("split", [None, 2], ids=["one-segment", "two-batch-segments"])
@pytest.mark.parametrize("sdir", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_windowed_replay_equals_the_whole_replay_on_every_scenario(sdir, split, tmp_path):
    """Windows of one-offset ranges (as high as the summaries allow: above a crashed broker's recovered segment's
    start), the fixture's one segment or segments of two batches (recovery from a middle one)."""
    if split:
        sdir = split_segments(sdir, tmp_path / "s", split)
    sc = load_scenario(sdir)
    reps = load_replicas(sc.brokers).groups[(sc.topic, sc.partition)]
    for mode in MODES:
        whole = replay_group(sc.topic, sc.partition, reps, kafka_version=parse_kafka_version(mode), events=sc.events or None,
                             summaries=[summarize(r, 1 << 40) for r in reps])
        windowed = replay_group(sc.topic, sc.partition, reps, kafka_version=parse_kafka_version(mode), events=sc.events or None,
                                summaries=[summarize(r, 1) for r in reps])
        assert outcome(windowed) == outcome(whole), mode
        assert [d.__dict__ for d in windowed.divergence] == [d.__dict__ for d in whole.divergence], mode
    # a crashed replica that recovery does not cut, with batches after its recovered segment's first: compared from
    # windows above that
    crashed = [r for r in reps if r.recovery is not None and r.recovery.recovers and len(r.log)
               and int(r.log.col("base_offset")[-1]) > r.recovery.from_segment and summarize(r).reaches == []
               and summarize(r).first_damaged is None]
    assert assert_windowed_restarts(reps) >= len(crashed)


# ------------------------------------------------------------------ prefixes from the summary
CHUNKS = (1, 2, 4, 8)


def history_on_disk(ops_, pick, unclean, stale, split, tmp: Path) -> Path:
    """A crash history (``History``) played out and written under ``tmp``: broker 3's leader-epoch checkpoint
    ``stale`` when given, the logs cut into segments of ``split`` batches when given; its scenario dir."""
    h = History()
    h.elect(1, False)
    for o in ops_:
        h.apply(o)
    h.finish(pick, unclean)
    if stale is not None:
        h.sb.epoch_checkpoint(3, stale)
    root = h.sb.write(tmp / "h")
    return split_segments(root, tmp / "split", split) if split else root


def split_segments(src: Path, dst: Path, per: int) -> Path:
    """A copy of scenario dir ``src`` whose partition logs are cut into segments of ``per`` batches each (named by
    their first batch's offset, with empty indexes; bytes that frame no batch stay in the last segment)."""
    import shutil

    shutil.copytree(src, dst)
    for log in dst.glob("broker-*/*/00000000000000000000.log"):
        data = log.read_bytes()
        cuts, pos, n = [0], 0, 0
        while pos + 12 <= len(data):
            size = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
            if size <= 0 or pos + 12 + size > len(data):
                break
            pos, n = pos + 12 + size, n + 1
            if n % per == 0 and pos < len(data):
                cuts.append(pos)
        for ext in (".log", ".index", ".timeindex"):
            log.with_suffix(ext).unlink(missing_ok=True)
        for a, b in zip(cuts, cuts[1:] + [len(data)]):
            name = log.parent / f"{int.from_bytes(data[a : a + 8], 'big', signed=True):020d}"
            name.with_suffix(".log").write_bytes(data[a:b])
            name.with_suffix(".index").write_bytes(b"")
            name.with_suffix(".timeindex").write_bytes(b"")
    return dst


def floors(r: Replica, size: int) -> list[int]:
    """The window floors worth trying on ``r``: every range boundary up to past its end (a small log), else the
    ones next to its batches' offsets."""
    offsets = np.concatenate((r.log.col("base_offset"), r.log.col("last_offset")))
    top = max(0, int(offsets.max(initial=0)))
    if top // size < 4096:
        return list(range(0, top + 2 * size + 1, size))
    near = {x - x % size + d * size for x in offsets.tolist() for d in (0, 1) if 0 <= x < 1 << 60}
    return sorted({0, size} | near)


def assert_prefixes_are_elides(r: Replica, s) -> int:
    """At every floor, what the summary ``s`` says of the batches below is ``elide(r, floor)``'s prefix, field for
    field, and the batches it keeps are the rest; returns the floors compared."""
    n = 0
    for floor in floors(r, s.chunk_offsets):
        got = s.below(floor)
        assert got is not None, floor
        count, prefix = got
        want = elide(r, floor)
        assert prefix == want.prefix, floor
        assert np.array_equal(want.log.data, r.log.data[count:]), floor
        n += 1
    return n


def streamed(r: Replica, chunk: int, pieces: int = 1):
    """The summary of ``r`` fed in ``pieces`` (the rows as a scan streams them, ranges split across feeds)."""
    b = SummaryBuilder(chunk)
    data = np.ascontiguousarray(r.log.data)
    for piece in np.array_split(data, pieces) if len(data) else [data]:
        b.feed(piece)
    return b.finish(r)


def in_order(r: Replica) -> bool:
    last = r.log.col("last_offset")
    return r.log.is_sorted() and bool(np.all(last[1:] >= last[:-1]))


@pytest.mark.parametrize("split", [None, 2], ids=["one-segment", "two-batch-segments"])
@pytest.mark.parametrize("sdir", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_summary_gives_elides_prefix_at_every_floor_on_every_scenario(sdir, split, tmp_path):
    if split:
        sdir = split_segments(sdir, tmp_path / "s", split)
    sc = load_scenario(sdir)
    loaded = load_replicas(sc.brokers, every_summary=True)
    compared = 0
    for key, reps in loaded.groups.items():
        for r, scanned in zip(reps, loaded.summaries[key]):
            assert scanned.marks is not None and scanned.segments == [str(s) for s in r.segments]
            compared += assert_prefixes_are_elides(r, scanned)  # as the scan fed it, a segment at a time
            for chunk in CHUNKS:
                for pieces in (1, 3):
                    compared += assert_prefixes_are_elides(r, streamed(r, chunk, pieces))
    assert compared


@given(ops, st.sampled_from(CHUNKS), st.integers(1, 4))
@settings(max_examples=int(os.environ.get("KF_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_the_summary_gives_elides_prefix_at_every_floor_on_random_histories(draw, chunk, pieces):
    for r in history(draw):
        assert_prefixes_are_elides(r, streamed(r, chunk, pieces))


@given(st.lists(st.sampled_from([
    ("produce", 2), ("follow", 2, 0), ("follow", 3, 1), ("commit",), ("crash", 2, 1, False), ("crash", 1, 2, True),
    ("restart", 2), ("restart", 1), ("elect", 2, False), ("elect", 3, True), ("power_loss", [0, 1, 2], True)]),
    min_size=5, max_size=30), st.integers(0, 2), st.booleans(), st.sampled_from(CHUNKS))
@settings(max_examples=max(20, int(os.environ.get("KF_EXAMPLES", "150")) // 5), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_the_summary_gives_elides_prefix_at_every_floor_on_crash_histories_from_disk(ops_, pick, unclean, chunk):
    with tempfile.TemporaryDirectory() as tmp:
        sc = load_scenario(history_on_disk(ops_, pick, unclean, None, None, Path(tmp)))
        for r in load_replicas(sc.brokers).groups[(sc.topic, sc.partition)]:
            for pieces in (1, 3):
                assert_prefixes_are_elides(r, streamed(r, chunk, pieces))


@given(hostile_replica(1), st.sampled_from(CHUNKS), st.integers(1, 3))
@settings(max_examples=int(os.environ.get("KF_EXAMPLES", "150")) * 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
def test_a_log_out_of_order_gives_no_prefix_and_one_in_order_gives_elides(r, chunk, pieces):
    s = streamed(r, chunk, pieces)
    if in_order(r):
        assert_prefixes_are_elides(r, s)
    else:
        assert s.marks is None and all(s.below(f) is None for f in floors(r, chunk))


def test_out_of_order_logs_and_logs_over_the_cap_give_no_prefix():
    from kforensics.replay.summary import PREFIX_CAP

    ok = Replica(1, rows([(o, 0) for o in range(10)]))
    assert summarize(ok, 4).below(8) is not None and summarize(ok, 4).below(6) is None  # no range boundary
    back = Replica(1, rows([(o, 0) for o in range(5)] + [(3, 0)] + [(o, 0) for o in range(6, 10)]))
    assert summarize(back, 4).marks is None and summarize(back, 4).below(8) is None
    # bases increase but a last offset goes back (a batch claiming offsets past the next one's)
    wide = Replica(1, BatchLog.from_rows([[0, 9, 0, 1, 1, 100, -1, 2], [1, 1, 0, 2, 1, 100, -1, 2]]))
    assert summarize(wide, 4).below(4) is None
    # a new epoch at every batch: more transitions (and runs) than a summary keeps
    flip = Replica(1, rows([(o, o % 2) for o in range(PREFIX_CAP + 10)]))
    assert summarize(flip, 4).marks is None and summarize(flip, 4).below(8) is None
    # just under the cap: kept
    under = Replica(1, rows([(o, o % 2) for o in range(PREFIX_CAP - 10)]))
    assert assert_prefixes_are_elides(under, summarize(under, 512))
    # more segments than it keeps
    many = Replica(1, rows([(o, 0) for o in range(10)]), segments=[f"{i:020d}.log" for i in range(PREFIX_CAP + 1)])
    assert summarize(many, 4).marks is None and summarize(many, 4).segments is None


def test_the_summary_stays_small_whatever_the_batch_count_of_a_one_epoch_log():
    import pickle

    def size(batches: int, offsets: int = 1 << 20) -> int:
        step = offsets // batches
        log = BatchLog.from_rows([[o, o + step - 1, 0, 1000 + o, step, 100, -1, 2]
                                  for o in range(0, offsets, step)])
        s = streamed(Replica(1, log), 1 << 14, max(1, batches // 256))  # fed as a scan feeds it, in pieces
        assert s.marks is not None and len(s.marks.transitions) == len(s.marks.runs) == 1
        return len(pickle.dumps(s))

    sizes = [size(n) for n in (64, 1024, 16384, 1 << 18)]
    assert max(sizes) <= 1.2 * min(sizes), sizes  # grows with the offset ranges (64 here), not the batches
    assert max(sizes) < 64 * 128, sizes
