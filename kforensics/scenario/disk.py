"""What the scenario builder knows of each broker's disk and of the internal partitions it writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..epoch.cache import LeaderEpochCache

T0 = 1_700_000_000_000
#: Kafka's default index.interval.bytes: appends add an offset-index entry only after this many bytes
INDEX_INTERVAL_BYTES = 4096
DAMAGE_KINDS = ("crc", "zero", "torn")


@dataclass
class InternalPartition:
    """An internal topic partition (``__consumer_offsets-N``, ``__transaction_state-N``), the same on its brokers."""

    topic: str
    partition: int
    brokers: list[int]
    batches: list[bytes] = field(default_factory=list)

    @property
    def leo(self) -> int:
        return len(self.batches)  # one record per batch


@dataclass
class TxnBatch:
    """What the builder knows of a batch it wrote for a transactional producer (to write the .txnindex)."""

    producer_id: int
    marker: str | None = None  # None: data; COMMIT / ABORT


@dataclass
class BrokerDisk:
    broker_id: int
    batches: list[tuple[int, int, int, bytes]] = field(default_factory=list)  # (base, last, epoch, bytes)
    hw: int | None = None
    # the broker's leader-epoch cache as Kafka (2.0.1+) keeps it: every appended batch and every election it
    # records go through assign, truncation trims it; its checkpoint is written on every change
    cache: LeaderEpochCache = field(default_factory=lambda: LeaderEpochCache(mode="latest"))
    epoch_checkpoint: bool = True
    checkpoint_lines: list[tuple[int, int]] | None = None  # a leader-epoch-checkpoint given verbatim
    frozen_epochs: list[tuple[int, int]] | None = None  # the checkpoint as a crash left it
    recovery_point: int | None = None  # None: everything flushed (the log end)
    clean_shutdown: bool = False
    damage: dict[int, str] = field(default_factory=dict)  # base offset -> "crc" / "zero"
    torn: bytes | None = None  # the surviving start of a batch torn by the crash, after the last batch
    checkpoint_bytes: bytes | None = None  # a leader-epoch-checkpoint file's bytes, verbatim (e.g. unreadable)

    @property
    def leo(self) -> int:
        return self.batches[-1][1] + 1 if self.batches else 0

    def append(self, batch: tuple[int, int, int, bytes]) -> None:
        """Append a batch; the append path assigns its epoch (``UnifiedLog.append``, 2.0.1+ rules)."""
        self.batches.append(batch)
        base, _last, epoch, _data = batch
        if epoch >= 0 and base >= 0:
            self.cache.assign(epoch, base)

    def truncate(self, keep: int) -> None:
        """Keep the first ``keep`` batches; the cache loses the entries at or past the new log end."""
        self.batches = self.batches[:keep]
        self.cache.truncate_from_end(self.leo)

    def epochs(self) -> list[tuple[int, int]]:
        """The leader-epoch checkpoint as its broker last wrote it."""
        if self.checkpoint_lines is not None:
            return list(self.checkpoint_lines)
        if self.frozen_epochs is not None:
            return list(self.frozen_epochs)
        return self.cache.entries

    def restarted(self) -> None:
        """The broker runs again after a crash: loading dropped the torn batch and the entries past its log."""
        if self.frozen_epochs is not None:
            self.cache = LeaderEpochCache(self.frozen_epochs, mode="latest")
            self.cache.truncate_from_end(self.leo)
            self.frozen_epochs = None
        self.torn = None
