"""The report tables built a column at a time (all but ``checkpoints`` and ``transactions``): the same table as their rows give, and
each column the scan's own field of every partition dir (the rows are made from those columns, so a column left
out or taken from the wrong field is caught here, not by the CLI-Spark parity that shares them)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from kforensics.scan.broker import scan_log_dirs
from kforensics.serialize import to_jsonable
from kforensics.tables.report_tables import (
    STREAMED_COLUMNS,
    epochs_rows,
    epochs_table,
    files_rows,
    findings_rows,
    jsonable_values,
    partitions_columns,
    partitions_rows,
    partitions_table,
    segments_rows,
)
from kforensics.tables.scan_tables import write_columns
from kforensics.tables.schemas import SCHEMAS, table, table_of_columns
from tests.tables.test_fit_rows import _values

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "brokers"
CONTEXT = {"snapshot_id": "s-1", "snapshot_time": 5, "cluster": "c", "broker_id": 7}


def rows_of_columns(columns: dict, n: int) -> list[dict]:
    """The rows whose columns are ``columns`` (each of ``n`` values)."""
    return [{k: v[i] for k, v in columns.items()} for i in range(n)]


@pytest.mark.parametrize("n", [0, 1, 6])
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_a_table_of_columns_is_the_table_of_its_rows(name, n):
    fields = list(SCHEMAS[name])
    # odd values in every column but a few left out (null in both)
    columns = {f.name: [_values(f.type)[(i + j) % len(_values(f.type))] for i in range(n)]
               for j, f in enumerate(fields) if j % 4}
    assert table_of_columns(name, columns, n).equals(table(name, rows_of_columns(columns, n)))


def _scans() -> list:
    dirs = sorted(p for p in FIXTURES.glob("*") if p.is_dir())
    assert dirs
    return [scan_log_dirs([d]) for d in dirs]


def test_partitions_columns_are_the_scans_fields():
    checked = 0
    for report in _scans():
        rows = partitions_rows(report, CONTEXT)
        assert partitions_table(report, CONTEXT).to_pylist() == table("partitions", rows).to_pylist()
        for p, row in zip(report.partitions, rows, strict=True):
            r = p.recovery
            assert {k: row[k] for k in CONTEXT} == CONTEXT
            assert (row["log_dir"], row["dir_name"], row["topic"], row["partition"], row["suffix"],
                    row["topic_id"]) == (p.log_dir, p.dir_name, p.topic, p.partition, p.suffix, p.topic_id)
            assert (row["log_start_offset"], row["log_end_offset"], row["high_watermark"], row["recovery_point"],
                    row["cleaner_offset"], row["uncommitted"], row["last_stable_offset"]) == (
                p.log_start_offset, p.log_end_offset, p.high_watermark, p.recovery_point, p.cleaner_offset,
                p.uncommitted, p.last_stable_offset)
            assert (row["segment_count"], row["batch_count"], row["record_count"], row["bytes"],
                    row["open_transactions"], row["complete"]) == (
                len(p.segments), p.batch_count, p.record_count, p.bytes, len(p.open_transactions), p.complete)
            assert (row["epochs_seen"], row["producer_ids"]) == (p.epochs_seen, p.producer_ids)
            assert row["epoch_cache_written"] == (None if p.epoch_cache_written is None
                                                  else json.dumps(p.epoch_cache_written))
            assert (row["recovers"], row["recovery_log_end_offset"], row["recovery_lost_first_offset"],
                    row["recovery_lost_last_offset"], row["recovery_lost_records"],
                    row["recovery_lost_committed_records"]) == (
                r.recovers, r.log_end_offset, r.lost_first_offset, r.lost_last_offset, r.lost_records,
                r.lost_committed_records)
            assert json.loads(row["recovery"]) == to_jsonable(r)
            assert row["tiered"] == (None if p.tiered is None else json.dumps(p.tiered.as_dict()))
            checked += 1
        # every column of the table is made (none left null for want of a value)
        assert set(SCHEMAS["partitions"].names) <= set(partitions_columns(report, CONTEXT))
    assert checked > 10


def test_epochs_columns_are_each_dirs_written_then_rebuilt_entries():
    entries = 0
    for report in _scans():
        want = [{**CONTEXT, "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name, "source": source,
                 "epoch": e, "start_offset": o}
                for p in report.partitions
                for source, es in (("checkpoint", p.epoch_cache_written or []), ("rebuilt", p.epoch_cache_rebuilt))
                for e, o in es]
        assert epochs_rows(report, CONTEXT) == want
        assert epochs_table(report, CONTEXT).to_pylist() == table("epochs", want).to_pylist()
        entries += len(want)
    assert entries > 10
    assert isinstance(epochs_table(_scans()[0]), pa.Table)


def test_streamed_columns_are_each_segment_file_and_finding():
    rows = 0
    for report in _scans():
        c = {**CONTEXT}
        want_segments = [{**c, "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name, **to_jsonable(s)}
                         for p in report.partitions for s in p.segments]
        want_files = [{**c, **to_jsonable(f)} for f in report.files]
        want_findings = [{**c, "code": f.code, "severity": f.severity.name.lower(), "severity_level": int(f.severity),
                          "file": f.file, "position": f.position, "line": f.line, "message": f.message,
                          "facts": json.dumps(to_jsonable(f.facts), ensure_ascii=False)}
                         for f in report.all_findings()]
        assert segments_rows(report, CONTEXT) == want_segments
        assert files_rows(report, CONTEXT) == want_files
        assert findings_rows(report, CONTEXT) == want_findings
        rows += len(want_segments) + len(want_files) + len(want_findings)
    assert rows > 50


@pytest.mark.parametrize("name", sorted(STREAMED_COLUMNS))
def test_streamed_columns_in_row_groups_are_the_whole_table(name, tmp_path):
    import pyarrow.parquet as pq

    for report in _scans():
        whole = table(name, {"segments": segments_rows, "files": files_rows, "findings": findings_rows}[name](
            report, CONTEXT)).to_pylist()
        chunks = list(STREAMED_COLUMNS[name](report, CONTEXT, 3))
        assert [n for _, n in chunks] == [3] * (len(whole) // 3) + ([len(whole) % 3] if len(whole) % 3 else [])
        write_columns(name, iter(chunks), str(tmp_path / "t.parquet"))
        f = pq.ParquetFile(tmp_path / "t.parquet")
        assert f.read().to_pylist() == whole
        assert f.metadata.num_row_groups == max(1, len(chunks))


def test_jsonable_values_of_mixed_objects_are_their_rows():
    from kforensics.log.side_files import FileRecord
    from kforensics.scan.model import SegmentFacts

    objs = [SegmentFacts(0, "a", partial_offsets=(1, 2), magics=[2]), SegmentFacts(5, None)]
    names, values = jsonable_values(objs)
    assert [dict(zip(names, v)) for v in values] == [to_jsonable(o) for o in objs]
    mixed = [FileRecord("p", "log", 1, None), SegmentFacts(3, "b")]
    names, values = jsonable_values(mixed)
    assert [dict(zip(names, v)) for v in values] == [{k: to_jsonable(o).get(k) for k in names} for o in mixed]
    assert set(names) == set(to_jsonable(mixed[0])) | set(to_jsonable(mixed[1]))
    assert jsonable_values([]) == ((), [])
