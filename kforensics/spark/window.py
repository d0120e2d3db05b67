"""Replicas for the Spark replay without shuffling their batches.

While an executor scans a partition dir it computes the replica's summary
(:class:`kforensics.replay.summary.SummaryBuilder`, fed the same replay columns
``kforensics replay`` feeds it) and, for a small replica, keeps the replica
itself.  The replay stage moves only these sketches: a group's replay starts
from the window its summaries give (:func:`kforensics.replay.summary.window_floor`)
and reads, from the replica's own ``batches`` Parquet file, the rows from the
window's floor on (a predicate on ``last_offset``, pruned by row-group
statistics).  What the replay keeps of the rows below (the elided prefix: epoch
transitions and runs, where they end) comes from the summary, which marked it
at every range boundary while the batches streamed by
(:meth:`kforensics.replay.summary.ReplicaSummary.below`).  A summary without
marks (a log out of order, or with more epoch changes than it keeps) makes the
windowed replica the old way: the prefix columns of the rows below are read too
(epochs, offsets, format) and :func:`kforensics.replay.replica.elide`, the
function the single-process replay windows with, makes the prefix.  Either way
both front ends replay the same replicas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..log.file_kinds import segment_order
from ..pickling import ByFields
from ..replay.inputs import replay_columns
from ..replay.replica import COLUMNS, BatchLog, Replica, elide, unknown_broker_id
from ..replay.summary import CHUNK_OFFSETS, ReplicaSummary, SummaryBuilder, needs_summaries
from ..scan.model import PartitionScan
from ..tables.replay_tables import BATCH_COLUMNS, replica_of_row, replicas_from_frames
from ..tables.schemas import fit
from .files import FileSystem

#: replicas of at most this many batches travel whole with their summary (no file is read back for them)
INLINE_ROWS = 4096
#: the columns read below a window (what the elided prefix keeps: epochs and formats, extents, log order)
PREFIX_COLUMNS = ["base_offset", "last_offset", "partition_leader_epoch", "magic", "segment", "position"]
#: the columns read in a window (the replay's columns; a replica's file holds one partition row's batches)
WINDOW_COLUMNS = ["segment", "base_offset", "last_offset", "partition_leader_epoch", "crc", "crc_valid",
                  "records_count", "size_in_bytes", "producer_id", "magic", "position"]


class SketchSink:
    """A scan batch sink in front of another (the ``batches`` writer): feeds the replica's summary as the batches
    stream by, and keeps its last row (where its log ends); and the rows of a replica of at most ``inline_rows``
    batches, which travels whole (-1: none does, even an empty one)."""

    def __init__(self, inner: Callable[..., None] | None = None, chunk_offsets: int = CHUNK_OFFSETS,
                 inline_rows: int = INLINE_ROWS):
        self.inner = inner
        self.inline_rows = inline_rows
        self.builder = SummaryBuilder(chunk_offsets)
        self._segs: list[object] = []  # the segments' files, as the batches name them
        self._names: list[str] = []  # their names as the batches table has them
        self._position = -1  # of the last batch fed
        self.last: np.ndarray | None = None
        self.rows = 0
        self._kept: list[np.ndarray] | None = []  # the rows of a small replica (None once it is not small)
        self._digested = 0  # how many of them the summary was fed
        self._in_order = True  # every chunk so far followed on in log order (:meth:`_in_log_order`)

    def __call__(self, pd_, seg, t) -> None:
        if self.inner is not None:
            self.inner(pd_, seg, t)
        if not len(t):
            return
        new = not self._segs or self._segs[-1] is not seg.log
        if new:
            self._segs.append(seg.log)
            self._names.append(fit(seg.log.name, pa.string()))
        rows = replay_columns(t, len(self._segs) - 1)
        if self.builder.marks is not None and not self._in_log_order(rows, new):
            self.builder.out_of_order()
            self._in_order = False
        self.rows += len(rows)
        if self._kept is not None and self.rows <= self.inline_rows:
            # a replica that travels whole is digested only when its summary is made, if it needs one at all (the
            # marks of a small replica are never read: it is windowed from its rows)
            self._kept.append(rows)
        else:
            if self._kept:
                # no longer a replica that travels whole: it is windowed from its file, by the marks of every row
                for kept in self._kept:
                    self.builder.feed(kept)
            self._kept = None
            self.builder.feed(rows)
        self.last = rows[-1:].copy()

    def _in_log_order(self, rows: np.ndarray, new: bool) -> bool:
        """Whether ``rows`` (of the segment last fed) follow on in the order the replica's log has (segments in
        offset order, rows by position; :func:`replay_rows_of`): the summary's marks hold only then."""
        pos = rows[:, COLUMNS.index("position")]
        if new and len(self._names) > 1 and segment_order(self._names[-1]) <= segment_order(self._names[-2]):
            return False
        after = -1 if new else self._position
        self._position = int(pos[-1])
        return int(pos[0]) >= after and bool(np.all(pos[1:] >= pos[:-1]))

    def replica(self, row: dict) -> Replica | None:
        """The replica whole from the rows kept while they streamed by (a small replica: at most
        :data:`INLINE_ROWS` batches), as :func:`replica_of_tables` builds it from its batches file; None for a
        larger one."""
        if self._kept is None:
            return None
        if not self._kept:
            return replica_of_tables([], row)
        names = self._names
        rows = np.concatenate(self._kept) if len(self._kept) > 1 else self._kept[0].copy()
        if self._in_order:
            # fed in log order: the segments' names are distinct and in offset order (the segment column indexes
            # them as they are), the rows by position within each
            segments = list(names)
        else:
            segments = sorted(set(names), key=segment_order)
            where = {n: i for i, n in enumerate(segments)}
            seg_col = COLUMNS.index("segment")
            rows[:, seg_col] = np.array([where[n] for n in names], np.int64)[rows[:, seg_col]]
            seg, pos = rows[:, seg_col], rows[:, COLUMNS.index("position")]
            if len(rows) > 1 and not bool(np.all((seg[1:] > seg[:-1])
                                                 | ((seg[1:] == seg[:-1]) & (pos[1:] >= pos[:-1])))):
                rows = rows[np.lexsort((pos, seg))]
        b = row.get("broker_id")
        return replica_of_row(SimpleNamespace(**row), np.ascontiguousarray(rows), segments,
                              -1 if b is None else int(b))

    def summary(self, scan: PartitionScan, every: bool = False) -> ReplicaSummary | None:
        """The replica's summary (``scan``: its ``PartitionScan``: checkpoints and recovery plan), equal to the one
        ``kforensics replay`` computes for it: None, as there, for a replica whose log ends within the first
        range (:func:`~kforensics.replay.summary.needs_summaries`; ``every``: made all the same)."""
        log = BatchLog(self.last) if self.last is not None else BatchLog.empty()
        r = Replica(0, log, log_start=scan.log_start_offset or 0, high_watermark=scan.high_watermark,
                    cleaner_offset=scan.cleaner_offset, segments=list(self._names), recovery=scan.recovery)
        if not every and not needs_summaries(r, self.builder.chunk_offsets):
            return None
        if self._kept is not None and self.rows <= self.inline_rows:
            self.builder.marks = None  # a small replica: never windowed by them, and never marked (above)
            for kept in self._kept[self._digested:]:
                self.builder.feed(kept, mark=False)
            self._digested = len(self._kept)
        return self.builder.finish(r)


