"""The scan report's tables (all but ``batches``): a row per partition dir, segment, leader-epoch entry, finding,
file read, root checkpoint entry and transaction, the same for ``scan --out`` and the Spark job.

Each table but ``checkpoints`` and ``transactions`` (a few rows a broker) is
defined once, as a tuple of values per row (:data:`Chunk`).  ``scan --out``
builds its tables from those tuples as columns and the Spark scan tasks gather
them as runs (:func:`report_runs`): a fleet's ten thousand dirs make no dict
each.  The rows as dicts (``*_rows``) are made from the same tuples.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..scan.model import ScanReport
from ..serialize import dumps, to_jsonable
from .schemas import table, table_of_columns

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
    :func:`jsonable_values` take without :func:`~kforensics.serialize.to_jsonable`."""
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


#: a run of a table's rows: the names of its columns (the context's left out) and a tuple of values per row
Chunk = tuple[tuple[str, ...], list[tuple[Any, ...]]]


def jsonable_values(objs: list[Any]) -> Chunk:
    """:func:`jsonable_row` of each object as a :data:`Chunk`: a tuple per object when they are all of one flat
    dataclass type (the fields in order), else the union of their rows' keys (None where a row has no such key)."""
    if not objs:
        return (), []
    t = type(objs[0])
    names = _public_fields(t)
    if names is None or (len(objs) > 1 and any(type(o) is not t for o in objs)):
        rows = [jsonable_row(o) for o in objs]
        keys = tuple(dict.fromkeys(k for r in rows for k in r))
        return keys, [tuple(r.get(k) for k in keys) for r in rows]
    get = _GETTERS.get(t)
    if get is None:
        get = _GETTERS[t] = attrgetter(*names) if len(names) > 1 else (lambda o: (getattr(o, names[0]),))
    return names, [tuple([v if type(v) in _PLAIN or _plain_list(v) else to_jsonable(v) for v in get(o)])
                   for o in objs]


#: per flat dataclass type, a getter of its public fields' values in order (a tuple)
_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _columns(context: dict[str, Any], names: tuple[str, ...], values: list[tuple[Any, ...]]) -> dict[str, list[Any]]:
    """A chunk's columns: the context's (each value once a row), then its own (a later name wins, as in a row)."""
    n = len(values)
    out = {k: [v] * n for k, v in context.items()}
    out.update(zip(names, map(list, zip(*values))) if n else ((k, []) for k in names))
    return out


def _rows(context: dict[str, Any], chunks: Iterable[Chunk]) -> list[dict[str, Any]]:
    """The rows of the chunks: the context's keys first, then each chunk's (a later name wins, as in a dict)."""
    head = tuple(context.values())
    out: list[dict[str, Any]] = []
    for names, values in chunks:
        keys = (*context, *names)
        out += [dict(zip(keys, head + v)) for v in values]
    return out


def _table(name: str, context: dict[str, Any], chunks: Iterable[Chunk]) -> pa.Table:
    """Table ``name`` of the chunks' rows, in order, each with the context's columns."""
    return _joined(name, [table_of_columns(name, _columns(context, names, values), len(values))
                          for names, values in chunks if values])


def _joined(name: str, parts: list[pa.Table]) -> pa.Table:
    """Parts of table ``name`` as one table (no part: the empty table)."""
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0] if parts else table(name, [])


def _in_groups(items: Iterable[Any], group: int) -> Iterator[list[Any]]:
    """``items`` in lists of ``group`` (the last one shorter; none when there is no item)."""
    if group >= ALL:
        whole = list(items)  # a Spark task's partition dir: one list, no slicing
        if whole:
            yield whole
        return
    it = iter(items)
    while chunk := list(islice(it, group)):
        yield chunk


def _streamed(make: Callable[[ScanReport, int], Iterator[Chunk]]
              ) -> Callable[[ScanReport, Mapping[str, Any] | None, int], Iterator[tuple[dict[str, list[Any]], int]]]:
    """A streamed table's columns ``group`` rows at a time, with the context's."""
    def columns(report: ScanReport, context: Mapping[str, Any] | None, group: int
                ) -> Iterator[tuple[dict[str, list[Any]], int]]:
        c = context_of(report, context)
        return ((_columns(c, names, values), len(values)) for names, values in make(report, group))
    return columns


#: the ``partitions`` table's columns but the context's, in the order :func:`_partition_values` gives them
PARTITION_NAMES = (
    "log_dir", "dir_name", "topic", "partition", "suffix", "topic_id", "log_start_offset", "log_end_offset",
    "high_watermark", "recovery_point", "cleaner_offset", "uncommitted", "segment_count", "batch_count",
    "record_count", "bytes", "epochs_seen", "producer_ids", "open_transactions", "last_stable_offset",
    "epoch_cache_written", "recovers", "recovery_log_end_offset", "recovery_lost_first_offset",
    "recovery_lost_last_offset", "recovery_lost_records", "recovery_lost_committed_records", "recovery", "complete",
    "tiered")


