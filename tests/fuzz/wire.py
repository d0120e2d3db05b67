"""Kafka's wire formats written out a second time, independently of kforensics, for mutating and judging inputs.

The fuzz harness must not judge kforensics with kforensics' own decoders, so
this module frames segments, splits v2 records and legacy messages into their
fields, re-encodes them (with any value, including ones Kafka never writes),
recomputes CRCs, and decompresses payloads with the codec libraries directly.
Everything here follows Kafka's Java code (``DefaultRecordBatch``,
``DefaultRecord``, ``LegacyRecord``, ``ByteUtils``), not kforensics.
"""

from __future__ import annotations

import gzip
import io
import struct
import zlib
from dataclasses import dataclass, field

import crc32c

V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # 61 bytes
V2_FIELDS = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes",
             "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
             "base_sequence", "records_count")
V2_HEADER_SIZE = V2_HEADER.size
V2_CRC_AT, V2_CRC_FROM = 17, 21
LOG_OVERHEAD = 12
HEADER_UP_TO_MAGIC = 17
RECORD_OVERHEAD_V0 = 14
MIN_SIZE = {0: 14, 1: 22, 2: 49}

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


# ----------------------------------------------------------------------------- varints (ByteUtils)
def zz(value: int, bits: int) -> int:
    return ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)


def uvarint(value: int, pad: int = 0) -> bytes:
    """Unsigned LEB128; ``pad`` extra continuation bytes make an over-long (but value-preserving) encoding."""
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            break
    if pad:
        out[-1] |= 0x80
        out += b"\x80" * (pad - 1) + b"\x00"
    return bytes(out)


def varint(value: int, pad: int = 0) -> bytes:
    return uvarint(zz(value, 32), pad)


def varlong(value: int, pad: int = 0) -> bytes:
    return uvarint(zz(value, 64), pad)


class Underflow(Exception):
    """Kafka's BufferUnderflowException / EOF."""


class Illegal(Exception):
    """Kafka's IllegalArgumentException (a varint that is too long)."""


def read_varint(buf: bytes, p: int, limit: int, long: bool = False) -> tuple[int, int]:
    """``ByteUtils.readVarint`` / ``readVarlong``: (value, next position)."""
    value = 0
    shift = 0
    maxshift = 63 if long else 28
    bits = 64 if long else 32
    while True:
        if p >= limit:
            raise Underflow()
        b = buf[p]
        p += 1
        if not b & 0x80:
            value |= b << shift
            break
        value |= (b & 0x7F) << shift
        shift += 7
        if shift > maxshift:
            raise Illegal()
    value &= (1 << bits) - 1
    return (value >> 1) ^ -(value & 1), p


# ----------------------------------------------------------------------------- framing
@dataclass
class Entry:
    """One log entry as ``FileLogInputStream`` frames it."""

    position: int
    size: int  # 12 + size field
    magic: int
    raw: bytes


@dataclass
class Framing:
    entries: list[Entry] = field(default_factory=list)
    stop: int | None = None  # where Kafka's reader stops (None: at the end of the file)
    stop_kind: str | None = None  # "partial", "corrupt"


def frame(data: bytes) -> Framing:
    """Entries as Kafka's reader frames them (magic > 2 and sizes below the magic's minimum stop the walk here,
    as they stop log recovery)."""
    out = Framing()
    pos = 0
    end = len(data)
    while True:
        if pos >= end - HEADER_UP_TO_MAGIC:
            if pos < end:
                out.stop, out.stop_kind = pos, "partial"
            return out
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if size < RECORD_OVERHEAD_V0:
            out.stop, out.stop_kind = pos, "corrupt"
            return out
        if pos > end - LOG_OVERHEAD - size:
            out.stop, out.stop_kind = pos, "partial"
            return out
        magic = struct.unpack_from(">b", data, pos + 16)[0]
        if magic not in MIN_SIZE or size < MIN_SIZE[magic]:
            out.stop, out.stop_kind = pos, "corrupt"
            return out
        n = LOG_OVERHEAD + size
        out.entries.append(Entry(pos, n, magic, data[pos : pos + n]))
        pos += n


# ----------------------------------------------------------------------------- v2 batches
def v2_header(raw: bytes) -> dict:
    return dict(zip(V2_FIELDS, V2_HEADER.unpack_from(raw, 0)))


def v2_crc_ok(raw: bytes) -> bool:
    return struct.unpack_from(">I", raw, V2_CRC_AT)[0] == crc32c.crc32c(raw[V2_CRC_FROM:])


def v2_build(h: dict, section: bytes, *, keep_length: bool = False, fix_crc: bool = True) -> bytes:
    """A v2 batch from header fields (any value that fits its width) and a records section; CRC recomputed."""
    h = dict(h)
    if not keep_length:
        h["batch_length"] = V2_HEADER_SIZE - LOG_OVERHEAD + len(section)
    vals = []
    for name, fmt in zip(V2_FIELDS, V2_HEADER.format[1:]):
        v = int(h[name])
        bits = struct.calcsize(fmt) * 8
        v &= (1 << bits) - 1
        if fmt.islower() and v >= 1 << (bits - 1):
            v -= 1 << bits
        vals.append(v)
    raw = bytearray(V2_HEADER.pack(*vals) + section)
    if fix_crc:
        struct.pack_into(">I", raw, V2_CRC_AT, crc32c.crc32c(bytes(raw[V2_CRC_FROM:])))
    return bytes(raw)


