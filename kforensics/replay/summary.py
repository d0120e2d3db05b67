"""Replica summaries: what a partition group's replay must know before it reads any batch.

A summary is computed while a replica is scanned (by the Spark executors and
by ``kforensics replay`` alike): a digest over the identity of the batches
(base offset, last offset, epoch, stored CRC) for each fixed range of
offsets, plus the offsets where restart, damage or high-watermark truncation
can reach.  Comparing the summaries of a group gives the lowest offset from
which the replicas can differ in anything the replay looks at; below it every
replica holds the same batches, so the replay needs only the batches from
there on (:func:`window_floor`, :func:`kforensics.replay.replica.elide`).
When the replay reaches lower after all it asks for more
(:class:`~kforensics.replay.replica.NeedRows`), so the window only ever
saves work, never changes an answer.

The summary also marks, at each range boundary, what the replay keeps of the
batches below it (:class:`Marks`: their epoch transitions and runs and where
they end, as :func:`~kforensics.replay.replica.elide` makes them), so a
caller holding only the batches from the floor on (the Spark replay) needs
nothing else of the log below.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from ..epoch.rebuild import NO_KEY, epoch_transitions
from ..epoch.versions import KafkaVersion
from ..pickling import ByFields
from .replica import COLUMNS, IDENTITY, Prefix, Replica, segment_starts

#: offsets per digest range: a few hundred ranges for a million batches
CHUNK_OFFSETS = 1 << 14
#: most epoch transitions, epoch runs or segments a summary keeps to give prefixes (a log with more, hostile or
#: odd, gets none: a windowed replica's prefix is then read from its batches)
PREFIX_CAP = 4096
_BASE, _MAGIC, _CRC_VALID = COLUMNS.index("base_offset"), COLUMNS.index("magic"), COLUMNS.index("crc_valid")
_LAST, _EPOCH, _SEG = COLUMNS.index("last_offset"), COLUMNS.index("partition_leader_epoch"), COLUMNS.index("segment")


@dataclass
class Marks:
    """What :func:`~kforensics.replay.replica.elide` makes of the batches below any window floor that is a range
    boundary, without the batches: the log's epoch transitions and runs (one per change of epoch or format, so
    few), and a *mark* per range that last offsets end in, saying how far into them the batches up to it reach.

    Kept only for a log in order (base offsets increase, last offsets never decrease): the batches below a
    floor are then the first ones, those whose last offsets lie in the ranges below it.
    """

    rows: int = 0  # batches in the log
    transitions: list[tuple[int, int, int]] = field(default_factory=list)  # (epoch, base offset, magic), all
    runs: list[tuple[int, int, int]] = field(default_factory=list)  # (first, last offset, epoch), all
    # per mark, in log order (a mark holds for the floors from the range after its own to the next mark's range):
    chunks: list[int] = field(default_factory=list)  # the range the last offsets of its batches end in
    below: list[int] = field(default_factory=list)  # the batches up to its last one
    ends: list[int] = field(default_factory=list)  # the next offset after them
    keys: list[int] = field(default_factory=list)  # the epoch key of the last of them (epoch_transitions')
    n_transitions: list[int] = field(default_factory=list)  # how many transitions they hold
    n_runs: list[int] = field(default_factory=list)  # how many runs they reach into
    # the first batch of each segment (Prefix.segment_starts, all), the batch each is, and the first batch whose
    # segment index goes back (None: none does): a prefix holding it has no segment starts, as elide makes it
    starts: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    start_rows: list[int] = field(default_factory=list)
    starts_until: int | None = None

    def at(self, chunk: int) -> tuple[int, Prefix | None]:
        """(batches below the floor at the start of range ``chunk``, their prefix: None when there are none)."""
        i = bisect_left(self.chunks, chunk) - 1
        if i < 0:
            return 0, None
        end, runs = self.ends[i], self.runs[: self.n_runs[i]]
        first, _, epoch = runs[-1]
        runs[-1] = (first, end - 1, epoch)  # the last run, cut at the floor: up to the last batch below it
        below = self.below[i]
        starts = (None if self.starts_until is not None and below > self.starts_until
                  else self.starts[: bisect_left(self.start_rows, below)])
        return below, Prefix(end, self.transitions[: self.n_transitions[i]], self.keys[i], runs, starts)


@dataclass
class ReplicaSummary(ByFields):
    """One replica reduced to digests per offset range and the offsets the replay can reach."""

    broker_id: int
    chunk_offsets: int
    chunks: list[int] = field(default_factory=list)  # range numbers holding batches, in log order
    digests: list[bytes] = field(default_factory=list)  # 16-byte BLAKE2b over the batches' identities, per range
    log_start: int = 0
    log_end_offset: int = 0
    cleaner_offset: int | None = None
    high_watermark: int | None = None
    first_damaged: int | None = None  # base offset of the first batch whose CRC fails
    has_legacy: bool = False  # batches with no leader epoch (magic < 2)
    reaches: list[int] = field(default_factory=list)  # offsets restart or kept damage reach (recovery's cut ...)
    marks: Marks | None = None  # the prefixes below range boundaries (None: the log is out of order, or too odd)
    segments: list[str] | None = None  # the segments holding batches, in log order (with ``marks`` only)

    def below(self, floor: int) -> tuple[int, Prefix | None] | None:
        """What ``elide(replica, floor)`` makes of the batches below ``floor``: (how many, their
        :class:`~kforensics.replay.replica.Prefix`, None when there are none); None when the summary cannot tell
        (no marks kept, or a floor that is no range boundary)."""
        if self.marks is None or floor % self.chunk_offsets:
            return None
        if floor <= 0:
            return 0, None  # elide keeps everything
        return self.marks.at(floor // self.chunk_offsets)

    def digest_of(self, chunk: int) -> bytes | None:
        try:
            return self.digests[self.chunks.index(chunk)]
        except ValueError:
            return None


class SummaryBuilder:
    """Digests a replica's batches as they stream by (replay columns, in log order), and marks what their prefix
    is at each range boundary (:class:`Marks`)."""

    def __init__(self, chunk_offsets: int = CHUNK_OFFSETS) -> None:
        self.chunk_offsets = chunk_offsets
        self._hashers: dict[int, hashlib.blake2b] = {}
        self._order: list[int] = []
        self.first_damaged: int | None = None
        self.has_legacy = False
        self.marks: Marks | None = Marks()
        self._key = NO_KEY  # the epoch key of the last batch fed
        self._last_row: tuple[int, int] | None = None  # (base, last offset) of the last batch fed
        self._last_segment: int | None = None  # the segment index of the last batch fed
        self.segments_in_order = True  # segment indexes never go back (from batch to batch as fed)

    def out_of_order(self) -> None:
        """The rows are not fed in the order of the replica's log (its maker sorts them): keep no marks."""
        self.marks = None

    def feed(self, rows: np.ndarray, mark: bool = True) -> None:
        """Digest ``rows`` (the next in log order) and, with ``mark``, extend the marks by them (without: the caller
        passes them to :meth:`mark` later, in the same order, before any row after them is marked)."""
        if not len(rows):
            return
        if mark:
            self.mark(rows)
        seg = rows[:, _SEG]
        if self.segments_in_order and ((self._last_segment is not None and int(seg[0]) < self._last_segment)
                                       or bool(np.any(seg[1:] < seg[:-1]))):
            self.segments_in_order = False
        self._last_segment = int(seg[-1])
        base = rows[:, _BASE]
        chunk = np.floor_divide(np.maximum(base, 0), self.chunk_offsets)
        ident = np.ascontiguousarray(rows[:, IDENTITY])
        starts = np.flatnonzero(np.concatenate(([True], chunk[1:] != chunk[:-1])))
        ends = np.concatenate((starts[1:], [len(rows)]))
        for a, b in zip(starts.tolist(), ends.tolist()):
            c = int(chunk[a])
            h = self._hashers.get(c)
            if h is None:
                h = self._hashers[c] = hashlib.blake2b(digest_size=16)
                self._order.append(c)
            h.update(ident[a:b].tobytes())
        if self.first_damaged is None:
            bad = np.flatnonzero(rows[:, _CRC_VALID] == 0)
            if len(bad):
                self.first_damaged = int(base[bad[0]])
        self.has_legacy = self.has_legacy or bool((rows[:, _MAGIC] < 2).any())

    def mark(self, rows: np.ndarray) -> None:
        """Extend the marks by ``rows`` (fed already, or being fed)."""
        if self.marks is not None and len(rows):
            self._mark(self.marks, rows)

    def _mark(self, m: Marks, rows: np.ndarray) -> None:
        """Extend the marks ``m`` by ``rows`` (or drop them: rows out of order, or too many changes)."""
        base, last, ep = rows[:, _BASE], rows[:, _LAST], rows[:, _EPOCH]
        if not _in_order(base, last, self._last_row):
            self.marks = None  # elide windows no log whose bases go back (and it searches the last offsets)
            return
        trans, key = epoch_transitions(ep, base, rows[:, _MAGIC], self._key)
        starts = np.flatnonzero(np.concatenate((np.array([not m.runs or int(ep[0]) != m.runs[-1][2]]),
                                                ep[1:] != ep[:-1])))
        seg_starts, until = self._segment_starts(m, rows, trans)
        if len(m.transitions) + len(trans) > PREFIX_CAP or len(m.runs) + len(starts) > PREFIX_CAP or (
                len(seg_starts) > PREFIX_CAP):
            self.marks = None  # about as many changes as batches: the prefix is read from the batches
            return
        self._add_marks(m, base, last, trans, starts)
        _add_runs(m.runs, base, last, ep, starts)
        new = seg_starts[len(m.starts):]
        m.start_rows += (np.searchsorted(base, [b for _, _, b, _, _ in new]) + m.rows).tolist()
        m.starts, m.starts_until = seg_starts, until
        m.transitions += trans
        m.rows += len(rows)
        self._key, self._last_row = key, (int(base[-1]), int(last[-1]))

    @staticmethod
    def _segment_starts(m: Marks, rows: np.ndarray, trans: list[tuple[int, int, int]]
                        ) -> tuple[list[tuple[int, int, int, int, int]], int | None]:
        """The segment starts (:attr:`Marks.starts`) and :attr:`Marks.starts_until` once ``rows`` (in order; ``trans``
        their transitions) are added to ``m``: the starts up to the first row whose segment index goes back."""
        if m.starts_until is not None:
            return m.starts, m.starts_until
        seg = rows[:, _SEG]
        last = m.starts[-1][0] if m.starts else None
        back = np.flatnonzero(np.concatenate(([last is not None and int(seg[0]) < last], seg[1:] < seg[:-1])))
        k = int(back[0]) if len(back) else len(rows)
        starts = segment_starts(rows[:k], trans, len(m.transitions), m.starts)
        if starts is None:  # None only where a segment index goes back, and rows[:k] stop before the first such
            raise AssertionError("segment starts lost before the first segment that goes back")
        return starts, (m.rows + k if len(back) else None)

    def _add_marks(self, m: Marks, base: np.ndarray, last: np.ndarray, trans: list[tuple[int, int, int]],
                   starts: np.ndarray) -> None:
        """A mark in ``m`` after the last of these rows in each range their last offsets end in (``trans``: the
        transitions they add, ``starts``: the rows starting a run); the mark of a range they continue is
        replaced."""
        q = np.floor_divide(last, self.chunk_offsets)
        ends = np.flatnonzero(np.concatenate((q[1:] != q[:-1], [True])))  # the last row of each range
        if m.chunks and m.chunks[-1] == int(q[0]):
            for marks in (m.chunks, m.below, m.ends, m.keys, m.n_transitions, m.n_runs):
                marks.pop()
        at = np.searchsorted(base, [b for _, b, _ in trans])  # the rows they are (bases are distinct here)
        seen = np.searchsorted(at, ends, side="right")
        keys = [self._key] + [_key_of(t) for t in trans]  # the key after each transition (at most the cap)
        m.chunks += q[ends].tolist()
        m.below += (ends + 1 + m.rows).tolist()
        m.ends += [x + 1 for x in last[ends].tolist()]  # Python ints: a last offset may be the largest int64
        m.keys += [keys[j] for j in seen.tolist()]
        m.n_transitions += (seen + len(m.transitions)).tolist()
        m.n_runs += (np.searchsorted(starts, ends, side="right") + len(m.runs)).tolist()

    def finish(self, r: Replica) -> ReplicaSummary:
        """The summary of replica ``r`` (its checkpoints, recovery plan and segments; the batches were fed)."""
        kept = self.marks is not None and len(r.segments) <= PREFIX_CAP
        return ReplicaSummary(r.broker_id, self.chunk_offsets, list(self._order),
                              [self._hashers[c].digest() for c in self._order], r.log_start, r.log_end_offset,
                              r.cleaner_offset, r.high_watermark, self.first_damaged, self.has_legacy,
                              reaches(r, self.segments_in_order), self.marks if kept else None,
                              [str(s) for s in r.segments] if kept else None)


