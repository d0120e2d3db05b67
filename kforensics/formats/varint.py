"""Kafka's variable-length integers, declared as Construct types.

Kafka uses two LEB128 flavours (``common/utils/ByteUtils.java``):

* zig-zag signed ``varint``/``varlong`` (protobuf ``sint32``/``sint64``) inside
  v2 records and their headers;
* plain unsigned ``uvarint`` in the flexible-version protocol encoding (KRaft
  metadata records, control record values, tagged fields).

Construct's own ``VarInt`` has no length limit; Kafka rejects a varint longer
than 5 bytes (int) or 10 bytes (long), and so must we, or a hostile stream of
0x80 bytes would be read as one enormous number.
"""

from __future__ import annotations

from typing import IO

from construct import Construct, Container, ExplicitError, StreamError, stream_read, stream_write


class LimitedVarInt(Construct):
    """Unsigned LEB128 with a maximum byte count; optionally zig-zag signed."""

    def __init__(self, max_bytes: int, zigzag: bool) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        self.zigzag = zigzag
        self.bits = 32 if max_bytes == 5 else 64

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> int:
        value = 0
        shift = 0
        for _i in range(self.max_bytes):
            b = stream_read(stream, 1, path)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        else:
            raise ExplicitError(f"varint longer than {self.max_bytes} bytes", path=path)
        value &= (1 << self.bits) - 1
        if self.zigzag:
            return (value >> 1) ^ -(value & 1)
        return value

    def _build(self, obj: object, stream: IO[bytes], context: Container, path: str) -> int:
        if not isinstance(obj, int):
            raise ExplicitError(f"varint needs an int, got {obj!r}", path=path)
        if self.zigzag:
            lo, hi = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
            if not lo <= obj <= hi:
                raise ExplicitError(f"{obj} does not fit a {self.bits}-bit varint", path=path)
            value = ((obj << 1) ^ (obj >> (self.bits - 1))) & ((1 << self.bits) - 1)
        else:
            if not 0 <= obj < (1 << self.bits):
                raise ExplicitError(f"{obj} does not fit a {self.bits}-bit uvarint", path=path)
            value = obj
        data = encode_uvarint(value)
        stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context: Container, path: str) -> int:
        from construct import SizeofError

        raise SizeofError("varints have no fixed size", path=path)


#: zig-zag signed 32-bit varint (record fields, lengths, header counts)
VarInt = LimitedVarInt(5, zigzag=True)
#: zig-zag signed 64-bit varlong (timestampDelta)
VarLong = LimitedVarInt(10, zigzag=True)
#: unsigned 32-bit varint of the flexible protocol encoding
UVarInt = LimitedVarInt(5, zigzag=False)
#: unsigned 64-bit varlong
UVarLong = LimitedVarInt(10, zigzag=False)


def encode_uvarint(value: int) -> bytes:
    """Unsigned LEB128 bytes of a non-negative int."""
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag_encode(value: int, bits: int = 64) -> int:
    """Map a signed int onto the unsigned zig-zag domain."""
    return ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)


__all__ = ["VarInt", "VarLong", "UVarInt", "UVarLong", "encode_uvarint", "zigzag_encode", "StreamError"]
