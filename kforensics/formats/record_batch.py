"""Kafka RecordBatch, magic v2 (``DefaultRecordBatch`` / ``DefaultRecord``).

Layout (all big-endian; the CRC-32C covers ``attributes`` to the end)::

    baseOffset:int64 batchLength:int32 partitionLeaderEpoch:int32 magic:int8
    crc:uint32 attributes:int16 lastOffsetDelta:int32 baseTimestamp:int64
    maxTimestamp:int64 producerId:int64 producerEpoch:int16 baseSequence:int32
    recordsCount:int32 records...

    record := length:varint attributes:int8 timestampDelta:varlong
              offsetDelta:varint keyLength:varint key valueLength:varint value
              headerCount:varint [headerKeyLength:varint headerKey
                                  headerValueLength:varint headerValue]*

The declarations below are the single source of truth for these layouts;
:mod:`kforensics.formats.layout` derives the fast paths from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, Any

import crc32c
from construct import (
    Construct,
    Container,
    ExplicitError,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    ListContainer,
    Prefixed,
    Struct,
    stream_read,
    stream_write,
)

from .layout import fixed_layout
from .varint import VarInt as VarInt  # also importable from here
from .varint import VarLong

MAGIC = 2

#: The 61-byte batch header.
RecordBatchHeader = Struct(
    "base_offset" / Int64sb,
    "batch_length" / Int32sb,  # bytes after this field
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,
    "crc" / Int32ub,
    "attributes" / Int16sb,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "records_count" / Int32sb,
)

HEADER = fixed_layout(RecordBatchHeader)
HEADER_SIZE = HEADER.size  # 61
#: The log-entry framing shared by every magic: offset, then size.
LOG_OVERHEAD = HEADER.offset("partition_leader_epoch")  # 12
#: The CRC covers everything from the attributes field on.
CRC_START = HEADER.offset("attributes")  # 21
MAGIC_OFFSET = HEADER.offset("magic")  # 16
#: The prefix every magic shares, up to and including the magic byte: what a reader needs to frame an entry.
ENTRY_PREFIX = MAGIC_OFFSET + HEADER["magic"].size  # 17
#: The smallest size field of a v2 batch: a header and no records.
MIN_BATCH_SIZE = HEADER_SIZE - LOG_OVERHEAD  # 49

# attribute bits (low byte)
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40


class NullableVarBytes(Construct):
    """Bytes prefixed by a zig-zag varint length, where a negative length means null (``None``).

    Kafka writes -1 for null, and reads any negative length as null
    (``DefaultRecord.readFrom``: ``if (keySize >= 0)``), so a record with a
    key length of -5 is a record with a null key to every consumer.
    """

    lengthfield = VarInt

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> bytes | None:
        n = self.lengthfield._parsereport(stream, context, path)
        if n < 0:
            return None
        return stream_read(stream, n, path)

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        if obj is None:
            self.lengthfield._build(-1, stream, context, path)
            return obj
        data = bytes(obj)
        self.lengthfield._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class VarBytes(NullableVarBytes):
    """Varint-length bytes that may not be null (header keys)."""

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> bytes:
        value = super()._parse(stream, context, path)
        if value is None:
            raise ExplicitError("null where Kafka requires a value", path=path)
        return value


class CountPrefixedArray(Construct):
    """Elements prefixed by their count (Kafka's record header array); negative counts are rejected."""

    def __init__(self, countfield: Construct, subcon: Construct) -> None:
        super().__init__()
        self.countfield = countfield
        self.subcon = subcon

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> ListContainer:
        count = self.countfield._parsereport(stream, context, path)
        if count < 0:
            raise ExplicitError(f"negative count {count}", path=path)
        return ListContainer(self.subcon._parsereport(stream, context, path) for _ in range(count))

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        self.countfield._build(len(obj), stream, context, path)
        for item in obj:
            self.subcon._build(item, stream, context, path)
        return obj


#: One record header (the key is a non-null UTF-8 string on the wire).
RecordHeader = Struct(
    "key" / VarBytes(),
    "value" / NullableVarBytes(),
)

#: The part of a record covered by its length prefix.
RecordBody = Struct(
    "attributes" / Int8sb,
    "timestamp_delta" / VarLong,
    "offset_delta" / VarInt,
    "key" / NullableVarBytes(),
    "value" / NullableVarBytes(),
    "headers" / CountPrefixedArray(VarInt, RecordHeader),
)

#: One record: its body prefixed by the body's length.
Record: Construct = Prefixed(VarInt, RecordBody)

#: The smallest record on the wire (null key and value, no headers): bounds how many records a payload holds.
MIN_RECORD_SIZE = len(Record.build(dict(attributes=0, timestamp_delta=0, offset_delta=0, key=None, value=None,
                                        headers=[])))


@dataclass
class RecordData:
    """A v2 record as a producer sees it, before offsets and timestamps are made relative."""

    offset: int
    timestamp: int
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str | bytes, bytes | None]] = field(default_factory=list)


