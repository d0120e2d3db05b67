"""Scan reports as Arrow tables (partitions, segments, batches, epochs, findings, files) and Parquet files.

The same tables come out of ``kforensics scan --out`` and the Spark pipeline,
so pandas and Spark read either directly.  Every table has a fixed schema
(versioned by :data:`kforensics.analysis.scan.SCHEMA_VERSION`) and starts with
the snapshot context columns ``snapshot_id``, ``snapshot_time``, ``cluster``
(null for a plain scan) and ``broker_id``.  Column reference: docs/tables.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..log import kernels as K
from .scan import SCHEMA_VERSION, ScanReport

CONTEXT = [("snapshot_id", pa.string()), ("snapshot_time", pa.string()), ("cluster", pa.string()),
           ("broker_id", pa.int32())]
BATCH_FIELDS = [c for c in K.BATCH_COLUMNS if c not in ("value_position", "value_length", "key_length")]

SCHEMAS = {
    "partitions": pa.schema(CONTEXT + [
        ("log_dir", pa.string()), ("dir_name", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
        ("suffix", pa.string()), ("topic_id", pa.string()), ("log_start_offset", pa.int64()),
        ("log_end_offset", pa.int64()), ("high_watermark", pa.int64()), ("recovery_point", pa.int64()),
        ("cleaner_offset", pa.int64()), ("uncommitted", pa.int64()), ("segment_count", pa.int32()),
        ("batch_count", pa.int64()), ("record_count", pa.int64()), ("bytes", pa.int64()),
        ("epochs_seen", pa.list_(pa.int32())), ("producer_ids", pa.list_(pa.int64())),
        ("open_transactions", pa.int32()), ("epoch_cache_written", pa.string()), ("recovery", pa.string()),
    ]),
    "segments": pa.schema(CONTEXT + [
        ("topic", pa.string()), ("partition", pa.int32()), ("dir_name", pa.string()), ("base_offset", pa.int64()),
        ("path", pa.string()), ("size", pa.int64()), ("batches", pa.int64()), ("records", pa.int64()),
        ("first_offset", pa.int64()), ("last_offset", pa.int64()), ("kafka_valid_bytes", pa.int64()),
        ("first_invalid_position", pa.int64()), ("has_index", pa.bool_()), ("has_time_index", pa.bool_()),
        ("has_txn_index", pa.bool_()), ("magics", pa.list_(pa.int32())), ("codecs", pa.list_(pa.int32())),
    ]),
    "batches": pa.schema(CONTEXT + [("topic", pa.string()), ("partition", pa.int32()), ("dir_name", pa.string()),
                                    ("segment", pa.string())]
                         + [(c, pa.int64()) for c in BATCH_FIELDS]
                         + [("crc_valid", pa.bool_()), ("recovered", pa.bool_())]),
    "epochs": pa.schema(CONTEXT + [
        ("topic", pa.string()), ("partition", pa.int32()), ("dir_name", pa.string()), ("source", pa.string()),
        ("epoch", pa.int32()), ("start_offset", pa.int64()),
    ]),
    "findings": pa.schema(CONTEXT + [
        ("code", pa.string()), ("severity", pa.string()), ("severity_level", pa.int8()), ("file", pa.string()),
        ("position", pa.int64()), ("line", pa.int64()), ("message", pa.string()), ("facts", pa.string()),
    ]),
    "files": pa.schema(CONTEXT + [("path", pa.string()), ("kind", pa.string()), ("size", pa.int64()),
                                  ("sha256", pa.string())]),
    "checkpoints": pa.schema(CONTEXT + [("kind", pa.string()), ("file", pa.string()), ("topic", pa.string()),
                                        ("partition", pa.int32()), ("offset", pa.int64())]),
}


def _ctx(report: ScanReport, context: dict | None) -> dict:
    c = {"snapshot_id": None, "snapshot_time": None, "cluster": report.broker.cluster_id,
         "broker_id": report.broker.node_id}
    c.update(context or {})
    return c


def _table(name: str, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMAS[name])


def partitions_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = _ctx(report, context)
    rows = []
    for p in report.partitions:
        d = p.to_dict()
        rows.append({**c, **{k: d[k] for k in SCHEMAS["partitions"].names if k in d},
                     "segment_count": len(p.segments),
                     "open_transactions": len(d["open_transactions"]),
                     "epoch_cache_written": None if p.epoch_cache_written is None else json.dumps(p.epoch_cache_written),
                     "recovery": json.dumps(d["recovery"])})
    return _table("partitions", rows)


def segments_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = _ctx(report, context)
    rows = [{**c, "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name, **s.__dict__}
            for p in report.partitions for s in p.segments]
    return _table("segments", rows)


def _constant(value, n: int, typ: pa.DataType) -> pa.Array:
    """``n`` copies of one value, built in C (a one-entry dictionary, decoded)."""
    if value is None:
        return pa.nulls(n, typ)
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([value], typ)).cast(typ)


def batches_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = _ctx(report, context)
    schema = SCHEMAS["batches"]
    parts = []
    for p in report.partitions:
        by_segment: dict[str, list] = {}
        for seg, data in p.batch_tables:
            by_segment.setdefault(str(seg), []).append(data)
        for seg, chunks in by_segment.items():
            data = np.concatenate(chunks)
            n = data.shape[0]
            columns = np.ascontiguousarray(data.T)  # pyarrow copies strided views slowly
            const = {**c, "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name,
                     "segment": os.path.basename(seg)}
            cols = {k: _constant(v, n, schema.field(k).type) for k, v in const.items()}
            for name in BATCH_FIELDS:
                cols[name] = pa.array(columns[K.COL[name]])
            cols["crc_valid"] = pa.array(columns[K.COL["crc"]] == columns[K.COL["crc_computed"]])
            cols["recovered"] = pa.array((columns[K.COL["flags"]] & K.FLAG_RECOVERED) != 0)
            parts.append(pa.table(cols, schema=schema))
    return pa.concat_tables(parts) if parts else schema.empty_table()


def epochs_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = _ctx(report, context)
    rows = []
    for p in report.partitions:
        for source, entries in (("checkpoint", p.epoch_cache_written or []), ("rebuilt", p.epoch_cache_rebuilt)):
            for epoch, start in entries:
                rows.append({**c, "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name,
                             "source": source, "epoch": epoch, "start_offset": start})
    return _table("epochs", rows)


def findings_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = _ctx(report, context)
    rows = [{**c, "code": f.code, "severity": str(f.severity), "severity_level": int(f.severity), "file": f.file,
             "position": f.position, "line": f.line, "message": f.message, "facts": json.dumps(f.facts, default=str)}
            for f in report.all_findings()]
    return _table("findings", rows)


def files_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    c = _ctx(report, context)
    return _table("files", [{**c, **f.__dict__} for f in report.files])


def checkpoints_table(report: ScanReport, context: dict | None = None) -> pa.Table:
    """Every entry of the root offset checkpoints (HW, recovery point, log start, cleaner offset)."""
    c = _ctx(report, context)
    return _table("checkpoints", [{**c, **e} for e in report.broker.checkpoints])


TABLES = {
    "partitions": partitions_table,
    "segments": segments_table,
    "batches": batches_table,
    "epochs": epochs_table,
    "findings": findings_table,
    "files": files_table,
    "checkpoints": checkpoints_table,
}


def _meta(table: pa.Table) -> pa.Table:
    return table.replace_schema_metadata({"kforensics.schema_version": str(SCHEMA_VERSION)})


def write_parquet(report: ScanReport, out_dir: str | Path) -> dict[str, str]:
    """Write every table as ``<out_dir>/<name>.parquet`` (replacing earlier ones) and return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, make in TABLES.items():
        tmp = out / f".{name}.parquet.tmp"
        pq.write_table(_meta(make(report)), tmp)
        os.replace(tmp, out / f"{name}.parquet")  # never a half-written table under the final name
        written[name] = str(out / f"{name}.parquet")
    return written


def write_parts(report: ScanReport, out_dir: str, part: str, context: dict, filesystem=None) -> None:
    """Write every table as ``<out_dir>/<name>/<part>.parquet`` (the Spark pipeline's per-task output)."""
    for name, make in TABLES.items():
        table = make(report, context)
        path = f"{out_dir.rstrip('/')}/{name}/{part}.parquet"
        if filesystem is None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        else:
            filesystem.create_dir(os.path.dirname(path), recursive=True)
        pq.write_table(_meta(table), path, filesystem=filesystem)
