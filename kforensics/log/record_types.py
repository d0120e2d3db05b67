"""The typed values deep decoding gives: a record, its headers, an entry's header fields, a columnar record table.

Field names are the snake_case forms of Kafka's accessors (the oracle
manifests' names), so the same values feed the text dump, JSON output and
the comparisons with Kafka's own view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..findings import Finding
from ..formats import record_batch
from ..formats.compression import CODECS
from . import kernels
from .record_offsets import wrap_sequence

if TYPE_CHECKING:
    from .log_entry import Batch

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(slots=True)
class RecordHeader:
    key: str
    value_size: int
    value_sha256: str | None
    value: bytes | None = None


@dataclass(slots=True)
class Record:
    """One record as Kafka's accessors show it."""

    offset: int
    timestamp: int
    sequence: int
    size_in_bytes: int
    key_size: int
    value_size: int
    key_sha256: str | None
    value_sha256: str | None
    headers: list[RecordHeader] = field(default_factory=list)
    crc: int | None = None  # legacy only
    is_valid: bool | None = None  # legacy only
    control: dict[str, Any] | None = None
    key: bytes | None = None  # only with ``with_data``
    value: bytes | None = None


@dataclass(slots=True)
class BatchEntry:
    """One log entry's header fields, named as Kafka's accessors are (the oracle manifests' fields)."""

    position: int
    size_in_bytes: int
    magic: int
    base_offset: int | None
    last_offset: int
    next_offset: int
    count: int | None
    crc: int
    is_valid: bool
    compression: str
    timestamp_type: str
    base_timestamp: int | None
    max_timestamp: int
    delete_horizon_ms: int | None
    partition_leader_epoch: int
    is_transactional: bool
    is_control: bool
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    record_count: int | None
    recovered: bool = False


def batch_entry(b: Batch) -> BatchEntry:
    """The header fields of a shallow :class:`~kforensics.log.segment_reader.Batch`."""
    attrs = b.attributes
    codec = attrs & record_batch.COMPRESSION_MASK
    magic = b.magic
    log_append = bool(attrs & record_batch.TIMESTAMP_TYPE_BIT)
    if magic == record_batch.MAGIC:
        ts_type = TIMESTAMP_TYPES[log_append]
        dh = b.base_timestamp if attrs & record_batch.DELETE_HORIZON_BIT else None
        last_seq = wrap_sequence(b.base_sequence, b.last_offset - b.base_offset) if b.base_sequence >= 0 else -1
        count, base_ts = b.records_count, b.base_timestamp
        transactional = bool(attrs & record_batch.TRANSACTIONAL_BIT)
        control = bool(attrs & record_batch.CONTROL_BIT)
    else:
        ts_type = "NoTimestampType" if magic == 0 else TIMESTAMP_TYPES[log_append]
        dh, last_seq, count, base_ts = None, -1, None, None
        transactional = control = False
    return BatchEntry(
        position=b.position, size_in_bytes=b.size_in_bytes, magic=magic,
        base_offset=b.base_offset if b.base_offset >= 0 or b.magic >= 2 else None, last_offset=b.last_offset,
        next_offset=b.last_offset + 1, count=count, crc=b.crc, is_valid=b.is_valid,
        compression=CODECS.get(codec, f"unknown({codec})"), timestamp_type=ts_type, base_timestamp=base_ts,
        max_timestamp=b.max_timestamp, delete_horizon_ms=dh, partition_leader_epoch=b.partition_leader_epoch,
        is_transactional=transactional, is_control=control, producer_id=b.producer_id,
        producer_epoch=b.producer_epoch, base_sequence=b.base_sequence, last_sequence=last_seq,
        record_count=b.records_count if b.records_count >= 0 else None, recovered=b.recovered)



@dataclass
class RecordTable:
    """Columnar records of a chunk of batches: record-table rows plus each row's absolute offset/timestamp.

    ``batch_index`` points into the chunk's :class:`~kforensics.log.batch_table.BatchTable`.
    Positions (``key_pos`` ...) are relative to the batch's records section for
    compressed batches, and absolute file positions otherwise.
    """

    data: np.ndarray  # (rows, len(RECORD_COLUMNS)) int64
    batch_index: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    errors: list[Finding]

    def __len__(self) -> int:
        return int(self.data.shape[0])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[:, kernels.get().RCOL[name]]
