"""The typed results of the transaction analysis of one partition (serialised by :mod:`kforensics.serialize`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding

#: Kafka's default ``transaction.max.timeout.ms`` (``TransactionStateManagerConfigs``), also the default
#: ``--max-transaction-timeout`` of ``kafka-transactions.sh find-hanging`` (15 minutes)
MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000
#: at most this many markers or aborted ranges are listed per partition, the last ones in the log (where
#: truncation strikes); the counts cover all
MAX_LISTED = 1000
#: what the coordinator does with an open transaction when the cluster restarts (``OpenTransaction.at_restart``):
#: nobody ends it; the coordinator completes it as it loads its state (PrepareCommit / PrepareAbort:
#: ``TransactionStateManager.loadTransactionsForTxnTopicPartition`` sends the markers, 3.9.0); it aborts it once
#: its timeout has passed (Ongoing: ``TransactionStateManager.timedOutTransactions``, checked every
#: ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, 3.9.0); not known (no coordinator's record)
AT_RESTART = ("stays open", "completed by the coordinator", "aborted once timed out", "unknown")


@dataclass
class OpenTransaction:
    """Data batches of a transactional producer with no marker after them up to the end of what was read.

    ``age_ms`` is measured on the partition's own clock: the newest batch
    timestamp in the log minus the transaction's first timestamp.
    """

    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int
    batches: int = 0
    records: int = 0
    bytes: int = 0
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    file: str | None = None  # the segment holding its first batch
    position: int | None = None  # byte position of its first batch
    age_ms: int | None = None
    hanging: bool = False
    why: str = ""  # why it is (or is not) called hanging
    coordinator_state: str | None = None  # the coordinator's state for this producer, when __transaction_state was read
    transaction_version: str | None = None  # its producer's, as its last marker or the coordinator's record shows it
    at_restart: str = "unknown"  # one of AT_RESTART
    # Ongoing in the coordinator's record: its start plus its timeout (ms since the epoch); a coordinator running
    # after this instant aborts the transaction
    coordinator_timeout_at: int | None = None


@dataclass
class TransactionMarker:
    """A COMMIT or ABORT control batch: the end of a transaction on this partition."""

    offset: int
    producer_id: int
    producer_epoch: int
    control_type: str  # COMMIT, ABORT, or UNKNOWN (the control record could not be read)
    coordinator_epoch: int | None
    timestamp: int | None
    file: str | None
    position: int | None
    first_offset: int | None = None  # the transaction's first data offset (None: no data before it on this log)
    data_epoch: int | None = None  # the producer epoch of that data
    records: int = 0  # data records of the transaction on this partition

    transaction_version: str | None = None  # "0", "1", "2" or "0-1" (:mod:`.transaction_version`); None: not known
    transaction_version_basis: str = ""  # how it is known: the coordinator's record, or the epochs

    @property
    def epoch_bump(self) -> int | None:
        """Marker epoch minus data epoch: 1 under transactions v2 (KIP-890) or after the coordinator fenced
        the producer, 0 under transactions v1, negative never on a log Kafka's leader wrote."""
        return None if self.data_epoch is None else self.producer_epoch - self.data_epoch

    @property
    def fenced(self) -> bool | None:
        """Whether the coordinator fenced the producer and aborted its transaction (a timeout, or a new
        ``InitProducerId`` while it was ongoing): see :func:`.transaction_version.fenced`."""
        from .transaction_version import fenced

        return fenced(self)


@dataclass
class AbortedRange:
    """An aborted transaction as Kafka indexes it (``AbortedTxn``): producer, first and last offset (the
    ABORT marker's), and the last stable offset when the abort completed; and what the ``.txnindex`` says."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    file: str | None  # the segment holding the marker (whose .txnindex should list it)
    in_txn_index: bool | None = None  # None: the index was not compared


@dataclass
class PartitionTransactions:
    """The transactions of one partition's log (one replica), read in one pass over its batch headers."""

    topic: str
    partition: int
    broker_id: int | None = None
    log_start_offset: int | None = None  # first offset read
    log_end_offset: int | None = None  # next offset after the last batch read
    high_watermark: int | None = None
    last_stable_offset: int | None = None  # rebuilt from the log (bounded by the high watermark when known)
    max_timestamp: int | None = None  # newest batch timestamp: the partition's clock
    open: list[OpenTransaction] = field(default_factory=list)
    markers: list[TransactionMarker] = field(default_factory=list)  # the last MAX_LISTED, plus any watched
    aborted: list[AbortedRange] = field(default_factory=list)  # the last MAX_LISTED
    transactional_batches: int = 0
    commits: int = 0
    aborts: int = 0
    empty_markers: int = 0  # markers with no data of their producer before them on this log
    producers: int = 0  # distinct producer ids with a v2 producer id
    transaction_versions: dict[str, int] = field(default_factory=dict)  # listed markers per transaction version
    # ("0", "1", "2", "0-1": no bump, before transactions v2; "unknown")
    findings: list[Finding] = field(default_factory=list)

    @property
    def hanging(self) -> list[OpenTransaction]:
        return [t for t in self.open if t.hanging]
