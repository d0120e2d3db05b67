"""Offsets and attributes across the batches of a partition, checked chunk by chunk as the walk streams them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..findings import Finding, Severity, finding
from ..formats.record_batch import COMPRESSION_MASK, MAGIC
from ..log.batch_table import BatchTable

#: the largest codec id each magic knows (zstd needs magic 2)
_MAX_CODEC = {0: 3, 1: 3, 2: 4}


class OffsetCheck:
    """Batches must start after the previous batch's last offset, within and across segments.

    A legacy wrapper's first offset is unknown without decompressing it, so
    only its last offset is checked.  Gaps are information when compaction
    explains them (at or below the cleaner offset, or no cleaner checkpoint).
    """

    def __init__(self, add: Callable[[Finding], None], cleaner_offset: int | None):
        self.add = add
        self.cleaner_offset = cleaner_offset
        self.prev_last: int | None = None

    def feed(self, t: BatchTable, file: str) -> np.ndarray:
        """Check one chunk; returns each row's first offset (known or inferred)."""
        last = t["last_offset"]
        base = t["base_offset"]
        pos = t["position"]
        prev = self.prev_last if self.prev_last is not None else -1
        starts = np.concatenate(([prev], last[:-1]))
        known_base = np.where(base >= 0, base, np.where(starts >= 0, np.minimum(last, starts + 1), last))
        # offsets are non-negative and a batch never ends before it starts; a flipped bit outside the CRC does this
        # (-1 stands for "unknown" only in a legacy wrapper's row: a v2 batch's baseOffset of -1 is its own)
        v2 = t["magic"] >= MAGIC
        for i in np.nonzero((base < -1) | ((base == -1) & v2) | (last < 0) | ((base >= 0) & (last < base)))[0][:100]:
            self.add(finding("OFFSET_OUT_OF_RANGE", f"batch claims offsets {int(base[i])}..{int(last[i])}",
                             file=file, position=int(pos[i]), base_offset=int(base[i]), last_offset=int(last[i])))
        bad = np.nonzero((known_base <= starts) | (last <= starts))[0]
        for i in bad[:100]:
            if self.prev_last is None and i == 0:
                continue
            self.add(finding("OFFSET_NOT_INCREASING",
                             f"batch at offsets {int(known_base[i])}..{int(last[i])} does not follow offset "
                             f"{int(starts[i])}", file=file, position=int(pos[i]),
                             previous_last_offset=int(starts[i]), base_offset=int(known_base[i])))
        for i in np.nonzero(known_base > starts + 1)[0][:100]:
            if starts[i] < 0:
                continue
            # Kafka assigns offsets contiguously; only compaction removes some
            compacted = self.cleaner_offset is None or int(known_base[i]) <= self.cleaner_offset
            self.add(finding("OFFSET_GAP", f"offsets {int(starts[i]) + 1}..{int(known_base[i]) - 1} absent"
                                           + (" (consistent with compaction)" if compacted
                                              else " (above the cleaner offset)"),
                             severity=None if compacted else Severity.LOW, file=file, position=int(pos[i]),
                             gap_from=int(starts[i]) + 1, gap_to=int(known_base[i]) - 1, compacted=compacted))
        if len(t):
            top = int(last.max())
            self.prev_last = top if self.prev_last is None else max(self.prev_last, top)
        return known_base


def check_attributes(t: BatchTable, file: str, add: Callable[[Finding], None]) -> None:
    """A CRC-valid batch whose codec does not exist for its magic cannot be read by Kafka."""
    magic, attrs = t["magic"], t["attributes"]
    codec = attrs & COMPRESSION_MASK
    limit = np.where(magic == MAGIC, _MAX_CODEC[2], _MAX_CODEC[0])
    for i in np.nonzero(t.crc_valid() & (codec > limit))[0][:100]:
        add(finding("INVALID_ATTRIBUTES", f"batch with a valid CRC declares unknown compression codec "
                                          f"{int(codec[i])} for magic {int(magic[i])}",
                    file=file, position=int(t["position"][i]), attributes=int(attrs[i])))