def _add_runs(runs: list[tuple[int, int, int]], base: np.ndarray, last: np.ndarray, ep: np.ndarray,
              starts: np.ndarray) -> None:
    """Extend the epoch runs (as :meth:`BatchLog.runs` gives them) by these rows (``starts``: the rows starting
    a run; without one at row 0 the last run goes on)."""
    if runs and (not len(starts) or starts[0] > 0):
        first, _, epoch = runs[-1]
        runs[-1] = (first, int(last[starts[0] - 1] if len(starts) else last[-1]), epoch)
    run_ends = np.concatenate((starts[1:] - 1, [len(ep) - 1]))
    runs += [(int(base[a]), int(last[b]), int(ep[a])) for a, b in zip(starts.tolist(), run_ends.tolist())]


def _in_order(base: np.ndarray, last: np.ndarray, before: tuple[int, int] | None) -> bool:
    """Whether base offsets strictly increase and last offsets never decrease, from the batch ``before``
    (base, last offset) on."""
    if before is not None and not (int(base[0]) > before[0] and int(last[0]) >= before[1]):
        return False
    return bool(np.all(base[1:] > base[:-1]) and np.all(last[1:] >= last[:-1]))


def _key_of(transition: tuple[int, int, int]) -> int:
    """The epoch key of one batch (epoch, base offset, magic), as :func:`epoch_transitions` keys it."""
    epoch, base, magic = transition
    return epoch_transitions(np.array([epoch]), np.array([base]), np.array([magic]))[1]


