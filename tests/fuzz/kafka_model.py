"""What Kafka itself would refuse, modelled independently of kforensics (on :mod:`tests.fuzz.wire`).

The fuzz harness mutates evidence and asks two questions: does kforensics
survive it, and where Kafka's own readers would refuse the input, does
kforensics report a finding there?  This module answers "would Kafka refuse
it, and where" for each file kind, following Kafka's Java code:

* segments: ``FileLogInputStream`` framing, ``ensureValid`` (CRC), then deep
  iteration as a consumer or ``kafka-dump-log --deep-iteration`` does it
  (``DefaultRecordBatch`` / ``DefaultRecord.readFrom``, ``AbstractLegacyRecordBatch``'s
  deep iterator, consumer CRC checks of inner messages, ``ControlRecordType`` and
  ``EndTransactionMarker``), plus what no Kafka writes and kforensics must flag:
  header offsets out of range, record offsets outside their batch or not increasing;
* text checkpoints: ``CheckpointFile`` with Java's ``Integer.parseInt``/``Long.parseLong``;
* ``partition.metadata``: ``PartitionMetadataReadBuffer``;
* producer snapshots: ``ProducerStateManager.readSnapshot``;
* indexes: ``sanityCheck`` of each index kind;
* ``quorum-state``: ``FileQuorumStateStore`` (first line, the mandatory fields).

Each refusal is a :class:`Refusal`: a reason (a class of problem) and where.
The harness maps reasons to the finding codes that report them.
"""

from __future__ import annotations

import json
import re
import struct
import unicodedata
from dataclasses import dataclass

from . import wire


@dataclass(frozen=True)
class Refusal:
    reason: str
    position: int | None = None  # byte position (entry start for segments)
    size: int | None = None  # bytes of the entry (segments)
    line: int | None = None
    detail: str = ""


