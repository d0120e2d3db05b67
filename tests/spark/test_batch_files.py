"""A scan task's batch files: small dirs' rows in one file per cluster and topic, a large dir in its own file."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq

from kforensics.log.batch_table import BATCH_COLUMNS, COL, NCOLS, BatchTable
from kforensics.spark.batch_files import DirBatches, TaskBatches
from kforensics.spark.scan_task import sketch_row
from kforensics.spark.window import partition_row
from kforensics.tables.replay_tables import PARTITION_COLUMNS
from kforensics.tables.schemas import fit_rows, table


def _chunk(start: int, n: int) -> BatchTable:
    data = np.zeros((n, NCOLS), dtype=np.int64)
    rows = np.arange(start, start + n)
    for name in BATCH_COLUMNS:
        data[:, COL[name]] = rows * 3 + COL[name]
    data[:, COL["crc_computed"]] = data[:, COL["crc"]]
    return BatchTable(data)


def _dir(topic: str, partition: int):
    return SimpleNamespace(topic=topic, partition=partition, dir_name=f"{topic}-{partition}")


SEG = SimpleNamespace(log=Path("00000000000000000000.log"))


def _feed(sink: DirBatches, pd_, sizes: list[int]) -> int:
    at = 0
    for n in sizes:
        sink(pd_, SEG, _chunk(at, n))
        at += n
    return at


def test_small_dirs_share_the_tasks_file_per_topic_and_a_large_one_has_its_own(tmp_path):
    task = TaskBatches("s-00001")
    dirs = {"a": tmp_path / "topic=a", "b": tmp_path / "topic=b"}
    for d in dirs.values():
        d.mkdir()
    written = {}
    for i, (topic, sizes) in enumerate([("a", [3, 4]), ("b", [10]), ("a", [1]), ("a", [3000, 3000])]):
        pd_ = _dir(topic, i)
        sink = DirBatches(task, str(dirs[topic]), str(dirs[topic] / f"own-{i}.parquet"),
                          {"cluster": "c", "broker_id": i, "snapshot_id": f"s{i}"}, limit=4096)
        written[i] = _feed(sink, pd_, sizes)
        own = sink.close()
        sink.commit()
        assert (own is not None) == (i == 3), "only the dir over the limit writes a file of its own"
    task.close()
    assert sorted(p.name for p in dirs["a"].iterdir()) == ["own-3.parquet", "s-00001.parquet"]
    assert sorted(p.name for p in dirs["b"].iterdir()) == ["s-00001.parquet"]
    a = pq.read_table(dirs["a"] / "s-00001.parquet").to_pandas()
    assert list(a["partition"]) == [0] * 7 + [2]  # the dirs' rows in the order they were scanned
    assert list(a["broker_id"]) == [0] * 7 + [2] and list(a["snapshot_id"]) == ["s0"] * 7 + ["s2"]
    own = pq.read_table(dirs["a"] / "own-3.parquet").to_pandas()
    assert len(own) == 6000 and set(own["partition"]) == {3}
    assert pq.read_table(dirs["b"] / "s-00001.parquet").num_rows == written[1]


def test_a_failed_dir_leaves_no_rows(tmp_path):
    task = TaskBatches("s-00002")
    small = DirBatches(task, str(tmp_path), str(tmp_path / "small.parquet"), {"cluster": "c"}, limit=100)
    _feed(small, _dir("t", 0), [50])
    assert small.abandon() is False  # nothing of its own to remove; its held rows are dropped
    large = DirBatches(task, str(tmp_path), str(tmp_path / "large.parquet"), {"cluster": "c"}, limit=100)
    _feed(large, _dir("t", 1), [80, 80])
    assert large.abandon() is True  # its own file exists: the caller removes it
    ok = DirBatches(task, str(tmp_path), str(tmp_path / "ok.parquet"), {"cluster": "c"}, limit=100)
    _feed(ok, _dir("t", 2), [7])
    assert ok.close() is None
    late = DirBatches(task, str(tmp_path), str(tmp_path / "late.parquet"), {"cluster": "c"}, limit=100)
    _feed(late, _dir("t", 3), [9])
    assert late.close() is None
    assert late.abandon() is False  # it failed after its scan, before its commit: its rows never join
    ok.commit()
    task.close()
    rows = pq.read_table(tmp_path / "s-00002.parquet").to_pandas()
    assert list(rows["partition"]) == [2] * 7


def test_rows_held_across_many_topics_stay_within_the_budget(tmp_path):
    task = TaskBatches("s-00003", budget=1000)
    peak = 0
    for i in range(200):
        d = tmp_path / f"topic={i % 50}"
        d.mkdir(exist_ok=True)
        sink = DirBatches(task, str(d), str(d / "own.parquet"), {"cluster": "c"}, limit=4096)
        _feed(sink, _dir(f"t{i % 50}", i), [30])
        sink.close()
        sink.commit()
        peak = max(peak, sum(w.held_rows for w in task.writers.values()))
    task.close()
    assert peak <= 1000 + 30  # without the budget, 50 topics would hold 6000 rows until the task ends
    total = sum(pq.read_table(p).num_rows for p in tmp_path.rglob("s-00003.parquet"))
    assert total == 200 * 30


def test_sketch_row_is_the_partitions_tables_row():
    base = {"cluster": "c", "topic": "t\udcff", "partition": 3, "broker_id": 2 ** 40, "snapshot_id": "s",
            "snapshot_time": "2026-01-02T03:04:05Z", "log_dir": "/d",
            "dir_name": "t-3", "suffix": None, "topic_id": None, "high_watermark": 7, "epoch_cache_written": "[[0, 0]]",
            "log_start_offset": 0, "cleaner_offset": None, "recovery": "{}"}
    for variant in (base, {**base, "snapshot_time": None}, {**base, "high_watermark": 2 ** 70, "partition": True}):
        from_table = partition_row(table("partitions", [variant]), PARTITION_COLUMNS)
        got = sketch_row(variant)
        assert got == from_table
        assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in from_table.items()}
        assert table("partitions", fit_rows("partitions", [variant])).equals(table("partitions", [variant]))


def test_replay_tasks_follow_the_groups_to_share_out():
    from kforensics.spark.replay import GROUPS_PER_TASK, replay_tasks

    def statuses(groups: int, replicas: int = 3) -> list[dict]:
        return [{"status": "ok", "cluster": "c", "topic": f"t{g % 7}", "partition": g, "broker_id": b}
                for g in range(groups) for b in range(replicas)]

    assert replay_tasks([], 2, 4) == 1
    assert replay_tasks(statuses(1), 2, 4) == 1  # never more tasks than groups
    assert replay_tasks(statuses(100), 2, 4) == 2  # few groups: one task per core
    assert replay_tasks(statuses(GROUPS_PER_TASK * 6), 2, 4) == 6
    assert replay_tasks(statuses(10_000), 2, 4) == 8  # many: four per core, to balance unequal groups
    failed = [{**s, "status": "failed", "topic": None} for s in statuses(10_000)]
    assert replay_tasks(failed, 2, 4) == 1  # failed dirs have no replica to replay