def reaches(r: Replica, segments_in_order: bool = True) -> list[int]:
    """Offsets the restart reaches on ``r``: where recovery cuts, where kept damage lies; and where recovery
    re-reads from when ``r``'s segment indexes go back (``segments_in_order`` False).

    Below the window recovery needs only the epoch transitions of the batches it re-reads, which a prefix gives
    (:attr:`~kforensics.replay.replica.Prefix.segment_starts`, see :func:`kforensics.replay.restart.load_cache`)
    when the segments are in log order; what it cuts or finds damaged has marks of its own (the cut, the lost
    offsets, the first damaged batch), so a crashed broker's log is not read from its recovered segment's start.
    A prefix lacking the starts makes the restart ask for the rows (NeedRows), so this never changes an answer.
    """
    out = []
    plan = r.recovery
    if plan is not None:
        if plan.recovers and plan.from_segment is not None and not segments_in_order:
            out.append(plan.from_segment)
        if plan.truncates and plan.log_end_offset is not None:
            out.append(plan.log_end_offset)
        if plan.lost_first_offset is not None:
            out.append(plan.lost_first_offset)
        if plan.damage_kept is not None:
            # kept damage: where reads start to fail (its segment's last valid offset); unknown: everything
            out.append(plan.damage_kept_offset if plan.damage_kept_offset is not None else 0)
    return out


