"""Verdicts: what replay cost each replica, typed, with offsets, records, bytes, producers and the cause.

Codes come from the catalogue (:data:`kforensics.catalogue.VERDICTS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..catalogue import VERDICTS
from ..severity import Severity
from .replica import BatchLog

#: at most this many offset ranges or producer ids are listed in one verdict (the counts cover all)
MAX_LISTED = 1000


@dataclass
class RecordDigest:
    """One lost or forked record, identified without its content."""

    offset: int
    key_sha256: str | None
    value_sha256: str | None
    value_size: int
    producer_id: int


@dataclass
class Verdict:
    """One finding of the replay about one replica."""

    code: str
    offsets: list[tuple[int, int]] = field(default_factory=list)  # [base, last] ranges of the affected batches
    records: int = 0
    bytes: int = 0
    producer_ids: list[int] = field(default_factory=list)
    cause: str = ""  # what did it: "truncation", "recovery", "election", ...
    detail: str = ""
    facts: dict[str, Any] = field(default_factory=dict)  # code-specific facts (JSON values), e.g. rounds that repeat
    digests: list[RecordDigest] | None = None  # key/value digests, when asked for
    _batches: BatchLog | None = None  # the affected batches (to read digests back); not serialised

    def __post_init__(self) -> None:
        if self.code not in VERDICTS:
            raise KeyError(f"verdict code {self.code} is not in the catalogue")

    @property
    def batches(self) -> BatchLog | None:
        return self._batches

    @property
    def severity(self) -> Severity:
        return VERDICTS[self.code].severity


def offset_ranges(base: np.ndarray, last: np.ndarray, limit: int = MAX_LISTED) -> list[tuple[int, int]]:
    """Batches' ``[base, last]`` extents merged where one batch follows the next directly."""
    if not len(base):
        return []
    breaks = np.flatnonzero(base[1:] != last[:-1] + 1)
    starts = np.concatenate(([0], breaks + 1))[:limit]
    ends = np.concatenate((breaks, [len(base) - 1]))[:limit]
    return [(int(a), int(b)) for a, b in zip(base[starts].tolist(), last[ends].tolist())]


def verdict_over(code: str, batches: BatchLog, *, cause: str, detail: str, extra: Sequence[tuple[int, int]] = (),
                 **facts: Any) -> Verdict:
    """A verdict covering ``batches``: their offset ranges, record count, bytes and producers.

    ``extra`` adds offset ranges no readable batch stands for (a torn batch, zeroed bytes).
    """
    base, last = batches.col("base_offset"), batches.col("last_offset")
    ranges: list[tuple[int, int]] = []
    for a, b in sorted(offset_ranges(base, last) + [(int(a), int(b)) for a, b in extra]):
        if ranges and a == ranges[-1][1] + 1:
            ranges[-1] = (ranges[-1][0], b)
        else:
            ranges.append((a, b))
    pids = [int(p) for p in np.unique(batches.col("producer_id")) if p >= 0][:MAX_LISTED]
    return Verdict(code, ranges, int(batches.col("records_count").clip(min=0).sum()),
                   int(batches.col("size_in_bytes").sum()), pids, cause, detail, facts, _batches=batches)