@dataclass
class Sketch(ByFields):
    """What the replay stage moves for one replica: its partition row, its summary, and either the replica whole
    (``replica``: small ones; its broker id set per group) or where its batch rows are (``batches``)."""

    row: dict
    summary: ReplicaSummary | None  # None: the log ends within the first range (the group is replayed from 0)
    replica: Replica | None = None
    batches: str | None = None
    rows: int = 0
    #: the finding keys of the replica's scan (:func:`kforensics.scan.broker.finding_key`): what the replay of its
    #: group leaves out, already said
    reported: frozenset[tuple] = frozenset()
    #: what the replay's tiered-storage hook reads of the replica's scan
    #: (:func:`kforensics.tiered.evidence.scan_view`; None: the scan found nothing tiered to say)
    tier: Any = None


def whole_replica(batches: pd.DataFrame, row: dict) -> Replica:
    """The replica of one partition row from all its batch rows (as :func:`replicas_from_frames` builds it)."""
    return replicas_from_frames(batches, pd.DataFrame([row]))[0]


def _empty_batches() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in BATCH_COLUMNS})


def read_rows(path: str, filesystem: FileSystem, floor: int | None = None, columns: list[str] | None = None,
              below: bool = False) -> pa.Table:
    """Rows of one replica's batches file: those with ``last_offset >= floor`` (``below``: ``< floor``); all
    with ``floor`` None."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    columns = columns or BATCH_COLUMNS
    wanted = columns if "last_offset" in columns else [*columns, "last_offset"]
    # the file's own row-group statistics pick the row groups to read (a few times cheaper than a dataset
    # read with a filter, which a replay stage does three times per group); then the rows are filtered
    # segment names come back as a dictionary (one string per segment, not per row: most of a read's cost)
    with pq.ParquetFile(path, filesystem=filesystem,
                        read_dictionary=["segment"] if "segment" in wanted else None) as f:
        md = f.metadata
        at = f.schema_arrow.get_field_index("last_offset")
        groups = []
        for i in range(md.num_row_groups):
            stats = md.row_group(i).column(at).statistics
            known = floor is not None and stats is not None and stats.has_min_max
            if not known or (stats.min < floor if below else stats.max >= floor):
                groups.append(i)
        t = f.read_row_groups(groups, columns=wanted) if groups else f.schema_arrow.empty_table().select(wanted)
    if floor is not None:
        last = t.column("last_offset")
        t = t.filter(pc.less(last, int(floor)) if below else pc.greater_equal(last, int(floor)))
    return t.select(columns)


def _int64(t: pa.Table, name: str) -> np.ndarray:
    import pyarrow.compute as pc

    return np.asarray(pc.cast(t.column(name), pa.int64()), dtype=np.int64)


def _segment_names(col: pa.ChunkedArray) -> set[str]:
    """The segment names a ``segment`` column holds (plain or dictionary-encoded: only the entries rows use)."""
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(col.type):
        return set(pc.unique(col).to_pylist())
    out: set[str] = set()
    for chunk in col.chunks:
        values = chunk.dictionary.to_pylist()
        out.update(values[i] for i in np.unique(np.asarray(chunk.indices, dtype=np.int64)).tolist())
    return out


def _segment_codes(col: pa.ChunkedArray, order: pa.Array) -> np.ndarray:
    """Each row's segment as its index in ``order`` (the segment names in log order)."""
    import pyarrow.compute as pc

    if not pa.types.is_dictionary(col.type):
        return np.asarray(pc.index_in(pc.cast(col, pa.string()), value_set=order), dtype=np.int64)
    parts = [np.asarray(pc.index_in(chunk.dictionary, value_set=order).fill_null(-1), dtype=np.int64)[
        np.asarray(chunk.indices, dtype=np.int64)] for chunk in col.chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)


