"""A replica's log as replay sees it: batch identities and extents, and what its broker's disk says.

Only what truncation and divergence need is kept (no records): per batch the
columns below, named as in the batch table.  Two batches hold *the same
data* when base offset, last offset, epoch and stored CRC agree (the CRC
covers everything but the offsets and the epoch, which are compared
directly); a batch whose bytes no longer match its CRC is the same batch,
damaged, so it is marked (``crc_valid``) rather than given another identity.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..epoch.cache import LeaderEpochCache
from ..epoch.rebuild import NO_KEY, epoch_transitions, rebuild_from_batches
from ..epoch.versions import KafkaVersion
from ..errors import InternalError
from ..pickling import ByFields
from ..recovery.plan import RecoveryPlan

#: ``segment`` values of batches on no segment of this replica: written during the replay, or fetched copies
NOT_ON_DISK = -1
FETCHED = -2


def unknown_broker_id(n: int) -> int:
    """The id a replay gives the ``n``-th (1-based) broker whose id nothing names (no ``--broker ID=DIR``, no
    meta.properties): -1, -2, ... so that it never collides with a real broker id (Kafka's start at 0)."""
    return -n


#: the batch-table columns replay keeps, plus ``segment`` (index into ``Replica.segments``, or one of the above)
COLUMNS = ("base_offset", "last_offset", "partition_leader_epoch", "crc", "records_count", "size_in_bytes",
           "producer_id", "magic", "crc_valid", "segment", "position")
_C = {name: i for i, name in enumerate(COLUMNS)}
IDENTITY = slice(0, 4)  # base_offset, last_offset, partition_leader_epoch, crc (as stored)
#: what a row left short by ``from_rows`` holds in the columns it lacks
_DEFAULTS = {"crc_valid": 1, "segment": -1, "position": -1}
#: up to this many batches a log's epoch runs are found in Python (fewer fixed costs than numpy's passes)
_SMALL_LOG = 64


def same_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per row of two equally long row arrays, whether the identity columns agree (compared column by column:
    no temporary of the rows' width, no reduction across it)."""
    same: np.ndarray = a[:, 0] == b[:, 0]
    for c in range(1, IDENTITY.stop):
        same &= a[:, c] == b[:, c]
    return same


def _batch_log_of(data: bytes, width: int) -> BatchLog:
    """A :class:`BatchLog` from its pickled columns (see ``BatchLog.__reduce__``): writable, one column after
    another."""
    flat = np.frombuffer(bytearray(data), dtype=np.int64)
    return BatchLog(flat.reshape((len(flat) // width, width), order="F"))


@dataclass
class BatchLog:
    """Columns of a log's batches, in offset order."""

    data: np.ndarray  # (n, len(COLUMNS)) int64, each column contiguous (Fortran order)
    _sorted: bool | None = field(default=None, init=False, repr=False, compare=False)
    _runs: list[tuple[int, int, int]] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # every comparison reads whole columns: keep each one contiguous (a slice of rows stays so)
        if self.data.ndim == 2 and self.data.shape[0] > 1 and self.data.strides[0] != self.data.itemsize:
            self.data = np.asfortranarray(self.data)

    def __reduce__(self) -> tuple[Any, tuple[bytes, int]]:
        # pickled as the columns' bytes: the Spark job moves a small replica per partition dir, and numpy's own
        # pickling of the array (its type, order and flags) cost more than the rest of the replica's
        return _batch_log_of, (np.asfortranarray(self.data, dtype=np.int64).tobytes(order="F"), len(COLUMNS))

    @classmethod
    def empty(cls) -> BatchLog:
        return cls(np.empty((0, len(COLUMNS)), dtype=np.int64))

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[int]]) -> BatchLog:
        """Rows of the leading columns; missing trailing columns take their defaults (valid, not on a disk)."""
        arr = np.array(rows, dtype=np.int64)
        arr = arr.reshape(len(rows), -1) if len(rows) else np.empty((0, len(COLUMNS)), dtype=np.int64)
        if arr.shape[1] < len(COLUMNS):
            fill = np.array([_DEFAULTS.get(c, -1) for c in COLUMNS[arr.shape[1]:]], dtype=np.int64)
            arr = np.hstack([arr, np.tile(fill, (arr.shape[0], 1))])
        return cls(arr)

    def __len__(self) -> int:
        return int(self.data.shape[0])

    def col(self, name: str) -> np.ndarray:
        return self.data[:, _C[name]]

    @property
    def end_offset(self) -> int | None:
        """Next offset after the last batch (None when empty)."""
        return int(self.data[-1, _C["last_offset"]]) + 1 if len(self) else None

    def containing_cut(self, offset: int) -> int:
        """Index of the first batch that a truncation to ``offset`` removes.

        Kafka cuts at the start of the batch that contains ``offset``, so a
        batch with ``base < offset <= last`` goes entirely.
        """
        return int(np.searchsorted(self.col("last_offset"), offset, side="left"))

    def split(self, index: int) -> tuple[BatchLog, BatchLog]:
        return BatchLog(self.data[:index]), BatchLog(self.data[index:])

    def select(self, mask: np.ndarray) -> BatchLog:
        """The batches where ``mask`` holds; a view, not a copy, when they are one run (a prefix or a tail)."""
        idx = np.flatnonzero(mask)
        if not len(idx):
            return BatchLog(self.data[:0])
        first, last = int(idx[0]), int(idx[-1])
        if last - first + 1 == len(idx):
            return BatchLog(self.data[first : last + 1])
        return BatchLog(self.data[idx])

    def from_offset(self, offset: int) -> BatchLog:
        """Batches a fetch from ``offset`` returns (those ending at or after it)."""
        return BatchLog(self.data[self.containing_cut(offset) :])

    def concat(self, other: BatchLog) -> BatchLog:
        out = np.empty((len(self) + len(other), len(COLUMNS)), dtype=np.int64, order="F")
        out[: len(self)] = self.data
        out[len(self) :] = other.data
        return BatchLog(out)

    def identity(self) -> np.ndarray:
        """(base offset, last offset, epoch, stored crc) per batch."""
        return self.data[:, IDENTITY]

    def held_in(self, other: BatchLog) -> np.ndarray:
        """Per batch of this log, whether ``other`` holds the same batch (same offsets, epoch and stored CRC).

        A sorted lookup on the base offset, then a comparison of the identity
        columns: no per-batch Python work, whatever the logs' lengths.
        """
        held = np.zeros(len(self), dtype=bool)
        if not len(self) or not len(other):
            return held
        theirs = other.col("base_offset")
        order = None
        if len(theirs) > 1 and not bool(np.all(theirs[1:] > theirs[:-1])):
            order = np.argsort(theirs, kind="stable")  # damaged evidence: offsets out of order
            theirs = theirs[order]
        at = np.searchsorted(theirs, self.col("base_offset"))
        found = at < len(theirs)
        rows = np.minimum(at, len(theirs) - 1)
        if order is not None:
            rows = order[rows]
        matched: np.ndarray = found & same_rows(self.data, other.data[rows])
        return matched

    def is_sorted(self) -> bool:
        """Whether base offsets strictly increase (always, unless the evidence is damaged)."""
        if self._sorted is None:
            b = self.col("base_offset")
            self._sorted = len(b) < 2 or bool(np.all(b[1:] > b[:-1]))
        return self._sorted

    def window(self, floor: int, end: int) -> BatchLog:
        """The batches ending at or after ``floor`` and starting before ``end`` (a view for a sorted log)."""
        if self.is_sorted():
            lo = int(np.searchsorted(self.col("last_offset"), floor, side="left"))
            hi = int(np.searchsorted(self.col("base_offset"), end, side="left"))
            return BatchLog(self.data[lo : max(lo, hi)])
        return self.select((self.col("last_offset") >= floor) & (self.col("base_offset") < end))

    def covers(self, offset: int) -> bool:
        """Whether a batch of this log holds ``offset``."""
        i = self.containing_cut(offset)
        return i < len(self) and int(self.col("base_offset")[i]) <= offset

    def first_damaged(self) -> int | None:
        """Index of the first batch whose CRC does not match its bytes (None when all match)."""
        bad = np.flatnonzero(self.col("crc_valid") == 0)
        return int(bad[0]) if len(bad) else None

    def runs(self) -> list[tuple[int, int, int]]:
        """(first offset, last offset, epoch) of each run of consecutive batches of one epoch (worked out once: a
        log's rows are never changed in place, a cut or an append makes another log)."""
        if self._runs is None:
            self._runs = self._epoch_runs()
        return list(self._runs)

    def _epoch_runs(self) -> list[tuple[int, int, int]]:
        if not len(self):
            return []
        if len(self) <= _SMALL_LOG:
            return self._epoch_runs_small()
        ep = self.col("partition_leader_epoch")
        base, last = self.col("base_offset"), self.col("last_offset")
        starts = np.flatnonzero(np.concatenate(([True], ep[1:] != ep[:-1])))
        ends = np.concatenate((starts[1:] - 1, [len(ep) - 1]))
        return [(int(base[a]), int(last[b]), int(ep[a])) for a, b in zip(starts.tolist(), ends.tolist())]

    def _epoch_runs_small(self) -> list[tuple[int, int, int]]:
        # the same runs as the vectorised pass, whose fixed cost outweighs a small log's rows
        ep = self.col("partition_leader_epoch").tolist()
        base, last = self.col("base_offset").tolist(), self.col("last_offset").tolist()
        out, a = [], 0
        for i in range(1, len(ep)):
            if ep[i] != ep[i - 1]:
                out.append((base[a], last[i - 1], ep[a]))
                a = i
        out.append((base[a], last[-1], ep[a]))
        return out

    def epoch_transitions(self) -> list[tuple[int, int, int]]:
        """(epoch, base offset, magic) where the epoch or the format changes: all a cache rebuild needs."""
        return epoch_transitions(self.col("partition_leader_epoch"), self.col("base_offset"), self.col("magic"))[0]


class NeedRows(InternalError):
    # caught by the group replay, which widens the window; one that escapes is a bug (exit 3)
    """The replay reached below a windowed replica's window: its batches from ``offset`` on are needed."""

    def __init__(self, offset: int) -> None:
        super().__init__(f"the replay needs the batches from offset {offset} on")
        self.offset = offset


@dataclass
class Prefix:
    """The batches below a replica's window, reduced to what replay needs of them.

    A group of replicas is windowed at one offset below which every replica
    holds the same batches (their digests agree), so nothing compares them;
    the replay needs only their epoch transitions (for the caches and the
    plots) and their extent.  Reaching below the window raises
    :class:`NeedRows`, and the caller reloads a lower window.
    """

    end: int  # next offset after the last elided batch: the window starts there
    transitions: list[tuple[int, int, int]] = field(default_factory=list)  # (epoch, base offset, magic)
    last_key: int = NO_KEY  # the epoch key of the last elided batch (see epoch.rebuild.epoch_transitions)
    runs: list[tuple[int, int, int]] = field(default_factory=list)  # (first, last offset, epoch) per epoch run
    # per segment whose first batch is elided, in log order: (segment, epoch, base offset, magic of that batch,
    # how many of ``transitions`` lie at it or before it): where a recovery from that segment starts reading (see
    # restart.load_cache); None when not known (the elided batches' segments go back, or a prefix made without it)
    segment_starts: list[tuple[int, int, int, int, int]] | None = None


@dataclass
class Replica(ByFields):
    """One broker's replica of one partition, as found on disk.

    ``recovery`` is the scan's plan of what loading does at the next start;
    None for a replica that no disk stands behind (a test's, a benchmark's),
    whose checkpoint is then taken to reflect its batches.  ``prefix``, when
    set, stands for the batches below ``log`` (a windowed replica).
    """

    broker_id: int
    log: BatchLog
    log_start: int = 0
    high_watermark: int | None = None  # checkpointed; None when absent
    epoch_checkpoint: list[tuple[int, int]] | None = None
    cleaner_offset: int | None = None
    source: str | None = None  # the partition dir
    # segment paths (any source), indexed by the "segment" column
    segments: list[Any] = field(default_factory=list)
    recovery: RecoveryPlan | None = None
    clean_shutdown: bool = False
    cluster_id: str | None = None
    topic_id: str | None = None  # from partition.metadata
    notes: list[str] = field(default_factory=list)
    prefix: Prefix | None = None
    tiered: Any = None  # a tiered log (kforensics.tiered.tier_state.TieredReplica); set by the replay's inputs
    # the segments' file names, worked out once (with how many segments they were taken from)
    _names: tuple[int, list[str]] | None = field(default=None, init=False, repr=False, compare=False)

    def as_broker(self, broker_id: int) -> Replica:
        """This replica as broker ``broker_id``'s: ``dataclasses.replace(self, broker_id=broker_id)`` without running
        ``__init__`` again (the Spark replay makes a group's replicas at each load, thousands of groups a task)."""
        new = Replica.__new__(Replica)
        new.__dict__.update(self.__dict__)
        new.broker_id = broker_id
        new.__dict__.pop("_names", None)  # as replace: a field __init__ does not take starts again (the class's)
        return new

    @property
    def local_log_start(self) -> int:
        """Where the local log starts: the log start, or a tiered log's local log start (the rest is remote)."""
        local = self.tiered.facts.local_log_start_offset if self.tiered is not None else None
        return self.log_start if local is None else max(self.log_start, local)

    @property
    def window_start(self) -> int:
        """The lowest offset whose batch the replay holds (0 unless windowed)."""
        return self.prefix.end if self.prefix is not None else 0

    @property
    def log_end_offset(self) -> int:
        end = self.log.end_offset
        if end is not None:
            return end
        return self.prefix.end if self.prefix is not None else self.log_start

    def transitions(self, log: BatchLog | None = None) -> list[tuple[int, int, int]]:
        """(epoch, base offset, magic) where the epoch or format changes, over the whole log (elided prefix
        included); ``log`` replaces the window's rows (a log the replay has since changed)."""
        log = self.log if log is None else log
        if self.prefix is None:
            return log.epoch_transitions()
        rows, _ = epoch_transitions(log.col("partition_leader_epoch"), log.col("base_offset"), log.col("magic"),
                                    self.prefix.last_key)
        return self.prefix.transitions + rows

    def segment_index(self, path: str | None) -> int | None:
        """The index in ``segments`` of a segment named by a path (compared by file name)."""
        if path is None:
            return None
        name = os.path.basename(str(path))
        if self._names is None or self._names[0] != len(self.segments):
            self._names = (len(self.segments), [os.path.basename(str(s)) for s in self.segments])
        names = self._names[1]
        return names.index(name) if name in names else None

    def epoch_cache(self, mode: KafkaVersion) -> LeaderEpochCache:
        """The cache as the checkpoint holds it; for a replica with no disk and no checkpoint, as its batches
        build it on the append path (a broker's restart is :func:`kforensics.replay.restart.restart`)."""
        if not mode.has_epochs:
            return LeaderEpochCache(mode=mode)
        if self.epoch_checkpoint is not None:
            return LeaderEpochCache(self.epoch_checkpoint, mode=mode)
        if self.recovery is not None:
            return LeaderEpochCache(mode=mode)  # Kafka creates a missing checkpoint empty
        return rebuild_from_batches(self.transitions(), mode)[0]

    def max_batch_epoch(self, log: BatchLog | None = None) -> int:
        """The highest epoch any batch carries (-1 when none)."""
        log = self.log if log is None else log
        ep = log.col("partition_leader_epoch")
        top = int(ep.max()) if len(ep) else -1
        if self.prefix is not None and self.prefix.transitions:
            top = max(top, max(e for e, _, _ in self.prefix.transitions))
        return top

    @property
    def latest_epoch(self) -> int | None:
        top = self.max_batch_epoch()
        if self.epoch_checkpoint:
            return max(self.epoch_checkpoint[-1][0], top)
        return top if top >= 0 else None


def elide(r: Replica, floor: int) -> Replica:
    """``r`` windowed at ``floor``: its batches ending below ``floor`` become a :class:`Prefix`."""
    from dataclasses import replace

    floor = max(0, floor)
    if floor <= (r.window_start if r.prefix is not None else 0) and r.prefix is None:
        return r
    log = r.log
    keep_from = int(np.searchsorted(log.col("last_offset"), floor, side="left")) if log.is_sorted() else 0
    if keep_from == 0 and r.prefix is None:
        return r
    head = BatchLog(log.data[:keep_from])
    rows, key = epoch_transitions(head.col("partition_leader_epoch"), head.col("base_offset"), head.col("magic"),
                                  r.prefix.last_key if r.prefix is not None else NO_KEY)
    end = head.end_offset  # None when no batch lies below the floor
    if end is None:
        end = r.window_start
    runs = list(r.prefix.runs) if r.prefix is not None else []
    for run in head.runs():
        runs[-1:] = [(runs[-1][0], run[1], run[2])] if runs and runs[-1][2] == run[2] else runs[-1:] + [run]
    before = r.prefix.transitions if r.prefix is not None else []
    starts = segment_starts(head.data, rows, len(before), r.prefix.segment_starts if r.prefix is not None else [])
    prefix = Prefix(end, before + rows, key, runs, starts)
    return replace(r, log=BatchLog(log.data[keep_from:]), prefix=prefix, notes=list(r.notes))


def segment_starts(rows: np.ndarray, transitions: list[tuple[int, int, int]], before: int,
                   starts: list[tuple[int, int, int, int, int]] | None) -> list[tuple[int, int, int, int, int]] | None:
    """:attr:`Prefix.segment_starts` once ``rows`` (replay columns, base offsets strictly increasing) follow the
    batches ``starts`` describes: ``transitions`` are those of ``rows`` (with the key carried), ``before`` how many
    come before them.  None when a segment index goes back (the recovered batches are then no run of the log)."""
    if starts is None or not len(rows):
        return starts
    seg = rows[:, _C["segment"]]
    last = starts[-1][0] if starts else None
    if (last is not None and int(seg[0]) < last) or bool(np.any(seg[1:] < seg[:-1])):
        return None
    new = np.flatnonzero(np.concatenate(([last is None or int(seg[0]) != last], seg[1:] != seg[:-1])))
    if not len(new):
        return starts
    base = rows[:, _C["base_offset"]]
    at = np.searchsorted(base, [b for _, b, _ in transitions])  # the rows the transitions are (bases distinct)
    through = np.searchsorted(at, new, side="right") + before
    ep, magic = rows[:, _C["partition_leader_epoch"]], rows[:, _C["magic"]]
    return starts + list(zip(seg[new].tolist(), ep[new].tolist(), base[new].tolist(), magic[new].tolist(),
                             through.tolist()))


def first_difference(a: BatchLog, b: BatchLog, floor: int = -1) -> int | None:
    """The first offset at or above ``floor`` where ``a`` and ``b`` hold different batches, within the range
    both cover; None when they agree there.

    Logs that agree are compared row against row (one vectorised pass); only
    from the first row where they stop lining up (a divergence, or batches
    one cleaner removed) are batches matched by offset.
    """
    if a.data is b.data or (a.data.shape == b.data.shape and bool(same_rows(a.data, b.data).all())):
        return None  # the same batches (a fleet's replicas that agree): nothing differs at any floor
    end = min(a.end_offset or 0, b.end_offset or 0)
    wa, wb = a.window(floor, end), b.window(floor, end)
    n = min(len(wa), len(wb))
    differs = ~same_rows(wa.data[:n], wb.data[:n])
    k = int(np.argmax(differs)) if n and differs.any() else n
    if k == n and len(wa) == len(wb):
        return None
    ra, rb = BatchLog(wa.data[k:]), BatchLog(wb.data[k:])
    firsts = []
    for x, y in ((ra, rb), (rb, ra)):
        alone = ~x.held_in(y)
        if alone.any():
            firsts.append(int(x.col("base_offset")[alone].min()))
    return min(firsts) if firsts else None
