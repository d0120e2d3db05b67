"""Scan reports as Parquet files; batch headers streamed to Parquet in row groups.

The same tables come out of ``kforensics scan --out`` and the Spark job (the
report's tables are defined in :mod:`.report_tables`).
Batch rows never accumulate: :class:`BatchesWriter` is a scan batch sink that
appends each chunk of headers to an open Parquet file, so memory does not
grow with the number of batches.
"""

from __future__ import annotations

import functools
import os
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..forked import beside, may_fork
from ..log.batch_table import BATCH_COLUMNS, COL, FLAG_RECOVERED, NCOLS, BatchTable
from ..log.file_hash import stop_hashing
from ..log.partition import PartitionLog
from ..log.segment import LogSegment
from ..scan.model import ScanReport
from .arrow_columns import bools, column, ints
from .report_tables import REPORT_TABLES, STREAMED_COLUMNS, context_of
from .schemas import _PART, BATCH_FIELDS, CONTEXT, SCHEMA_VERSION, SCHEMAS, fit, table, table_of_columns

if TYPE_CHECKING:
    from ..consumers.committed_offsets import CommittedOffsets

#: rows gathered before a Parquet row group is written (the writer holds at most about two row groups)
ROW_GROUP = 1 << 15

#: what the writer thread is handed: a row group's chunks (rows, constants) and its row count; None ends it
_RowGroup = tuple[list[tuple[np.ndarray, tuple[Any, ...]]], int]


#: report rows per Parquet row group written by :func:`write_columns`
REPORT_ROW_GROUP = 1 << 14


def write_columns(name: str, chunks: Iterable[tuple[dict[str, list[Any]], int]], path: str) -> None:
    """Table ``name`` written to ``path`` a row group per chunk of its columns (no chunk: the file
    :func:`write_table` writes of no rows)."""
    with pq.ParquetWriter(path, _meta_schema(SCHEMAS[name])) as w:
        first = True
        for columns, n in chunks:
            w.write_table(table_of_columns(name, columns, n))
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
        return {**self.close_batches(), **self.write_tables(report, committed)}

    def close_batches(self) -> dict[str, str]:
        """``batches.parquet`` complete under its name (its writer's thread ended)."""
        self.batches.close()
        os.replace(self.out / ".batches.parquet.tmp", self.out / "batches.parquet")
        return {"batches": str(self.out / "batches.parquet")}

    def write_tables(self, report: ScanReport, committed: CommittedOffsets | None = None) -> dict[str, str]:
        """The report's tables and ``committed_offsets``, once the batches are closed (:meth:`close_batches`)."""
        written: dict[str, str] = {}
        def later(make: Callable[[ScanReport, Mapping[str, Any] | None], pa.Table]) -> Callable[[], pa.Table]:
            return lambda: make(report, self.context)

        tables = {name: later(make) for name, make in REPORT_TABLES.items()}
        for name, make in tables.items():
            tmp = self.out / f".{name}.parquet.tmp"
            streamed = STREAMED_COLUMNS.get(name)
            if streamed is not None:
                write_columns(name, streamed(report, self.context, REPORT_ROW_GROUP), str(tmp))
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


#: a scan of this many partition dirs or more has its tables written by a forked helper while its document is
#: written (:func:`tables_beside`): three brokers of 10 000 small partition dirs, 0.6 s of each broker's 2.7 s
HELPED_FROM = 1_000


def tables_beside(parquet: ScanParquet, report: ScanReport, committed: CommittedOffsets | None = None,
                  jobs: int | None = None) -> AbstractContextManager[None]:
    """The report's tables written while the ``with`` body runs (the command's document, on another core), by a
    forked helper for a fleet (:data:`HELPED_FROM`) where ``jobs`` allows one (:func:`kforensics.forked.may_fork`);
    else before the body.  The batches are closed first, here; the same files either way, and a failure to write
    them is raised as :meth:`ScanParquet.finish` raises it, when the body ends."""
    parquet.close_batches()
    fork = len(report.partitions) >= HELPED_FROM
    if fork:
        stop_hashing()  # its idle thread would forbid the fork
        fork = may_fork(jobs)
    return beside(partial(parquet.write_tables, report, committed), fork)
