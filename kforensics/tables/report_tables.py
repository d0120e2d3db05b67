"""The scan report's tables (all but ``batches``): a row per partition dir, segment, leader-epoch entry, finding,
file read, root checkpoint entry and transaction, the same for ``scan --out`` and the Spark job.

Each table but ``checkpoints`` and ``transactions`` (a few rows a broker) is
defined once, as the columns its table is built from: a fleet's ten thousand
dirs make no dict each.  The rows the Spark scan tasks gather per task are made
from those columns, never written a second time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..scan.model import ScanReport
from ..serialize import dumps, to_jsonable
from .schemas import rows_of_columns, table, table_of_columns

if TYPE_CHECKING:
    from ..consumers.committed_offsets import CommittedOffsets

#: a chunk size that holds any table whole
ALL = 1 << 62


def context_of(report: ScanReport, context: Mapping[str, Any] | None) -> dict[str, Any]:
    c = {"snapshot_id": None, "snapshot_time": None, "cluster": report.broker.cluster_id,
         "broker_id": report.broker.node_id}
    c.update(context or {})
    return c


#: one encoder for every row's JSON text (``dumps``' settings: one line, not ASCII-escaped)
_JSON = json.JSONEncoder(ensure_ascii=False, check_circular=False)  # a row is a tree: no cycle to look for


_PLAIN = frozenset((str, int, float, bool, type(None)))


def _plain_list(v: Any) -> bool:
    """A list of plain values: JSON as it is.  With :data:`_PLAIN`, what :func:`jsonable_row` and
    :func:`jsonable_columns` take without :func:`~kforensics.serialize.to_jsonable`."""
    return type(v) is list and all(type(x) in _PLAIN for x in v)


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
        row[n] = v if type(v) in _PLAIN or _plain_list(v) else to_jsonable(v)
    return row


def jsonable_columns(objs: list[Any]) -> dict[str, list[Any]]:
    """:func:`jsonable_row` of each object, as columns (the rows' keys in order, a value per object): a column at
    a time when the objects are all of one flat dataclass type, else row by row."""
    names = _public_fields(type(objs[0])) if objs else ()
    if names is None or any(type(o) is not type(objs[0]) for o in objs):
        rows = [jsonable_row(o) for o in objs]
        keys = list(dict.fromkeys(k for r in rows for k in r))
        return {k: [r.get(k) for r in rows] for k in keys}
    out = {}
    for n in names:
        values = [getattr(o, n) for o in objs]
        out[n] = [v if type(v) in _PLAIN or _plain_list(v) else to_jsonable(v) for v in values]
    return out


def _constants(context: dict[str, Any], n: int) -> dict[str, list[Any]]:
    """The context's columns: each value ``n`` times."""
    return {k: [v] * n for k, v in context.items()}


def _rows(chunks: Iterator[tuple[dict[str, list[Any]], int]]) -> list[dict[str, Any]]:
    return [row for columns, n in chunks for row in rows_of_columns(columns, n)]


def _table(name: str, chunks: Iterator[tuple[dict[str, list[Any]], int]]) -> pa.Table:
    parts = [table_of_columns(name, columns, n) for columns, n in chunks]
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0] if parts else table(name, [])


def partitions_columns(report: ScanReport, context: Mapping[str, Any] | None = None) -> dict[str, list[Any]]:
    """The ``partitions`` table's columns, a partition dir a value (the one definition of its rows: see
    :func:`partitions_rows`); a fleet's table is built from them without a dict per dir."""
    ps = report.partitions
    n = len(ps)
    recs = [p.recovery for p in ps]
    written: dict[str, str] = {}  # a checkpoint's JSON by its repr: a fleet's dirs repeat a few
    return {**_constants(context_of(report, context), n),
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
    return _rows(iter_segments_columns(report, context))


def iter_segments_columns(report: ScanReport, context: Mapping[str, Any] | None = None, group: int = ALL
                          ) -> Iterator[tuple[dict[str, list[Any]], int]]:
    """The ``segments`` table's columns, ``group`` rows at a time (a row per segment of each partition dir: its
    topic, partition, dir name and facts)."""
    c = context_of(report, context)
    pairs = ((p, s) for p in report.partitions for s in p.segments)
    while chunk := list(islice(pairs, group)):
        n = len(chunk)
        yield {**_constants(c, n), "topic": [p.topic for p, _ in chunk], "partition": [p.partition for p, _ in chunk],
               "dir_name": [p.dir_name for p, _ in chunk], **jsonable_columns([s for _, s in chunk])}, n


def segments_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return _table("segments", iter_segments_columns(report, context))


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
    return {**_constants(context_of(report, context), n), "topic": topic, "partition": partition,
            "dir_name": dir_name, "source": source, "epoch": epoch, "start_offset": start}, n


def epochs_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return rows_of_columns(*epochs_columns(report, context))


def epochs_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return table_of_columns("epochs", *epochs_columns(report, context))


def findings_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _rows(iter_findings_columns(report, context))


def iter_findings_columns(report: ScanReport, context: Mapping[str, Any] | None = None, group: int = ALL
                          ) -> Iterator[tuple[dict[str, list[Any]], int]]:
    """The ``findings`` table's columns, ``group`` rows at a time (every finding of the report, in its order)."""
    c = context_of(report, context)
    found = iter(report.all_findings())
    while chunk := list(islice(found, group)):
        n = len(chunk)
        yield {**_constants(c, n), "code": [f.code for f in chunk], "severity": [str(f.severity) for f in chunk],
               "severity_level": [int(f.severity) for f in chunk], "file": [f.file for f in chunk],
               "position": [f.position for f in chunk], "line": [f.line for f in chunk],
               "message": [f.message for f in chunk], "facts": [dumps(f.facts) for f in chunk]}, n


def findings_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return _table("findings", iter_findings_columns(report, context))


def files_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _rows(iter_files_columns(report, context))


def iter_files_columns(report: ScanReport, context: Mapping[str, Any] | None = None, group: int = ALL
                       ) -> Iterator[tuple[dict[str, list[Any]], int]]:
    """The ``files`` table's columns, ``group`` rows at a time (every file the scan read, its record's fields)."""
    c = context_of(report, context)
    for lo in range(0, len(report.files), group):
        chunk = report.files[lo:lo + group]
        yield {**_constants(c, len(chunk)), **jsonable_columns(chunk)}, len(chunk)


def files_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return _table("files", iter_files_columns(report, context))


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
#: and written a row group at a time by ``scan --out``: each gives its columns ``group`` rows at a time
STREAMED_COLUMNS: dict[str, Callable[[ScanReport, Mapping[str, Any] | None, int],
                                     Iterator[tuple[dict[str, list[Any]], int]]]] = {
    "segments": iter_segments_columns,
    "findings": iter_findings_columns,
    "files": iter_files_columns,
}
