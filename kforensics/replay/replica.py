"""A replica's log as replay sees it: batch identities and extents, its high watermark and epoch cache.

Only what truncation and divergence need is kept (no records): per batch the
columns below, named as in the batch table.  Two batches hold *the same
data* when base offset, last offset, epoch and CRC agree (the CRC covers
everything but the offsets and the epoch, which are compared directly).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..epoch.cache import LeaderEpochCache
from ..epoch.rebuild import epoch_transitions, rebuild_from_batches
from ..epoch.versions import KafkaVersion

#: the batch-table columns replay keeps, plus ``segment`` (index into ``Replica.segments``; -1: not on this disk)
COLUMNS = ("base_offset", "last_offset", "partition_leader_epoch", "crc", "records_count", "size_in_bytes",
           "producer_id", "magic", "segment", "position")
_C = {name: i for i, name in enumerate(COLUMNS)}
IDENTITY = slice(0, 4)  # base_offset, last_offset, partition_leader_epoch, crc


@dataclass
class BatchLog:
    """Columns of a log's batches, in offset order."""

    data: np.ndarray  # (n, len(COLUMNS)) int64

    @classmethod
    def empty(cls) -> BatchLog:
        return cls(np.empty((0, len(COLUMNS)), dtype=np.int64))

    @classmethod
    def from_rows(cls, rows) -> BatchLog:
        """Rows of the leading columns; missing trailing columns (where the batch lives) are -1."""
        arr = np.array(rows, dtype=np.int64)
        arr = arr.reshape(len(rows), -1) if len(rows) else np.empty((0, len(COLUMNS)), dtype=np.int64)
        if arr.shape[1] < len(COLUMNS):
            arr = np.hstack([arr, np.full((arr.shape[0], len(COLUMNS) - arr.shape[1]), -1, dtype=np.int64)])
        return cls(arr)

    def __len__(self) -> int:
        return self.data.shape[0]

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
        return BatchLog(self.data[mask])

    def from_offset(self, offset: int) -> BatchLog:
        """Batches a fetch from ``offset`` returns (those ending at or after it)."""
        return BatchLog(self.data[self.containing_cut(offset) :])

    def concat(self, other: BatchLog) -> BatchLog:
        return BatchLog(np.concatenate([self.data, other.data]))

    def identity(self) -> np.ndarray:
        """(base offset, last offset, epoch, crc) per batch."""
        return self.data[:, IDENTITY]

    def epoch_transitions(self) -> list[tuple[int, int, int]]:
        """(epoch, base offset, magic) where the epoch or the format changes: all a cache rebuild needs."""
        return epoch_transitions(self.col("partition_leader_epoch"), self.col("base_offset"), self.col("magic"))[0]


@dataclass
class Replica:
    """One broker's replica of one partition, as found on disk."""

    broker_id: int
    log: BatchLog
    log_start: int = 0
    high_watermark: int | None = None  # checkpointed; None when absent
    epoch_checkpoint: list[tuple[int, int]] | None = None
    cleaner_offset: int | None = None
    source: str | None = None  # the partition dir
    segments: list = field(default_factory=list)  # segment paths (any source), indexed by the "segment" column
    notes: list[str] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int:
        end = self.log.end_offset
        return end if end is not None else self.log_start

    def epoch_cache(self, mode: KafkaVersion) -> LeaderEpochCache:
        """The cache Kafka would start with: the checkpoint when present, else rebuilt from the batches."""
        if not mode.has_epochs:
            return LeaderEpochCache(mode=mode)
        if self.epoch_checkpoint is not None:
            return LeaderEpochCache(self.epoch_checkpoint, mode=mode)
        return rebuild_from_batches(self.log.epoch_transitions(), mode)[0]

    @property
    def latest_epoch(self) -> int | None:
        ep = self.log.col("partition_leader_epoch")
        if self.epoch_checkpoint:
            return max(self.epoch_checkpoint[-1][0], int(ep.max()) if len(ep) else -1)
        return int(ep.max()) if len(ep) and ep.max() >= 0 else None
