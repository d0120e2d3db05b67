"""Deep decoding: the records inside one batch or legacy wrapper, as typed values, in bounded chunks.

Field names are the snake_case forms of Kafka's accessors (the oracle
manifests' names), so the same values feed the text dump, JSON output and
the comparisons with Kafka's own view.  Payloads are summarised by size and
SHA-256, so replicas can be compared without exposing data; ``with_data``
keeps the bytes too.

Memory is bounded whatever the batch claims: a payload is decompressed up to
a cap, and records are decoded ``RECORD_CHUNK`` at a time and handed out one
by one, so a batch of 37 million tiny records streams instead of becoming a
37-million-row table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from construct import ConstructError

from ..findings import DecodeError, Finding, finding
from ..formats import legacy, record_batch
from ..formats.compression import CODECS, decompress
from ..formats.control import decode_control
from . import kernels
from .batch_table import COL, new_batch_rows

#: Bound on one batch's decompressed size (decompression-bomb guard).
DEFAULT_MAX_DECOMPRESSED = 256 << 20
#: Records (or inner legacy messages) decoded per kernel call.
RECORD_CHUNK = 1 << 16

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _digest(data) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def wrap_sequence(base: int, delta: int) -> int:
    """``base + delta`` as Kafka's producer sequences wrap (Int32.MAX to 0); -1 without a sequence."""
    if base < 0:
        return -1
    return (base + delta) % 2147483648


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


def batch_entry(b) -> BatchEntry:
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
        base_offset=b.base_offset if b.base_offset >= 0 else None, last_offset=b.last_offset,
        next_offset=b.last_offset + 1, count=count, crc=b.crc, is_valid=b.is_valid,
        compression=CODECS.get(codec, f"unknown({codec})"), timestamp_type=ts_type, base_timestamp=base_ts,
        max_timestamp=b.max_timestamp, delete_horizon_ms=dh, partition_leader_epoch=b.partition_leader_epoch,
        is_transactional=transactional, is_control=control, producer_id=b.producer_id,
        producer_epoch=b.producer_epoch, base_sequence=b.base_sequence, last_sequence=last_seq,
        record_count=b.records_count if b.records_count >= 0 else None, recovered=b.recovered)