def _partition_values(p: Any, written: dict[str, str]) -> tuple[Any, ...]:
    """A partition dir's row of the ``partitions`` table (:data:`PARTITION_NAMES`): the one definition of it."""
    r = p.recovery
    return (p.log_dir, p.dir_name, p.topic, p.partition, p.suffix, p.topic_id, p.log_start_offset, p.log_end_offset,
            p.high_watermark, p.recovery_point, p.cleaner_offset, p.uncommitted, len(p.segments), p.batch_count,
            p.record_count, p.bytes, p.epochs_seen, p.producer_ids, len(p.open_transactions), p.last_stable_offset,
            _written_json(p.epoch_cache_written, written), r.recovers, r.log_end_offset, r.lost_first_offset,
            r.lost_last_offset, r.lost_records, r.lost_committed_records, _JSON.encode(jsonable_row(r)), p.complete,
            None if p.tiered is None else json.dumps(p.tiered.as_dict()))


def _partitions(report: ScanReport) -> Chunk:
    written: dict[str, str] = {}  # a checkpoint's JSON by its repr: a fleet's dirs repeat a few
    return PARTITION_NAMES, [_partition_values(p, written) for p in report.partitions]


def partitions_columns(report: ScanReport, context: Mapping[str, Any] | None = None) -> dict[str, list[Any]]:
    """The ``partitions`` table's columns, a partition dir a value; a fleet's table is built from them without a
    dict per dir."""
    return _columns(context_of(report, context), *_partitions(report))


def partitions_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _rows(context_of(report, context), [_partitions(report)])


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


def _segments(report: ScanReport, group: int = ALL) -> Iterator[Chunk]:
    """A row per segment of each partition dir: its topic, partition, dir name and facts."""
    for chunk in _in_groups(((p, s) for p in report.partitions for s in p.segments), group):
        names, values = jsonable_values([s for _, s in chunk])
        yield ("topic", "partition", "dir_name", *names), [(p.topic, p.partition, p.dir_name, *v)
                                                           for (p, _), v in zip(chunk, values)]


def segments_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _rows(context_of(report, context), _segments(report))


def segments_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return _table("segments", context_of(report, context), _segments(report))


_EPOCH_NAMES = ("topic", "partition", "dir_name", "source", "epoch", "start_offset")


def _epochs(report: ScanReport) -> Chunk:
    """Every partition dir's written, then rebuilt, leader-epoch entries."""
    return _EPOCH_NAMES, [(p.topic, p.partition, p.dir_name, kind, e, o) for p in report.partitions
                          for kind, entries in (("checkpoint", p.epoch_cache_written or []),
                                                ("rebuilt", p.epoch_cache_rebuilt))
                          for e, o in entries]


def epochs_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _rows(context_of(report, context), [_epochs(report)])


def epochs_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return _table("epochs", context_of(report, context), [_epochs(report)])


_FINDING_NAMES = ("code", "severity", "severity_level", "file", "position", "line", "message", "facts")


def _findings(report: ScanReport, group: int = ALL) -> Iterator[Chunk]:
    """Every finding of the report, in its order."""
    for chunk in _in_groups(report.all_findings(), group):
        yield _FINDING_NAMES, [(f.code, str(f.severity), int(f.severity), f.file, f.position, f.line, f.message,
                                dumps(f.facts)) for f in chunk]


def findings_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _rows(context_of(report, context), _findings(report))


def findings_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return _table("findings", context_of(report, context), _findings(report))


def _files(report: ScanReport, group: int = ALL) -> Iterator[Chunk]:
    """Every file the scan read: its record's fields."""
    for lo in range(0, len(report.files), group):
        yield jsonable_values(report.files[lo:lo + group])


def files_rows(report: ScanReport, context: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return _rows(context_of(report, context), _files(report))


def files_table(report: ScanReport, context: Mapping[str, Any] | None = None) -> pa.Table:
    return _table("files", context_of(report, context), _files(report))


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

#: a run of a table's rows as a Spark scan task gathers them: every column's name (the context's first) and a tuple
#: of values per row
Run = tuple[tuple[str, ...], list[tuple[Any, ...]]]

#: the report tables defined as row tuples (:data:`Chunk`), all of a report's rows at once
_CHUNKS: dict[str, Callable[[ScanReport], Iterable[Chunk]]] = {
    "partitions": lambda r: [_partitions(r)],
    "segments": _segments,
    "epochs": lambda r: [_epochs(r)],
    "findings": _findings,
    "files": _files,
}


def report_runs(report: ScanReport, context: Mapping[str, Any] | None = None) -> dict[str, list[Run]]:
    """Every report table's rows (:data:`REPORT_ROWS`' tables, in order) as runs of tuples: what a Spark scan task
    gathers of a partition dir, made into tables by :func:`runs_table` (no dict per row)."""
    c = context_of(report, context)
    head, keys = tuple(c.values()), tuple(c)
    out: dict[str, list[Run]] = {}
    for name, rows in REPORT_ROWS.items():
        chunks = _CHUNKS.get(name)
        if chunks is not None:
            out[name] = [((*keys, *names), [head + v for v in values]) for names, values in chunks(report) if values]
        else:  # a broker's root checkpoints and a dir's transactions: a few rows, as dicts
            out[name] = [(tuple(r), [tuple(r.values())]) for r in rows(report, context)]
    return out


def run_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """The rows of runs, as dicts (a later name wins, as in a row)."""
    return [dict(zip(keys, v)) for keys, values in runs for v in values]


def runs_table(name: str, runs: list[Run]) -> pa.Table:
    """Table ``name`` of runs of rows, in their order."""
    return _table(name, {}, runs)


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
    "segments": _streamed(_segments),
    "findings": _streamed(_findings),
    "files": _streamed(_files),
}