def summarize(r: Replica, chunk_offsets: int = CHUNK_OFFSETS) -> ReplicaSummary:
    """The summary of a replica whose batches are all at hand."""
    b = SummaryBuilder(chunk_offsets)
    b.feed(np.ascontiguousarray(r.log.data))
    return b.finish(r)


def first_disagreement(summaries: list[ReplicaSummary]) -> int | None:
    """The start of the first offset range where the replicas' batches can differ (None: nowhere)."""
    if len(summaries) < 2:
        return None
    size = summaries[0].chunk_offsets
    cleaned = min((s.cleaner_offset if s.cleaner_offset is not None else -1) for s in summaries)
    for c in sorted({c for s in summaries for c in s.chunks}):
        lo, hi = c * size, (c + 1) * size
        if hi <= cleaned:
            continue  # every cleaner ran over this range: the replay does not compare it
        seen = set()
        for s in summaries:
            if hi <= s.log_start:
                continue  # below this replica's log start: it holds none of it, rightly
            if lo < s.log_start:
                return lo  # its log starts inside the range: compare there
            seen.add(s.digest_of(c))
        if len(seen) > 1:
            return lo
    return None


def needs_summaries(r: Replica, chunk_offsets: int = CHUNK_OFFSETS) -> bool:
    """Whether a group holding replica ``r`` can be windowed above offset 0: not when ``r``'s log ends within the
    first range, since :func:`window_floor` keeps the last batches of the shortest log (a fleet of small
    partitions is replayed whole without a digest computed)."""
    return r.log_end_offset > chunk_offsets


