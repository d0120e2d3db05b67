"""The Spark replay's windowed replicas equal the single-process ones (``elide`` of the whole replica), its
summaries equal ``kforensics replay``'s, and ``--tables`` / the hive layout of the output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from kforensics.replay.inputs import load_replicas
from kforensics.replay.replica import elide
from kforensics.scan.broker import scan_log_dirs
from kforensics.spark.job import TABLES, parse_tables, run
from kforensics.spark.inputs import Snapshot
from kforensics.spark.tables import read_pandas
from kforensics.spark.window import SketchSink, Sketch, group_replicas, replica_order, windowed_replica
from kforensics.tables.replay_tables import PARTITION_COLUMNS, replica_rows
from kforensics.tables.scan_tables import BatchesWriter, partitions_table

SCENARIOS = sorted(p for p in (ROOT / "fixtures" / "scenarios").iterdir() if p.is_dir())


class PerDir:
    """A batch sink keeping one SketchSink and batches file per partition dir."""

    def __init__(self, tmp: Path, ctx: dict):
        self.tmp, self.ctx, self.sinks = tmp, ctx, {}

    def __call__(self, pd_, seg, t):
        key = str(pd_.path)
        if key not in self.sinks:
            w = BatchesWriter(str(self.tmp / f"{len(self.sinks)}.parquet"), self.ctx)
            self.sinks[key] = SketchSink(w)
        self.sinks[key](pd_, seg, t)


def sketches(broker: Path, tmp: Path, bid: int) -> dict[tuple[str, int], Sketch]:
    ctx = {"cluster": "c", "broker_id": bid, "snapshot_id": f"s{bid}"}
    sink = PerDir(tmp, ctx)
    report = scan_log_dirs([broker], batch_sink=sink)
    rows = partitions_table(report, ctx).select(PARTITION_COLUMNS).to_pylist()
    out = {}
    for p, row in zip(report.partitions, rows):
        if p.suffix is not None or p.topic == "__cluster_metadata":
            continue
        s = sink.sinks.get(p.path)
        if s is not None:
            s.inner.close()
        summary = s.summary(p) if s is not None else SketchSink().summary(p)
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


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_windows_read_from_the_batch_files_equal_the_single_process_windows(scenario, tmp_path):
    """For every floor (each batch's first and last offset, and past the end): the replica made from the rows above
    the floor and the prefix columns below it is ``elide`` of the whole replica; the summaries are the CLI's."""
    brokers = sorted(p for p in scenario.glob("broker-*") if p.is_dir())
    if not brokers:
        pytest.skip("no brokers")
    loaded = load_replicas({i + 1: [b] for i, b in enumerate(brokers)})
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


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.name)
def test_small_replicas_kept_while_scanned_equal_the_single_process_replicas(scenario, tmp_path):
    """A small replica travels whole, made from the rows its sink kept as they streamed by (its batches file is
    not read back): it is the replica ``kforensics replay`` loads."""
    brokers = sorted(p for p in scenario.glob("broker-*") if p.is_dir())
    if not brokers:
        pytest.skip("no brokers")
    loaded = load_replicas({i + 1: [b] for i, b in enumerate(brokers)})
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
