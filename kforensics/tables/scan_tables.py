"""Scan reports as Arrow tables and Parquet files; batch headers streamed to Parquet in row groups.

The same tables come out of ``kforensics scan --out`` and the Spark job.
Batch rows never accumulate: :class:`BatchesWriter` is a scan batch sink that
appends each chunk of headers to an open Parquet file, so memory does not
grow with the number of batches.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..log.batch_table import BATCH_COLUMNS, COL, FLAG_RECOVERED, NCOLS, BatchTable
from ..log.partition import PartitionLog
from ..log.segment import LogSegment
from ..scan.model import ScanReport
from ..serialize import dumps, to_jsonable
from .arrow_columns import bools, column, ints
from .schemas import (
    _PART,
    BATCH_FIELDS,
    CONTEXT,
    SCHEMA_VERSION,
    SCHEMAS,
    fit,
    rows_of_columns,
    table,
    table_of_columns,
)

if TYPE_CHECKING:
    from ..consumers.committed_offsets import CommittedOffsets

#: rows gathered before a Parquet row group is written (the writer holds at most about two row groups)
ROW_GROUP = 1 << 15

#: what the writer thread is handed: a row group's chunks (rows, constants) and its row count; None ends it
_RowGroup = tuple[list[tuple[np.ndarray, tuple[Any, ...]]], int]


def context_of(report: ScanReport, context: Mapping[str, Any] | None) -> dict[str, Any]:
    c = {"snapshot_id": None, "snapshot_time": None, "cluster": report.broker.cluster_id,
         "broker_id": report.broker.node_id}
    c.update(context or {})
    return c


#: one encoder for every row's JSON text (``dumps``' settings: one line, not ASCII-escaped)
_JSON = json.JSONEncoder(ensure_ascii=False, check_circular=False)  # a row is a tree: no cycle to look for


_PLAIN = frozenset((str, int, float, bool, type(None)))


_PUBLIC: dict[type, tuple[str, ...] | None] = {}


def _public_fields(t: type) -> tuple[str, ...] | None:
    """The fields :func:`~kforensics.serialize.to_jsonable` writes of a dataclass type (None: it has its own
    ``__json__``, or is no dataclass); looked up once per type."""
    import dataclasses

    if t not in _PUBLIC:
        _PUBLIC[t] = (None if not dataclasses.is_dataclass(t) or getattr(t, "__json__", None) is not None
                      else tuple(f.name for f in dataclasses.fields(t) if not f.name.startswith("_")))
    return _PUBLIC[t]


def jsonable_row(obj: Any) -> dict[str, Any]:
    """``to_jsonable(obj)`` of a flat dataclass (a segment's facts, a file's record, a recovery plan): the same
    dict, its plain values and lists of plain values taken as they are rather than converted one by one (a fleet has a
    segment and a file or two per partition dir)."""
    names = _public_fields(type(obj))
    if names is None:
        out: dict[str, Any] = to_jsonable(obj)
        return out
    row = {}
    for n in names:
        v = getattr(obj, n)
        t = type(v)
        if t is str or t is int or v is None or t is bool or t is float:
            row[n] = v
        elif t is list and all(type(x) in _PLAIN for x in v):
            row[n] = v
        else:
            row[n] = to_jsonable(v)
    return row


def partitions_columns(report: ScanReport, context: Mapping[str, Any] | None = None) -> dict[str, list[Any]]:
    """The ``partitions`` table's columns, a partition dir a value (the one definition of its rows: see
    :func:`partitions_rows`); a fleet's table is built from them without a dict per dir."""
    ps = report.partitions
    n = len(ps)
    recs = [p.recovery for p in ps]
    written: dict[str, str] = {}  # a checkpoint's JSON by its repr: a fleet's dirs repeat a few
    return {**{k: [v] * n for k, v in context_of(report, context).items()},
            "log_dir": [p.log_dir for p in ps], "dir_name": [p.dir_name for p in ps],
            "topic": [p.topic for p in ps], "partition": [p.partition for p in ps], "suffix": [p.suffix for p in ps],
            "topic_id": [p.topic_id for p in ps], "log_start_offset": [p.log_start_offset for p in ps],
            "log_end_offset": [p.log_end_offset for p in ps], "high_watermark": [p.high_watermark for p in ps],
            "recovery_point": [p.recovery_point for p in ps], "cleaner_offset": [p.cleaner_offset for p in ps],
            "uncommitted": [p.uncommitted for p in ps], "segment_count": [len(p.segments) for p in ps],
            "batch_count": [p.batch_count for p in ps], "record_count": [p.record_count for p in ps],
            "bytes": [p.bytes for p in ps], "epochs_seen": [p.epochs_seen for p in ps],
            "producer_ids": [p.producer_ids for p in ps],
            "open_transactions": [len(p.open_transactions) for p in ps],
            "last_stable_offset": [p.last_stable_offset for p in ps],
            "epoch_cache_written": [_written_json(p.epoch_cache_written, written) for p in ps],
            "recovers": [r.recovers for r in recs], "recovery_log_end_offset": [r.log_end_offset for r in recs],
            "recovery_lost_first_offset": [r.lost_first_offset for r in recs],
            "recovery_lost_last_offset": [r.lost_last_offset for r in recs],
            "recovery_lost_records": [r.lost_records for r in recs],
            "recovery_lost_committed_records": [r.lost_committed_records for r in recs],
            "recovery": [_JSON.encode(jsonable_row(r)) for r in recs], "complete": [p.complete for p in ps],
            "tiered": [None if p.tiered is None else json.dumps(p.tiered.as_dict()) for p in ps]}


