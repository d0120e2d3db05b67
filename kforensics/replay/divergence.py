"""Where two replicas of one partition stop agreeing: the one comparison behind divergence maps and FORK verdicts.

Batches agree when base, last, epoch and CRC match.  Below both replicas'
cleaner offsets each broker's cleaner has rewritten batches independently,
so batches there are not compared at all.  Above, the first divergent offset
is the lowest base offset of a batch one replica has and the other lacks,
within the range both logs cover; what only the longer log holds is not a
divergence but a difference in length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from .replica import BatchLog, Replica


def cleaned_below(a: Replica, b: Replica) -> int:
    """Below this offset both replicas' cleaners have run, so their batches need not match (-1: none)."""
    if a.cleaner_offset is None or b.cleaner_offset is None:
        return -1
    return min(a.cleaner_offset, b.cleaner_offset)


def _keys(log: BatchLog, mask: np.ndarray) -> np.ndarray:
    ident = np.ascontiguousarray(log.identity()[mask])
    return ident.view(np.dtype((np.void, ident.dtype.itemsize * ident.shape[1]))).ravel()


def first_difference(a: BatchLog, b: BatchLog, cleaned: int = -1) -> int | None:
    """The first offset where ``a`` and ``b`` hold different batches, within the range both cover; None if none."""
    end = min(a.end_offset or 0, b.end_offset or 0)
    ma = (a.col("last_offset") >= cleaned) & (a.col("base_offset") < end)
    mb = (b.col("last_offset") >= cleaned) & (b.col("base_offset") < end)
    ka, kb = _keys(a, ma), _keys(b, mb)
    only_a = ~np.isin(ka, kb)
    only_b = ~np.isin(kb, ka)
    firsts = []
    if only_a.any():
        firsts.append(int(a.col("base_offset")[ma][only_a].min()))
    if only_b.any():
        firsts.append(int(b.col("base_offset")[mb][only_b].min()))
    return min(firsts) if firsts else None


def missing_from(a: BatchLog, b: BatchLog, cleaned: int = -1) -> BatchLog:
    """The batches of ``a`` (at or above ``cleaned``) that ``b`` does not hold."""
    ma = a.col("last_offset") >= cleaned
    keep = np.zeros(len(a), dtype=bool)
    keep[np.flatnonzero(ma)] = ~np.isin(_keys(a, ma), _keys(b, np.ones(len(b), dtype=bool)))
    return a.select(keep)


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
    agreement: list[Span] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        """No differing batch in the range both logs cover (one may still be longer)."""
        return self.first_divergent_offset is None


def compare(a: Replica, b: Replica) -> Divergence:
    """The first offset where ``a`` and ``b`` differ, and an agreement map."""
    cleaned = cleaned_below(a, b)
    first = first_difference(a.log, b.log, cleaned)
    end_a, end_b = a.log_end_offset, b.log_end_offset
    short = min(end_a, end_b)
    start = min(a.log_start, b.log_start)
    agree_to = first if first is not None else short
    spans = [Span(start, agree_to, "agree")] if agree_to > start else []
    if first is not None and short > first:
        spans.append(Span(first, short, "differ"))
    if end_a != end_b:
        longer = a if end_a > end_b else b
        spans.append(Span(short, max(end_a, end_b), f"only_on_{longer.broker_id}"))
    return Divergence((a.broker_id, b.broker_id), first, (end_a, end_b), cleaned if cleaned > 0 else None, spans)


def divergence(replicas: list[Replica]) -> list[Divergence]:
    """Pairwise divergence for every pair of replicas, in broker order."""
    return [compare(a, b) for a, b in combinations(sorted(replicas, key=lambda r: r.broker_id), 2)]
