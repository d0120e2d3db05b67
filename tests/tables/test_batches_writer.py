"""The ``batches`` Parquet sink: rows streamed in row groups, never accumulated; the table as the schema says."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow.parquet as pq
import pytest

from kforensics.log.batch_table import BATCH_COLUMNS, COL, FLAG_RECOVERED, NCOLS, BatchTable
from kforensics.tables.scan_tables import BatchesWriter
from kforensics.tables.schemas import SCHEMA_VERSION, SCHEMAS


def _chunk(start: int, n: int) -> BatchTable:
    data = np.zeros((n, NCOLS), dtype=np.int64)
    rows = np.arange(start, start + n)
    for name in BATCH_COLUMNS:
        data[:, COL[name]] = rows * 7 + COL[name]
    data[:, COL["crc_computed"]] = np.where(rows % 5 == 0, -1, data[:, COL["crc"]])
    data[:, COL["flags"]] = np.where(rows % 3 == 0, FLAG_RECOVERED, 0)
    return BatchTable(data)


def _partition(topic: str, partition: int):
    return SimpleNamespace(topic=topic, partition=partition, dir_name=f"{topic}-{partition}")


def _segment(name: str):
    return SimpleNamespace(log=Path(name))


def test_rows_are_written_in_row_groups_and_never_held_beyond_two_groups(tmp_path):
    path = tmp_path / "batches.parquet"
    w = BatchesWriter(str(path), {"cluster": "c", "broker_id": 3}, row_group=1000)
    sizes = [1, 333, 700, 64, 999, 1000, 5, 250] * 6
    start = 0
    for i, n in enumerate(sizes):
        w(_partition("t", i % 3), _segment(f"{i // 10:020d}.log"), _chunk(start, n))
        start += n
    w(_partition("t", 0), _segment("x.log"), _chunk(start, 0))  # an empty chunk is no row
    w.close()
    assert w.rows == start == sum(sizes)
    # bounded: the writer holds at most the group being written and the one being gathered (each can overshoot
    # the row-group size by one chunk), whatever the number of rows
    assert 0 < w.peak_held_rows <= 2 * (1000 + max(sizes))
    f = pq.ParquetFile(path)
    assert f.metadata.num_rows == start
    assert f.metadata.num_row_groups == w.row_groups >= start // (1000 + max(sizes))
    assert f.schema_arrow.equals(SCHEMAS["batches"])
    assert f.schema_arrow.metadata == {b"kforensics.schema_version": str(SCHEMA_VERSION).encode()}
    t = f.read().to_pydict()
    rows = np.arange(start)
    for name in BATCH_COLUMNS:
        if name in t:
            want = _chunk(0, start)[name]
            assert t[name] == want.tolist(), name
    assert t["crc_valid"] == (rows % 5 != 0).tolist()
    assert t["recovered"] == (rows % 3 == 0).tolist()
    # the context columns follow each chunk's partition and segment
    parts = [i % 3 for i, n in enumerate(sizes) for _ in range(n)]
    segs = [f"{i // 10:020d}.log" for i, n in enumerate(sizes) for _ in range(n)]
    assert t["partition"] == parts and t["segment"] == segs
    assert t["dir_name"] == [f"t-{p}" for p in parts]
    assert set(t["cluster"]) == {"c"} and set(t["broker_id"]) == {3}
    assert set(t["snapshot_id"]) == {None} and set(t["snapshot_time"]) == {None}


def test_context_changes_and_values_that_do_not_fit_a_column(tmp_path):
    path = tmp_path / "b.parquet"
    w = BatchesWriter(str(path), {"cluster": None, "broker_id": 2**40}, row_group=10)
    w(_partition("a\udcff", 1), _segment("0.log"), _chunk(0, 4))
    w.set_context(snapshot_id="s1", broker_id=5)
    w(_partition("b", 2), _segment("1.log"), _chunk(4, 30))
    w.close()
    t = pq.read_table(path).to_pydict()
    assert t["broker_id"] == [None] * 4 + [5] * 30  # out of range for int32: null, as every table does
    assert t["snapshot_id"] == [None] * 4 + ["s1"] * 30
    assert t["topic"] == ["a\\xff"] * 4 + ["b"] * 30
    assert t["cluster"] == [None] * 34


def test_no_batch_gives_an_empty_table_of_the_schema(tmp_path):
    path = tmp_path / "empty.parquet"
    w = BatchesWriter(str(path))
    w.close()
    w.close()  # closing twice is harmless
    t = pq.read_table(path)
    assert t.num_rows == 0 and t.schema.equals(SCHEMAS["batches"])


def test_a_write_failure_is_raised_not_lost_and_close_does_not_hang(tmp_path):
    w = BatchesWriter(str(tmp_path / "no-such-dir" / "b.parquet"), row_group=5)
    with pytest.raises(OSError):
        for i in range(20):
            w(_partition("t", 0), _segment("0.log"), _chunk(i * 5, 5))
        w.close()
    with pytest.raises(OSError):
        w.close()
