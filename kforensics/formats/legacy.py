"""Legacy MessageSet entries, magic v0 and v1 (``LegacyRecord``).

Layout of one log entry (big-endian; the CRC-32 covers magic .. end)::

    offset:int64 messageSize:int32 crc:uint32 magic:int8 attributes:int8
    [timestamp:int64 (v1 only)] keyLength:int32 key valueLength:int32 value

A compressed entry is a *wrapper*: its value is the compressed bytes of an
inner message set of uncompressed entries.  v0 inner offsets are absolute; v1
inner offsets are relative to the wrapper (KIP-31), whose offset is that of
the last inner message.
"""

from __future__ import annotations

import zlib

from construct import Bytes, If, Int8sb, Int32sb, Int32ub, Int64sb, Struct, this

from .layout import fixed_layout
from .record_batch import attributes_of

#: The fixed part of a legacy entry up to the magic byte (shared framing).
LegacyPrefix = Struct(
    "offset" / Int64sb,
    "message_size" / Int32sb,  # bytes after this field
    "crc" / Int32ub,
    "magic" / Int8sb,
    "attributes" / Int8sb,
)
PREFIX = fixed_layout(LegacyPrefix)
CRC_START = PREFIX.offset("magic")  # 16
#: the framing shared with every magic: offset and size, then the entry's bytes
LOG_OVERHEAD = PREFIX.offset("crc")  # 12

#: A whole legacy entry.  Null key/value are length -1.
LegacyMessage = Struct(
    *LegacyPrefix.subcons,
    "timestamp" / If(this.magic >= 1, Int64sb),
    "key_length" / Int32sb,
    "key" / If(this.key_length >= 0, Bytes(this.key_length)),
    "value_length" / Int32sb,
    "value" / If(this.value_length >= 0, Bytes(this.value_length)),
)



def encode_message(
    *,
    offset: int,
    magic: int,
    key: bytes | None,
    value: bytes | None,
    timestamp: int = -1,
    attributes: int = 0,
) -> bytes:
    """One legacy entry with a correct CRC-32."""
    body = LegacyMessage.build(
        dict(
            offset=offset,
            message_size=0,
            crc=0,
            magic=magic,
            attributes=attributes,
            timestamp=timestamp if magic >= 1 else None,
            key_length=-1 if key is None else len(key),
            key=key,
            value_length=-1 if value is None else len(value),
            value=value,
        )
    )
    raw = bytearray(body)
    size, crc = PREFIX["message_size"], PREFIX["crc"]
    raw[size.offset : size.offset + size.size] = (len(raw) - LOG_OVERHEAD).to_bytes(size.size, "big", signed=True)
    raw[crc.offset : crc.offset + crc.size] = zlib.crc32(raw[CRC_START:]).to_bytes(crc.size, "big")
    return bytes(raw)


#: Smallest message size (bytes after the size field) per magic: a message with a null key and value.
MIN_MESSAGE_SIZE = {m: len(encode_message(offset=0, magic=m, key=None, value=None)) - LOG_OVERHEAD for m in (0, 1)}


def encode_wrapper(
    inner: list[tuple[int, bytes | None, bytes | None, int]],
    *,
    magic: int,
    codec: int,
    wrapper_offset: int | None = None,
    log_append_time: int | None = None,
) -> bytes:
    """A compressed wrapper entry around inner ``(offset, key, value, timestamp)`` messages.

    For v1 the inner offsets are written relative (0..n-1) as Kafka does, and
    the wrapper takes the absolute offset of the last inner message.
    """
    from .compression import compress

    last_abs = inner[-1][0]
    first_abs = inner[0][0]
    parts = []
    for off, key, value, ts in inner:
        inner_off = off - first_abs if magic >= 1 else off
        parts.append(encode_message(offset=inner_off, magic=magic, key=key, value=value, timestamp=ts))
    payload = compress(codec, b"".join(parts), magic=magic)
    max_ts = max(ts for _, _, _, ts in inner) if magic >= 1 else -1
    if log_append_time is not None:
        max_ts = log_append_time
    attrs = attributes_of(codec, log_append_time=log_append_time is not None and magic >= 1)
    return encode_message(
        offset=last_abs if wrapper_offset is None else wrapper_offset,
        magic=magic,
        key=None,
        value=payload,
        timestamp=max_ts,
        attributes=attrs,
    )


def compute_crc(entry: bytes | memoryview) -> int:
    """The CRC-32 Kafka stores for a legacy entry: magic .. end of message."""
    return zlib.crc32(entry[CRC_START:])
