"""Deep decoding: the records inside one batch or legacy wrapper.

Records come out as plain dicts whose keys are the snake_case forms of Kafka's
accessors (the oracle manifests' field names), so the same objects feed the
text dump, JSON output and the comparisons with Kafka's own view.  Payloads
are summarised by size and SHA-256, so replicas can be compared without
exposing data; ``with_data=True`` keeps the bytes too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from construct import ConstructError

from ..findings import DecodeError
from ..formats import legacy, record_batch
from ..formats.compression import CODECS, decompress
from ..formats.control import decode_control
from . import kernels as K

#: Bound on one batch's decompressed size (decompression-bomb guard).
DEFAULT_MAX_DECOMPRESSED = 256 << 20

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _digest(data) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _wrap_sequence(base: int, delta: int) -> int:
    # Kafka's sequences wrap from Int32.MAX to 0
    if base < 0:
        return -1
    return (base + delta) % 2147483648


@dataclass
class DeepResult:
    """Records of one entry, plus the error that stopped decoding them (if any)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    error: DecodeError | None = None
    base_offset: int | None = None  # legacy wrappers: the first inner offset
    record_count: int | None = None


def batch_fields(b) -> dict[str, Any]:
    """The header fields of a shallow :class:`~kforensics.log.segment_reader.Batch`, manifest-shaped."""
    attrs = b.attributes
    codec = attrs & record_batch.COMPRESSION_MASK
    magic = b.magic
    if magic == 2:
        ts_type = TIMESTAMP_TYPES[1 if attrs & record_batch.TIMESTAMP_TYPE_BIT else 0]
        dh = b.base_timestamp if attrs & record_batch.DELETE_HORIZON_BIT else None
        last_seq = _wrap_sequence(b.base_sequence, b.last_offset - b.base_offset) if b.base_sequence >= 0 else -1
        count = b.records_count
        base_ts = b.base_timestamp
        transactional = bool(attrs & record_batch.TRANSACTIONAL_BIT)
        control = bool(attrs & record_batch.CONTROL_BIT)
    else:
        ts_type = "NoTimestampType" if magic == 0 else TIMESTAMP_TYPES[1 if attrs & record_batch.TIMESTAMP_TYPE_BIT else 0]
        dh = None
        last_seq = -1
        count = None
        base_ts = None
        transactional = control = False
    return {
        "position": b.position,
        "size_in_bytes": b.size_in_bytes,
        "magic": magic,
        "base_offset": b.base_offset if b.base_offset >= 0 else None,
        "last_offset": b.last_offset,
        "next_offset": b.last_offset + 1,
        "count": count,
        "crc": b.crc,
        "is_valid": b.is_valid,
        "compression": CODECS.get(codec, f"unknown({codec})"),
        "timestamp_type": ts_type,
        "base_timestamp": base_ts,
        "max_timestamp": b.max_timestamp,
        "delete_horizon_ms": dh,
        "partition_leader_epoch": b.partition_leader_epoch,
        "is_transactional": transactional,
        "is_control": control,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "last_sequence": last_seq,
        "record_count": b.records_count if b.records_count >= 0 else None,
    }