#: v2 record fields, in wire order: (name, kind); "bytes:<len field>" follows its length
RECORD_FIELDS = ("attributes", "timestamp_delta", "offset_delta", "key_length", "key", "value_length", "value",
                 "header_count")


@dataclass
class RecordTokens:
    """One v2 record as a list of ``[name, value]`` tokens, re-encodable with any value.

    Integer tokens are encoded as varints (``timestamp_delta`` as a varlong,
    ``attributes`` as a byte); a ``(value, pad)`` tuple encodes over-long;
    bytes tokens are written as they are.  ``length`` None recomputes the
    length prefix from the body.
    """

    tokens: list[list]
    length: int | tuple | None = None

    def body(self) -> bytes:
        out = bytearray()
        for name, v in self.tokens:
            if isinstance(v, (bytes, bytearray)):
                out += v
                continue
            value, pad = v if isinstance(v, tuple) else (v, 0)
            if name == "attributes":
                out.append(value & 0xFF)
            elif name == "timestamp_delta":
                out += varlong(value, pad)
            else:
                out += varint(value, pad)
        return bytes(out)

    def encode(self) -> bytes:
        body = self.body()
        if self.length is None:
            return varint(len(body)) + body
        value, pad = self.length if isinstance(self.length, tuple) else (self.length, 0)
        return varint(value, pad) + body


def record_tokens(key: bytes | None, value: bytes | None, offset_delta: int, timestamp_delta: int = 0,
                  headers: list[tuple[bytes, bytes | None]] = ()) -> RecordTokens:
    t = [["attributes", 0], ["timestamp_delta", timestamp_delta], ["offset_delta", offset_delta],
         ["key_length", -1 if key is None else len(key)]]
    if key is not None:
        t.append(["key", key])
    t.append(["value_length", -1 if value is None else len(value)])
    if value is not None:
        t.append(["value", value])
    t.append(["header_count", len(headers)])
    for hk, hv in headers:
        t += [["header_key_length", len(hk)], ["header_key", hk], ["header_value_length", -1 if hv is None else len(hv)]]
        if hv is not None:
            t.append(["header_value", hv])
    return RecordTokens(t)


def parse_records(section: bytes) -> list[RecordTokens] | None:
    """The well-formed records of an uncompressed records section as tokens (None when it does not parse)."""
    out = []
    p, end = 0, len(section)
    try:
        while p < end:
            length, p = read_varint(section, p, end)
            rend = p + length
            if length < 0 or rend > end:
                return None
            t = [["attributes", section[p]]]
            p += 1
            v, p = read_varint(section, p, rend, long=True)
            t.append(["timestamp_delta", v])
            v, p = read_varint(section, p, rend)
            t.append(["offset_delta", v])
            for name in ("key", "value"):
                n, p = read_varint(section, p, rend)
                t.append([f"{name}_length", n])
                if n >= 0:
                    t.append([name, section[p : p + n]])
                    p += n
            n, p = read_varint(section, p, rend)
            t.append(["header_count", n])
            if n < 0:
                return None
            for _ in range(n):
                kl, p = read_varint(section, p, rend)
                if kl < 0:
                    return None
                t += [["header_key_length", kl], ["header_key", section[p : p + kl]]]
                p += kl
                vl, p = read_varint(section, p, rend)
                t.append(["header_value_length", vl])
                if vl >= 0:
                    t.append(["header_value", section[p : p + vl]])
                    p += vl
            if p != rend:
                return None
            out.append(RecordTokens(t))
    except (Underflow, Illegal, IndexError):
        return None
    return out


# ----------------------------------------------------------------------------- legacy messages
def legacy_fields(raw: bytes) -> dict | None:
    """A legacy entry's fields (None when its key/value lengths do not fit)."""
    if len(raw) < LOG_OVERHEAD + MIN_SIZE[0]:
        return None
    offset, size, crc, magic, attrs = struct.unpack_from(">qiIbb", raw, 0)
    p = 18
    ts = None
    if magic == 1:
        if p + 8 > len(raw):
            return None
        ts = struct.unpack_from(">q", raw, p)[0]
        p += 8
    out = dict(offset=offset, size=size, crc=crc, magic=magic, attributes=attrs, timestamp=ts)
    for name in ("key", "value"):
        if p + 4 > len(raw):
            return None
        n = struct.unpack_from(">i", raw, p)[0]
        p += 4
        if n >= 0:
            if p + n > len(raw):
                return None
            out[name] = raw[p : p + n]
            p += n
        else:
            out[name] = None
        out[f"{name}_length"] = n
    out["trailing"] = raw[p:]
    return out


