"""Streaming, read-only reader of segment files (``.log``, KRaft ``.checkpoint``).

The reader walks a file in fixed-size windows (never the whole file in memory)
and yields the batch headers as columnar :class:`BatchTable` chunks.  Where
Kafka's own reader (``FileLogInputStream``) would stop (a size below 14, a
partial tail) or where an entry cannot be framed, the reader records a finding
and *resynchronises*: it searches forward for the next entry whose framing is
plausible and whose CRC matches, so batches written after a damaged range are
still reported, flagged as recovered past corruption.

Every walk ends: a read that returns nothing before the size taken at open
is the end of the data (a ``SHORT_READ`` finding with the file and byte), for
local files, archive members and remote files alike (see :mod:`.read_window`).
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import crc32c
import numpy as np

from ..findings import Finding, FindingLog, finding
from ..formats import legacy, record_batch
from . import kernels
from .batch_table import (
    COL,
    FLAG_HUGE,
    FLAG_RECOVERED,
    NCOLS,
    BatchTable,
    new_batch_rows,
)
from .file_hash import HASH_APART, FileHash, digest_of
from .log_entry import DEFAULT_MAX_ENTRY, HEADER_PREFIX, Batch, read_entry
from .paths import Evidence, EvidenceFile
from .read_window import HeldBytes, Window, file_digest
from .sources import file_size, open_binary

__all__ = [
    "DEFAULT_MAX_ENTRY",
    "DEFAULT_ROWS",
    "DEFAULT_WINDOW",
    "HEADER_PREFIX",
    "KAFKA_SIZE_ERROR",
    "Batch",
    "HeldBytes",
    "ReadSummary",
    "SegmentReader",
    "read_entry",
]

DEFAULT_WINDOW = 4 << 20
DEFAULT_ROWS = 1 << 14
_SIZE = record_batch.HEADER["batch_length"]  # the size field, shared by every magic
_BASE = record_batch.HEADER["base_offset"]
_LAST_DELTA = record_batch.HEADER["last_offset_delta"]

KAFKA_SIZE_ERROR = "CorruptRecordException"
#: what :meth:`SegmentReader._need_more` tells the walk
_SLID, _TAIL = "slid", "tail"


@dataclass
class ReadSummary:
    """What a complete walk of one file found, besides the batches themselves."""

    file: str
    #: bytes of data the walk could read (the size taken at open, unless the data ended short)
    size: int = 0
    batches: int = 0
    bytes_in_batches: int = 0
    # where Kafka's own iterator stops, and why (None: it reads to the end)
    kafka_valid_bytes: int = 0
    kafka_stop: str | None = None
    # how Kafka's reader ends there: "partial" (silently, an entry runs past the end) or "corrupt"
    # (CorruptRecordException: a size below the minimum, e.g. zeros)
    kafka_stop_kind: str | None = None
    # a torn final entry: the offsets its surviving header declares (None when too little of it survives)
    partial_offsets: tuple[int, int] | None = None
    recovered_batches: int = 0
    sha256: str | None = None
    findings: list[Finding] = field(default_factory=list)
    #: the size taken at open
    opened_size: int = 0
    #: where a read came back short, before ``opened_size`` (the file shrank, or the copy is cut); None: it did not
    short_read_at: int | None = None

class SegmentReader:
    """Walk one segment file; iterate :meth:`tables` or :meth:`batches`.

    The file is opened read-only and only read.  After iteration,
    :attr:`summary` holds the findings and where Kafka would have stopped.
    """

    def __init__(
        self,
        path: Evidence,
        *,
        window: int = DEFAULT_WINDOW,
        rows: int = DEFAULT_ROWS,
        max_entry: int = DEFAULT_MAX_ENTRY,
        sha256: bool = False,
    ):
        # a local path, or an archive/remote path object (see kforensics.log.sources)
        self.path = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path
        self.label = str(self.path)
        self.window_size = window
        self.rows = rows
        self.max_entry = max_entry
        self.sha256 = sha256
        self.summary = ReadSummary(self.label)
        self._log = FindingLog()
        self._win: Window | None = None
        self._cut_entry: int | None = None

    # ------------------------------------------------------------------ findings
    def _finding(self, code: str, message: str, position: int | None, **facts: Any) -> None:
        # capped per code: a segment of a million bad batches yields a hundred findings and a count
        self._log.add(finding(code, message, file=self.label, position=position, **facts))

    def _kafka_stops(self, position: int, reason: str, kind: str) -> None:
        if self.summary.kafka_stop is None:
            self.summary.kafka_stop_kind = kind
            self.summary.kafka_valid_bytes = position
            self.summary.kafka_stop = reason

    # ------------------------------------------------------------------ tables
    def tables(self) -> Iterator[BatchTable]:
        """Yield chunks of batch headers in file order.

        While a chunk is being consumed, :meth:`entry_bytes` can fetch the raw
        bytes of its rows (used for deep decoding without a second read).

        Not thread-safe: one thread iterates one reader (the SHA-256 of a
        large file is computed on a helper thread the reader owns and joins);
        separate readers may run on separate threads.
        """
        self.summary = ReadSummary(self.label)
        self._log = FindingLog()
        self._cut_entry = None
        with open_binary(self.path) as fh:
            win, file_hash = self._open_window(fh)
            try:
                yield from self._walk(win)
                self.summary.sha256 = file_digest(file_hash, win)
                file_hash = None
            finally:
                if file_hash is not None:
                    file_hash.cancel()
                win.join_hash()
                win.join_ahead()  # before the file is closed
                self._win = None
                self._end_of_data(win)
                self.summary.findings = self._log.findings()
        if self.summary.kafka_stop is None:
            self.summary.kafka_valid_bytes = self.summary.size

    def _open_window(self, fh: EvidenceFile) -> tuple[Window, FileHash | None]:
        """The window over the opened file, and the hash computed apart from the walk (None: the walk hashes)."""
        local = self.path if isinstance(self.path, str) else None
        size = os.fstat(fh.fileno()).st_size if local is not None else file_size(self.path)
        self.summary.size = self.summary.opened_size = size
        # a local file is hashed apart from the walk (see file_hash); an archive member or a remote file is
        # hashed from the walk's own reads, so its bytes are fetched or inflated once
        # (a small file is hashed on this thread from the walk's reads: a thread costs more than its hash)
        file_hash = digest_of(local, fh.fileno()) if self.sha256 and local is not None and size > HASH_APART else None
        win = Window(fh, size, min(self.window_size, max(size, HEADER_PREFIX)),
                     hashlib.sha256() if self.sha256 and file_hash is None else None)
        self._win = win
        win.slide(0)
        return win, file_hash

    def _end_of_data(self, win: Window) -> None:
        """The size the walk could read; a short read is a finding at the byte where the data ended."""
        self.summary.size = win.size
        at = win.short_at
        if at is None:
            return
        self.summary.short_read_at = at
        cut = "" if self._cut_entry is None else f"; the entry at byte {self._cut_entry} is incomplete"
        self._finding("SHORT_READ", f"the data ends at byte {at} of the {win.opened_size} bytes the file had when "
                      f"opened (it shrank while read, or the copy is cut): nothing past byte {at} was read{cut}",
                      at, opened_size=win.opened_size, read=at, cut_entry=self._cut_entry)

    def _walk(self, win: Window) -> Iterator[BatchTable]:
        """The walk over the window: tables of entries, findings where framing breaks, to the end of the data."""
        K = kernels.get()
        out = new_batch_rows(self.rows)
        pos = 0  # file position of the next entry
        recovered = False
        while True:
            k, rel_end, status = K.walk(win.buf, win.n, pos - win.file_pos, out, 0, self.rows)
            if k:
                if 2 * k >= self.rows:
                    # a full enough chunk becomes the table as it is (no copy); the walk gets a new array
                    data, out = out[:k], new_batch_rows(self.rows)
                else:
                    data = out[:k].copy(order="F")  # a few rows: do not keep the whole array alive for them
                yield self._finish_table(data, win.file_pos, recovered)
            pos = win.file_pos + rel_end
            if status == kernels.ST_FULL:
                continue
            if status == kernels.ST_NEED_MORE:
                if pos >= win.size:
                    return
                step, declared = self._need_more(win, pos, recovered)
                if step == _SLID:
                    continue
                if isinstance(step, BatchTable):
                    yield step
                    pos += declared
                    win.slide(pos)
                    continue
                nxt = self._handle_tail(win, pos, declared)  # the entry cannot be completed from this file
            else:
                nxt = self._handle_error(win, pos, status)
            if nxt is None:
                return
            pos = nxt
            recovered = True
            if pos < win.file_pos or pos + HEADER_PREFIX > win.end:
                win.slide(pos)

    def _need_more(self, win: Window, pos: int, recovered: bool) -> tuple[object, int | None]:
        """The entry at ``pos`` is not all held: slide to it (``_SLID``), stream a huge one (its table), or
        say it runs past the end of the data (``_TAIL``); with the size it declares."""
        declared = self._declared_size(win, pos)
        if win.at_eof and pos >= win.file_pos:
            return _TAIL, declared  # all that is left is held and still does not frame: a damaged tail
        if declared is None:
            win.slide(pos, HEADER_PREFIX)
            return _SLID, None
        if pos + declared > win.size:
            return _TAIL, declared
        if declared > self.max_entry:
            table = self._huge_entry(win, pos, declared, recovered)
            return (table, declared) if table is not None else (_TAIL, declared)
        win.slide(pos, max(declared, HEADER_PREFIX))
        return _SLID, declared

    def entry_bytes(self, position: int, length: int) -> memoryview | None:
        """Raw bytes of an entry of the chunk being consumed (None when not held)."""
        return None if self._win is None else self._win.bytes_at(position, length)

    def held(self) -> HeldBytes | None:
        """The bytes held while the current chunk is consumed (None between chunks or for a huge entry)."""
        w = self._win
        return None if w is None else HeldBytes(w.buf, w.file_pos, w.n)

    def _finish_table(self, data: np.ndarray, file_pos: int, recovered: bool) -> BatchTable:
        data[:, COL["position"]] += file_pos
        vp = data[:, COL["value_position"]]
        vp[vp >= 0] += file_pos
        if recovered:
            data[:, COL["flags"]] |= FLAG_RECOVERED
        table = BatchTable(data)
        self._check_crcs(table)
        self.summary.batches += len(table)
        self.summary.bytes_in_batches += int(table["size_in_bytes"].sum())
        if recovered:
            self.summary.recovered_batches += len(table)
        return table

    def _check_crcs(self, table: BatchTable) -> None:
        computed = table["crc_computed"]
        missing = np.nonzero(computed < 0)[0]
        for i in missing:  # no native CRC available for this magic: use the library
            pos, sz, magic = (int(table[c][i]) for c in ("position", "size_in_bytes", "magic"))
            raw = self.entry_bytes(pos, sz)
            if raw is None:
                continue
            start = record_batch.CRC_START if magic == 2 else legacy.CRC_START
            computed[i] = crc32c.crc32c(raw[start:]) if magic == 2 else zlib.crc32(raw[start:])
        bad = np.nonzero(table["crc"] != computed)[0]
        for i in bad:
            magic = int(table["magic"][i])
            self._finding(
                "CRC_MISMATCH",
                f"{'CRC-32C' if magic == 2 else 'CRC-32'} mismatch: stored {int(table['crc'][i])}, "
                f"computed {int(computed[i])}",
                int(table["position"][i]),
                stored=int(table["crc"][i]),
                computed=int(computed[i]),
                magic=magic,
                base_offset=int(table["base_offset"][i]),
                last_offset=int(table["last_offset"][i]),
            )

    # ------------------------------------------------------------------ damage
    @staticmethod
    def _declared_size(win: Window, pos: int) -> int | None:
        raw = win.bytes_at(pos, record_batch.LOG_OVERHEAD)
        if raw is None:
            return None
        return record_batch.LOG_OVERHEAD + int.from_bytes(raw[_SIZE.offset : _SIZE.offset + _SIZE.size], "big",
                                                          signed=True)

    @staticmethod
    def _partial_offsets(win: Window, pos: int, available: int) -> tuple[int, int] | None:
        """(first, last) offset a torn entry's surviving header declares: v2 up to its last offset delta,
        v0/v1 its offset field (the wrapper's is the last inner offset)."""
        need = _LAST_DELTA.offset + _LAST_DELTA.size
        raw = win.bytes_at(pos, min(available, need))
        if raw is None or len(raw) <= record_batch.MAGIC_OFFSET:
            return None
        base = int.from_bytes(raw[: _BASE.size], "big", signed=True)
        if raw[record_batch.MAGIC_OFFSET] != record_batch.MAGIC:
            return base, base
        if len(raw) < need:
            return None
        delta = int.from_bytes(raw[_LAST_DELTA.offset : need], "big", signed=True)
        return (base, base + delta) if delta >= 0 else None

    def _handle_tail(self, win: Window, pos: int, declared: int | None) -> int | None:
        """An entry at ``pos`` runs past the end of the file."""
        self._kafka_stops(pos, "partial entry at end of file", "partial")
        nxt, nonzero = self._resync(win, pos + 1)
        size = win.size  # after the resync's reads: the data may have ended short
        if nxt is not None:
            self._finding(
                "IMPLAUSIBLE_SIZE",
                f"entry claims {declared} bytes, past the end of the file, but valid entries follow at {nxt}: "
                "its size field is corrupt; Kafka's reader stops here",
                pos,
                declared_size=declared,
                available=size - pos,
                resumed_at=nxt,
            )
            return nxt
        tail = size - pos
        if win.bytes_at(pos, tail) is not None and not np.any(win.buf[pos - win.file_pos : win.n]):
            self._finding("ZERO_TAIL", f"{tail} zero bytes at the end of the file", pos, length=tail, end=size)
        elif win.short_at is not None:
            self._cut_entry = pos  # the entry is cut by the end of the data, not by a torn write: SHORT_READ says so
        elif declared is None or tail < HEADER_PREFIX:
            self._finding(
                "TRAILING_BYTES",
                f"{tail} bytes after the last entry, too few for an entry header",
                pos,
                length=tail,
            )
        else:
            self.summary.partial_offsets = self._partial_offsets(win, pos, tail)
            self._finding(
                "TRUNCATED_BATCH",
                f"torn write: the last entry declares {declared} bytes but only {tail} remain",
                pos,
                declared_size=declared,
                available=tail,
            )
        return None

    def _handle_error(self, win: Window, pos: int, status: int) -> int | None:
        """Framing is broken at ``pos``; report the damaged range and find where valid entries resume."""
        raw = win.bytes_at(pos, HEADER_PREFIX)
        size_field = int.from_bytes(raw[_SIZE.offset : _SIZE.offset + _SIZE.size], "big", signed=True) \
            if raw is not None else None
        magic = raw[record_batch.MAGIC_OFFSET] if raw is not None else None
        if status == kernels.ST_SIZE_TOO_SMALL:
            self._kafka_stops(pos, f"{KAFKA_SIZE_ERROR}: record size {size_field} below minimum "
                                   f"({legacy.MIN_MESSAGE_SIZE[0]})", "corrupt")
        else:
            self._kafka_stops(pos, f"unreadable entry (magic {magic}, size {size_field})", "corrupt")
        nxt, nonzero = self._resync(win, pos + 1)
        end = nxt if nxt is not None else win.size
        length = end - pos
        # the first byte of the range was skipped by the resync; count it too
        first_nonzero = raw is not None and any(raw[:1])
        all_zero = nonzero == 0 and not first_nonzero
        facts = dict(length=length, end=end, resumed_at=nxt, size_field=size_field, magic=magic)
        where = f"valid entries resume at {nxt}" if nxt is not None else "nothing valid follows"
        if all_zero:
            code = "ZERO_GAP" if nxt is not None else "ZERO_TAIL"
            self._finding(code, f"{length} zero bytes ({where})", pos, **facts)
        else:
            reason = {
                kernels.ST_SIZE_TOO_SMALL: f"size field {size_field} below the minimum entry size",
                kernels.ST_BAD_MAGIC: f"unknown magic {magic}",
                kernels.ST_TOO_SMALL_FOR_MAGIC: f"size field {size_field} too small for magic {magic}",
            }[status]
            self._finding("CORRUPT_RANGE", f"{length} unreadable bytes: {reason} ({where})", pos, **facts)
        return nxt

    def _resync(self, win: Window, start: int) -> tuple[int | None, int]:
        """Next file position >= ``start`` where a CRC-valid entry begins, and the count of
        non-zero bytes skipped to get there."""
        K = kernels.get()
        pos = start
        nonzero = 0
        while True:
            if pos < win.file_pos or pos + HEADER_PREFIX > win.end:
                if pos >= win.size:
                    return None, nonzero
                win.slide(pos)
            rel = pos - win.file_pos
            cand, status = K.resync(win.buf, win.n, rel, win.size - win.file_pos)
            if cand < 0:
                # nothing starts in this window: count what was skipped, move on
                stop = max(rel, win.n - HEADER_PREFIX + 1)
                nonzero += int(np.count_nonzero(win.buf[rel:stop]))
                if win.at_eof:
                    nonzero += int(np.count_nonzero(win.buf[stop : win.n]))
                    return None, nonzero
                pos = win.file_pos + stop
                continue
            nonzero += int(np.count_nonzero(win.buf[rel:cand]))
            cpos = win.file_pos + cand
            if status == kernels.RESYNC_FOUND:
                return cpos, nonzero
            declared = self._declared_size(win, cpos)
            # the kernel checks a candidate's header in the window, so its size field is there
            assert declared is not None
            if status == kernels.RESYNC_UNCHECKED:
                if self._crc_ok(win.bytes_at(cpos, declared)):
                    return cpos, nonzero
            elif declared > self.max_entry:
                if self._stream_crc_ok(win, cpos, declared):
                    return cpos, nonzero
            else:
                win.slide(cpos, declared)
                # re-run on the refilled window; a complete candidate is then checked in full
                cand, status = K.resync(win.buf, win.n, 0, win.size - win.file_pos)
                if cand == 0 and (status == kernels.RESYNC_FOUND or (
                        status == kernels.RESYNC_UNCHECKED and self._crc_ok(win.bytes_at(cpos, declared)))):
                    return cpos, nonzero
            first = win.bytes_at(cpos, 1)
            nonzero += int(first[0] != 0) if first is not None else 0
            pos = cpos + 1

    @staticmethod
    def _crc_ok(raw: memoryview | None) -> bool:
        """Whether a whole entry's stored CRC matches its bytes (the library's CRC, for kernels without one)."""
        if raw is None or len(raw) < HEADER_PREFIX:
            return False
        magic = raw[record_batch.MAGIC_OFFSET]
        if magic == record_batch.MAGIC:
            f = record_batch.HEADER["crc"]
            return int.from_bytes(raw[f.offset : f.offset + f.size], "big") == record_batch.compute_crc(raw)
        f = legacy.PREFIX["crc"]
        return int.from_bytes(raw[f.offset : f.offset + f.size], "big") == legacy.compute_crc(raw)

    # ------------------------------------------------------------------ huge entries
    def _stream_crc_ok(self, win: Window, pos: int, declared: int) -> bool:
        """Whether a too-large entry's CRC matches, read piecewise (resynchronisation needs a match)."""
        row = self._stream_header(win, pos, declared)
        return row is not None and row[0, COL["crc"]] == row[0, COL["crc_computed"]]

    def _stream_header(self, win: Window, pos: int, declared: int) -> np.ndarray | None:
        """Read a too-large v2 entry piecewise: its header row with the CRC computed (None when unreadable)."""
        h = record_batch.HEADER
        fh = win.fh
        fh.seek(pos)
        head = fh.read(h.size)
        if len(head) < h.size:
            win.ended_short(pos + len(head))
            return None
        if head[record_batch.MAGIC_OFFSET] != record_batch.MAGIC:
            return None  # legacy entries are never this large in practice; treat as unreadable
        fields = dict(zip(h.names, h.struct.unpack(head)))
        crc = crc32c.crc32c(head[record_batch.CRC_START :])
        left = declared - h.size
        while left > 0:
            piece = fh.read(min(left, 8 << 20))
            if not piece:
                win.ended_short(pos + declared - left)  # a short read is the end of the data
                return None
            crc = crc32c.crc32c(piece, crc)
            left -= len(piece)
        row = np.full((1, NCOLS), -1, dtype=np.int64)
        r = row[0]
        r[COL["position"]] = pos
        r[COL["size_in_bytes"]] = declared
        r[COL["last_offset"]] = fields["base_offset"] + fields["last_offset_delta"]
        for name, value in fields.items():
            if name in COL:
                r[COL[name]] = value
        r[COL["crc_computed"]] = crc
        r[COL["flags"]] = FLAG_HUGE
        return row  # a mismatch is reported by the CRC check of the table

    def _huge_entry(self, win: Window, pos: int, declared: int, recovered: bool) -> BatchTable | None:
        row = self._stream_header(win, pos, declared)
        if row is None:
            return None
        self._finding(
            "BATCH_NOT_DECODED",
            f"entry of {declared} bytes exceeds the in-memory limit ({self.max_entry}); CRC checked by streaming, "
            "records not decoded",
            pos,
            size=declared,
        )
        saved, self._win = self._win, None
        try:
            return self._finish_table(row, 0, recovered)
        finally:
            self._win = saved

    # ------------------------------------------------------------------ per batch
    def batches(self) -> Iterator[Batch]:
        """Yield one :class:`Batch` per entry, with its raw bytes while it is current."""
        for table in self.tables():
            rows = table.data.tolist()
            for row in rows:
                yield Batch(row, self.entry_bytes(row[COL["position"]], row[COL["size_in_bytes"]]))
