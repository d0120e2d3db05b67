"""Scan reports as Arrow tables and Parquet files; batch headers streamed to Parquet in row groups.

The same tables come out of ``kforensics scan --out`` and the Spark job.
Batch rows never accumulate: :class:`BatchesWriter` is a scan batch sink that
appends each chunk of headers to an open Parquet file, so memory does not
grow with the number of batches.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..log.batch_table import COL, FLAG_RECOVERED, BatchTable
from ..scan.model import ScanReport
from ..serialize import dumps, to_jsonable
from .schemas import BATCH_FIELDS, SCHEMA_VERSION, SCHEMAS, fit, table

#: rows gathered before a Parquet row group is written
ROW_GROUP = 1 << 17


def context_of(report: ScanReport, context: dict | None) -> dict:
    c = {"snapshot_id": None, "snapshot_time": None, "cluster": report.broker.cluster_id,
         "broker_id": report.broker.node_id}
    c.update(context or {})
    return c


def partitions_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = context_of(report, context)
    rows = []
    for p in report.partitions:
        r = p.recovery
        rows.append({**c, "log_dir": p.log_dir, "dir_name": p.dir_name, "topic": p.topic, "partition": p.partition,
                     "suffix": p.suffix, "topic_id": p.topic_id, "log_start_offset": p.log_start_offset,
                     "log_end_offset": p.log_end_offset, "high_watermark": p.high_watermark,
                     "recovery_point": p.recovery_point, "cleaner_offset": p.cleaner_offset,
                     "uncommitted": p.uncommitted, "segment_count": len(p.segments), "batch_count": p.batch_count,
                     "record_count": p.record_count, "bytes": p.bytes, "epochs_seen": p.epochs_seen,
                     "producer_ids": p.producer_ids, "open_transactions": len(p.open_transactions),
                     "last_stable_offset": p.last_stable_offset,
                     "epoch_cache_written": None if p.epoch_cache_written is None else json.dumps(p.epoch_cache_written),
                     "recovers": r.recovers, "recovery_log_end_offset": r.log_end_offset,
                     "recovery_lost_first_offset": r.lost_first_offset, "recovery_lost_last_offset": r.lost_last_offset,
                     "recovery_lost_records": r.lost_records, "recovery_lost_committed_records": r.lost_committed_records,
                     "recovery": dumps(r), "complete": p.complete})
    return table("partitions", rows)


def segments_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = context_of(report, context)
    rows = [{**c, "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name, **to_jsonable(s)}
            for p in report.partitions for s in p.segments]
    return table("segments", rows)


def epochs_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = context_of(report, context)
    rows = []
    for p in report.partitions:
        for source, entries in (("checkpoint", p.epoch_cache_written or []), ("rebuilt", p.epoch_cache_rebuilt)):
            rows += [{**c, "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name, "source": source,
                      "epoch": epoch, "start_offset": start} for epoch, start in entries]
    return table("epochs", rows)


def findings_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = context_of(report, context)
    rows = [{**c, "code": f.code, "severity": str(f.severity), "severity_level": int(f.severity), "file": f.file,
             "position": f.position, "line": f.line, "message": f.message, "facts": dumps(f.facts)}
            for f in report.all_findings()]
    return table("findings", rows)


def files_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = context_of(report, context)
    return table("files", [{**c, **to_jsonable(f)} for f in report.files])


def checkpoints_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    """Every entry of the root offset checkpoints (HW, recovery point, log start, cleaner offset)."""
    c = context_of(report, context)
    return table("checkpoints", [{**c, **to_jsonable(e)} for e in report.checkpoints])


def transactions_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    """Every partition's transactions as its log shows them: open ones (hanging or not), then its listed markers."""
    from .impact_tables import transaction_rows

    c = context_of(report, context)
    return table("transactions", [row for p in report.partitions if p.transactions is not None
                                  for row in transaction_rows(p.transactions, c)])


def committed_offsets_table(committed: Any, report: ScanReport, context: dict | None = None) -> pa.Table:
    """The committed offsets read from the ``__consumer_offsets`` partitions of the scanned log dirs (a
    :class:`~kforensics.consumers.committed_offsets.CommittedOffsets`; None: an empty table)."""
    from .impact_tables import committed_offset_rows

    if committed is None:
        return table("committed_offsets", [])
    return table("committed_offsets", committed_offset_rows(committed, context_of(report, context)))


