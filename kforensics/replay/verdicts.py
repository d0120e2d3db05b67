"""Verdicts: what replay cost each replica, typed, with offsets, records, bytes, producers and the cause.

Codes come from the catalogue (:data:`kforensics.catalogue.VERDICTS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..catalogue import VERDICTS
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
    digests: list[RecordDigest] | None = None  # key/value digests, when asked for
    _batches: BatchLog | None = None  # the affected batches (to read digests back); not serialised

    def __post_init__(self) -> None:
        if self.code not in VERDICTS:
            raise KeyError(f"verdict code {self.code} is not in the catalogue")

    @property
    def batches(self) -> BatchLog | None:
        return self._batches

    @property
    def severity(self):
        return VERDICTS[self.code].severity


def verdict_over(code: str, batches: BatchLog, *, cause: str, detail: str) -> Verdict:
    """A verdict covering ``batches``: their offset ranges, record count, bytes and producers."""
    base, last = batches.col("base_offset"), batches.col("last_offset")
    ranges = [(int(b), int(la)) for b, la in zip(base[:MAX_LISTED].tolist(), last[:MAX_LISTED].tolist())]
    pids = sorted({int(p) for p in np.unique(batches.col("producer_id")) if p >= 0})[:MAX_LISTED]
    return Verdict(code, ranges, int(batches.col("records_count").clip(min=0).sum()),
                   int(batches.col("size_in_bytes").sum()), pids, cause, detail, _batches=batches)
