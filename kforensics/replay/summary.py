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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..epoch.versions import KafkaVersion
from .replica import COLUMNS, IDENTITY, Replica

#: offsets per digest range: a few hundred ranges for a million batches
CHUNK_OFFSETS = 1 << 14
_BASE, _MAGIC, _CRC_VALID = COLUMNS.index("base_offset"), COLUMNS.index("magic"), COLUMNS.index("crc_valid")


@dataclass
class ReplicaSummary:
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

    def digest_of(self, chunk: int) -> bytes | None:
        try:
            return self.digests[self.chunks.index(chunk)]
        except ValueError:
            return None


class SummaryBuilder:
    """Digests a replica's batches as they stream by (replay columns, in log order)."""

    def __init__(self, chunk_offsets: int = CHUNK_OFFSETS) -> None:
        self.chunk_offsets = chunk_offsets
        self._hashers: dict[int, object] = {}
        self._order: list[int] = []
        self.first_damaged: int | None = None
        self.has_legacy = False

    def feed(self, rows: np.ndarray) -> None:
        if not len(rows):
            return
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

    def finish(self, r: Replica) -> ReplicaSummary:
        """The summary of replica ``r`` (its checkpoints and recovery plan; the batches were fed)."""
        return ReplicaSummary(r.broker_id, self.chunk_offsets, list(self._order),
                              [self._hashers[c].digest() for c in self._order], r.log_start, r.log_end_offset,
                              r.cleaner_offset, r.high_watermark, self.first_damaged, self.has_legacy,
                              reaches(r))


def reaches(r: Replica) -> list[int]:
    """Offsets the restart reaches on ``r``: where recovery re-reads from and cuts, where kept damage lies."""
    out = []
    plan = r.recovery
    if plan is not None:
        if plan.recovers and plan.from_segment is not None:
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


def window_floor(summaries: list[ReplicaSummary], mode: KafkaVersion) -> int:
    """The offset from which a group's replay needs the batches: the first range where replicas can differ,
    lowered to every offset restart, damage or a high-watermark truncation can reach; a range boundary."""
    if not summaries:
        return 0
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