def window_floor(summaries: Sequence[ReplicaSummary | None], mode: KafkaVersion) -> int:
    """The offset from which a group's replay needs the batches: the first range where replicas can differ,
    lowered to every offset restart, damage or a high-watermark truncation can reach; a range boundary.  A replica
    without a summary (its log ends within the first range: :func:`needs_summaries`, which is why none was made)
    keeps the whole group from offset 0, as its summary would: the last batches of the shortest log are kept."""
    if not summaries or any(s is None for s in summaries):
        return 0
    summaries = cast(list[ReplicaSummary], summaries)
    size = summaries[0].chunk_offsets
    marks = [min(s.log_end_offset for s in summaries) - 1]  # keep the last batches: the replay starts there
    differ = first_disagreement(summaries)
    if differ is not None:
        marks.append(differ)
    for s in summaries:
        marks += s.reaches
        if s.first_damaged is not None:
            marks.append(s.first_damaged)
        if (not mode.has_epochs or s.has_legacy) and s.high_watermark is not None:
            marks.append(s.high_watermark)  # followers without epochs truncate to their high watermark
    floor = max(0, min(marks))
    return floor - floor % size


def floor_below(offset: int, chunk_offsets: int) -> int:
    """The window floor that takes a replay which reached ``offset`` below its window: the start of the range
    before the one holding ``offset`` (one range of margin, so the batch that straddles it is whole)."""
    return max(0, offset - offset % chunk_offsets - chunk_offsets) if offset > 0 else 0


def windowed(replicas: list[Replica], floor: int) -> list[Replica]:
    """The group windowed at ``floor`` (replicas already windowed lower are widened from their full form by
    the caller: this only narrows)."""
    from .replica import elide

    return [elide(r, floor) for r in replicas]


def replay_window(summaries: Sequence[ReplicaSummary | None], mode: KafkaVersion,
                  load: Callable[[int], list[Replica]]) -> tuple[list[Replica], Callable[[int], list[Replica]]]:
    """A group's replicas windowed where their summaries say the replay starts (``load(floor)`` gives the group
    windowed at ``floor``), and the reload that widens it when the replay reaches ``offset`` below it.

    The one windowing rule of both front ends: ``replay_group`` loads from the replicas it holds
    (:func:`windowed`), the Spark replay from the rows in the replicas' batch files.
    """
    floor = window_floor(summaries, mode)
    size = next((s.chunk_offsets for s in summaries if s is not None), CHUNK_OFFSETS)

    def reload(offset: int) -> list[Replica]:
        return load(floor_below(offset, size))

    return load(floor), reload
