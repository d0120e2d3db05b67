"""The typed results of a scan: per segment, per partition, per broker."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from ..findings import Finding, Severity, worst
from ..log.side_files import FileRecord
from ..recovery.plan import RecoveryPlan
from ..transactions.model import OpenTransaction, PartitionTransactions

if TYPE_CHECKING:
    from ..tiered.coverage import TieredFacts

__all__ = ["BrokerIdentity", "CheckpointEntry", "OpenTransaction", "PartitionContext", "PartitionScan", "ScanReport",
           "SegmentFacts", "unseen_findings"]


def unseen_findings(have: Iterable[Finding], extra: Iterable[Finding]) -> list[Finding]:
    """The ``extra`` findings not already in ``have``, each once: a second reader of the same files (the
    coordinators' records) finds what the scan found, at the same code, file and byte."""
    seen = {(f.code, f.file, f.position) for f in have}
    out = []
    for f in extra:
        if (f.code, f.file, f.position) not in seen:
            seen.add((f.code, f.file, f.position))
            out.append(f)
    return out


@dataclass
class SegmentFacts:
    """One segment as read: its extent, where Kafka's recovery would cut it, and which side files it has."""

    base_offset: int
    path: str | None
    size: int = 0
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    kafka_valid_bytes: int = 0  # where Kafka's own reader stops
    kafka_stop: str | None = None  # how it stops there: "partial" (silently) or "corrupt" (it throws)
    first_invalid_position: int | None = None  # first CRC-invalid batch or framing error: where recovery cuts
    valid_end_offset: int | None = None  # next offset after the last batch before the cut
    partial_offsets: tuple[int, int] | None = None  # a torn final batch: the offsets its header declares
    valid_records: int = 0  # records before the cut
    cut_records_below_hw: int = 0  # records after the cut that lie below the partition's high watermark
    has_index: bool = False
    index_last_position: int | None = None  # the position of the offset index's last entry
    has_time_index: bool = False
    has_txn_index: bool = False
    magics: list[int] = field(default_factory=list)
    codecs: list[int] = field(default_factory=list)
    readable: bool = True


@dataclass
class PartitionContext:
    """What the log dir knows about a partition (from its root checkpoints and marker)."""

    high_watermark: int | None = None
    recovery_point: int | None = None
    log_start_offset: int | None = None
    cleaner_offset: int | None = None
    clean_shutdown: bool = False
    hw_checkpoint_present: bool = False
    recovery_checkpoint_present: bool = False
    # no meta.properties or root checkpoints (partition dirs copied without their broker's files):
    # per-partition absences are then reported once, at the log-dir level
    bare: bool = False


#: fields of :class:`PartitionTransactions` that a partition's JSON gives elsewhere
_PARTITION_SAYS = ("topic", "partition", "broker_id", "log_start_offset", "log_end_offset", "high_watermark",
                   "last_stable_offset", "open", "findings")


_FIELDS: dict[tuple[type, tuple[str, ...]], tuple[str, ...]] = {}


def _json_fields(t: type, left_out: tuple[str, ...]) -> tuple[str, ...]:
    """The names of a dataclass type's fields but ``left_out``, in order (looked up once per type, not per
    partition: a fleet's JSON has ten thousand of them)."""
    names = _FIELDS.get((t, left_out))
    if names is None:
        names = _FIELDS[(t, left_out)] = tuple(f.name for f in fields(t) if f.name not in left_out)
    return names


@dataclass
class PartitionScan:
    """Facts about one partition directory (a row of the ``partitions`` table) and its findings."""

    log_dir: str
    dir_name: str
    topic: str
    partition: int
    suffix: str | None = None
    topic_id: str | None = None
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    recovery_point: int | None = None
    cleaner_offset: int | None = None
    batch_count: int = 0
    record_count: int = 0
    bytes: int = 0
    epochs_seen: list[int] = field(default_factory=list)
    epoch_cache_written: list[tuple[int, int]] | None = None
    epoch_cache_rebuilt: list[tuple[int, int]] = field(default_factory=list)
    producer_ids: list[int] = field(default_factory=list)
    open_transactions: list[OpenTransaction] = field(default_factory=list)  # ``transactions.open``
    # open and hanging transactions, markers, last stable offset, aborted ranges against the .txnindex
    transactions: PartitionTransactions | None = None
    segments: list[SegmentFacts] = field(default_factory=list)
    recovery: RecoveryPlan = field(default_factory=RecoveryPlan)
    complete: bool = True  # every segment could be read: the log end offset is the log's
    findings: list[Finding] = field(default_factory=list)
    files: list[FileRecord] = field(default_factory=list)
    # a tiered partition (KIP-405): log start, local log start, remote coverage (kforensics.tiered.coverage)
    tiered: TieredFacts | None = None

    @property
    def path(self) -> str:
        return f"{self.log_dir.rstrip('/')}/{self.dir_name}"

    @property
    def last_stable_offset(self) -> int | None:
        """The last stable offset rebuilt from the log (read_committed consumers read up to it)."""
        return None if self.transactions is None else self.transactions.last_stable_offset

    @property
    def uncommitted(self) -> int | None:
        """Offsets above the high watermark (never negative: a HW above the LEO is its own finding)."""
        if self.log_end_offset is None or self.high_watermark is None:
            return None
        return max(0, self.log_end_offset - max(self.high_watermark, self.log_start_offset or 0))

    def worst(self) -> Severity | None:
        return worst(self.findings)

    def __json__(self) -> dict[str, object]:
        # findings and files are listed once, at the report's top level
        out = {name: getattr(self, name) for name in _json_fields(type(self), ("findings", "files"))}
        if self.tiered is None:
            del out["tiered"]  # only a tiered partition says it is one
        if self.transactions is not None:
            # what the partition does not already say: its findings are the partition's (listed once, at the
            # report's top level), open is open_transactions, the LSO is last_stable_offset
            out["transactions"] = {name: getattr(self.transactions, name)
                                   for name in _json_fields(type(self.transactions), _PARTITION_SAYS)}
        worst_ = self.worst()
        return {**out, "last_stable_offset": self.last_stable_offset, "uncommitted": self.uncommitted,
                "segment_count": len(self.segments),
                "finding_count": len(self.findings), "worst_severity": None if worst_ is None else str(worst_)}


@dataclass
class BrokerIdentity:
    """Who the broker is, from its log dirs' root files."""

    node_id: int | None = None
    cluster_id: str | None = None
    meta_version: int | None = None
    directory_ids: list[str] = field(default_factory=list)
    log_dirs: list[str] = field(default_factory=list)
    clean_shutdown: dict[str, bool] = field(default_factory=dict)


@dataclass
class CheckpointEntry:
    """One entry of a log dir's root offset checkpoints."""

    kind: str
    file: str
    topic: str
    partition: int
    offset: int


@dataclass
class ScanReport:
    """Everything one scan found."""

    broker: BrokerIdentity
    partitions: list[PartitionScan]
    findings: list[Finding]  # log-dir and broker level
    files: list[FileRecord]
    checkpoints: list[CheckpointEntry] = field(default_factory=list)
    kafka_version: str = "latest"

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for p in self.partitions:
            out += p.findings
        return out

    def add_findings(self, extra: Iterable[Finding]) -> None:
        """Add the findings of a second reader of the scanned files, those the report does not hold yet."""
        self.findings += unseen_findings(self.all_findings(), extra)

    def max_severity(self) -> Severity | None:
        return worst(self.all_findings())

    def __json__(self) -> dict[str, object]:
        return {"kafka_version": self.kafka_version, "broker": self.broker, "partitions": self.partitions,
                "findings": self.all_findings(), "files": self.files, "checkpoints": self.checkpoints}