def partitions_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return rows_of_columns(partitions_columns(report, context), len(report.partitions))


def _written_json(entries: list[tuple[int, int]] | None, seen: dict[str, str]) -> str | None:
    """``json.dumps`` of a partition's leader-epoch checkpoint entries, each distinct one encoded once (its repr
    tells ints from bools and tuples from lists, as the JSON does not need to)."""
    if entries is None:
        return None
    key = repr(entries)
    out = seen.get(key)
    if out is None:
        out = seen[key] = json.dumps(entries)
    return out


def partitions_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table_of_columns("partitions", partitions_columns(report, context), len(report.partitions))


def segments_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return list(iter_segments_rows(report, context))


def iter_segments_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    c = context_of(report, context)
    return ({**c, "topic": p.topic, "partition": p.partition, "dir_name": p.dir_name, **jsonable_row(s)}
            for p in report.partitions for s in p.segments)


def segments_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table("segments", segments_rows(report, context))


def epochs_columns(report: ScanReport, context: Mapping[str, Any] | None = None) -> tuple[dict[str, list[Any]], int]:
    """The ``epochs`` table's columns (every partition dir's written then rebuilt leader-epoch entries) and its
    row count: the one definition of its rows (:func:`epochs_rows`)."""
    topic: list[str] = []
    partition: list[int] = []
    dir_name: list[str] = []
    source: list[str] = []
    epoch: list[int] = []
    start: list[int] = []
    for p in report.partitions:
        for kind, entries in (("checkpoint", p.epoch_cache_written or []), ("rebuilt", p.epoch_cache_rebuilt)):
            if not entries:
                continue
            k = len(entries)
            topic += [p.topic] * k
            partition += [p.partition] * k
            dir_name += [p.dir_name] * k
            source += [kind] * k
            epoch += [e for e, _ in entries]
            start += [o for _, o in entries]
    n = len(epoch)
    return {**{k: [v] * n for k, v in context_of(report, context).items()}, "topic": topic, "partition": partition,
            "dir_name": dir_name, "source": source, "epoch": epoch, "start_offset": start}, n


def epochs_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return rows_of_columns(*epochs_columns(report, context))


def epochs_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table_of_columns("epochs", *epochs_columns(report, context))


def findings_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return list(iter_findings_rows(report, context))


def iter_findings_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    c = context_of(report, context)
    return ({**c, "code": f.code, "severity": str(f.severity), "severity_level": int(f.severity), "file": f.file,
             "position": f.position, "line": f.line, "message": f.message, "facts": dumps(f.facts)}
            for f in report.all_findings())


def findings_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table("findings", findings_rows(report, context))


def files_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return list(iter_files_rows(report, context))


def iter_files_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    c = context_of(report, context)
    return ({**c, **jsonable_row(f)} for f in report.files)


def files_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table("files", files_rows(report, context))


def checkpoints_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every entry of the root offset checkpoints (HW, recovery point, log start, cleaner offset)."""
    c = context_of(report, context)
    return [{**c, **to_jsonable(e)} for e in report.checkpoints]


def checkpoints_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table("checkpoints", checkpoints_rows(report, context))


def transactions_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every partition's transactions as its log shows them: open ones (hanging or not), then its listed markers."""
    from .impact_tables import transaction_rows

    c = context_of(report, context)
    return [row for p in report.partitions if p.transactions is not None
            for row in transaction_rows(p.transactions, c)]