# ============================================================================= segments
def _wrap64(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def judge_segment(data: bytes) -> list[Refusal]:
    """Every entry Kafka refuses (or kforensics must flag), and where Kafka's reader stops."""
    fr = wire.frame(data)
    out: list[Refusal] = []
    for e in fr.entries:
        reasons = judge_v2(e.raw) if e.magic == 2 else judge_legacy(e.raw)
        for r, detail in reasons:
            out.append(Refusal(r, e.position, e.size, detail=detail))
    if fr.stop is not None:
        # zeros are a tail Kafka's recovery truncates; the reader stops there in every case
        out.append(Refusal("framing", fr.stop, len(data) - fr.stop, detail=fr.stop_kind or ""))
    return out


class _Refused(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def judge_v2(raw: bytes) -> list[tuple[str, str]]:
    if not wire.v2_crc_ok(raw):
        return [("crc", "")]
    h = wire.v2_header(raw)
    out: list[tuple[str, str]] = []
    base, delta = h["base_offset"], h["last_offset_delta"]
    last = _wrap64(base + delta)
    if base < 0 or delta < 0 or last < base:
        out.append(("header_offsets", f"{base}+{delta}"))
    codec = h["attributes"] & 7
    count = h["records_count"]
    if count == 0:
        return out  # DefaultRecordBatch.iterator: an empty iterator, nothing is read
    if codec > 4:
        return out + [("codec", str(codec))]
    if count < 0:
        return out + [("count", str(count))]
    section = raw[wire.V2_HEADER_SIZE:]
    if codec:
        try:
            section = wire.decompress_java(codec, section, 2)
        except wire.CodecError as e:
            return out + [("decompress", str(e))]
    control = bool(h["attributes"] & 0x20)
    try:
        p, prev = 0, None
        for i in range(count):
            od, key, value, p = _read_v2_record(section, p, bounded=bool(codec))
            if od < 0 or od > delta or (prev is not None and od <= prev):
                out.append(("record_offsets", f"record {i}: delta {od}"))
                prev = od if prev is None else max(prev, od)
            else:
                prev = od
            if control:
                _check_control(key, value)
        if p != len(section):
            raise _Refused("records", "Incorrect declared batch size, records still remaining")
    except _Refused as e:
        out.append((e.reason, e.detail))
    return _dedupe(out)


def _dedupe(reasons):
    seen, out = set(), []
    for r in reasons:
        if r[0] not in seen:
            seen.add(r[0])
            out.append(r)
    return out


def _read_v2_record(buf: bytes, p: int, bounded: bool) -> tuple[int, bytes | None, bytes | None, int]:
    """``DefaultRecord.readFrom``: (offset delta, key, value, next position)."""
    try:
        size, p = wire.read_varint(buf, p, len(buf))
        if bounded:  # the compressed path reads the record's bytes first
            if size < 0 or p + size > len(buf):
                raise _Refused("records", f"record size {size}")
            limit = p + size
        else:
            if len(buf) - p < size:
                raise _Refused("records", f"record size {size}")
            limit = len(buf)  # the uncompressed path reads from the batch's buffer
        start = p
        if p >= limit:
            raise wire.Underflow()
        p += 1  # attributes
        _, p = wire.read_varint(buf, p, limit, long=True)
        od, p = wire.read_varint(buf, p, limit)
        fields = []
        for _ in range(2):
            n, p = wire.read_varint(buf, p, limit)
            if n >= 0:
                if p + n > limit:
                    raise wire.Underflow()
                fields.append(buf[p : p + n])
                p += n
            else:
                fields.append(None)
        nh, p = wire.read_varint(buf, p, limit)
        if nh < 0 or nh > limit - p:
            raise _Refused("records", f"header count {nh}")
        for _ in range(nh):
            kl, p = wire.read_varint(buf, p, limit)
            if kl < 0:
                raise _Refused("records", f"header key size {kl}")
            if p + kl > limit:
                raise wire.Underflow()
            p += kl
            vl, p = wire.read_varint(buf, p, limit)
            if vl >= 0:
                if p + vl > limit:
                    raise wire.Underflow()
                p += vl
        if p - start != size:
            raise _Refused("records", f"record body {p - start} bytes, length prefix {size}")
        return od, fields[0], fields[1], p
    except (wire.Underflow, wire.Illegal) as e:
        raise _Refused("records", type(e).__name__) from None


def _check_control(key: bytes | None, value: bytes | None) -> None:
    """``ControlRecordType.parse`` and, for markers, ``EndTransactionMarker.deserializeValue``."""
    if key is None or len(key) < 4:
        raise _Refused("control", f"key of {None if key is None else len(key)} bytes")
    version, ctype = struct.unpack_from(">hh", key, 0)
    if version < 0:
        raise _Refused("control", f"key version {version}")
    if ctype in (0, 1):
        if value is None or len(value) < 6:
            raise _Refused("control", f"marker value of {None if value is None else len(value)} bytes")
        if struct.unpack_from(">h", value, 0)[0] < 0:
            raise _Refused("control", "negative marker version")


def judge_legacy(raw: bytes) -> list[tuple[str, str]]:
    if not wire.legacy_crc_ok(raw):
        return [("crc", "")]
    out: list[tuple[str, str]] = []
    offset, _size, _crc, magic, attrs = struct.unpack_from(">qiIbb", raw, 0)
    if offset < 0:
        out.append(("header_offsets", str(offset)))
    codec = attrs & 7
    if codec > 3:  # the iterator asks for the compression type first: CompressionType.forId throws
        return out + [("codec", str(codec))]
    try:
        key, value = _legacy_key_value(raw, magic)
    except _Refused as e:
        return out + [(e.reason, e.detail)]
    if codec == 0:
        return out
    if value is None:
        return out + [("null_wrapper", "")]
    try:
        inner = wire.decompress_java(codec, value, magic)
    except wire.CodecError as e:
        return out + [("decompress", str(e))]
    msgs = []
    p = 0
    try:
        while len(inner) - p >= wire.LOG_OVERHEAD:
            off, size = struct.unpack_from(">qi", inner, p)
            if size < wire.RECORD_OVERHEAD_V0:
                raise _Refused("inner_set", f"inner size {size}")
            if len(inner) - p - wire.LOG_OVERHEAD < size:
                break  # DataLogInputStream: a partial message at the end ends the set
            msgs.append((off, inner[p : p + wire.LOG_OVERHEAD + size]))
            p += wire.LOG_OVERHEAD + size
        if not msgs:
            raise _Refused("inner_set", "no inner records")
        if magic == 1 and offset != 0 and offset < msgs[-1][0]:
            raise _Refused("inner_set", f"wrapper offset {offset} below the last inner offset {msgs[-1][0]}")
        prev = None
        for off, m in msgs:
            imagic = m[16]
            if imagic > 1 or len(m) < wire.LOG_OVERHEAD + wire.MIN_SIZE[imagic]:
                raise _Refused("inner_message", "inner message too short for its magic")
            if m[17] & 7:  # DeepRecordsIterator.makeNext: "Inner messages must not be compressed" (5-7: forId throws)
                raise _Refused("inner_message", f"inner message with codec {m[17] & 7}")
            if not wire.legacy_crc_ok(m):
                out.append(("inner_crc", str(off)))
            _legacy_key_value(m, imagic, inner=True)
            rel_ok = off <= offset if magic == 0 else off >= 0
            if not rel_ok or (prev is not None and off <= prev):
                out.append(("record_offsets", str(off)))
            prev = off if prev is None else max(prev, off)
    except _Refused as e:
        out.append((e.reason, e.detail))
    return _dedupe(out)


def _legacy_key_value(raw: bytes, magic: int, inner: bool = False) -> tuple[bytes | None, bytes | None]:
    """``LegacyRecord.key()``/``value()``: a length running past the message fails."""
    p = 18 + (8 if magic == 1 else 0)
    reason = "inner_message" if inner else "message"
    out = []
    for _ in range(2):
        if p + 4 > len(raw):
            raise _Refused(reason, "length field past the message")
        n = struct.unpack_from(">i", raw, p)[0]
        p += 4
        if n < 0:
            out.append(None)
            continue
        if p + n > len(raw):
            raise _Refused(reason, f"length {n} past the message")
        out.append(raw[p : p + n])
        p += n
    return out[0], out[1]


# ============================================================================= text: Java's number parsing
_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]+")


def java_parse(token: str, bits: int) -> int | None:
    """``Integer.parseInt`` (bits 32) / ``Long.parseLong`` (bits 64): Unicode decimal digits, one sign, in range."""
    if not token:
        return None
    sign = 1
    body = token
    if token[0] in "+-":
        sign = -1 if token[0] == "-" else 1
        body = token[1:]
        if not body:
            return None
    value = 0
    for ch in body:
        # Character.digit(char): Java iterates UTF-16 units, and a surrogate is no digit
        d = unicodedata.decimal(ch, None) if ch <= "\uffff" else None
        if d is None:
            return None
        value = value * 10 + d
        if value > 2 ** (bits - 1):
            return None
    value *= sign
    return value if -(2 ** (bits - 1)) <= value <= 2 ** (bits - 1) - 1 else None


def read_lines(data: bytes) -> list[str] | None:
    """``BufferedReader.readLine`` over a UTF-8 decoder that reports malformed input (None: the read fails)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def java_split(line: str) -> list[str]:
    parts = _JAVA_SPACE.split(line)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if parts == [""] and line:  # all whitespace: Java gives an empty array... except for ""
        return []
    return parts


def judge_checkpoint(data: bytes, kind: str) -> list[Refusal]:
    """``CheckpointFile.read`` (the five kinds differ only in their entry line)."""
    lines = read_lines(data)
    if lines is None:
        return [Refusal("checkpoint", detail="not UTF-8")]
    if not lines:
        return []
    if java_parse(lines[0], 32) != 0:
        return [Refusal("checkpoint", line=1, detail="version")]
    if len(lines) < 2:
        return []
    count = java_parse(lines[1], 32)
    if count is None or count < 0:
        return [Refusal("checkpoint", line=2, detail="count")]
    width = 2 if kind == "leader_epoch_checkpoint" else 3
    for no, line in enumerate(lines[2:], start=3):
        parts = java_split(line)
        if len(parts) != width:
            return [Refusal("checkpoint", line=no, detail="fields")]
        nums = [(parts[0], 32), (parts[1], 64)] if width == 2 else [(parts[1], 32), (parts[2], 64)]
        if any(java_parse(t, b) is None for t, b in nums):
            return [Refusal("checkpoint", line=no, detail="number")]
    if len(lines) - 2 != count:
        return [Refusal("checkpoint", line=2, detail="count mismatch")]
    return []


def judge_partition_metadata(data: bytes) -> list[Refusal]:
    lines = read_lines(data)
    if lines is None:
        return [Refusal("partition_metadata", detail="not UTF-8")]
    split = re.compile(r":[ \t\n\x0b\f\r]+")

    def parts(i: int) -> list[str] | None:
        if i >= len(lines):
            return None
        p = split.split(lines[i])
        while len(p) > 1 and p[-1] == "":
            p.pop()
        return p

    v = parts(0)
    if v is None or len(v) != 2:
        return [Refusal("partition_metadata", line=1)]
    version = java_parse(v[1], 32)
    if version is None or version < 0:
        return [Refusal("partition_metadata", line=1, detail="version")]
    t = parts(1)
    if t is None or len(t) != 2:
        return [Refusal("partition_metadata", line=2)]
    raw = _uuid(t[1])
    if raw is None or raw == bytes(16):
        return [Refusal("partition_metadata", line=2, detail="topic id")]
    return []


def _uuid(text: str) -> bytes | None:
    """``Uuid.fromString``: at most 24 characters of URL-safe base64 (padding optional, correct if present), 16 bytes."""
    import base64
    import binascii

    if len(text) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", text):
        return None
    body = text.rstrip("=")
    pad = len(text) - len(body)
    if pad and (len(body) + pad) % 4:
        return None
    if len(body) % 4 == 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 16 else None


def judge_producer_snapshot(data: bytes) -> list[Refusal]:
    """``ProducerStateManager.readSnapshot``: version, CRC-32C from byte 6, and the entry array readable."""
    import crc32c

    if len(data) < 10:
        return [Refusal("producer_snapshot", 0, detail="short")]
    version, crc, count = struct.unpack_from(">hIi", data, 0)
    if version != 1:
        return [Refusal("producer_snapshot", 0, detail="version")]
    if count < 0 or count * 46 > len(data) - 10:
        return [Refusal("producer_snapshot", 6, detail="count")]
    if crc != crc32c.crc32c(data[6:]):
        return [Refusal("producer_snapshot", 2, detail="crc")]
    return []


def judge_index(data: bytes, kind: str, base_offset: int = 0) -> list[Refusal]:
    """Each index kind's ``sanityCheck`` (a failure makes Kafka rebuild the index on recovery)."""
    out = []
    if kind == "offset_index":
        n = len(data) // 8
        if len(data) % 8:
            out.append(Refusal("index_sanity", detail="length"))
        if n and base_offset + struct.unpack_from(">i", data, (n - 1) * 8)[0] < base_offset:
            out.append(Refusal("index_sanity", detail="last offset"))
    elif kind == "time_index":
        n = len(data) // 12
        if len(data) % 12:
            out.append(Refusal("index_sanity", detail="length"))
        if n:
            first_ts = struct.unpack_from(">q", data, 0)[0]
            last_ts, last_rel = struct.unpack_from(">qi", data, (n - 1) * 12)
            if last_ts < first_ts:
                out.append(Refusal("index_sanity", detail="timestamps"))
            if base_offset + last_rel < base_offset:
                out.append(Refusal("index_sanity", detail="last offset"))
    elif kind == "txn_index":
        for i in range(len(data) // 34):
            version = struct.unpack_from(">b", data, i * 34)[0]
            last = struct.unpack_from(">q", data, i * 34 + 18)[0]
            if version > 0 or last < base_offset:
                out.append(Refusal("index_sanity", i * 34, detail="entry"))
                break
    return out


_QUORUM_FIELDS = {
    0: {"clusterId": str, "leaderId": 32, "leaderEpoch": 32, "votedId": 32, "appliedOffset": 64,
        "currentVoters": list},
    1: {"leaderId": 32, "leaderEpoch": 32, "votedId": 32, "votedDirectoryId": "uuid"},
}


def judge_quorum_state(data: bytes) -> list[Refusal]:
    """``FileQuorumStateStore.readElectionState``: the first line is a JSON object with every field of its
    ``data_version`` (``QuorumStateDataJsonConverter``: each field is mandatory in the versions it exists in)."""
    lines = read_lines(data)
    if not lines:
        return [Refusal("quorum_state", detail="empty or not UTF-8")]
    try:
        obj = json.loads(lines[0])
    except (ValueError, RecursionError):
        return [Refusal("quorum_state", line=1, detail="not JSON")]
    if not isinstance(obj, dict):
        return [Refusal("quorum_state", line=1, detail="not an object")]
    dv = obj.get("data_version")
    if type(dv) is not int or dv not in _QUORUM_FIELDS:
        return [Refusal("quorum_state", line=1, detail="data_version")]
    for name, kind in _QUORUM_FIELDS[dv].items():
        v = obj.get(name)
        if kind in (32, 64):
            if type(v) is not int or not -(2 ** (kind - 1)) <= v < 2 ** (kind - 1):
                return [Refusal("quorum_state", line=1, detail=name)]
        elif kind is str:
            if not isinstance(v, str):
                return [Refusal("quorum_state", line=1, detail=name)]
        elif kind is list:
            if v is not None and not isinstance(v, list):
                return [Refusal("quorum_state", line=1, detail=name)]
        elif kind == "uuid":
            if not isinstance(v, str) or _uuid(v) is None:
                return [Refusal("quorum_state", line=1, detail=name)]
    return []
