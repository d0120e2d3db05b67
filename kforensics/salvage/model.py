"""The typed results of salvage: one record kept back from a loss, and the summary of them all."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding

#: transactional status of a salvaged record, from the markers of the replica that holds it
#: (``none``: not written by a transactional producer)
TXN_STATUSES = ("none", "committed", "aborted", "open")


@dataclass(slots=True)
class SalvagedRecord:
    """One record a replica loses and no surviving replica keeps, as it is on the disk that holds it."""

    cluster_id: str | None
    topic: str
    partition: int
    offset: int
    leader_epoch: int  # the batch's partition leader epoch
    timestamp: int
    timestamp_type: str  # CreateTime, LogAppendTime, NoTimestampType
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    producer_id: int
    producer_epoch: int
    sequence: int
    transactional: str  # one of TXN_STATUSES
    verdict: str  # the worst loss verdict among the brokers that hold it
    verdicts: dict[int, str]  # broker id -> the verdict that loses it there
    brokers: list[int]  # the brokers whose disks hold it
    groups: list[str] = field(default_factory=list)  # consumer groups whose committed offset is beyond it
    size_in_bytes: int = 0  # the record's encoded size in its batch
    digest: bytes = b""  # content digest (key, value, headers, producer id, epoch, sequence), 16 bytes
    crc_valid: bool = True  # False: read from a batch that fails its CRC (damaged bytes; never put back)

    @property
    def cause(self) -> str:
        """What loses it (the verdict), as the summary groups records."""
        return self.verdict


@dataclass
class SummaryRow:
    """Records and bytes salvaged for one topic, partition and cause (verdict)."""

    topic: str
    partition: int
    cause: str
    records: int = 0
    bytes: int = 0  # key, value and header bytes
    transactional: dict[str, int] = field(default_factory=dict)  # status -> records
    groups: list[str] = field(default_factory=list)  # groups that had consumed some of them


@dataclass
class SalvageSummary:
    """What salvage found: per topic, partition and cause, with the findings made on the way."""

    kafka_version: str
    cluster_id: str | None
    rows: list[SummaryRow] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    partitions_read: int = 0  # partitions whose replay loses records
    kept_by_leader: int = 0  # records a verdict names that the new leader holds with the same content
    duplicates: int = 0  # copies of the same record on more than one losing broker, counted once
    outputs: dict[str, str] = field(default_factory=dict)  # kind -> path written

    @property
    def records(self) -> int:
        return sum(r.records for r in self.rows)

    @property
    def bytes(self) -> int:
        return sum(r.bytes for r in self.rows)

    def add(self, rec: SalvagedRecord) -> None:
        """Count one salvaged record."""
        row = self._row(rec.topic, rec.partition, rec.cause)
        row.records += 1
        row.bytes += payload_bytes(rec)
        row.transactional[rec.transactional] = row.transactional.get(rec.transactional, 0) + 1
        for g in rec.groups:
            if g not in row.groups:
                row.groups.append(g)

    def _row(self, topic: str, partition: int, cause: str) -> SummaryRow:
        # rows arrive grouped by partition: the last rows are the ones to look at
        for row in reversed(self.rows[-8:]):
            if (row.topic, row.partition, row.cause) == (topic, partition, cause):
                return row
        row = SummaryRow(topic, partition, cause)
        self.rows.append(row)
        return row

    def __json__(self) -> dict[str, Any]:
        return {"kafka_version": self.kafka_version, "cluster_id": self.cluster_id,
                "records": self.records, "bytes": self.bytes, "partitions_read": self.partitions_read,
                "kept_by_leader": self.kept_by_leader, "duplicates": self.duplicates,
                "rows": self.rows, "outputs": self.outputs}


def payload_bytes(rec: SalvagedRecord) -> int:
    """Key, value and header bytes of a record (what putting it back sends, before framing)."""
    n = len(rec.key or b"") + len(rec.value or b"")
    for k, v in rec.headers:
        n += len(k.encode()) + len(v or b"")
    return n
