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
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
from construct import ConstructError

from ..findings import DecodeError, Finding, finding
from ..formats import legacy, record_batch
from ..formats.compression import CODECS, Decompressor
from ..formats.control import decode_control
from . import kernels
from .batch_table import COL, new_batch_rows
from .kernels.kernel_set import Kernels
from .log_entry import Batch
from .record_offsets import OffsetOrder, last_offset_delta, wrap_long, wrap_sequence
from .record_tables import DEFAULT_MAX_DECOMPRESSED, RECORD_TABLE_ROWS, TablePair, iter_record_tables
from .record_types import (
    TIMESTAMP_TYPES,
    BatchEntry,
    Record,
    RecordHeader,
    RecordTable,
    batch_entry,
)

#: Records (or inner legacy messages) decoded per kernel call.
RECORD_CHUNK = 1 << 16
#: Rows turned into Python values at a time.
_PY_ROWS = 1 << 12

_LOCAL = threading.local()


def _decompressor() -> Decompressor:
    """This thread's decompressor: its contexts are reused from entry to entry (one per thread: they are not
    thread-safe)."""
    d: Decompressor | None = getattr(_LOCAL, "decompressor", None)
    if d is None:
        d = _LOCAL.decompressor = Decompressor()
    return d


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


class EntryRecords:
    """The records of one entry (v2 batch or legacy message/wrapper), decoded lazily.

    Iterate it for :class:`Record` values.  After iteration (or after
    :meth:`summary` for a legacy wrapper), ``findings`` holds what was wrong
    (at most one finding per code, placed in the file: at the record's byte
    when it is known, else at the entry's start) and ``error`` the first of
    them.  Record offsets outside the batch or not increasing are reported and
    decoding goes on; anything else stops it.
    """

    def __init__(self, batch: Batch, *, with_data: bool = False, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
                 file: str | None = None):
        self.batch = batch
        self.with_data = with_data
        self.max_decompressed = max_decompressed
        self.file = file
        self.findings: list[Finding] = []
        self._payload: bytes | bytearray | None = None

    # ------------------------------------------------------------ errors
    @property
    def error(self) -> Finding | None:
        """The first finding (None when the entry decoded cleanly)."""
        return self.findings[0] if self.findings else None

    def _add(self, f: Finding) -> None:
        if all(x.code != f.code for x in self.findings):
            self.findings.append(f)

    def _fail(self, code: str, message: str, position: int | None = None, **facts: Any) -> None:
        self._add(finding(code, message, file=self.file,
                          position=self.batch.position if position is None else position, **facts))

    def _decoded_payload(self, data: memoryview, start: int) -> bytes | bytearray | None:
        """The decompressed payload (cached), or None with ``error`` set.

        ``start`` is the file position of ``data`` (the compressed section):
        a position the decoder gives is relative to it; an error it cannot
        place (most decompression failures) is placed at the entry's start.
        """
        if self._payload is None:
            codec = self.batch.attributes & record_batch.COMPRESSION_MASK
            try:
                self._payload = _decompressor().decompress(codec, data, magic=self.batch.magic,
                                                           max_output=self.max_decompressed)
            except DecodeError as e:
                self._add(e.finding.at(self.file, offset=start, default=self.batch.position))
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

    def _records_section(self, raw: memoryview) -> tuple[bytes | bytearray, int | None] | None:
        """A v2 batch's records section, decompressed when the batch is, and where it starts in the file (None
        for a decompressed stream); None when it does not decompress (the finding is made)."""
        b = self.batch
        section = raw[record_batch.HEADER_SIZE :]
        if b.attributes & record_batch.COMPRESSION_MASK:
            payload = self._decoded_payload(section, b.position + record_batch.HEADER_SIZE)
            return None if payload is None else (payload, None)  # positions refer to the decompressed stream
        return bytes(section), b.position + record_batch.HEADER_SIZE

    def _v2(self) -> Iterator[Record]:
        b = self.batch
        K = kernels.get()
        raw = b.raw
        if raw is None:  # checked by __iter__
            return
        got = self._records_section(raw)
        if got is None:
            return
        payload, in_file = got
        buf = np.frombuffer(payload, dtype=np.uint8)
        count = b.records_count
        log_append = bool(b.attributes & record_batch.TIMESTAMP_TYPE_BIT)
        control = bool(b.attributes & record_batch.CONTROL_BIT)
        # a table never larger than a chunk, nor than the payload could fill
        table = K.new_record_table(min(RECORD_CHUNK, len(payload) // record_batch.MIN_RECORD_SIZE + 1))
        c = K.RCOL
        offsets = OffsetOrder(last_offset_delta(b.base_offset, b.last_offset))
        p, done = 0, 0
        while True:
            n, stop, status = K.decode_records(buf, p, len(payload), count - done if count >= 0 else count, table)
            for code, i, delta in offsets.check(table[:n, c["offset_delta"]], done):
                at = int(table[i - done, c["position"]]) + in_file if in_file is not None else None
                self._fail(code, offsets.message(code, i, delta, offsets.last), at, record_index=i,
                           offset_delta=delta, last_offset_delta=offsets.last)
            for row in _py_rows(table[:n]):
                yield self._v2_record(payload, row, c, log_append, control)
            done += n
            if status == kernels.RS_FULL:
                p = stop
                continue
            self._end(status, done, stop, in_file)
            return

    def _end(self, status: int, done: int, stop: int, in_file: int | None) -> None:
        """The finding of a decoder's last status (none for ``RS_OK``); ``stop`` within the records section,
        ``in_file`` where that section starts in the file (None: decompressed, no file position)."""
        if status != kernels.RS_OK:
            where = stop + in_file if in_file is not None else None
            self._fail(
                "RECORD_DECODE_ERROR",
                f"record {done}: {kernels.RECORD_STATUS_TEXT[status]}"
                + ("" if in_file is not None else f" (at byte {stop} of the decompressed records)"),
                where, record_index=done, decompressed_position=None if in_file is not None else stop)

    def _v2_record(self, payload: bytes | bytearray, row: list[int], c: dict[str, int], log_append: bool,
                   control: bool) -> Record:
        b = self.batch
        ks, kl, vs, vl = row[c["key_pos"]], row[c["key_len"]], row[c["value_pos"]], row[c["value_len"]]
        # bytes whatever the payload is (a decompressed one may be a bytearray); no copy of a bytes slice
        key = bytes(payload[ks : ks + kl]) if kl >= 0 else None
        value = bytes(payload[vs : vs + vl]) if vl >= 0 else None
        rec = Record(
            # Java's long arithmetic: a value past the range wraps, as Kafka's accessors return it
            offset=wrap_long(b.base_offset + row[c["offset_delta"]]),
            timestamp=b.max_timestamp if log_append else wrap_long(b.base_timestamp + row[c["timestamp_delta"]]),
            sequence=wrap_sequence(b.base_sequence, row[c["offset_delta"]]),
            size_in_bytes=row[c["size_in_bytes"]], key_size=kl if kl >= 0 else -1, value_size=vl if vl >= 0 else -1,
            key_sha256=_digest(key), value_sha256=_digest(value),
            headers=_headers(payload, row[c["headers_pos"]], row[c["headers_count"]], self.with_data,
                             row[c["position"]] + row[c["size_in_bytes"]]),
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
            if b.raw is None:  # checked by __iter__
                return
            yield _legacy_record(b.raw, b.value_position - b.position, b.size_in_bytes, b.key_length,
                                 b.value_length, b.last_offset, b.max_timestamp if b.magic >= 1 else -1,
                                 self.with_data, b.crc, b.is_valid)
            return
        log_append = b.magic == 1 and bool(b.attributes & record_batch.TIMESTAMP_TYPE_BIT)
        prev: int | None = None
        for inner, chunk, shift in self._inner_chunks():
            for r in _py_rows(chunk):
                pos, size = r[COL["position"]], r[COL["size_in_bytes"]]
                crc, computed = r[COL["crc"]], r[COL["crc_computed"]]
                valid = crc == (computed if computed >= 0 else legacy.compute_crc(memoryview(inner)[pos : pos + size]))
                rel = r[COL["last_offset"]]
                off = shift + rel
                if not valid:
                    self._fail("INNER_MESSAGE_CRC_MISMATCH",
                               f"inner message at offset {off} fails its CRC-32 (stored {crc})", offset=off,
                               decompressed_position=pos, stored=crc)
                # v0 inner offsets are absolute and end at the wrapper's; v1 are relative, from 0
                if (rel < 0 or rel > b.last_offset) if b.magic == 0 else rel < 0:
                    self._fail("RECORD_OFFSET_OUT_OF_BATCH",
                               f"inner message offset {rel} outside the wrapper's (offset {b.last_offset})",
                               inner_offset=rel, wrapper_offset=b.last_offset, decompressed_position=pos)
                if prev is not None and rel <= prev:
                    self._fail("RECORD_OFFSETS_NOT_INCREASING",
                               f"inner message offset {rel} does not exceed the previous one's ({prev})",
                               inner_offset=rel, previous=prev, decompressed_position=pos)
                prev = rel if prev is None else max(prev, rel)
                kl, vl = r[COL["key_length"]], r[COL["value_length"]]
                if kl == -2 or vl == -2:  # this message is unreadable; the set still frames the next one
                    self._fail("BAD_MESSAGE", f"inner message at offset {off}: key or value length overruns it",
                               offset=off, decompressed_position=pos)
                    continue
                ts = b.max_timestamp if log_append else (r[COL["max_timestamp"]] if b.magic >= 1 else -1)
                yield _legacy_record(inner, r[COL["value_position"]], size, kl, vl, off, ts, self.with_data, crc,
                                     valid)

    def summary(self) -> tuple[int | None, int | None]:
        """``(first offset, record count)`` of a legacy wrapper, without keeping its records (a pass over
        the inner message set's columns)."""
        first, n = None, 0
        for _inner, rows, shift in self._inner_chunks():
            if first is None and len(rows):
                first = shift + int(rows[0, COL["last_offset"]])
            n += len(rows)
        return first, n if first is not None else None

    def _inner_chunks(self) -> Iterator[tuple[bytes | bytearray, np.ndarray, int]]:
        """``(inner message set, rows, offset shift)``: the inner messages of a compressed wrapper, a table of
        rows at a time, as far as they are readable.

        Checked as Kafka's deep iterator reads them: the codec, a null value,
        an empty set, a v1 wrapper offset below the last inner offset (nothing
        is read then); an inner message that is compressed or of another magic
        is reported (the leader's validation refuses it) and read as it is.
        The rows' own checks (CRCs, offsets) are the caller's.
        """
        b = self.batch
        if b.raw is None:
            return
        codec = b.attributes & record_batch.COMPRESSION_MASK
        if codec not in CODECS:  # CompressionType.forId throws before the value is looked at
            self._fail("UNKNOWN_CODEC", f"unknown compression type id {codec}", codec=codec)
            return
        if codec == 4:
            self._fail("CODEC_NOT_ALLOWED_FOR_MAGIC", f"zstd is not allowed with magic {b.magic}")
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
        # KIP-31: v1 inner offsets are relative to the wrapper, which holds the absolute offset of the last;
        # the relative offset of the last inner message is only known at the end, so v1 offsets are shifted once
        # a first pass has seen them all.  A wrapper offset of 0 (some librdkafka versions) leaves them as they
        # are, as Kafka does.
        shift = 0
        if b.magic == 1 and b.last_offset != 0:
            last_rel = None
            for rows, _, _ in _walk_inner(K, buf, len(inner)):
                if len(rows):
                    last_rel = int(rows[-1, COL["last_offset"]])
            if last_rel is not None and b.last_offset < last_rel:
                self._fail("BAD_INNER_MESSAGE_SET", f"wrapper offset {b.last_offset} is below the last inner "
                                                    f"offset {last_rel} (Kafka's iterator throws)",
                           wrapper_offset=b.last_offset, last_inner_offset=last_rel)
                return
            shift = b.last_offset - last_rel if last_rel is not None else 0
        seen = False
        for rows, complete, stop in _walk_inner(K, buf, len(inner)):
            odd = np.flatnonzero((rows[:, COL["magic"]] != b.magic)
                                 | ((rows[:, COL["attributes"]] & record_batch.COMPRESSION_MASK) != 0))
            if len(odd):
                # Kafka's reader takes such a message as it is (the leader's validation refuses it): reported, and
                # read as a message of its own magic; a v2 batch inside a legacy wrapper is no message at all
                i = int(odd[0])
                self._fail("BAD_INNER_MESSAGE", "wrapper holds a compressed or different-magic inner message",
                           decompressed_position=int(rows[i, COL["position"]]),
                           inner_magic=int(rows[i, COL["magic"]]))
                rows = rows[rows[:, COL["magic"]] < record_batch.MAGIC]
            seen = seen or len(rows) > 0
            yield inner, rows, shift
            if not complete:
                self._fail("BAD_INNER_MESSAGE_SET",
                           f"inner message set of the wrapper is damaged at byte {stop} of {len(inner)} "
                           "decompressed bytes", decompressed_position=stop)
                break
        if not seen:
            self._fail("BAD_INNER_MESSAGE_SET", "wrapper holds no inner messages")


def _py_rows(table: np.ndarray) -> Iterator[list[int]]:
    """A table's rows as Python lists, a slice at a time (a whole chunk of rows as lists is tens of MB)."""
    for a in range(0, len(table), _PY_ROWS):
        yield from table[a : a + _PY_ROWS].tolist()


def _walk_inner(K: Kernels, buf: np.ndarray, n: int) -> Iterator[tuple[np.ndarray, bool, int]]:
    """Chunks of inner-message rows: ``(rows, complete, position)``; the last chunk's flag is False when the set
    is damaged at ``position``."""
    out = new_batch_rows(RECORD_CHUNK)
    pos = 0
    while True:
        k, pos, status = K.walk(buf, n, pos, out, 0, RECORD_CHUNK)
        if status == kernels.ST_FULL:
            yield out[:k], True, pos
            continue
        yield out[:k], status == kernels.ST_NEED_MORE and pos == n, pos
        return


_HEADER_ARRAY = record_batch.CountPrefixedArray(record_batch.VarInt, record_batch.RecordHeader)


def _headers(payload: bytes | bytearray, pos: int, count: int, with_data: bool, end: int) -> list[RecordHeader]:
    if count <= 0:
        return []
    # re-parse from the count field to the record's end (never a copy of the rest of the payload): the kernel
    # validated these bytes already
    start = pos - len(record_batch.VarInt.build(count))
    out = []
    for h in _HEADER_ARRAY.parse(payload[start:end]):
        out.append(RecordHeader(h.key.decode("utf-8", errors="replace"), -1 if h.value is None else len(h.value),
                                _digest(h.value), h.value if with_data else None))
    return out


def _legacy_record(buf: memoryview | bytes | bytearray, value_pos: int, size: int, key_length: int,
                   value_length: int, offset: int, ts: int, with_data: bool, crc: int, valid: bool) -> Record:
    """A legacy message from the walk's columns (positions in ``buf``): its key ends 4 bytes (the value
    length) before its value.  Negative lengths are null, as ``LegacyRecord`` reads them."""
    key = None if key_length < 0 else bytes(buf[value_pos - 4 - key_length : value_pos - 4])
    value = None if value_length < 0 else bytes(buf[value_pos : value_pos + value_length])
    rec = Record(
        offset=offset, timestamp=ts, sequence=-1, size_in_bytes=size,
        key_size=key_length if key_length >= 0 else -1, value_size=value_length if value_length >= 0 else -1,
        key_sha256=_digest(key), value_sha256=_digest(value), crc=crc, is_valid=bool(valid))
    if with_data:
        rec.key, rec.value = key, value
    return rec


__all__ = ["DEFAULT_MAX_DECOMPRESSED", "RECORD_CHUNK", "RECORD_TABLE_ROWS", "TIMESTAMP_TYPES", "BatchEntry",
           "EntryRecords", "Record", "RecordHeader", "RecordTable", "TablePair", "batch_entry", "iter_record_tables",
           "last_offset_delta", "wrap_long", "wrap_sequence"]
