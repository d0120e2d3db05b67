"""A replica's log as replay sees it: batch identities, offsets, epochs, high watermark and epoch cache.

Only what truncation and divergence need is kept (no records): per batch its
base and last offset, partition leader epoch, CRC, record count, size and
producer id, as columns.  Two batches are *the same data* when base, last,
epoch and CRC agree (the CRC covers everything but the offsets and epoch).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .epoch_cache import KafkaVersion, LeaderEpochCache, rebuild_from_batches

COLUMNS = ("base", "last", "epoch", "crc", "count", "size", "pid", "magic", "segment", "position")
#: where a batch lives on disk: index into ``Replica.segments`` and byte position (-1: not on disk)


@dataclass
class BatchLog:
    """Columns of a log's batches, in offset order."""

    data: np.ndarray  # (n, len(COLUMNS)) int64

    @classmethod
    def empty(cls) -> "BatchLog":
        return cls(np.empty((0, len(COLUMNS)), dtype=np.int64))

    @classmethod
    def from_rows(cls, rows) -> "BatchLog":
        """Rows of the leading columns; missing trailing columns (location) are -1."""
        arr = np.array(rows, dtype=np.int64)
        arr = arr.reshape(len(rows), -1) if len(rows) else np.empty((0, len(COLUMNS)), dtype=np.int64)
        if arr.shape[1] < len(COLUMNS):
            arr = np.hstack([arr, np.full((arr.shape[0], len(COLUMNS) - arr.shape[1]), -1, dtype=np.int64)])
        return cls(arr)

    def __len__(self) -> int:
        return self.data.shape[0]

    def col(self, name: str) -> np.ndarray:
        return self.data[:, COLUMNS.index(name)]

    @property
    def end_offset(self) -> int | None:
        """Next offset after the last batch (None when empty)."""
        return int(self.data[-1, 1]) + 1 if len(self) else None

    def containing_cut(self, offset: int) -> int:
        """Index of the first batch that a truncation to ``offset`` removes.

        Kafka cuts at the start of the batch that contains ``offset``, so a
        batch with ``base < offset <= last`` goes entirely.
        """
        return int(np.searchsorted(self.col("last"), offset, side="left"))

    def split(self, index: int) -> tuple["BatchLog", "BatchLog"]:
        return BatchLog(self.data[:index]), BatchLog(self.data[index:])

    def from_offset(self, offset: int) -> "BatchLog":
        """Batches a fetch from ``offset`` returns (those ending at or after it)."""
        return BatchLog(self.data[self.containing_cut(offset) :])

    def concat(self, other: "BatchLog") -> "BatchLog":
        return BatchLog(np.concatenate([self.data, other.data]))

    def identity(self) -> np.ndarray:
        """(base, last, epoch, crc) per batch."""
        return self.data[:, :4]

    def rows(self) -> list[tuple[int, ...]]:
        return [tuple(r) for r in self.data.tolist()]


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
    segments: list[str] = field(default_factory=list)  # segment files, indexed by the "segment" column
    notes: list[str] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int:
        end = self.log.end_offset
        return end if end is not None else self.log_start

    @property
    def has_v2_epochs(self) -> bool:
        return bool(len(self.log)) and bool(np.all(self.log.col("magic") == 2)) and bool(
            np.any(self.log.col("epoch") >= 0))

    def epoch_cache(self, mode: KafkaVersion) -> LeaderEpochCache:
        """The cache Kafka would start with: the checkpoint when present, else rebuilt from the batches."""
        if not mode.has_epochs:
            return LeaderEpochCache(mode=mode)
        if self.epoch_checkpoint is not None:
            return LeaderEpochCache(self.epoch_checkpoint, mode=mode)
        epoch, base, magic = self.log.col("epoch"), self.log.col("base"), self.log.col("magic")
        # only epoch (or format) transitions can change the cache; same-epoch batches are no-ops
        key = np.where(magic < 2, -2, epoch)
        keep = np.nonzero(key != np.concatenate(([-3], key[:-1])))[0]
        rows = zip(epoch[keep].tolist(), base[keep].tolist(), magic[keep].tolist())
        return rebuild_from_batches(rows, mode)[0]

    @property
    def latest_epoch(self) -> int | None:
        ep = self.log.col("epoch")
        if self.epoch_checkpoint:
            return max(self.epoch_checkpoint[-1][0], int(ep.max()) if len(ep) else -1)
        return int(ep.max()) if len(ep) and ep.max() >= 0 else None
