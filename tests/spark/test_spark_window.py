"""The Spark replay's windowed replicas equal the single-process ones (``elide`` of the whole replica), its
summaries equal ``kforensics replay``'s, and ``--tables`` / the hive layout of the output."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.replay.test_histories import MODES
from tests.replay.test_restart import restarted_alike
from tests.replay.test_summary import (CHUNKS, POWER_LOSS, floors, history_on_disk, outcome, power_loss,
                                      split_segments)
from kforensics.epoch.versions import LATEST, parse_kafka_version
from kforensics.replay import summary as summary_module
from kforensics.replay.group import replay_group
from kforensics.replay.inputs import load_replicas
from kforensics.replay.replica import NeedRows, elide
from kforensics.replay.restart import recovered_transitions, restart
from kforensics.replay.summary import CHUNK_OFFSETS, floor_below, summarize, replay_window, window_floor
from kforensics.scenario import load_scenario
from kforensics.spark import window
from kforensics.scan.broker import scan_log_dirs
from kforensics.spark.job import run
from kforensics.spark.schemas import TABLES, parse_tables
from kforensics.spark.inputs import Snapshot
from kforensics.spark.tables import read_pandas
from kforensics.spark.window import (INLINE_ROWS, SketchSink, Sketch, group_replicas, replica_of_tables, replica_order,
                                     windowed_replica)
from kforensics.tables.replay_tables import PARTITION_COLUMNS, replica_rows
from kforensics.tables.report_tables import partitions_table
from kforensics.tables.scan_tables import BatchesWriter

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())


class PerDir:
    """A batch sink keeping one SketchSink and batches file per partition dir (``chunk``: the summaries' range)."""

    def __init__(self, tmp: Path, ctx: dict, chunk: int = CHUNK_OFFSETS, inline_rows: int = INLINE_ROWS):
        self.tmp, self.ctx, self.sinks, self.chunk, self.inline_rows = tmp, ctx, {}, chunk, inline_rows

    def __call__(self, pd_, seg, t):
        key = str(pd_.path)
        if key not in self.sinks:
            w = BatchesWriter(str(self.tmp / f"{len(self.sinks)}.parquet"), self.ctx)
            self.sinks[key] = SketchSink(w, self.chunk, self.inline_rows)
        self.sinks[key](pd_, seg, t)


def sketches(broker: Path, tmp: Path, bid: int, chunk: int = CHUNK_OFFSETS, every: bool = True
             ) -> dict[tuple[str, int], Sketch]:
    """Each partition's sketch as a replica that does not travel whole (windowed from its batches file); ``every``:
    with a summary even where the job makes none (a log that ends within the first range)."""
    ctx = {"cluster": "c", "broker_id": bid, "snapshot_id": f"s{bid}"}
    sink = PerDir(tmp, ctx, chunk, inline_rows=-1)
    report = scan_log_dirs([broker], batch_sink=sink)
    rows = partitions_table(report, ctx).select(PARTITION_COLUMNS).to_pylist()
    out = {}
    for p, row in zip(report.partitions, rows):
        if p.suffix is not None or p.topic == "__cluster_metadata":
            continue
        s = sink.sinks.get(p.path)
        if s is not None:
            s.inner.close()
        summary = (s if s is not None else SketchSink(None, sink.chunk, -1)).summary(p, every=every)
        out[(p.topic, p.partition)] = Sketch(row, summary, batches=s.inner.path if s is not None else None,
                                             rows=s.rows if s is not None else 0)
    return out


def same(a, b) -> None:
    assert a.broker_id == b.broker_id and a.log_start == b.log_start and a.high_watermark == b.high_watermark
    assert np.array_equal(a.log.data, b.log.data)
    assert a.prefix == b.prefix
    assert a.epoch_checkpoint == b.epoch_checkpoint and a.cleaner_offset == b.cleaner_offset
    assert a.recovery == b.recovery and [str(x).rsplit("/", 1)[-1] for x in a.segments] == [
        str(x).rsplit("/", 1)[-1] for x in b.segments]


def scenario_brokers(scenario: Path):
    """A scenario's broker dirs and their replicas as ``kforensics replay`` loads them (skips one without)."""
    brokers = sorted(p for p in scenario.glob("broker-*") if p.is_dir())
    if not brokers:
        pytest.skip("no brokers")
    return brokers, load_replicas({i + 1: [b] for i, b in enumerate(brokers)}, every_summary=True)


@pytest.mark.parametrize("chunk", [CHUNK_OFFSETS, 2, 1])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_a_sketch_has_a_summary_where_the_single_process_makes_one(scenario, chunk, tmp_path, monkeypatch):
    """The job's sketches carry a summary exactly where ``replay``'s loading makes one (a log that ends past the
    first range, :func:`~kforensics.replay.summary.needs_summaries`), the same one; a group replays from offset 0
    when one of its replicas has none, as it does in ``replay``."""
    # ``replay``'s loading with ranges of ``chunk`` offsets (its summaries and the rule take the default)
    monkeypatch.setattr(summary_module.needs_summaries, "__defaults__", (chunk,))
    monkeypatch.setattr(summary_module.SummaryBuilder.__init__, "__defaults__", (chunk,))
    brokers = sorted(p for p in scenario.glob("broker-*") if p.is_dir())
    if not brokers:
        pytest.skip("no brokers")
    loaded = load_replicas({i + 1: [b] for i, b in enumerate(brokers)})
    made = none = 0
    for i, b in enumerate(brokers):
        d = tmp_path / f"b{i}"
        d.mkdir()
        for key, sk in sketches(b, d, i + 1, chunk, every=False).items():
            group = loaded.groups[key]
            want = loaded.summaries[key][group.index(next(r for r in group if r.broker_id == i + 1))]
            if want is None:
                assert sk.summary is None, key
                none += 1
            else:
                assert sk.summary is not None and (sk.summary.digests, sk.summary.reaches, sk.summary.log_end_offset) \
                    == (want.digests, want.reaches, want.log_end_offset), key
                made += 1
    assert made + none
    if chunk == CHUNK_OFFSETS:
        assert none and not made  # the fixtures' logs all end within a range of the default size
    assert window_floor([None, *(s for ss in loaded.summaries.values() for s in ss if s is not None)], LATEST) == 0


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_windows_read_from_the_batch_files_equal_the_single_process_windows(scenario, tmp_path):
    """For every floor (each batch's first and last offset, and past the end): the replica made from the rows above
    the floor and the prefix columns below it is ``elide`` of the whole replica; the summaries are the CLI's."""
    brokers, loaded = scenario_brokers(scenario)
    compared = 0
    for i, b in enumerate(brokers):
        d = tmp_path / f"b{i}"
        d.mkdir()
        for key, sk in sketches(b, d, i + 1).items():
            group = loaded.groups[key]
            full = next(r for r in group if r.broker_id == i + 1)
            want_summary = loaded.summaries[key][group.index(full)]
            assert sk.summary.digests == want_summary.digests and sk.summary.reaches == want_summary.reaches
            assert (sk.summary.log_end_offset, sk.summary.first_damaged) == (want_summary.log_end_offset,
                                                                             want_summary.first_damaged)
            base, last = full.log.col("base_offset"), full.log.col("last_offset")
            for floor in sorted({0, *base.tolist(), *(last + 1).tolist(), int(last.max(initial=0)) + 5}):
                got = windowed_replica(sk, max(0, floor))
                same(got.__class__(**{**got.__dict__, "broker_id": full.broker_id}), elide(full, max(0, floor)))
                compared += 1
    assert compared


@pytest.mark.parametrize("split", [None, 2], ids=["one-segment", "two-batch-segments"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_small_replicas_kept_while_scanned_equal_the_single_process_replicas(scenario, split, tmp_path):
    """A small replica travels whole, made from the rows its sink kept as they streamed by (its batches file is
    not read back): it is the replica ``kforensics replay`` loads (of one segment or of many)."""
    if split:
        scenario = split_segments(scenario, tmp_path / "s", split)
    brokers, loaded = scenario_brokers(scenario)
    compared = 0
    for i, b in enumerate(brokers):
        ctx = {"cluster": "c", "broker_id": i + 1, "snapshot_id": f"s{i + 1}"}
        d = tmp_path / f"b{i}"
        d.mkdir()
        sink = PerDir(d, ctx)
        report = scan_log_dirs([b], batch_sink=sink)
        rows = partitions_table(report, ctx).select(PARTITION_COLUMNS).to_pylist()
        for p, row in zip(report.partitions, rows):
            if p.suffix is not None or p.topic == "__cluster_metadata" or p.path not in sink.sinks:
                continue
            got = sink.sinks[p.path].replica(row)
            full = next(r for r in loaded.groups[(p.topic, p.partition)] if r.broker_id == i + 1)
            same(got, full)
            compared += 1
    assert compared


def test_replica_order_is_replica_rows_order():
    rows = [{"suffix": None, "broker_id": b, "snapshot_time": t, "snapshot_id": s, "dir_name": "x-0"}
            for b, t, s in [(2, "2", "a"), (1, None, "b"), (None, None, "c"), (2, "1", "d"), (None, "0", "e"),
                            (1, "3", "f")]] + [{"suffix": "delete", "broker_id": 3, "snapshot_time": None,
                                                "snapshot_id": "g", "dir_name": "x-0.abc-delete"}]
    want = list(replica_rows(pd.DataFrame(rows))["snapshot_id"])
    assert [rows[i]["snapshot_id"] for i in replica_order(rows)] == want


def test_tables_option_names_known_tables():
    assert parse_tables(None) == TABLES
    assert parse_tables("findings, verdicts") == ("findings", "verdicts")
    with pytest.raises(ValueError, match="unknown table"):
        parse_tables("verdicts,batchez")


def test_tables_skip_batches_and_the_output_is_hive_partitioned(spark, tmp_path):
    sdir = ROOT / "fixtures" / "scenarios" / "kip101-s2-two-hard-failures"
    snaps = [Snapshot(str(b), b.name) for b in sorted(sdir.glob("broker-*"))]
    full, some = tmp_path / "full", tmp_path / "some"
    run(spark, snaps, str(full))
    from kforensics.cli import main

    r = CliRunner().invoke(main, ["spark", *[s.spec for s in snaps], "--out", str(some), "--master", "local[2]",
                                  "--tables", "verdicts,findings"])
    assert r.exit_code in (0, 1), r.output
    assert sorted(p.name for p in some.iterdir()) == ["findings", "verdicts"]
    assert sorted(p.name for p in full.iterdir()) == sorted(TABLES)
    # the same verdicts with or without the batches table
    key = ["topic", "partition", "broker_id", "verdict", "offsets", "records"]
    assert read_pandas(str(some), "verdicts")[key].equals(read_pandas(str(full), "verdicts")[key])
    # hive-style: cluster=/topic= directories, values as the rows hold them; a filter reads only its dirs
    cluster = read_pandas(str(full), "verdicts")["cluster"].iloc[0]
    for name in ("batches", "verdicts", "partitions"):
        dirs = {p.parent.relative_to(full / name).as_posix() for p in (full / name).rglob("*.parquet")}
        assert dirs == {f"cluster={cluster}/topic=orders"}, (name, dirs)
    assert {p.parent.name for p in (full / "brokers").rglob("*.parquet")} == {f"cluster={cluster}"}
    assert len(read_pandas(str(full), "batches", topic="orders")) == len(read_pandas(str(full), "batches")) > 0
    assert len(read_pandas(str(full), "batches", topic="other")) == 0
    assert spark.read.parquet(str(full / "verdicts")).where("topic = 'orders'").count() == len(
        read_pandas(str(full), "verdicts"))
    r = CliRunner().invoke(main, ["spark", *[s.spec for s in snaps], "--out", str(tmp_path / "x"), "--tables", "nope"])
    assert r.exit_code == 2 and "unknown table" in r.output


# ------------------------------------------------------------------ windows with the summary's prefix
def marks_dropped(sk: Sketch) -> Sketch:
    """The sketch with a summary that gives no prefix: its windows are made the old way (the prefix columns of the
    rows below the floor read back)."""
    return replace(sk, summary=replace(sk.summary, marks=None))


def identical(a, b) -> None:
    """Two windowed replicas hold the same (``same``, and every field the replay reads of a replica exactly)."""
    same(a, b)
    assert a.segments == b.segments and a.notes == b.notes and a.window_start == b.window_start
    assert (a.source, a.cluster_id, a.topic_id, a.clean_shutdown) == (b.source, b.cluster_id, b.topic_id,
                                                                      b.clean_shutdown)


class BelowReads:
    """Counts the reads of rows below a floor (the prefix columns) the window module makes."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = window.read_rows

        def read_rows(*a, below: bool = False, **kw):
            self.count += below
            return real(*a, below=below, **kw)

        monkeypatch.setattr(window, "read_rows", read_rows)


def assert_restarts_alike(got, full, floor: int, summary) -> None:
    """The replica windowed at ``floor`` restarts as the whole one in every mode, when the floor is one a summary
    could give (at or below where its restart cuts or finds damage, and its last batch); only a floor right at the
    cut may ask for rows."""
    reach = min(summary.reaches + ([summary.first_damaged] if summary.first_damaged is not None else []),
                default=None)
    if (reach is not None and floor > reach) or floor > int(full.log.col("last_offset").max(initial=0)):
        return  # no summary's floor: above the cut, or past the last batch (a window keeps it)
    for mode in MODES:
        m = parse_kafka_version(mode)
        try:
            restarted = restart(got, m)
        except NeedRows:
            assert floor == reach, (floor, reach)
            continue
        restarted_alike(restart(full, m), restarted, len(full.log) - len(got.log))
        if m.has_epochs:  # the recovered batches' transitions, exactly (not only those the cache takes)
            assert recovered_transitions(got, restarted.log) == recovered_transitions(full, restart(full, m).log)


def assert_windows_from_the_summary(sk: Sketch, full, below: BelowReads | None = None) -> int:
    """At every floor the summary marks (every range boundary), the replica windowed with the summary's prefix is
    ``elide`` of the whole replica and the replica windowed the old way, having read no row below the floor
    (when the log is in order and the summary kept its marks), and it restarts as the whole one (a crashed
    broker's window above its recovered segment's start included)."""
    n = 0
    for floor in floors(full, sk.summary.chunk_offsets):
        before = below.count if below is not None else 0
        got = windowed_replica(sk, floor)
        if floor > 0 and sk.summary.marks is not None:
            assert below is None or below.count == before, floor  # the prefix came from the summary
        same(replace(got, broker_id=full.broker_id), elide(full, floor))
        identical(got, windowed_replica(marks_dropped(sk), floor))
        assert_restarts_alike(got, full, floor, sk.summary)
        n += 1
    return n


def spark_replay(items: list[Sketch], topic: str, partition: int, mode: str, events=None, timeline=None):
    """A group replayed as the Spark job replays it: from the window its summaries give, loading lower when the
    replay reaches lower (``replay_rows``)."""
    rows, summaries, load = group_replicas(items)
    replicas, reload = replay_window(summaries, parse_kafka_version(mode), load)  # the rule replay_rows windows with
    return replay_group(topic, partition, replicas, kafka_version=parse_kafka_version(mode), events=events,
                        timeline=timeline, reload=reload)


def assert_same_replays(groups: dict[tuple, list[Sketch]], events=None, timeline=None, whole=None) -> None:
    """Every group replays alike with the summaries' prefixes and with the prefixes read the old way, and (given
    the single-process replicas ``whole`` by group) as the whole logs replay."""
    for (topic, partition), items in groups.items():
        for mode in MODES:
            with_marks = spark_replay(items, topic, partition, mode, events, timeline)
            without = spark_replay([marks_dropped(sk) for sk in items], topic, partition, mode, events, timeline)
            assert outcome(with_marks) == outcome(without), mode
            assert [d.__dict__ for d in with_marks.divergence] == [d.__dict__ for d in without.divergence], mode
            if whole is not None:
                reps = whole[(topic, partition)]
                want = replay_group(topic, partition, reps, kafka_version=parse_kafka_version(mode), events=events, timeline=timeline,
                                    summaries=[summarize(r, 1 << 40) for r in reps])
                assert outcome(with_marks) == outcome(want), mode
                assert [d.__dict__ for d in with_marks.divergence] == [d.__dict__ for d in want.divergence], mode


def scanned(scenario: Path, tmp: Path, chunk: int):
    """Every broker's sketches of a scenario dir (scanned with ranges of ``chunk`` offsets), the single-process
    replicas of it, and the sketches by group."""
    brokers = sorted(p for p in scenario.glob("broker-*") if p.is_dir())
    loaded = load_replicas({i + 1: [b] for i, b in enumerate(brokers)})
    per_broker, groups = [], {}
    for i, b in enumerate(brokers):
        d = tmp / f"c{chunk}-b{i}"
        d.mkdir()
        sks = sketches(b, d, i + 1, chunk)
        per_broker.append(sks)
        for key, sk in sks.items():
            groups.setdefault(key, []).append(sk)
    return brokers, loaded, per_broker, groups


@pytest.mark.parametrize("split", [None, 2], ids=["one-segment", "two-batch-segments"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_windows_with_the_summarys_prefix_equal_elide_and_the_old_windows(scenario, split, tmp_path, monkeypatch):
    """Small ranges (many boundaries), the fixture's one segment or segments of two batches (segments wholly below
    the floor: their names are still the replica's, the segment column indexes them all): every window made from
    the rows above the floor and the summary's prefix is ``elide`` of the whole replica and the old window, and
    every group replays alike either way."""
    if split:
        scenario = split_segments(scenario, tmp_path / "s", split)
    if not any(p.is_dir() for p in scenario.glob("broker-*")):
        pytest.skip("no brokers")
    below = BelowReads(monkeypatch)
    sc = load_scenario(scenario)
    for chunk in CHUNKS:
        brokers, loaded, per_broker, groups = scanned(scenario, tmp_path, chunk)
        compared = 0
        for i, sks in enumerate(per_broker):
            for key, sk in sks.items():
                full = next(r for r in loaded.groups[key] if r.broker_id == i + 1)
                assert sk.summary.marks is not None and sk.summary.segments == [
                    str(x).rsplit("/", 1)[-1] for x in full.segments]
                compared += assert_windows_from_the_summary(sk, full, below)
        assert compared
        assert_same_replays(groups, sc.events or None, whole=loaded.groups)


@given(st.lists(st.sampled_from([
    ("produce", 2), ("follow", 2, 0), ("follow", 3, 1), ("commit",), ("crash", 2, 1, False), ("crash", 1, 2, True),
    ("restart", 2), ("restart", 1), ("elect", 2, False), ("elect", 3, True), ("power_loss", [0, 1, 2], True),
    ("power_loss", [0, 0, 0], False)]),
    min_size=5, max_size=30), st.integers(0, 2), st.booleans(), st.sampled_from(CHUNKS), st.sampled_from([None, 1, 3]),
    st.sampled_from([None, [], [(0, 0)]]))
@settings(max_examples=max(10, int(os.environ.get("KF_EXAMPLES", "150")) // 8), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_windows_with_the_summarys_prefix_equal_the_old_windows_on_crash_histories(ops_, pick, unclean, chunk,
                                                                                    split, stale):
    """Crash histories (power losses leave no marker: recovery from the segment holding the recovery point, a middle
    one when split), broker 3's checkpoint ``stale`` (recovery assigns epochs): the Spark windows equal the old ones
    and ``elide``, restart as the whole replicas, and every group replays as the whole logs do."""
    from kforensics.kraft.timeline import build_timeline

    with tempfile.TemporaryDirectory() as tmp:
        root = history_on_disk(ops_, pick, unclean, stale, split, Path(tmp))
        sc = load_scenario(root)
        brokers, loaded, per_broker, groups = scanned(root, Path(tmp), chunk)
        for i, sks in enumerate(per_broker):
            for key, sk in sks.items():
                assert sk.summary.marks is not None
                assert_windows_from_the_summary(sk, next(r for r in loaded.groups[key] if r.broker_id == i + 1))
        assert_same_replays(groups, sc.events, build_timeline(sc.metadata), whole=loaded.groups)


@pytest.mark.parametrize("recovery_point,split", POWER_LOSS)
def test_a_power_loss_that_cuts_nothing_is_replayed_from_the_last_range(recovery_point, split, tmp_path):
    """Brokers that lost power (no marker) and lost nothing: the Spark replay reads each replica from its last range
    (not from its recovered segment's start), reads no row below it and reloads nothing, and replays as the whole
    logs do (broker 3's stale checkpoint: its recovery assigns epoch 1 where it meets it first)."""
    root = power_loss(tmp_path, recovery_point, split)
    sc = load_scenario(root)
    brokers, loaded, per_broker, groups = scanned(root, tmp_path, 8)
    (key, items), = groups.items()
    reps = loaded.groups[key]
    for mode in MODES:
        _rows, summaries, load = group_replicas(items)
        assert [s.reaches for s in summaries] == [[], [], []]
        floor = window_floor(summaries, parse_kafka_version(mode))
        assert floor == 16, mode
        asked = []

        def reload(offset):
            asked.append(offset)
            return load(floor_below(offset, 8))

        got = replay_group(key[0], key[1], load(floor), kafka_version=parse_kafka_version(mode), events=sc.events,
                           reload=reload)
        want = replay_group(key[0], key[1], reps, kafka_version=parse_kafka_version(mode), events=sc.events,
                            summaries=[summarize(r, 1 << 40) for r in reps])
        assert asked == [] and outcome(got) == outcome(want), mode
    for i, sks in enumerate(per_broker):
        for k, sk in sks.items():
            assert assert_windows_from_the_summary(sk, next(r for r in loaded.groups[k] if r.broker_id == i + 1))


def test_over_the_cap_the_windows_are_read_the_old_way_and_still_elides(tmp_path, monkeypatch):
    """A summary over its cap keeps no marks: the window reads the prefix columns below the floor, as before."""
    monkeypatch.setattr(summary_module, "PREFIX_CAP", 1)  # any second epoch run is over it
    below = BelowReads(monkeypatch)
    scenario = split_segments(ROOT / "fixtures" / "scenarios" / "three-round-truncation", tmp_path / "s", 1)
    brokers, loaded, per_broker, groups = scanned(scenario, tmp_path, 1)
    for i, sks in enumerate(per_broker):
        for key, sk in sks.items():
            full = next(r for r in loaded.groups[key] if r.broker_id == i + 1)
            assert len(full.log.runs()) > 1 and sk.summary.marks is None
            assert sk.summary.below(1) is None
            assert assert_windows_from_the_summary(sk, full)
    assert below.count  # the old way: the rows below the floor were read
    assert_same_replays(groups)


def test_a_sink_fed_segments_out_of_their_order_keeps_no_marks_and_its_windows_are_elides(tmp_path):
    """Segments fed in an order their names do not sort in (offsets still increasing as fed): the replica sorts
    them by name, so the fed order is not the log's and the summary keeps no marks; its windows, read the old way,
    are ``elide`` of the replica its batches file makes."""
    scenario = split_segments(ROOT / "fixtures" / "scenarios" / "healthy-3-brokers", tmp_path / "s", 2)
    part = scenario / "broker-1" / "orders-0"
    names = sorted(p.name for p in part.glob("*.log"))
    assert len(names) > 2
    renamed = dict(zip(names, reversed(names)))
    ctx = {"cluster": "c", "broker_id": 1, "snapshot_id": "s1"}
    sink = SketchSink(BatchesWriter(str(tmp_path / "b.parquet"), ctx), 1, inline_rows=-1)
    small = SketchSink(None, 1)  # the same rows kept as a small replica's, which travels whole
    fed = []
    logs = {}

    def rename(pd_, seg, t):
        if pd_.topic == "orders":
            fed.append(renamed[seg.log.name])
            log = logs.setdefault(seg.log.name, seg.log.with_name(renamed[seg.log.name]))  # one object per segment
            sink(pd_, SimpleNamespace(log=log), t)
            small(pd_, SimpleNamespace(log=log), t)

    report = scan_log_dirs([scenario / "broker-1"], batch_sink=rename)
    sink.inner.close()
    assert fed == list(reversed(names))
    p = next(p for p in report.partitions if p.topic == "orders")
    row = partitions_table(report, ctx).select(PARTITION_COLUMNS).to_pylist()[report.partitions.index(p)]
    sk = Sketch(row, sink.summary(p), batches=sink.inner.path, rows=sink.rows)
    assert sk.summary.marks is None
    whole = replica_of_tables([window.read_rows(sk.batches, None)], row)
    assert not whole.log.is_sorted()  # by name, the log goes back
    for floor in floors(whole, 1):
        identical(windowed_replica(sk, floor), elide(whole, floor))
    identical(small.replica(row), whole)  # the kept rows sorted as the file's are


def test_read_rows_picks_row_groups_by_statistics_and_equals_a_filtered_read(tmp_path):
    """A window read takes the row groups whose last_offset statistics reach the floor, then filters rows: the
    same rows, in the same order, as pyarrow's filtered read of the whole file (segment names may come back
    dictionary-encoded: the replay columns made of them are the same)."""
    import pyarrow.parquet as pq

    from kforensics.log.batch_table import BATCH_COLUMNS as RAW, COL, NCOLS, BatchTable
    from kforensics.spark.window import PREFIX_COLUMNS, WINDOW_COLUMNS, read_rows, replay_rows_of
    from kforensics.tables.scan_tables import BatchesWriter

    path = tmp_path / "b.parquet"
    w = BatchesWriter(str(path), {"cluster": "c", "broker_id": 1}, row_group=700)
    at = 0
    for seg, n in (("00000000000000000000.log", 1000), ("00000000000000001000.log", 1500),
                   ("00000000000000002500.log", 333)):
        for start in range(0, n, 250):
            k = min(250, n - start)
            data = np.zeros((k, NCOLS), dtype=np.int64)
            rows = np.arange(at, at + k)
            for name in RAW:
                data[:, COL[name]] = rows
            data[:, COL["last_offset"]] = rows + (rows % 3 == 0)  # some batches of two offsets
            w(SimpleNamespace(topic="t", partition=0, dir_name="t-0"), SimpleNamespace(log=Path(seg)),
              BatchTable(data))
            at += k
    w.close()
    assert pq.ParquetFile(path).metadata.num_row_groups > 3
    for floor in (None, 0, 1, 699, 700, 1000, 1234, 2500, 2832, 2833, 10**6):
        for below in (False, True):
            if floor is None and below:
                continue
            for cols in (WINDOW_COLUMNS, PREFIX_COLUMNS, ["segment", "position"]):
                got = read_rows(str(path), None, floor, cols, below)
                want = pq.read_table(path, columns=cols, filters=None if floor is None else
                                     [("last_offset", "<" if below else ">=", floor)])
                assert got.column_names == cols and got.num_rows == want.num_rows, (floor, below, cols)
                for c in cols:
                    assert got.column(c).cast(want.schema.field(c).type).equals(want.column(c)), (floor, below, c)
                if "base_offset" in cols:
                    a, sa = replay_rows_of([got])
                    b, sb = replay_rows_of([want])
                    assert sa == sb and np.array_equal(a, b)


@pytest.mark.parametrize("split", [None, 2], ids=["one-segment", "two-batch-segments"])
@pytest.mark.parametrize("scenario", SCENARIOS[:6], ids=lambda p: p.name)
def test_a_replica_that_outgrows_the_inline_limit_gets_the_marks_of_one_marked_all_along(scenario, split, tmp_path):
    """A sink marks nothing while its replica may still travel whole (the marks of a small one are never read:
    none are kept), and marks the rows it held once the replica grows past the limit: whatever the limit, the
    summary of a replica past it is the one of a sink that marked every row as it came."""
    if split:
        scenario = split_segments(scenario, tmp_path / "s", split)
    brokers = sorted(p for p in scenario.glob("broker-*") if p.is_dir())
    if not brokers:
        pytest.skip("no brokers")
    compared = small = 0
    for i, b in enumerate(brokers):
        ctx = {"cluster": "c", "broker_id": i + 1, "snapshot_id": f"s{i + 1}"}
        runs = {}
        for limit in (-1, 0, 1, 3, 7, INLINE_ROWS):
            sink = PerDir(tmp_path / f"b{i}-{limit}", ctx, 2, inline_rows=limit)
            (tmp_path / f"b{i}-{limit}").mkdir()
            report = scan_log_dirs([b], batch_sink=sink)
            runs[limit] = {p.path: sink.sinks[p.path].summary(p, every=True) for p in report.partitions
                           if p.path in sink.sinks}
            rows = {p.path: sink.sinks[p.path].rows for p in report.partitions if p.path in sink.sinks}
        for path, marked in runs[-1].items():
            for limit, summaries in runs.items():
                got = summaries[path]
                if rows[path] > limit:
                    assert got.marks == marked.marks and got.segments == marked.segments, (path, limit)
                    compared += 1
                else:
                    assert got.marks is None and got.segments is None
                    small += 1
                assert (got.digests, got.reaches, got.first_damaged) == (marked.digests, marked.reaches,
                                                                         marked.first_damaged)
    assert compared and small