def replay_rows_of(tables: list[pa.Table]) -> tuple[np.ndarray, list[str]]:
    """The replay columns of one replica's batch rows (Arrow tables of its ``batches`` file; a table lacking a
    replay column holds what a prefix needs only: the column is 0, ``crc_valid`` 1), in log order (segments by
    base offset, then position), as :func:`kforensics.tables.replay_tables.replicas_from_frames` orders them; and
    the segment names in that order.  Numpy on the needed columns: no pandas frame."""

    tables = [t for t in tables if t is not None and len(t)]
    if not tables:
        return BatchLog.empty().data, []
    names = set()
    for t in tables:
        names.update(_segment_names(t.column("segment")))
    segments = sorted(names, key=segment_order)
    order = pa.array(segments, pa.string())
    parts = []
    for t in tables:
        n = len(t)
        base, last = _int64(t, "base_offset"), _int64(t, "last_offset")
        values = {"base_offset": np.where(base >= 0, base, last), "last_offset": last,
                  "segment": _segment_codes(t.column("segment"), order)}
        if "crc_valid" in t.column_names:
            values["crc_valid"] = np.asarray(t.column("crc_valid"), dtype=bool).astype(np.int64)
        cols = np.empty((n, len(COLUMNS)), dtype=np.int64, order="F")  # column-major, as BatchLog holds it
        for i, c in enumerate(COLUMNS):
            if c in values:
                cols[:, i] = values[c]
            elif c in t.column_names:
                cols[:, i] = _int64(t, c)
            else:
                cols[:, i] = 1 if c == "crc_valid" else 0
        parts.append(cols)
    rows = parts[0] if len(parts) == 1 else np.asfortranarray(np.concatenate(parts))
    seg, pos = rows[:, COLUMNS.index("segment")], rows[:, COLUMNS.index("position")]
    if len(rows) > 1 and not bool(np.all((seg[1:] > seg[:-1]) | ((seg[1:] == seg[:-1]) & (pos[1:] >= pos[:-1])))):
        rows = np.asfortranarray(rows[np.lexsort((pos, seg))])  # stable: as a stable sort by (segment, position)
    return rows, segments


def replica_of_tables(tables: list[pa.Table], row: dict) -> Replica:
    """The replica of one partition row from its batch rows as Arrow tables (see :func:`replay_rows_of`)."""
    cols, segments = replay_rows_of(tables)
    b = row.get("broker_id")
    return replica_of_row(SimpleNamespace(**row), cols, segments, -1 if b is None else int(b))