def transactions_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table("transactions", transactions_rows(report, context))


def committed_offsets_table(committed: CommittedOffsets | None, report: ScanReport,
                            context: Mapping[str, Any] | None = None) -> pa.Table:
    """The committed offsets read from the ``__consumer_offsets`` partitions of the scanned log dirs (a
    :class:`~kforensics.consumers.committed_offsets.CommittedOffsets`; None: an empty table)."""
    from .impact_tables import committed_offset_rows

    if committed is None:
        return table("committed_offsets", [])
    return table("committed_offsets", committed_offset_rows(committed, context_of(report, context)))


#: the rows of the tables built from the report once the scan is done (each table's rows as dicts; ``table``
#: makes them a table)
REPORT_ROWS = {
    "partitions": partitions_rows,
    "segments": segments_rows,
    "epochs": epochs_rows,
    "findings": findings_rows,
    "files": files_rows,
    "checkpoints": checkpoints_rows,
    "transactions": transactions_rows,
}

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


#: the report tables with a row per file, segment or finding (an archive of 400 000 members: 400 000 rows), made
#: and written a row group at a time by ``scan --out``
STREAMED_ROWS: dict[str, Callable[[ScanReport, Mapping[str, Any] | None], Iterator[dict[str, Any]]]] = {
    "segments": iter_segments_rows,
    "findings": iter_findings_rows,
    "files": iter_files_rows,
}
#: report rows per Parquet row group written by :func:`write_rows`
REPORT_ROW_GROUP = 1 << 14


def write_rows(name: str, rows: Iterable[dict[str, Any]], path: str, *, group: int = REPORT_ROW_GROUP) -> None:
    """Table ``name`` of ``rows`` written to ``path`` a row group of ``group`` rows at a time (a table of fewer
    rows is the file :func:`write_table` writes: one row group)."""
    it = iter(rows)
    with pq.ParquetWriter(path, _meta_schema(SCHEMAS[name])) as w:
        first = True
        while chunk := list(itertools.islice(it, group)):
            w.write_table(table(name, chunk))
            first = False
        if first:
            w.write_table(table(name, []))


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


#: the ``batches`` columns that hold one value per partition and segment (the scan's context)
CONSTANT_COLUMNS = tuple(name for name, _ in CONTEXT + _PART) + ("segment",)
#: the columns of the batch-table fields (one int64 each)
_FIELD_COLUMNS = tuple(c for c in BATCH_FIELDS)
#: the field columns with min/max statistics per row group
_STATISTICS = ("position", "base_offset", "last_offset", "partition_leader_epoch", "base_timestamp", "max_timestamp",
               "producer_id", "crc_valid", "recovered")


def _writer_options() -> dict[str, Any]:
    """How the ``batches`` table is encoded: the context columns as dictionaries (written once per row group),
    the header fields delta-encoded (offsets, positions and timestamps grow steadily: a few bits per row);
    min/max statistics where a query prunes on them (computing them for every column costs a third more)."""
    return {"use_dictionary": list(CONSTANT_COLUMNS), "compression": "snappy",
            "column_encoding": {c: "DELTA_BINARY_PACKED" for c in _FIELD_COLUMNS},
            "write_statistics": list(CONSTANT_COLUMNS) + list(_STATISTICS)}


#: whether the Parquet writer can label a file it writes without the Arrow schema (pyarrow >= 15)
_KEY_VALUE_METADATA = hasattr(pq.ParquetWriter, "add_key_value_metadata")