def encode_record(rec: RecordData, base_offset: int, base_timestamp: int) -> bytes:
    """Bytes of one record, relative to its batch's base offset and timestamp."""
    return Record.build(
        dict(
            attributes=0,
            timestamp_delta=rec.timestamp - base_timestamp,
            offset_delta=rec.offset - base_offset,
            key=rec.key,
            value=rec.value,
            headers=[
                dict(key=k.encode("utf-8") if isinstance(k, str) else k, value=v) for k, v in rec.headers
            ],
        )
    )


def attributes_of(
    codec: int = 0,
    *,
    log_append_time: bool = False,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: bool = False,
) -> int:
    """Compose the attributes field from its flags."""
    return (
        (codec & COMPRESSION_MASK)
        | (TIMESTAMP_TYPE_BIT if log_append_time else 0)
        | (TRANSACTIONAL_BIT if transactional else 0)
        | (CONTROL_BIT if control else 0)
        | (DELETE_HORIZON_BIT if delete_horizon else 0)
    )


def encode_batch(
    records_payload: bytes,
    *,
    base_offset: int,
    last_offset_delta: int,
    records_count: int,
    base_timestamp: int,
    max_timestamp: int,
    attributes: int = 0,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """A complete v2 batch around an already encoded (and compressed) records section."""
    header = dict(
        base_offset=base_offset,
        batch_length=HEADER_SIZE - LOG_OVERHEAD + len(records_payload),
        partition_leader_epoch=partition_leader_epoch,
        magic=MAGIC,
        crc=0,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=records_count,
    )
    raw = bytearray(RecordBatchHeader.build(header))
    raw += records_payload
    crc = crc32c.crc32c(bytes(raw[CRC_START:]))
    raw[HEADER["crc"].offset : HEADER["crc"].offset + 4] = crc.to_bytes(4, "big")
    return bytes(raw)


def build_batch(
    records: list[RecordData],
    *,
    codec: int = 0,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    log_append_time: int | None = None,
    transactional: bool = False,
    control: bool = False,
    base_offset: int | None = None,
    last_offset: int | None = None,
) -> bytes:
    """Encode records into one v2 batch the way Kafka's ``MemoryRecordsBuilder`` lays it out.

    ``last_offset`` may exceed the last record's offset (as after compaction);
    ``log_append_time`` stamps LogAppendTime as the batch's max timestamp.
    """
    if base_offset is None:
        base_offset = records[0].offset if records else 0
    base_ts = records[0].timestamp if records else -1
    payload = b"".join(encode_record(r, base_offset, base_ts) for r in records)
    if codec:
        from .compression import compress

        payload = compress(codec, payload, magic=MAGIC)
    last = last_offset if last_offset is not None else (records[-1].offset if records else base_offset)
    max_ts = max((r.timestamp for r in records), default=-1)
    if log_append_time is not None:
        max_ts = log_append_time
    return encode_batch(
        payload,
        base_offset=base_offset,
        last_offset_delta=last - base_offset,
        records_count=len(records),
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        attributes=attributes_of(
            codec, log_append_time=log_append_time is not None, transactional=transactional, control=control
        ),
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def compute_crc(batch: bytes | memoryview) -> int:
    """The CRC-32C Kafka stores for a v2 batch: over attributes .. end of batch."""
    return crc32c.crc32c(batch[CRC_START:])