def legacy_build(offset: int, magic: int, attributes: int, key: bytes | None, value: bytes | None,
                 timestamp: int | None = -1, *, key_length: int | None = None, value_length: int | None = None,
                 trailing: bytes = b"", size: int | None = None, fix_crc: bool = True, crc: int = 0) -> bytes:
    """A legacy entry; explicit lengths and size may lie; the CRC-32 is recomputed unless ``fix_crc`` is False."""
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp if timestamp is not None else -1)
    body += struct.pack(">i", (-1 if key is None else len(key)) if key_length is None else key_length) + (key or b"")
    body += struct.pack(">i", (-1 if value is None else len(value)) if value_length is None else value_length)
    body += (value or b"") + trailing
    c = zlib.crc32(body) if fix_crc else crc
    sz = 4 + len(body) if size is None else size
    return struct.pack(">qiI", offset, sz, c & 0xFFFFFFFF) + body


def legacy_crc_ok(raw: bytes) -> bool:
    return struct.unpack_from(">I", raw, 12)[0] == zlib.crc32(raw[16:])


# ----------------------------------------------------------------------------- codecs, read as Kafka's streams read them
XERIAL_MAGIC = b"\x82SNAPPY\x00"


class CodecError(Exception):
    pass


def gunzip_java(data: bytes, limit: int) -> bytes:
    """``GZIPInputStream``: concatenated members; bytes after a member that do not start another are ignored."""
    if not data:
        raise CodecError("empty gzip stream (EOFException reading the header)")
    out = bytearray()
    first = True
    while data:
        if not first and not (len(data) >= 10 and data[:3] == b"\x1f\x8b\x08"):
            break  # readTrailer: a malformed next header is ignored
        first = False
        d = zlib.decompressobj(wbits=31)
        try:
            out += d.decompress(data, limit + 1 - len(out))
        except zlib.error as e:
            raise CodecError(str(e)) from None
        if len(out) > limit:
            raise CodecError("bomb")
        if not d.eof:
            raise CodecError("gzip ends early")
        data = d.unused_data
    return bytes(out)


def unsnappy_java(data: bytes, limit: int) -> bytes:
    import cramjam

    def raw(block: bytes) -> bytes:
        try:
            return bytes(cramjam.snappy.decompress_raw(block))
        except Exception as e:  # noqa: BLE001
            raise CodecError(str(e)) from None

    if not data.startswith(XERIAL_MAGIC):
        return raw(data)
    out = bytearray()
    p = 16
    while p < len(data):
        if data[p : p + 8] == XERIAL_MAGIC:
            p += 16
            continue
        if p + 4 > len(data):
            raise CodecError("partial chunk length")
        n = struct.unpack_from(">i", data, p)[0]
        p += 4
        if n < 0 or p + n > len(data):
            raise CodecError("chunk overruns")
        out += raw(data[p : p + n])
        if len(out) > limit:
            raise CodecError("bomb")
        p += n
    return bytes(out)


def unlz4_java(data: bytes, magic: int, limit: int) -> bytes:
    import lz4.frame
    import xxhash

    if len(data) < 7 or data[:4] != b"\x04\x22\x4d\x18":
        raise CodecError("not an lz4 frame")
    if magic == 0:  # Kafka's v0 frames carry a header checksum over the magic too, and it is not checked
        fixed = bytearray(data)
        desc_end = 6 + (8 if data[4] & 0x08 else 0)
        if desc_end < len(fixed):
            fixed[desc_end] = (xxhash.xxh32_intdigest(bytes(data[4:desc_end])) >> 8) & 0xFF
        data = bytes(fixed)
    try:
        d = lz4.frame.LZ4FrameDecompressor()
        out = d.decompress(data)
    except Exception as e:  # noqa: BLE001
        raise CodecError(str(e)) from None
    if not d.eof:
        raise CodecError("lz4 frame ends early")
    if len(out) > limit:
        raise CodecError("bomb")
    return bytes(out)


def unzstd_java(data: bytes, limit: int) -> bytes:
    import zstandard

    try:
        r = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        out = bytearray()
        while True:
            piece = r.read(1 << 16)
            if not piece:
                break
            out += piece
            if len(out) > limit:
                raise CodecError("bomb")
    except zstandard.ZstdError as e:
        raise CodecError(str(e)) from None
    return bytes(out)


def decompress_java(codec: int, data: bytes, magic: int, limit: int = 64 << 20) -> bytes:
    if codec == 1:
        return gunzip_java(data, limit)
    if codec == 2:
        return unsnappy_java(data, limit)
    if codec == 3:
        return unlz4_java(data, magic, limit)
    if codec == 4:
        return unzstd_java(data, limit)
    raise CodecError(f"codec {codec}")


def compress(codec: int, data: bytes, magic: int) -> bytes:
    """Compressed as Kafka's producers write it (kforensics' encoder: writing is not what is under test)."""
    from kforensics.formats.compression import compress as kf_compress

    if codec == 1:
        return gzip.compress(data, mtime=0)
    return kf_compress(codec, data, magic=magic)