def _dictionary_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the constant columns dictionary-typed, as they are handed to the Parquet writer (the file
    stores them as plain columns of their own type: a reader sees ``schema``)."""
    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), f.type)) if f.name in CONSTANT_COLUMNS else f
                      for f in schema])


def _constant_runs(values: tuple[Any, ...], counts: np.ndarray, typ: pa.DataType) -> pa.Array:
    """One constant column of a row group: each run's value (``values``, one per run of ``counts`` rows) as a
    dictionary array."""
    first = values[0]
    if first is not None and values.count(first) == len(values):
        # one value for the row group (the context, a fleet's segment name): no lookup per run
        return pa.DictionaryArray.from_arrays(ints(np.zeros(int(counts.sum()), np.int32), pa.int32()),
                                              column([first], typ))
    seen: dict[Any, int] = {}
    idx = np.empty(len(values), np.int32)
    valid = np.empty(len(values), bool)
    for r, v in enumerate(values):
        valid[r] = v is not None
        idx[r] = seen.setdefault(v, len(seen)) if v is not None else 0
    indices = ints(np.repeat(idx, counts), pa.int32(), None if valid.all() else np.repeat(valid, counts))
    return pa.DictionaryArray.from_arrays(indices, column(list(seen), typ))


@functools.cache
def _constant_types() -> dict[str, pa.DataType]:
    """The type of each constant column of ``batches`` (looked up once: a schema's field lookup is slow)."""
    schema = SCHEMAS["batches"]
    return {name: schema.field(name).type for name in CONSTANT_COLUMNS}


class BatchesWriter:
    """A scan batch sink writing the ``batches`` table to one Parquet file, a row group at a time.

    Rows never accumulate: chunks are gathered up to ``row_group`` rows, then encoded and written by a
    background thread (Arrow and Parquet release the GIL, so the encoding overlaps the walk) while the next
    row group is gathered; a finished row group waits until the previous one is written.  The rows held at
    any time stay below two row groups and a chunk (:attr:`peak_held_rows` records the most ever held).
    Not thread-safe: call it (and :meth:`close`) from one thread, the scan's; the writer thread is its own.
    """

    def __init__(self, path: str, context: Mapping[str, Any] | None = None, filesystem: Any = None, *,
                 row_group: int | None = None) -> None:
        self.path = path
        self.context = {"snapshot_id": None, "snapshot_time": None, "cluster": None, "broker_id": None,
                        **(context or {})}
        self.filesystem = filesystem
        self.row_group = max(1, row_group or ROW_GROUP)
        self._pending: list[tuple[np.ndarray, tuple[Any, ...]]] = []
        self._rows = 0  # rows in _pending
        self.rows = 0  # rows received
        self.row_groups = 0  # row groups written
        self.peak_held_rows = 0
        self._queued = 0  # rows handed to the writer thread and not yet written
        self._lock = threading.Lock()
        self._free = threading.Semaphore(1)  # one row group at a time in the writer's hands
        self._queue: queue.Queue[_RowGroup | None] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._writer: pq.ParquetWriter | None = None
        self._closed = False

    def __call__(self, pd: PartitionLog, seg: LogSegment, t: BatchTable) -> None:
        if not len(t):
            return
        self._raise_error()
        types = self._constant_types()
        c = self.context
        values = {**c, "topic": pd.topic, "partition": pd.partition, "dir_name": pd.dir_name,
                  "segment": seg.log.name}
        consts = tuple(fit(values.get(name), types[name]) for name in CONSTANT_COLUMNS)
        self._pending.append((t.data, consts))
        self._rows += len(t)
        self.rows += len(t)
        with self._lock:
            self.peak_held_rows = max(self.peak_held_rows, self._rows + self._queued)
        if self._rows >= self.row_group:
            self._flush()

    def set_context(self, **context: Any) -> None:
        self.context.update(context)

    @property
    def held_rows(self) -> int:
        """Rows received and not yet handed to the writer thread."""
        return self._rows

    def flush(self) -> None:
        """Write what is held as a row group now (a caller holding many writers keeps their sum bounded)."""
        self._raise_error()
        self._flush()

    @staticmethod
    def _constant_types() -> dict[str, pa.DataType]:
        return _constant_types()

    # ---------------------------------------------------------------- the writer thread
    def _flush(self) -> None:
        if not self._pending:
            return
        if self._thread is None:
            self._queue = queue.Queue()
            self._thread = threading.Thread(target=self._run, name="kforensics-batches-writer", daemon=True)
            self._thread.start()
        pending, n = self._pending, self._rows
        self._pending, self._rows = [], 0
        with self._lock:
            self._queued += n
        self._free.acquire()  # waits while the previous row group is being written: memory stays bounded
        assert self._queue is not None  # made with the thread
        self._queue.put((pending, n))

    def _run(self) -> None:
        assert self._queue is not None  # made before the thread starts
        while True:
            item = self._queue.get()
            if item is None:
                return
            pending, n = item
            try:
                if self._error is None:
                    self._write(pending, n)
            except BaseException as e:  # noqa: BLE001 - reported to the caller by the next call or close()
                self._error = e
            finally:
                del pending, item
                with self._lock:
                    self._queued -= n
                self._free.release()

    def _write(self, pending: list[tuple[np.ndarray, tuple[Any, ...]]], n: int) -> None:
        schema = SCHEMAS["batches"]
        # the context columns go in as dictionaries, unless this pyarrow cannot then label the file's schema
        dictionaries = _KEY_VALUE_METADATA
        written = _dictionary_schema(schema) if dictionaries else _meta_schema(schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, written, filesystem=self.filesystem,
                                            store_schema=not dictionaries, **_writer_options())
            if dictionaries:
                self._writer.add_key_value_metadata({"kforensics.schema_version": str(SCHEMA_VERSION)})
        runs: list[tuple[tuple[Any, ...], int]] = []
        for data, consts in pending:
            if runs and runs[-1][0] == consts:
                runs[-1] = (consts, runs[-1][1] + len(data))
            else:
                runs.append((consts, len(data)))
        # column-major in one pass per chunk (a strided gather per column costs more than twice as much)
        cols = np.empty((NCOLS, n), np.int64)
        at = 0
        for data, _ in pending:
            cols[:, at : at + len(data)] = data.T
            at += len(data)
        pending.clear()  # the chunks are copied: let them go before the row group is encoded
        columns = {name: cols[COL[name]] for name in BATCH_COLUMNS}
        constants = list(zip(*(c for c, _ in runs)))  # per constant column, its value in each run
        counts = np.fromiter((k for _, k in runs), np.int64, len(runs))
        arrays = []
        for f in schema:
            if f.name in CONSTANT_COLUMNS:
                a = _constant_runs(constants[CONSTANT_COLUMNS.index(f.name)], counts, f.type)
                arrays.append(a if dictionaries else a.dictionary_decode())
            elif f.name == "crc_valid":
                arrays.append(bools(columns["crc"] == columns["crc_computed"]))
            elif f.name == "recovered":
                arrays.append(bools((columns["flags"] & FLAG_RECOVERED) != 0))
            else:
                arrays.append(ints(columns[f.name], f.type))
        self._writer.write_table(pa.Table.from_arrays(arrays, schema=written), row_group_size=n)
        self.row_groups += 1

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error  # kept: close() reports it too

    def close(self) -> None:
        """Write what is pending and close the file (an empty table when no batch came); a failure to write
        is raised here (and by every later call)."""
        if not self._closed:
            self._closed = True
            try:
                if self._error is None and self._thread is None and self._pending:
                    # never a full row group (a small partition): written here, no thread started for it
                    pending, n = self._pending, self._rows
                    self._pending, self._rows = [], 0
                    self._write(pending, n)
                elif self._error is None:
                    self._flush()
            finally:
                if self._thread is not None:
                    assert self._queue is not None  # made with the thread
                    self._queue.put(None)
                    self._thread.join()
                    self._thread = None
                try:
                    if self._writer is not None:
                        self._writer.close()
                    elif self._error is None:
                        pq.write_table(_meta(SCHEMAS["batches"].empty_table()), self.path,
                                       filesystem=self.filesystem)
                except Exception as e:  # noqa: BLE001 - kept and raised below
                    self._error = self._error or e
        self._raise_error()


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

    def __init__(self, out_dir: str | Path, context: Mapping[str, Any] | None = None) -> None:
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.context = context
        self.batches = BatchesWriter(str(self.out / ".batches.parquet.tmp"), context)

    def finish(self, report: ScanReport, committed: CommittedOffsets | None = None) -> dict[str, str]:
        """Write the report's tables and ``committed_offsets`` (from ``committed``, a ``CommittedOffsets``)."""
        self.batches.close()
        os.replace(self.out / ".batches.parquet.tmp", self.out / "batches.parquet")
        written = {"batches": str(self.out / "batches.parquet")}
        def later(make: Callable[[ScanReport, Mapping[str, Any] | None], pa.Table]) -> Callable[[], pa.Table]:
            return lambda: make(report, self.context)

        tables = {name: later(make) for name, make in REPORT_TABLES.items()}
        for name, make in tables.items():
            tmp = self.out / f".{name}.parquet.tmp"
            streamed = STREAMED_ROWS.get(name)
            if streamed is not None:
                write_rows(name, streamed(report, self.context), str(tmp))
            else:
                write_table(make(), str(tmp))
            os.replace(tmp, self.out / f"{name}.parquet")
            written[name] = str(self.out / f"{name}.parquet")
        # committed offsets a slice at a time: a million groups must not become one table in memory
        from .committed_offsets_file import write_committed_offsets

        tmp = self.out / ".committed_offsets.parquet.tmp"
        write_committed_offsets(committed, str(tmp), context_of(report, self.context))
        os.replace(tmp, self.out / "committed_offsets.parquet")
        written["committed_offsets"] = str(self.out / "committed_offsets.parquet")
        return written
