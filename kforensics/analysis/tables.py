"""Scan reports as Arrow tables (partitions, segments, batches, epochs, findings, files) and Parquet files.

The same tables come out of ``kforensics scan --out`` and the Spark pipeline,
so pandas and Spark read either directly.  Column sets are versioned by
:data:`kforensics.analysis.scan.SCHEMA_VERSION`.
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

BATCH_FIELDS = [c for c in K.BATCH_COLUMNS if c not in ("value_position", "value_length", "key_length")]


def _ident(report: ScanReport) -> dict:
    return {"broker_id": report.broker.node_id, "cluster_id": report.broker.cluster_id}


def partitions_table(report: ScanReport) -> pa.Table:
    rows = []
    for p in report.partitions:
        d = p.to_dict()
        rows.append({
            **_ident(report),
            **{k: d[k] for k in ("log_dir", "dir_name", "topic", "partition", "suffix", "topic_id", "log_start_offset",
                                 "log_end_offset", "high_watermark", "recovery_point", "cleaner_offset", "uncommitted",
                                 "segment_count", "batch_count", "record_count", "bytes")},
            "epochs_seen": d["epochs_seen"],
            "producer_ids": d["producer_ids"],
            "open_transactions": len(d["open_transactions"]),
            "recovery": json.dumps(d["recovery"]),
        })
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("broker_id", pa.int32()), ("cluster_id", pa.string()), ("log_dir", pa.string()), ("dir_name", pa.string()),
        ("topic", pa.string()), ("partition", pa.int32()), ("suffix", pa.string()), ("topic_id", pa.string()),
        ("log_start_offset", pa.int64()), ("log_end_offset", pa.int64()), ("high_watermark", pa.int64()),
        ("recovery_point", pa.int64()), ("cleaner_offset", pa.int64()), ("uncommitted", pa.int64()),
        ("segment_count", pa.int32()), ("batch_count", pa.int64()), ("record_count", pa.int64()), ("bytes", pa.int64()),
        ("epochs_seen", pa.list_(pa.int32())), ("producer_ids", pa.list_(pa.int64())),
        ("open_transactions", pa.int32()), ("recovery", pa.string()),
    ]))


def segments_table(report: ScanReport) -> pa.Table:
    rows = []
    for p in report.partitions:
        for s in p.segments:
            rows.append({**_ident(report), "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name,
                         **{k: v for k, v in s.__dict__.items() if k not in ("magics", "codecs")},
                         "magics": s.magics, "codecs": s.codecs})
    return pa.Table.from_pylist(rows) if rows else pa.table({"topic": pa.array([], pa.string())})


def batches_table(report: ScanReport) -> pa.Table:
    parts = []
    for p in report.partitions:
        for seg, data in p.batch_tables:
            n = data.shape[0]
            cols = {name: data[:, K.COL[name]] for name in BATCH_FIELDS}
            cols["crc_valid"] = data[:, K.COL["crc"]] == data[:, K.COL["crc_computed"]]
            cols["recovered"] = (data[:, K.COL["flags"]] & K.FLAG_RECOVERED) != 0
            t = pa.table({
                "broker_id": pa.array(np.full(n, -1 if report.broker.node_id is None else report.broker.node_id), pa.int32()),
                "topic": pa.array([p.topic] * n, pa.string()),
                "partition": pa.array(np.full(n, p.partition), pa.int32()),
                "segment": pa.array([os.path.basename(seg)] * n, pa.string()),
                **{k: pa.array(v) for k, v in cols.items()},
            })
            parts.append(t)
    return pa.concat_tables(parts) if parts else pa.table({"topic": pa.array([], pa.string())})


def epochs_table(report: ScanReport) -> pa.Table:
    rows = []
    for p in report.partitions:
        for source, entries in (("checkpoint", p.epoch_cache_written or []), ("rebuilt", p.epoch_cache_rebuilt)):
            for epoch, start in entries:
                rows.append({**_ident(report), "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name,
                             "source": source, "epoch": epoch, "start_offset": start})
    return pa.Table.from_pylist(rows) if rows else pa.table({"topic": pa.array([], pa.string())})


def findings_table(report: ScanReport) -> pa.Table:
    rows = []
    for f in report.all_findings():
        rows.append({**_ident(report), "code": f.code, "severity": str(f.severity), "severity_level": int(f.severity),
                     "file": f.file, "position": f.position, "line": f.line, "message": f.message,
                     "facts": json.dumps(f.facts, default=str)})
    return pa.Table.from_pylist(rows, schema=pa.schema([
        ("broker_id", pa.int32()), ("cluster_id", pa.string()), ("code", pa.string()), ("severity", pa.string()),
        ("severity_level", pa.int8()), ("file", pa.string()), ("position", pa.int64()), ("line", pa.int64()),
        ("message", pa.string()), ("facts", pa.string()),
    ]))


def files_table(report: ScanReport) -> pa.Table:
    return pa.Table.from_pylist([f.__dict__ for f in report.files], schema=pa.schema([
        ("path", pa.string()), ("kind", pa.string()), ("size", pa.int64()), ("sha256", pa.string())]))


TABLES = {
    "partitions": partitions_table,
    "segments": segments_table,
    "batches": batches_table,
    "epochs": epochs_table,
    "findings": findings_table,
    "files": files_table,
}


def write_parquet(report: ScanReport, out_dir: str | Path) -> dict[str, str]:
    """Write every table as ``<out_dir>/<name>.parquet`` (replacing earlier ones) and return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, make in TABLES.items():
        table = make(report).replace_schema_metadata({"kforensics.schema_version": str(SCHEMA_VERSION)})
        tmp = out / f".{name}.parquet.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, out / f"{name}.parquet")  # never a half-written table under the final name
        written[name] = str(out / f"{name}.parquet")
    return written