def windowed_replica(s: Sketch, floor: int, filesystem: FileSystem = None) -> Replica:
    """``elide(whole replica, floor)``, reading from the replica's batches file only the rows from ``floor`` on;
    the prefix comes from the summary, or, when it has none for this floor, from the prefix columns of the rows
    below (read as arrays)."""
    if s.replica is not None:
        return elide(s.replica, floor)
    if s.batches is None:
        return elide(replica_of_tables([], s.row), floor)
    if floor > 0:
        r = _window_from_summary(s, s.batches, floor, filesystem)
        if r is not None:
            return r
    return _window_from_rows(s, s.batches, floor, filesystem)


def _window_from_summary(s: Sketch, batches: str, floor: int, filesystem: FileSystem = None) -> Replica | None:
    """The replica windowed at ``floor`` from the rows from ``floor`` on (in its ``batches`` file) and the
    summary's prefix (None when the summary cannot give it, or the rows read are not the ones it was made from)."""
    if s.summary is None:
        return None
    below, marks = s.summary.below(floor), s.summary.marks
    if below is None or marks is None or s.summary.segments is None:
        return None
    count, prefix = below
    window = read_rows(batches, filesystem, floor, WINDOW_COLUMNS)
    if len(window) != marks.rows - count:
        return None
    cols, names = replay_rows_of([window])
    # the segment column indexes all the replica's segments, as in the whole replica: the recovery plan's
    # segments are looked up by name and compared by index (restart's cut, kept damage)
    where = {n: i for i, n in enumerate(s.summary.segments)}
    if any(n not in where for n in names):
        return None
    if len(cols):
        seg = COLUMNS.index("segment")
        cols[:, seg] = np.array([where[n] for n in names], dtype=np.int64)[cols[:, seg]]
    b = s.row.get("broker_id")
    r = replica_of_row(SimpleNamespace(**s.row), cols, list(s.summary.segments), -1 if b is None else int(b))
    return r if prefix is None else replace(r, prefix=prefix)


def _window_from_rows(s: Sketch, batches: str, floor: int, filesystem: FileSystem = None) -> Replica:
    """The replica windowed at ``floor`` from the rows from ``floor`` on (in its ``batches`` file) and the prefix
    columns of those below."""
    window = read_rows(batches, filesystem, floor if floor > 0 else None, WINDOW_COLUMNS)
    if floor > 0:
        head = read_rows(batches, filesystem, floor, PREFIX_COLUMNS, below=True)
        if len(head):
            r = elide(replica_of_tables([head, window], s.row), floor)
            if len(r.log) == len(window):
                return r
            # the rows below the floor did not all go into the prefix (a damaged log out of order): read it whole
            window = read_rows(batches, filesystem, None, WINDOW_COLUMNS)
    return elide(replica_of_tables([window], s.row), floor)


def replica_order(rows: list[dict]) -> list[int]:
    """Indices of the partition rows that become replicas, in replica order: as
    :func:`kforensics.tables.replay_tables.replica_rows` picks them (live dirs, each broker's latest snapshot,
    rows without a broker id each a replica of its own), without a pandas frame per group."""
    live = [i for i, r in enumerate(rows) if r.get("suffix") is None]

    def key(i: int) -> tuple:
        r = rows[i]
        return tuple((v is not None, v if v is not None else 0) for v in (r.get("broker_id"),)) + tuple(
            (v is not None, v if v is not None else "") for v in (r.get("snapshot_time"), r.get("snapshot_id")))

    ordered = sorted(live, key=key)
    known, last = [], {}
    for i in ordered:
        b = rows[i].get("broker_id")
        if b is not None:
            last[b] = i
    known = [i for i in ordered if rows[i].get("broker_id") is not None and last[rows[i]["broker_id"]] == i]
    return known + [i for i in ordered if rows[i].get("broker_id") is None]


def group_replicas(sketches: list[Sketch], filesystem: FileSystem = None):
    """(replica rows, summaries, ``load(floor)``) of one group: ``load`` gives the replicas windowed at ``floor``,
    with the broker ids :func:`replicas_from_frames` gives them (rows without one: -1, -2, ... in order)."""
    order = replica_order([s.row for s in sketches])
    chosen = [sketches[i] for i in order]
    ids, unknown = [], 0
    for s in chosen:
        b = s.row.get("broker_id")
        if b is None:
            unknown += 1
            ids.append(unknown_broker_id(unknown))
        else:
            ids.append(int(b))

    def load(floor: int) -> list[Replica]:
        return [windowed_replica(s, floor, filesystem).as_broker(b) for s, b in zip(chosen, ids)]

    return [s.row for s in chosen], [s.summary for s in chosen], load


def partition_row(t: pa.Table, columns: list[str]) -> dict:
    """The one row of a ``partitions`` table as a dict of ``columns``."""
    return t.select(columns).to_pylist()[0]
