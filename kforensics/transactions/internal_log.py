"""The records of a coordinator's internal topic partition (``__consumer_offsets``, ``__transaction_state``),
streamed in log order with their place in the evidence.

Coordinators replay their partition from the log start to the log end
(``GroupMetadataManager.doLoadGroupsAndOffsets`` reads with ``FetchIsolation.LOG_END``,
3.8.0; ``CoordinatorLoaderImpl`` in 3.6+), records and transaction markers
alike: a record written by a transactional producer (a transactional offset
commit) counts only once its producer's COMMIT marker follows.  Batches whose
CRC fails are skipped: Kafka's recovery would cut the log there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..findings import FindingLog
from ..formats.record_batch import CONTROL_BIT, MAGIC, TRANSACTIONAL_BIT
from ..log.log_entry import Batch
from ..log.partition import PartitionLog
from ..log.records import EntryRecords

#: Kafka's default partition count of __consumer_offsets (``offsets.topic.num.partitions``,
#: ``GroupCoordinatorConfig``) and of __transaction_state (``transaction.state.log.num.partitions``)
INTERNAL_PARTITIONS = 50


def java_string_hash(s: str) -> int:
    """``String.hashCode`` (UTF-16 code units, 32-bit wrap)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int = INTERNAL_PARTITIONS) -> int:
    """The internal partition of a group id or transactional id: ``Utils.abs(key.hashCode) % partitions``
    (``GroupMetadataManager.partitionFor``, ``TransactionStateManager.partitionFor``)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass(slots=True)
class LoggedRecord:
    """One record (or transaction marker) of an internal topic partition, and where it was read."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    producer_id: int
    transactional: bool
    control: str | None  # COMMIT / ABORT / another control type for a marker, None for a data record
    file: str
    position: int  # byte position of its batch in ``file``


def logged_records(pd: PartitionLog, findings: FindingLog | None = None, *, end_offset: int | None = None
                   ) -> Iterator[LoggedRecord]:
    """The records of a partition directory in log order (one batch in memory at a time).

    ``end_offset`` stops before batches starting at or after it.  Records that
    do not decode are reported to ``findings`` and skipped; damage to the
    segments themselves (CRC, framing, unreadable files) is the scan's to
    report.
    """
    for seg in pd.sorted_segments():
        if seg.log is None:
            continue
        file = str(seg.log)
        try:
            for b in seg.reader().batches():
                if not b.is_valid:
                    continue
                first = b.base_offset if b.base_offset >= 0 else b.last_offset
                if end_offset is not None and first >= end_offset:
                    return
                yield from _records(b, file, findings)
        except OSError:
            continue


def _records(b: Batch, file: str, findings: FindingLog | None) -> Iterator[LoggedRecord]:
    v2 = b.magic == MAGIC
    pid = b.producer_id if v2 else -1
    transactional = v2 and bool(b.attributes & TRANSACTIONAL_BIT)
    control = v2 and bool(b.attributes & CONTROL_BIT)
    decoder = EntryRecords(b, with_data=True, file=file)
    for r in decoder:
        ctype = (r.control or {}).get("type", "UNKNOWN") if control else None
        yield LoggedRecord(r.offset, r.key, r.value, r.timestamp, pid, transactional, ctype, file, b.position)
        if control:
            break  # a marker batch holds one control record
    if decoder.error is not None and findings is not None:
        findings.add(decoder.error)


def coordinator_copies(log_dirs: dict[int | None, list[Any]] | list[tuple[int | None, Any]], topic: str
                       ) -> list[tuple[int | None, PartitionLog]]:
    """``(broker id, PartitionLog)`` of every ``topic`` partition in these brokers' log dirs (each may be a
    directory holding log dirs; only listings are read)."""
    from ..log.log_dir import find_log_dirs, topic_partitions

    items = log_dirs.items() if isinstance(log_dirs, dict) else [(b, [d]) for b, d in log_dirs]
    out = []
    for broker_id, dirs in items:
        for d in (ld for root in dirs for ld in find_log_dirs(root)):
            for pd in topic_partitions(d, topic):
                if pd.name.suffix is None:
                    out.append((broker_id, pd))
    return sorted(out, key=lambda x: (x[1].partition, -1 if x[0] is None else x[0]))
