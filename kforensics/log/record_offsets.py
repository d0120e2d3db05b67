"""Record offsets and sequences as Kafka computes them: long and int32 wrap-around, deltas within a batch."""

from __future__ import annotations

import numpy as np


def wrap_long(value: int) -> int:
    """``value`` as Java's long arithmetic leaves it (two's complement wrap)."""
    if -(1 << 63) <= value < 1 << 63:
        return value
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def last_offset_delta(base_offset: int, last_offset: int) -> int:
    """A v2 batch's lastOffsetDelta, from the base and last offsets the walk gives (its sum wraps as a long)."""
    return wrap_long(last_offset - base_offset)


class OffsetOrder:
    """Checks record offset deltas, chunk by chunk: within ``0..last`` and strictly increasing.

    :meth:`check` returns the first problem of a chunk (code, record index,
    delta) and remembers the last delta for the next chunk; a batch reports
    each problem once.
    """

    def __init__(self, last: int):
        self.last = last
        self.prev: int | None = None
        self.seen: set[str] = set()

    def check(self, deltas: np.ndarray, first_index: int) -> list[tuple[str, int, int]]:
        out = []
        if len(deltas) and "RECORD_OFFSET_OUT_OF_BATCH" not in self.seen:
            hits = np.flatnonzero((deltas < 0) | (deltas > self.last))
            if len(hits):
                i = int(hits[0])
                out.append(("RECORD_OFFSET_OUT_OF_BATCH", first_index + i, int(deltas[i])))
        if len(deltas) and "RECORD_OFFSETS_NOT_INCREASING" not in self.seen:
            prev = np.empty(len(deltas), dtype=np.int64)
            prev[0] = self.prev if self.prev is not None else np.iinfo(np.int64).min
            prev[1:] = deltas[:-1]
            hits = np.flatnonzero(deltas <= prev)
            if len(hits):
                i = int(hits[0])
                out.append(("RECORD_OFFSETS_NOT_INCREASING", first_index + i, int(deltas[i])))
        if len(deltas):
            top = int(deltas.max())
            self.prev = top if self.prev is None else max(self.prev, top)
        self.seen.update(code for code, _, _ in out)
        return out

    @staticmethod
    def message(code: str, index: int, delta: int, last: int) -> str:
        if code == "RECORD_OFFSET_OUT_OF_BATCH":
            return f"record {index}: offset delta {delta} outside the batch's 0..{last}"
        return f"record {index}: offset delta {delta} does not exceed the previous record's"


def wrap_sequence(base: int, delta: int) -> int:
    """``base + delta`` as Kafka's producer sequences wrap (Int32.MAX to 0); -1 without a sequence."""
    if base < 0:
        return -1
    return (base + delta) % 2147483648