class EntryRecords:
    """The records of one entry (v2 batch or legacy message/wrapper), decoded lazily.

    Iterate it for :class:`Record` values.  After iteration (or after
    :meth:`summary` for a legacy wrapper), ``error`` holds the finding that
    stopped decoding, placed at the entry's file position.
    """

    def __init__(self, batch, *, with_data: bool = False, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
                 file: str | None = None):
        self.batch = batch
        self.with_data = with_data
        self.max_decompressed = max_decompressed
        self.file = file
        self.error: Finding | None = None
        self._payload: bytes | None = None

    # ------------------------------------------------------------ errors
    def _fail(self, code: str, message: str, **facts: Any) -> None:
        if self.error is None:
            self.error = finding(code, message, file=self.file, position=self.batch.position, **facts)

    def _decoded_payload(self, data, start: int) -> bytes | None:
        """The decompressed payload (cached), or None with ``error`` set.

        ``start`` is the file position of ``data`` (the compressed section):
        a position the decoder gives is relative to it; an error it cannot
        place (most decompression failures) is placed at the entry's start.
        """
        if self._payload is None:
            codec = self.batch.attributes & record_batch.COMPRESSION_MASK
            try:
                self._payload = decompress(codec, data, magic=self.batch.magic, max_output=self.max_decompressed)
            except DecodeError as e:
                self.error = e.finding.at(self.file, offset=start, default=self.batch.position)
                return None
        return self._payload

    # ------------------------------------------------------------ iteration
    def __iter__(self) -> Iterator[Record]:
        b = self.batch
        if b.raw is None:
            self._fail("BATCH_NOT_DECODED", "entry bytes not held in memory (too large); records not decoded")
            return
        try:
            if b.magic == record_batch.MAGIC:
                yield from self._v2()
            else:
                yield from self._legacy()
        except ConstructError as e:  # a legacy message whose lengths overrun it
            self._fail("BAD_MESSAGE", f"message does not parse: {e}".replace("\n", " "))

    def _v2(self) -> Iterator[Record]:
        b = self.batch
        K = kernels.get()
        raw = b.raw
        codec = b.attributes & record_batch.COMPRESSION_MASK
        section = raw[record_batch.HEADER_SIZE :]
        if codec:
            payload = self._decoded_payload(section, b.position + record_batch.HEADER_SIZE)
            if payload is None:
                return
            in_file = None  # positions refer to the decompressed stream
        else:
            payload = bytes(section)
            in_file = b.position + record_batch.HEADER_SIZE
        buf = np.frombuffer(payload, dtype=np.uint8)
        count = b.records_count
        log_append = bool(b.attributes & record_batch.TIMESTAMP_TYPE_BIT)
        control = bool(b.attributes & record_batch.CONTROL_BIT)
        # a table never larger than a chunk, nor than the payload could fill
        table = K.new_record_table(min(RECORD_CHUNK, len(payload) // record_batch.MIN_RECORD_SIZE + 1))
        c = K.RCOL
        p, done = 0, 0
        while True:
            n, stop, status = K.decode_records(buf, p, len(payload), count - done if count >= 0 else count, table)
            for row in table[:n].tolist():
                yield self._v2_record(payload, row, c, log_append, control)
            done += n
            if status == kernels.RS_FULL:
                p = stop
                continue
            if status != kernels.RS_OK:
                where = stop + in_file if in_file is not None else None
                self.error = finding(
                    "RECORD_DECODE_ERROR",
                    f"record {done}: {kernels.RECORD_STATUS_TEXT[status]}"
                    + ("" if in_file is not None else f" (at byte {stop} of the decompressed records)"),
                    file=self.file, position=where if where is not None else b.position,
                    record_index=done, decompressed_position=None if in_file is not None else stop)
            return

    def _v2_record(self, payload: bytes, row: list[int], c: dict[str, int], log_append: bool, control: bool) -> Record:
        b = self.batch
        ks, kl, vs, vl = row[c["key_pos"]], row[c["key_len"]], row[c["value_pos"]], row[c["value_len"]]
        key = payload[ks : ks + kl] if kl >= 0 else None
        value = payload[vs : vs + vl] if vl >= 0 else None
        rec = Record(
            offset=b.base_offset + row[c["offset_delta"]],
            timestamp=b.max_timestamp if log_append else b.base_timestamp + row[c["timestamp_delta"]],
            sequence=wrap_sequence(b.base_sequence, row[c["offset_delta"]]),
            size_in_bytes=row[c["size_in_bytes"]], key_size=kl, value_size=vl,
            key_sha256=_digest(key), value_sha256=_digest(value),
            headers=_headers(payload, row[c["headers_pos"]], row[c["headers_count"]], self.with_data),
        )
        if control:
            try:
                rec.control = decode_control(key, value)
            except DecodeError as e:
                rec.control = {"error": e.message}
                self._fail(e.code, f"offset {rec.offset}: {e.message}", offset=rec.offset)
        if self.with_data:
            rec.key, rec.value = key, value
        return rec

    # ------------------------------------------------------------ legacy
    def _legacy(self) -> Iterator[Record]:
        b = self.batch
        codec = b.attributes & record_batch.COMPRESSION_MASK
        if codec == 0:
            if b.value_length == -2 or b.key_length == -2:
                self._fail("BAD_MESSAGE", "key or value length overruns the message")
                return
            yield _legacy_record(bytes(b.raw), b.last_offset, b.max_timestamp, self.with_data, b.crc, b.is_valid)
            return
        for off, ts, entry, crc, valid in self._inner_messages():
            yield _legacy_record(entry, off, ts, self.with_data, crc, valid)

    def summary(self) -> tuple[int | None, int | None]:
        """``(first offset, record count)`` of a legacy wrapper, without keeping its records."""
        first, n = None, 0
        for off, *_ in self._inner_messages(data=False):
            if first is None:
                first = off
            n += 1
        return first, n if first is not None else None

    def _inner_messages(self, data: bool = True) -> Iterator[tuple[int, int, bytes | None, int, bool]]:
        """``(offset, timestamp, entry bytes, crc, valid)`` of each inner message of a compressed wrapper."""
        b = self.batch
        if b.raw is None:
            return
        if b.value_length < 0:
            if b.value_length == -2:
                self._fail("BAD_MESSAGE", "the wrapper's value length overruns the message")
            else:
                self._fail("NULL_WRAPPER_VALUE", "compressed wrapper message has a null value")
            return
        vpos = b.value_position - b.position
        inner = self._decoded_payload(b.raw[vpos : vpos + b.value_length], b.value_position)
        if inner is None:
            return
        K = kernels.get()
        buf = np.frombuffer(inner, dtype=np.uint8)
        log_append = b.magic == 1 and bool(b.attributes & record_batch.TIMESTAMP_TYPE_BIT)
        # KIP-31: v1 inner offsets are relative to the wrapper, which holds the absolute offset of the last;
        # the relative offset of the last inner message is only known at the end, so v1 offsets are shifted once
        # the walk has seen them all (a first pass counts, cheaply, without keeping rows)
        shift = 0
        if b.magic == 1 and b.last_offset != 0:
            last_rel = None
            for rows, _ in self._walk_inner(K, buf, len(inner)):
                if len(rows):
                    last_rel = int(rows[-1, COL["last_offset"]])
            shift = b.last_offset - last_rel if last_rel is not None else 0
        seen = False
        for rows, ok in self._walk_inner(K, buf, len(inner)):
            for r in rows.tolist():
                if r[COL["magic"]] != b.magic or r[COL["attributes"]] & record_batch.COMPRESSION_MASK:
                    self._fail("BAD_INNER_MESSAGE", "wrapper holds a compressed or different-magic inner message")
                    return
                pos, size = r[COL["position"]], r[COL["size_in_bytes"]]
                entry = inner[pos : pos + size]
                crc = r[COL["crc"]]
                computed = r[COL["crc_computed"]]
                valid = crc == (computed if computed >= 0 else legacy.compute_crc(entry))
                off = shift + r[COL["last_offset"]]
                ts = b.max_timestamp if log_append else r[COL["max_timestamp"]]
                if not valid and data:
                    self._fail("INNER_MESSAGE_CRC_MISMATCH",
                               f"inner message at offset {off} fails its CRC-32 (stored {crc})", offset=off,
                               decompressed_position=pos, stored=crc)
                seen = True
                yield off, ts, (entry if data else None), crc, bool(valid)
            if not ok:
                break
        if not seen:
            self._fail("BAD_INNER_MESSAGE_SET", "wrapper holds no inner messages")

    def _walk_inner(self, K, buf: np.ndarray, n: int) -> Iterator[tuple[np.ndarray, bool]]:
        """Chunks of inner-message rows; the last chunk's flag is False when the set is damaged."""
        out = new_batch_rows(RECORD_CHUNK)
        pos = 0
        while True:
            k, pos, status = K.walk(buf, n, pos, out, 0, RECORD_CHUNK)
            if status == kernels.ST_FULL:
                yield out[:k], True
                continue
            complete = status == kernels.ST_NEED_MORE and pos == n
            if not complete:
                self._fail("BAD_INNER_MESSAGE_SET",
                           f"inner message set of the wrapper is damaged at byte {pos} of {n} decompressed bytes",
                           decompressed_position=pos)
            yield out[:k], complete
            return


def _headers(payload: bytes, pos: int, count: int, with_data: bool) -> list[RecordHeader]:
    if count <= 0:
        return []
    parsed = record_batch.CountPrefixedArray(record_batch.VarInt, record_batch.RecordHeader)
    # re-parse from the count field: the kernel validated the bytes already
    start = pos - len(record_batch.VarInt.build(count))
    out = []
    for h in parsed.parse(payload[start:]):
        out.append(RecordHeader(h.key.decode("utf-8", errors="replace"), -1 if h.value is None else len(h.value),
                                _digest(h.value), h.value if with_data else None))
    return out


def _legacy_record(entry: bytes, offset: int, ts: int, with_data: bool, crc: int, valid: bool) -> Record:
    m = legacy.LegacyMessage.parse(entry)
    rec = Record(
        offset=offset, timestamp=ts if m.magic >= 1 else -1, sequence=-1, size_in_bytes=len(entry),
        key_size=m.key_length if m.key_length >= 0 else -1, value_size=m.value_length if m.value_length >= 0 else -1,
        key_sha256=_digest(m.key), value_sha256=_digest(m.value), crc=crc, is_valid=bool(valid))
    if with_data:
        rec.key, rec.value = m.key, m.value
    return rec


# ---------------------------------------------------------------- columnar fast path
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
        return self.data.shape[0]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[:, kernels.get().RCOL[name]]


def iter_record_tables(reader, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED):
    """Deep-decode a whole segment in columnar form: ``(BatchTable, RecordTable)`` per chunk.

    The fast deep path (no per-record Python objects): uncompressed v2
    batches are decoded in one compiled call per chunk; compressed ones are
    decompressed one by one and decoded by the same kernel.  A batch claiming
    more records than its bytes can hold is an error, never an allocation.
    Legacy entries are skipped here (use :class:`EntryRecords`).
    """
    K = kernels.get()
    rc = K.RCOL
    for table in reader.tables():
        held = reader.held()
        magic = table["magic"]
        codec = table["attributes"] & record_batch.COMPRESSION_MASK
        pos, size, counts = table["position"], table["size_in_bytes"], table["records_count"]
        in_window = (pos >= held.file_pos) & (pos + size <= held.end) if held is not None else np.zeros(len(table), bool)
        errors: list[Finding] = []
        parts, bidx = [], []
        plain = np.nonzero((magic == record_batch.MAGIC) & (codec == 0) & in_window)[0]
        if len(plain):
            starts = pos[plain] - held.file_pos + record_batch.HEADER_SIZE
            ends = pos[plain] - held.file_pos + size[plain]
            # rows each batch can fill at most: bounded by its bytes, whatever its header claims
            fit = np.minimum(np.clip(counts[plain], 0, None), (ends - starts) // record_batch.MIN_RECORD_SIZE + 1)
            cnt = np.where(counts[plain] > fit, fit + 1, counts[plain])  # one more than fits: reported as too few
            out = K.new_record_table(int(fit.sum()))
            bout = np.empty(max(int(fit.sum()), 1), dtype=np.int64)
            status = np.zeros(len(plain), dtype=np.int64)
            done, rows = K.decode_records_many(held.buf, starts, ends, np.minimum(cnt, fit), out, bout, status)
            status[(cnt > fit) & (status == kernels.RS_OK)] = kernels.RS_TOO_FEW
            data = out[:rows]
            for col in ("position", "key_pos", "value_pos", "headers_pos"):
                data[:, rc[col]] += held.file_pos
            parts.append(data)
            bidx.append(plain[bout[:rows]])
            for j in np.nonzero(status[:done] != kernels.RS_OK)[0]:
                errors.append(finding("RECORD_DECODE_ERROR", kernels.RECORD_STATUS_TEXT[int(status[j])],
                                      file=reader.label, position=int(pos[plain[j]])))
        for i in np.nonzero((magic == record_batch.MAGIC) & (codec != 0) & in_window)[0]:
            p0 = int(pos[i]) - held.file_pos
            raw = held.buf[p0 + record_batch.HEADER_SIZE : p0 + int(size[i])]
            try:
                payload = decompress(int(codec[i]), raw.tobytes(), magic=2, max_output=max_decompressed)
            except DecodeError as e:
                # decoder positions are relative to the records section; an unplaced error goes at the batch
                errors.append(e.finding.at(reader.label, offset=int(pos[i]) + record_batch.HEADER_SIZE,
                                           default=int(pos[i])))
                continue
            buf = np.frombuffer(payload, dtype=np.uint8)
            c = int(counts[i])
            out = K.new_record_table(max(0, min(c, len(payload) // record_batch.MIN_RECORD_SIZE + 1)))
            n, _stop, st = K.decode_records(buf, 0, len(payload), c, out)
            if st == kernels.RS_FULL:
                st = kernels.RS_TOO_FEW  # more records claimed than the payload can hold
            if st != kernels.RS_OK:
                errors.append(finding("RECORD_DECODE_ERROR", kernels.RECORD_STATUS_TEXT[st], file=reader.label,
                                      position=int(pos[i])))
            parts.append(out[:n])
            bidx.append(np.full(n, i, dtype=np.int64))
        if parts:
            data = np.concatenate(parts)
            batch_index = np.concatenate(bidx)
        else:
            data = K.new_record_table(0)[:0]
            batch_index = np.empty(0, dtype=np.int64)
        attrs = table["attributes"][batch_index]
        offset = table["base_offset"][batch_index] + data[:, rc["offset_delta"]]
        log_append = (attrs & record_batch.TIMESTAMP_TYPE_BIT) != 0
        timestamp = np.where(log_append, table["max_timestamp"][batch_index],
                             table["base_timestamp"][batch_index] + data[:, rc["timestamp_delta"]])
        yield table, RecordTable(data, batch_index, offset, timestamp, errors)
