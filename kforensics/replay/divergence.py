"""Where two replicas of one partition stop agreeing: the one comparison behind divergence maps and FORK verdicts.

Batches agree when base, last, epoch and CRC match.  Below both replicas'
cleaner offsets each broker's cleaner has rewritten batches independently,
and below either replica's log start offset retention (or DeleteRecords) has
removed batches from one of them, so batches there are not compared at all
(:func:`compared_from`).  Above, the first divergent offset is the lowest
base offset of a batch one replica has and the other lacks, within the range
both logs cover; what only the longer log holds is not a divergence but a
difference in length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

from .replica import BatchLog, Replica
from .replica import first_difference as replica_first_difference


def cleaned_below(a: Replica, b: Replica) -> int:
    """Below this offset both replicas' cleaners have run, so their batches need not match (-1: none)."""
    if a.cleaner_offset is None or b.cleaner_offset is None:
        return -1
    return min(a.cleaner_offset, b.cleaner_offset)


def compared_from(a: Replica, b: Replica) -> int:
    """The offset from which ``a`` and ``b`` are compared (the ``cleaned`` argument of :func:`first_difference`
    and :func:`missing_from`).

    Below it both cleaners have run, or one replica's log starts above it
    (retention or DeleteRecords removed its batches there), so a difference
    there is no divergence.
    """
    return max(cleaned_below(a, b), a.local_log_start, b.local_log_start)


def first_difference(a: BatchLog, b: BatchLog, cleaned: int = -1) -> int | None:
    """The first offset where ``a`` and ``b`` hold different batches, within the range both cover; None if none.

    Batches ending below ``cleaned`` are not compared (for two replicas,
    pass :func:`compared_from`); a batch reaching it is, at its base offset.
    """
    return replica_first_difference(a, b, cleaned)


def missing_from(a: BatchLog, b: BatchLog, cleaned: int = -1) -> BatchLog:
    """The batches of ``a`` (ending at or above ``cleaned``) that ``b`` does not hold."""
    return a.select((a.col("last_offset") >= cleaned) & ~a.held_in(b))


@dataclass
class Span:
    """A range of offsets ``[start, end)`` and how two replicas relate over it."""

    start: int
    end: int
    status: str  # "agree", "differ", "only_on_<broker>"


@dataclass
class Divergence:
    """Two replicas compared as found on disk (before any replay)."""

    brokers: tuple[int, int]
    first_divergent_offset: int | None
    log_end_offsets: tuple[int, int]
    compacted_below: int | None = None  # batches below this offset were not compared (both cleaners ran)
    agreement: list[Span] = field(default_factory=list)  # from ``compared_from``: nothing below it was compared

    @property
    def agree(self) -> bool:
        """No differing batch in the range both logs cover (one may still be longer)."""
        return self.first_divergent_offset is None


def compare(a: Replica, b: Replica) -> Divergence:
    """The first offset where ``a`` and ``b`` differ, and an agreement map.

    Only offsets from :func:`compared_from` on are compared (both cleaners ran
    below it, or one replica's log starts above it), so the map starts there.
    """
    cleaned = cleaned_below(a, b)
    start = compared_from(a, b)
    first = first_difference(a.log, b.log, start)
    if first is not None:
        first = max(first, start)  # a differing batch that straddles the start differs from the start on
    end_a, end_b = a.log_end_offset, b.log_end_offset
    short = min(end_a, end_b)
    agree_to = first if first is not None else short
    spans = [Span(start, agree_to, "agree")] if agree_to > start else []
    if first is not None and short > first:
        spans.append(Span(first, short, "differ"))
    if max(end_a, end_b) > max(short, start):
        longer = a if end_a > end_b else b
        spans.append(Span(max(short, start), max(end_a, end_b), f"only_on_{longer.broker_id}"))
    return Divergence((a.broker_id, b.broker_id), first, (end_a, end_b), cleaned if cleaned > 0 else None, spans)


def divergence(replicas: list[Replica]) -> list[Divergence]:
    """Pairwise divergence for every pair of replicas, in broker order."""
    return [compare(a, b) for a, b in combinations(sorted(replicas, key=lambda r: r.broker_id), 2)]


def in_sync_divergence(replicas: list[Replica]) -> list[Divergence]:
    """:func:`divergence` of replicas that hold the same batches, log start, log end and cleaner offset
    (:func:`kforensics.replay.in_sync.in_sync`): one pair is compared and every pair answers the same, but for
    its brokers (equal log ends leave no ``only_on_<broker>`` span)."""
    ordered = sorted(replicas, key=lambda r: r.broker_id)
    if len(ordered) < 2:
        return []
    one = compare(ordered[0], ordered[0])  # each replica stands for every other: the same comparison
    return [Divergence((a.broker_id, b.broker_id), one.first_divergent_offset, one.log_end_offsets,
                       one.compacted_below, [Span(s.start, s.end, s.status) for s in one.agreement])
            for a, b in combinations(ordered, 2)]
