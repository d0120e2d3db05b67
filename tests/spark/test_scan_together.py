"""The Spark scan stage scans a task's small plain partition dirs together, as ``scan`` does (#26: one by one, the
scan stage of 3 x 10 000 small partitions took 50 s of a 67 s job where ``scan --out`` of the three took 24 s);
its status rows, sketches and table rows are those of the one-by-one scan.  No Spark session: the stage's function
runs in this process on the driver's plan."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import kforensics.scan.broker as broker
import kforensics.scan.small_partitions as small
from kforensics.epoch.versions import LATEST
from kforensics.spark.inputs import Snapshot
from kforensics.spark.plan import plan
from kforensics.spark.scan_task import scan_tasks
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))


def _fleet(root: Path) -> list[Path]:
    from bench_spark import build

    root.mkdir(parents=True)
    dirs = build(root, "fleet", 2, 40, 10, topics=7)
    # one dir that needs the per-partition path: a torn tail
    seg = dirs[0] / "t3-0" / "00000000000000000000.log"
    data = seg.read_bytes()
    seg.unlink()  # it is a hard link of the shared segment: a file of its own
    seg.write_bytes(data[:-20])
    return dirs


def _run(tmp: Path, dirs: list[Path], tag: str) -> tuple[list[tuple], dict[str, list[dict]]]:
    staging = tmp / f"staging-{tag}"
    p = plan([Snapshot(str(d), d.name) for d in dirs], str(staging))
    frames = list(scan_tasks(str(staging), LATEST, p.snapshots)(iter([p.tasks])))
    status = pd.concat(frames)
    rows = []
    for r in status.itertuples(index=False):
        sketch = pickle.loads(r.sketch) if r.sketch is not None else None
        rows.append((r.snapshot_id, r.dir_name, r.status, r.batches, r.bytes, r.findings,
                     None if sketch is None else (sketch.rows, repr(sketch.summary) if hasattr(sketch, "summary")
                                                  else None)))
    tables: dict[str, list[dict]] = {}
    for f in sorted(staging.rglob("*.parquet")):
        name = f.relative_to(staging).parts[0]
        t = pq.read_table(f).to_pylist()
        tables.setdefault(name, []).extend({k: v for k, v in r.items() if k != "part"} for r in t)
    return sorted(rows, key=repr), {k: sorted(v, key=repr) for k, v in tables.items()}


def test_small_dirs_are_scanned_together_with_the_same_rows(tmp_path, monkeypatch):
    dirs = _fleet(tmp_path / "fleet")
    calls = []
    real = small.scan_small_partitions

    def counted(items, **kw):
        got = real(items, **kw)
        calls.append(sum(w is not None for w in got))
        return got

    monkeypatch.setattr(small, "scan_small_partitions", counted)
    together = _run(tmp_path, dirs, "together")
    assert sum(calls) == 79, calls  # every dir but the torn one
    monkeypatch.setattr(broker, "BATCHED", False)
    calls.clear()
    alone = _run(tmp_path, dirs, "alone")
    assert not calls
    assert together[0] == alone[0]
    assert together[1] == alone[1] and {"partitions", "segments", "batches"} <= set(together[1]), \
        sorted(together[1])


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])


def test_each_partition_dir_is_listed_once_and_an_unlisted_one_reported_as_scan_reports_it(tmp_path, monkeypatch):
    """The driver plans from the log dirs' listings only; each partition dir is listed by the task that scans it,
    which reports one that cannot be listed with the finding ``scan`` gives it (the driver listed every dir too,
    30 000 of them in 1.8 s, only to find such ones)."""
    import os

    from kforensics.scan.broker import scan_log_dirs
    from kforensics.tables.report_tables import findings_rows

    dirs = _fleet(tmp_path / "fleet")
    unlistable = dirs[1] / "t2-1"
    listed: list[str] = []
    real = os.scandir

    def scandir(path=".", *a):
        listed.append(str(path))
        if str(path) == str(unlistable):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a)

    monkeypatch.setattr(os, "scandir", scandir)
    staging = tmp_path / "staging"
    p = plan([Snapshot(str(d), d.name) for d in dirs], str(staging))
    list(scan_tasks(str(staging), LATEST, p.snapshots)(iter([p.tasks])))
    partition_dirs = [x for x in listed if Path(x).parent in dirs]
    assert len(partition_dirs) == 80 and len(set(partition_dirs)) == 80, len(partition_dirs)
    keys = ("code", "severity", "message", "file", "position", "facts")
    spark = [tuple(r[k] for k in keys) for f in sorted(staging.rglob("*.parquet"))
             if f.relative_to(staging).parts[0] == "findings"
             for r in pq.read_table(f).to_pylist() if r["code"] == "UNREADABLE_DIR"]
    scanned = [tuple(r[k] for k in keys) for r in findings_rows(scan_log_dirs([dirs[1]]))
               if r["code"] == "UNREADABLE_DIR"]
    assert spark == scanned and len(spark) == 1 and spark[0][3] == str(unlistable), (spark, scanned)


def test_the_job_writes_a_file_per_table_and_topic_of_each_tasks_key_range(spark, tmp_path):
    """Scan and replay tasks each take a range of (cluster, topic, ...) keys: a task writes a file per table and
    topic it meets (the published layout), so every topic's files number about one, not one per task (tasks of
    every topic wrote 5 226 small files for 3 x 10 000 dirs of 100 topics, about 2 ms of CPU each)."""
    from kforensics.spark.job import run

    dirs = _fleet(tmp_path / "fleet")  # 2 brokers x 40 dirs over 7 topics
    out = tmp_path / "out"
    # a task per core, as many replay tasks as scan tasks: nothing merges the scan's partitions before the replay
    run(spark, [Snapshot(str(d), d.name) for d in dirs], str(out), tasks_per_partition=1)
    tasks = spark.sparkContext.defaultParallelism
    assert tasks >= 2
    for table in ("partitions", "segments", "batches", "verdicts", "divergence"):
        files = list((out / table).rglob("*.parquet"))
        topics = {f.parent.name for f in files}
        assert len(topics) == 7, (table, sorted(topics))
        # a task's range meets a topic it shares with the next task: at most one more file per task boundary
        assert len(files) <= 7 + tasks - 1, (table, len(files), tasks)
    # the replay takes each group's sketches where the scan tasks left them: every group replayed once, whole (a
    # group split between tasks would be two groups of one replica each, without their pair's divergence row)
    verdicts, divergence = ([r for f in sorted((out / name).rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
                            for name in ("verdicts", "divergence"))
    groups = {(r["topic"], r["partition"]) for r in verdicts}
    assert len(groups) == 40 and len(verdicts) == 80 and len(divergence) == 40, (len(groups), len(verdicts),
                                                                                  len(divergence))
    assert all(sorted(r["broker_id"] for r in verdicts if (r["topic"], r["partition"]) == g) == [1, 2]
               for g in groups)