def decode_entry(b, *, with_data: bool = False, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> DeepResult:
    """Decode the records of one entry (v2 batch or legacy message/wrapper)."""
    if b.raw is None:
        return DeepResult(error=DecodeError("BATCH_NOT_DECODED", "entry bytes not held in memory (too large)"))
    raw = bytes(b.raw)
    try:
        if b.magic == 2:
            return _decode_v2(b, raw, with_data, max_decompressed)
        return _decode_legacy(b, raw, with_data, max_decompressed)
    except DecodeError as e:
        return DeepResult(error=e)
    except ConstructError as e:  # a legacy message whose lengths overrun it
        return DeepResult(error=DecodeError("BAD_MESSAGE", f"message does not parse: {e}"))


def _decode_v2(b, raw: bytes, with_data: bool, max_out: int) -> DeepResult:
    codec = b.attributes & record_batch.COMPRESSION_MASK
    payload = raw[record_batch.HEADER_SIZE :]
    offset_in_raw = record_batch.HEADER_SIZE
    if codec:
        payload = decompress(codec, payload, magic=2, max_output=max_out)
        offset_in_raw = None  # positions refer to the decompressed stream
    buf = np.frombuffer(payload, dtype=np.uint8)
    count = b.records_count
    table = K.new_record_table(min(max(count, 0), len(payload) // 7 + 1))
    n, stop, status = K.decode_records(buf, 0, len(payload), min(count, table.shape[0]) if count >= 0 else count, table)
    if status == K.RS_OK and count > table.shape[0]:
        status = K.RS_TOO_FEW
    result = DeepResult(record_count=count)
    attrs = b.attributes
    log_append = bool(attrs & record_batch.TIMESTAMP_TYPE_BIT)
    control = bool(attrs & record_batch.CONTROL_BIT)
    c = K.RCOL
    for row in table[:n].tolist():
        ks, kl, vs, vl = row[c["key_pos"]], row[c["key_len"]], row[c["value_pos"]], row[c["value_len"]]
        key = payload[ks : ks + kl] if kl >= 0 else None
        value = payload[vs : vs + vl] if vl >= 0 else None
        rec = {
            "offset": b.base_offset + row[c["offset_delta"]],
            "timestamp": b.max_timestamp if log_append else b.base_timestamp + row[c["timestamp_delta"]],
            "sequence": _wrap_sequence(b.base_sequence, row[c["offset_delta"]]),
            "size_in_bytes": row[c["size_in_bytes"]],
            "key_size": kl,
            "value_size": vl,
            "key_sha256": _digest(key),
            "value_sha256": _digest(value),
            "headers": _headers(payload, row[c["headers_pos"]], row[c["headers_count"]], with_data),
            "crc": None,
            "is_valid": None,
            "control": None,
        }
        if control:
            try:
                rec["control"] = decode_control(key, value)
            except DecodeError as e:
                rec["control"] = {"error": e.message}
        if with_data:
            rec["key"] = key
            rec["value"] = value
        result.records.append(rec)
    if status != K.RS_OK:
        where = stop + offset_in_raw if offset_in_raw is not None else None
        result.error = DecodeError(
            "RECORD_DECODE_ERROR",
            f"record {n}: {K.RECORD_STATUS_TEXT[status]}"
            + ("" if where is not None else f" (at byte {stop} of the decompressed records)"),
            where,
            record_index=n,
            decompressed_position=None if offset_in_raw is not None else stop,
        )
    return result


def _headers(payload: bytes, pos: int, count: int, with_data: bool) -> list[dict[str, Any]]:
    if count <= 0:
        return []
    parsed = record_batch.CountPrefixedArray(record_batch.VarInt, record_batch.RecordHeader)
    # re-parse from the count field: the kernel validated the bytes already
    start = pos - len(record_batch.VarInt.build(count))
    out = []
    for h in parsed.parse(payload[start:]):
        item = {
            "key": h.key.decode("utf-8", errors="replace"),
            "value_size": -1 if h.value is None else len(h.value),
            "value_sha256": _digest(h.value),
        }
        if with_data:
            item["value"] = h.value
        out.append(item)
    return out


def _decode_legacy(b, raw: bytes, with_data: bool, max_out: int) -> DeepResult:
    codec = b.attributes & record_batch.COMPRESSION_MASK
    log_append = b.magic == 1 and bool(b.attributes & record_batch.TIMESTAMP_TYPE_BIT)
    if codec == 0:
        rec = _legacy_record(raw, 0, b.last_offset, b.max_timestamp, with_data, b.crc, b.is_valid)
        return DeepResult(records=[rec], base_offset=b.last_offset, record_count=1)
    vpos = b.value_position - b.position
    vlen = b.value_length
    if vlen < 0:
        raise DecodeError("NULL_WRAPPER_VALUE", "compressed wrapper message has a null value", vpos)
    inner = decompress(codec, raw[vpos : vpos + vlen], magic=b.magic, max_output=max_out)
    buf = np.frombuffer(inner, dtype=np.uint8)
    table = K.new_batch_table(len(inner) // 26 + 1)
    n, stop, status = K.walk(buf, len(inner), 0, table, 0, table.shape[0])
    rows = table[:n].tolist()
    result = DeepResult(record_count=n)
    if rows:
        col = K.COL
        last_rel = rows[-1][col["last_offset"]]
        wrapper = b.last_offset
        # KIP-31: v1 inner offsets are relative to the wrapper, which holds the last one
        base = wrapper - last_rel if b.magic == 1 and wrapper != 0 else 0
        for r in rows:
            if r[col["magic"]] != b.magic or r[col["attributes"]] & record_batch.COMPRESSION_MASK:
                raise DecodeError(
                    "BAD_INNER_MESSAGE", "wrapper holds a compressed or different-magic inner message", None
                )
            off = base + r[col["last_offset"]] if b.magic == 1 else r[col["last_offset"]]
            ts = b.max_timestamp if log_append else r[col["max_timestamp"]]
            pos = r[col["position"]]
            entry = inner[pos : pos + r[col["size_in_bytes"]]]
            valid = r[col["crc"]] == r[col["crc_computed"]] if r[col["crc_computed"]] >= 0 else (
                legacy.compute_crc(entry) == r[col["crc"]]
            )
            result.records.append(_legacy_record(entry, 0, off, ts, with_data, r[col["crc"]], valid))
        result.base_offset = result.records[0]["offset"]
    if stop != len(inner) or status not in (K.ST_NEED_MORE, K.ST_FULL) or not rows:
        result.error = DecodeError(
            "BAD_INNER_MESSAGE_SET",
            f"inner message set of the wrapper is damaged at byte {stop} of {len(inner)} decompressed bytes"
            if rows
            else "wrapper holds no inner messages",
            None,
            decompressed_position=stop,
        )
    return result


def _legacy_record(entry: bytes, at: int, offset: int, ts: int, with_data: bool, crc: int, valid: bool) -> dict:
    m = legacy.LegacyMessage.parse(entry[at:])
    rec = {
        "offset": offset,
        "timestamp": ts if m.magic >= 1 else -1,
        "sequence": -1,
        "size_in_bytes": len(entry) - at,
        "key_size": m.key_length if m.key_length >= 0 else -1,
        "value_size": m.value_length if m.value_length >= 0 else -1,
        "key_sha256": _digest(m.key),
        "value_sha256": _digest(m.value),
        "headers": [],
        "crc": crc,
        "is_valid": bool(valid),
        "control": None,
    }
    if with_data:
        rec["key"] = m.key
        rec["value"] = m.value
    return rec


def entry_dict(b, *, deep: bool = False, with_data: bool = False, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> dict:
    """One entry as an NDJSON-ready dict: header fields, and with ``deep`` its records.

    Legacy wrappers only reveal their base offset and record count once
    decompressed, so those are filled in by deep decoding.
    """
    d = batch_fields(b)
    if not deep:
        return d
    res = decode_entry(b, with_data=with_data, max_decompressed=max_decompressed)
    if b.magic < 2:
        if res.base_offset is not None:
            d["base_offset"] = res.base_offset
        if res.record_count is not None:
            d["record_count"] = res.record_count
    d["records_error"] = None if res.error is None else {"code": res.error.code, "message": res.error.message}
    d["records"] = res.records
    return d


@dataclass
class RecordTable:
    """Columnar records of a chunk of batches: record-table rows plus each row's absolute offset/timestamp.

    ``batch_index`` points into the chunk's :class:`~kforensics.log.segment_reader.BatchTable`.
    Positions (``key_pos`` ...) are relative to the batch's records section for
    compressed batches, and absolute file positions otherwise.
    """

    data: np.ndarray  # (rows, len(RECORD_COLUMNS)) int64
    batch_index: np.ndarray
    offset: np.ndarray
    timestamp: np.ndarray
    errors: list[DecodeError]

    def __len__(self) -> int:
        return self.data.shape[0]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[:, K.RCOL[name]]


def iter_record_tables(reader, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED):
    """Deep-decode a whole segment in columnar form: ``(BatchTable, RecordTable)`` per chunk.

    This is the fast deep path (no per-record Python objects): uncompressed v2
    batches are decoded in one compiled call per chunk; compressed ones are
    decompressed one by one and decoded by the same kernel.  Legacy entries
    are skipped here (use :func:`decode_entry`).
    """
    for table in reader.tables():
        win = reader._win
        magic = table["magic"]
        codec = table["attributes"] & record_batch.COMPRESSION_MASK
        pos = table["position"]
        size = table["size_in_bytes"]
        counts = table["records_count"]
        held = (pos >= win.file_pos) & (pos + size <= win.end) if win is not None else np.zeros(len(table), bool)
        plain = np.nonzero((magic == 2) & (codec == 0) & held)[0]
        errors: list[DecodeError] = []
        parts, bidx = [], []
        if len(plain):
            starts = pos[plain] - win.file_pos + record_batch.HEADER_SIZE
            ends = pos[plain] - win.file_pos + size[plain]
            cnt = counts[plain]
            total = int(np.clip(cnt, 0, None).sum())
            out = K.new_record_table(total)
            bout = np.empty(max(total, 1), dtype=np.int64)
            status = np.zeros(len(plain), dtype=np.int64)
            done, rows = K.decode_records_many(win.buf, starts, ends, cnt, out, bout, status)
            data = out[:rows]
            for c in ("position", "key_pos", "value_pos", "headers_pos"):
                data[:, K.RCOL[c]] += win.file_pos
            parts.append(data)
            bidx.append(plain[bout[:rows]])
            for j in np.nonzero(status[:done] != K.RS_OK)[0]:
                errors.append(
                    DecodeError("RECORD_DECODE_ERROR", K.RECORD_STATUS_TEXT[int(status[j])], int(pos[plain[j]]))
                )
        for i in np.nonzero((magic == 2) & (codec != 0) & held)[0]:
            p0 = int(pos[i]) - win.file_pos
            raw = win.buf[p0 + record_batch.HEADER_SIZE : p0 + int(size[i])]
            try:
                payload = decompress(int(codec[i]), raw.tobytes(), magic=2, max_output=max_decompressed)
            except DecodeError as e:
                errors.append(DecodeError(e.code, e.message, int(pos[i])))
                continue
            buf = np.frombuffer(payload, dtype=np.uint8)
            c = int(counts[i])
            out = K.new_record_table(max(0, min(c, len(payload) // 7 + 1)))
            n, stop, st = K.decode_records(buf, 0, len(payload), min(c, out.shape[0]) if c >= 0 else c, out)
            if st != K.RS_OK:
                errors.append(DecodeError("RECORD_DECODE_ERROR", K.RECORD_STATUS_TEXT[st], int(pos[i])))
            parts.append(out[:n])
            bidx.append(np.full(n, i, dtype=np.int64))
        if parts:
            data = np.concatenate(parts)
            batch_index = np.concatenate(bidx)
        else:
            data = K.new_record_table(0)[:0]
            batch_index = np.empty(0, dtype=np.int64)
        attrs = table["attributes"][batch_index]
        offset = table["base_offset"][batch_index] + data[:, K.RCOL["offset_delta"]]
        log_append = (attrs & record_batch.TIMESTAMP_TYPE_BIT) != 0
        timestamp = np.where(
            log_append,
            table["max_timestamp"][batch_index],
            table["base_timestamp"][batch_index] + data[:, K.RCOL["timestamp_delta"]],
        )
        yield table, RecordTable(data, batch_index, offset, timestamp, errors)
