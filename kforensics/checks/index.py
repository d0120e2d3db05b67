"""A segment's ``.index`` and ``.timeindex`` checked against its batches, as they stream past.

The one implementation behind both ``scan`` and ``dump --verify-index-only``
(kafka-dump-log's check): an offset-index entry must point at the start of
a batch, and name that batch's last offset (since KAFKA-806; before it, one
entry per follower append may name a later batch's offset, which is normal);
a time-index entry must name a batch's last offset and carry that batch's
max timestamp.  Problems are reported once per kind per file, at the first
entry, with a count.
"""

from __future__ import annotations

import numpy as np

from ..findings import Finding, Severity, finding
from ..formats import offset_index, time_index
from ..log.batch_table import BatchTable


class IndexCheck:
    """Feed every chunk of a segment's batches, then :meth:`finish` for the findings."""

    def __init__(self, index: offset_index.OffsetIndex | None, timeindex: time_index.TimeIndex | None,
                 index_file: str | None = None, timeindex_file: str | None = None):
        self.index, self.timeindex = index, timeindex
        self.index_file, self.timeindex_file = index_file, timeindex_file
        n = len(index) if index is not None else 0
        self.at_batch = np.zeros(n, bool)  # the entry's position is a batch start
        self.same_offset = np.zeros(n, bool)  # ... and names that batch's last offset
        self.log_offset = np.full(n, -1, np.int64)  # the last offset of the batch at the entry's position
        m = len(timeindex) if timeindex is not None else 0
        self.t_found = np.zeros(m, bool)  # the entry names a batch's last offset
        self.t_ts_ok = np.zeros(m, bool)  # ... and carries that batch's max timestamp
        self.last_offset: int | None = None
        self.batches = 0

    def feed(self, t: BatchTable) -> None:
        if not len(t):
            return
        positions, lasts = t["position"], t["last_offset"]
        self.batches += len(t)
        top = int(lasts.max())
        self.last_offset = top if self.last_offset is None else max(self.last_offset, top)
        if self.index is not None and len(self.index):
            j = np.clip(np.searchsorted(positions, self.index.positions), 0, len(positions) - 1)
            hit = positions[j] == self.index.positions
            self.at_batch |= hit
            self.same_offset |= hit & (lasts[j] == self.index.offsets)
            self.log_offset = np.where(hit, lasts[j], self.log_offset)
        if self.timeindex is not None and len(self.timeindex):
            order = np.argsort(lasts, kind="stable")
            sl = lasts[order]
            j = np.clip(np.searchsorted(sl, self.timeindex.offsets), 0, len(sl) - 1)
            found = sl[j] == self.timeindex.offsets
            self.t_found |= found
            self.t_ts_ok |= found & (t["max_timestamp"][order][j] == self.timeindex.timestamps)

    def _pairs(self, entries: np.ndarray, limit: int = 100) -> list[list[int | None]]:
        """(index offset, offset of the batch at its position, None when no batch starts there) of some entries."""
        idx = self.index
        assert idx is not None  # only called with an index
        return [[int(idx.offsets[i]), int(self.log_offset[i]) if self.log_offset[i] >= 0 else None]
                for i in entries[:limit].tolist()]

    def finish(self) -> list[Finding]:
        out: list[Finding] = []
        idx = self.index
        if idx is not None and len(idx):
            beyond = idx.offsets > self.last_offset if self.last_offset is not None else np.ones(len(idx), bool)
            wrong = np.flatnonzero(~self.at_batch | beyond)
            mismatch = np.flatnonzero(self.at_batch & ~self.same_offset & ~beyond)
            if len(wrong):
                i = int(wrong[0])
                o, p = int(idx.offsets[i]), int(idx.positions[i])
                out.append(finding("INDEX_POINTS_WRONG",
                                   f"{len(wrong)} index entries point to no batch start or past the log (first: "
                                   f"offset {o} -> position {p}); Kafka's lookups go wrong until the index is rebuilt",
                                   file=self.index_file, position=i * offset_index.ENTRY_SIZE, count=len(wrong),
                                   offset=o, log_position=p, mismatches=self._pairs(wrong)))
            if len(mismatch):
                i = int(mismatch[0])
                out.append(finding("INDEX_OFFSET_MISMATCH",
                                   f"{len(mismatch)} index entries name an offset other than their batch's last "
                                   f"offset (first: entry offset {int(idx.offsets[i])} at position "
                                   f"{int(idx.positions[i])}); normal for follower appends before KAFKA-806",
                                   file=self.index_file, position=i * offset_index.ENTRY_SIZE, count=len(mismatch),
                                   offset=int(idx.offsets[i]), log_position=int(idx.positions[i]),
                                   mismatches=self._pairs(mismatch)))
        tidx = self.timeindex
        if tidx is not None and len(tidx) and self.batches:
            missing = np.flatnonzero(~self.t_found)
            if len(missing):
                i = int(missing[0])
                out.append(finding("TIMEINDEX_POINTS_WRONG",
                                   f"{len(missing)} time-index entries name offsets that are no batch's last offset "
                                   f"(first: {int(tidx.offsets[i])})", file=self.timeindex_file,
                                   position=i * time_index.ENTRY_SIZE, count=len(missing),
                                   offset=int(tidx.offsets[i])))
            off_ts = np.flatnonzero(self.t_found & ~self.t_ts_ok)
            if len(off_ts):
                i = int(off_ts[0])
                out.append(finding("TIMEINDEX_TIMESTAMP_MISMATCH",
                                   f"{len(off_ts)} time-index entries carry another timestamp than their batch's "
                                   f"max timestamp (first: {int(tidx.timestamps[i])} at offset "
                                   f"{int(tidx.offsets[i])})", file=self.timeindex_file,
                                   position=i * time_index.ENTRY_SIZE, count=len(off_ts),
                                   index_timestamp=int(tidx.timestamps[i]), offset=int(tidx.offsets[i])))
        return out


def missing_index(log_file: str, base_offset: int, batches: int, bare: bool) -> list[Finding]:
    """A segment with batches but no ``.index``: Kafka recovers it at startup.  In a bare copy of partition
    dirs (no broker files) missing indexes say more about the copy than the broker: INFO."""
    if not batches:
        return []
    return [finding("INDEX_MISSING", "segment without .index: Kafka recovers (re-reads) it at startup",
                    severity=Severity.INFO if bare else None, file=log_file, base_offset=base_offset)]