#: tables built from the report once the scan is done (``batches`` is streamed while it runs)
REPORT_TABLES = {
    "partitions": partitions_table,
    "segments": segments_table,
    "epochs": epochs_table,
    "findings": findings_table,
    "files": files_table,
    "checkpoints": checkpoints_table,
    "transactions": transactions_table,
}


def _constant(value: Any, n: int, typ: pa.DataType) -> pa.Array:
    """``n`` copies of one value, built in C (a one-entry dictionary, decoded)."""
    value = fit(value, typ)
    if value is None:
        return pa.nulls(n, typ)
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], typ)).cast(typ)


def batches_record_batch(t: BatchTable, constants: dict[str, Any]) -> pa.RecordBatch:
    """One chunk of batch headers as an Arrow record batch of the ``batches`` schema."""
    schema = SCHEMAS["batches"]
    columns = np.ascontiguousarray(t.data.T)  # pyarrow copies strided views slowly
    n = len(t)
    arrays = []
    for f in schema:
        if f.name in constants:
            arrays.append(_constant(constants[f.name], n, f.type))
        elif f.name == "crc_valid":
            arrays.append(pa.array(columns[COL["crc"]] == columns[COL["crc_computed"]]))
        elif f.name == "recovered":
            arrays.append(pa.array((columns[COL["flags"]] & FLAG_RECOVERED) != 0))
        else:
            arrays.append(pa.array(columns[COL[f.name]]))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


class BatchesWriter:
    """A scan batch sink writing the ``batches`` table to one Parquet file, a row group at a time."""

    def __init__(self, path: str, context: dict | None = None, filesystem: Any = None):
        self.path = path
        self.context = {"snapshot_id": None, "snapshot_time": None, "cluster": None, "broker_id": None,
                        **(context or {})}
        self.filesystem = filesystem
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[pa.RecordBatch] = []
        self._rows = 0
        self.rows = 0

    def __call__(self, pd, seg, t: BatchTable) -> None:
        if not len(t):
            return
        constants = {**self.context, "topic": pd.topic, "partition": pd.partition, "dir_name": pd.dir_name,
                     "segment": seg.log.name}
        self._pending.append(batches_record_batch(t, constants))
        self._rows += len(t)
        self.rows += len(t)
        if self._rows >= ROW_GROUP:
            self._flush()

    def set_context(self, **context: Any) -> None:
        self.context.update(context)

    def _flush(self) -> None:
        if not self._pending:
            return
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, _meta_schema(SCHEMAS["batches"]), filesystem=self.filesystem)
        self._writer.write_table(pa.Table.from_batches(self._pending), row_group_size=max(self._rows, 1))
        self._pending, self._rows = [], 0

    def close(self) -> None:
        """Write what is pending and close the file (an empty table when no batch came)."""
        self._flush()
        if self._writer is None:
            pq.write_table(_meta(SCHEMAS["batches"].empty_table()), self.path, filesystem=self.filesystem)
        else:
            self._writer.close()


def _meta_schema(schema: pa.Schema) -> pa.Schema:
    return schema.with_metadata({"kforensics.schema_version": str(SCHEMA_VERSION)})


def _meta(t: pa.Table) -> pa.Table:
    return t.replace_schema_metadata({"kforensics.schema_version": str(SCHEMA_VERSION)})


def write_table(t: pa.Table, path: str, filesystem: Any = None) -> None:
    pq.write_table(_meta(t), path, filesystem=filesystem)


class ScanParquet:
    """``scan --out DIR``: ``DIR/<table>.parquet``, batches streamed during the scan, the rest at the end.

    Each file is written under a temporary name and renamed into place, so a
    table is never half-written under its final name.
    """

    def __init__(self, out_dir: str | Path, context: dict | None = None):
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.context = context
        self.batches = BatchesWriter(str(self.out / ".batches.parquet.tmp"), context)

    def finish(self, report: ScanReport, committed: Any = None) -> dict[str, str]:
        """Write the report's tables and ``committed_offsets`` (from ``committed``, a ``CommittedOffsets``)."""
        self.batches.close()
        os.replace(self.out / ".batches.parquet.tmp", self.out / "batches.parquet")
        written = {"batches": str(self.out / "batches.parquet")}
        tables = {name: (lambda make=make: make(report, self.context)) for name, make in REPORT_TABLES.items()}
        tables["committed_offsets"] = lambda: committed_offsets_table(committed, report, self.context)
        for name, make in tables.items():
            tmp = self.out / f".{name}.parquet.tmp"
            write_table(make(), str(tmp))
            os.replace(tmp, self.out / f"{name}.parquet")
            written[name] = str(self.out / f"{name}.parquet")
        return written
