"""The columnar deep path: every record of a segment as record tables, no Python object per record.

Uncompressed v2 batches are decoded many at a time by one compiled call on
the bytes the reader holds.  Compressed ones are decompressed one by one with
contexts reused from batch to batch (:class:`~kforensics.formats.compression.Decompressor`),
their payloads gathered into one buffer, and decoded many at a time by the
same call, so a batch of ten records costs a decompression and a few list
appends in Python, not a kernel call and a table of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..findings import DecodeError, Finding, finding
from ..formats import record_batch
from ..formats.compression import Decompressor
from . import kernels
from .batch_table import BatchTable
from .kernels.kernel_set import Kernels
from .kernels.records_columns import BATCH_INFO
from .record_offsets import OffsetOrder, last_offset_delta
from .record_types import RecordTable

if TYPE_CHECKING:
    from .segment_reader import SegmentReader

#: Bound on one batch's decompressed size (decompression-bomb guard).
DEFAULT_MAX_DECOMPRESSED = 256 << 20
#: Rows of one record table handed out by :func:`iter_record_tables` (a batch with more records spans several).
RECORD_TABLE_ROWS = 1 << 16
#: Decompressed bytes gathered before one compiled call decodes them (a payload this large is decoded alone).
GROUP_BYTES = 4 << 20

#: what the columnar path hands out: a chunk's batch table and one of its record tables
TablePair = tuple[BatchTable, RecordTable]
_INFO = {name: i for i, name in enumerate(BATCH_INFO)}
#: record-table columns that are byte positions (shifted to file positions, or to the batch's records section)
_POSITIONS = ("position", "key_pos", "value_pos", "headers_pos")


def iter_record_tables(reader: SegmentReader, *, max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
                       rows: int = RECORD_TABLE_ROWS) -> Iterator[TablePair]:
    """Deep-decode a whole segment in columnar form: ``(BatchTable, RecordTable)`` pairs.

    Record tables hold at most ``rows`` rows (a batch of more records comes
    alone, a table at a time), so a chunk of batches may come as several
    pairs (with the same batch table): memory is bounded by the window, the
    decompression cap and :data:`GROUP_BYTES`, never by what a batch claims.
    Record offsets outside their batch or not increasing are reported with the
    decoding errors.  Legacy entries are skipped here (use
    :class:`~kforensics.log.records.EntryRecords`).
    """
    K = kernels.get()
    dec = Decompressor()  # one per walk: its contexts serve every compressed batch of the segment
    for table in reader.tables():
        yield from _RecordTables(K, table, reader, max_decompressed, rows, dec).run()


class _RecordTables:
    """The record tables of one chunk of batches (see :func:`iter_record_tables`)."""

    def __init__(self, K: Kernels, table: BatchTable, reader: SegmentReader, max_decompressed: int, rows: int,
                 dec: Decompressor):
        self.K, self.table, self.reader, self.max_decompressed, self.rows = K, table, reader, max_decompressed, rows
        self.dec = dec
        self.label = reader.label
        # (rows, batch index per row, offset per row, timestamp per row)
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.n = 0
        self.errors: list[Finding] = []
        self.order: dict[int, OffsetOrder] = {}
        self.emitted = False
        self.pos_cols = [K.RCOL[c] for c in _POSITIONS]
        # findings of compressed batches whose payload did not decompress, held until the batches before them
        # are decoded (the findings come in batch order, as batch by batch decoding gives them)
        self.pending: list[tuple[int, Finding]] = []

    def _error(self, i: int, code: str, message: str, **facts: Any) -> Finding:
        f = finding(code, message, file=self.label, position=int(self.table["position"][i]), **facts)
        self.errors.append(f)
        return f

    def _add(self, data: np.ndarray, bidx: np.ndarray, offset: np.ndarray, timestamp: np.ndarray
             ) -> Iterator[TablePair]:
        """Rows for the current table; yields a full one when ``rows`` are reached."""
        if len(data):
            self.parts.append((data, bidx, offset, timestamp))
            self.n += len(data)
        if self.n >= self.rows:
            yield self._emit()

    def _emit(self) -> TablePair:
        if len(self.parts) == 1:
            data, batch_index, offset, timestamp = self.parts[0]
        elif self.parts:
            data, batch_index, offset, timestamp = (np.concatenate([p[k] for p in self.parts]) for k in range(4))
        else:
            data = self.K.new_record_table(0)[:0]
            batch_index = offset = timestamp = np.empty(0, dtype=np.int64)
        out = (self.table, RecordTable(data, batch_index, offset, timestamp, self.errors))
        self.parts, self.n, self.errors = [], 0, []
        self.emitted = True
        return out

    def _absolute(self, data: np.ndarray, batch_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's offset and timestamp, from its batch's header and its deltas."""
        t, rc = self.table, self.K.RCOL
        attrs = t["attributes"][batch_index]
        # Java's long arithmetic: offsets and timestamps past the range wrap, as Kafka's accessors give them
        with np.errstate(over="ignore"):
            offset = t["base_offset"][batch_index] + data[:, rc["offset_delta"]]
            log_append = (attrs & record_batch.TIMESTAMP_TYPE_BIT) != 0
            timestamp = np.where(log_append, t["max_timestamp"][batch_index],
                                 t["base_timestamp"][batch_index] + data[:, rc["timestamp_delta"]])
        return offset, timestamp

    def _shift(self, data: np.ndarray, shift: np.ndarray | int) -> None:
        """Positions from the decoded buffer's to the file's (uncompressed) or the records section's (compressed)."""
        for c in self.pos_cols:
            data[:, c] += shift

    def _check_offsets(self, i: int, deltas: np.ndarray, first: int) -> None:
        order = self.order.get(i)
        if order is None:
            order = self.order[i] = OffsetOrder(last_offset_delta(int(self.table["base_offset"][i]),
                                                                   int(self.table["last_offset"][i])))
        for code, k, delta in order.check(deltas, first):
            self._error(i, code, order.message(code, k, delta, order.last), record_index=k, offset_delta=delta,
                        last_offset_delta=order.last)

    def _single(self, i: int, buf: np.ndarray, start: int, end: int, count: int, shift: int
                ) -> Iterator[TablePair]:
        """One batch's records, decoded a table at a time (a batch may hold more records than a table)."""
        K = self.K
        out = K.new_record_table(min(self.rows, (end - start) // record_batch.MIN_RECORD_SIZE + 1))
        p, done = start, 0
        while True:
            n, stop, st = K.decode_records(buf, p, end, count - done if count >= 0 else count, out)
            self._check_offsets(i, out[:n, K.RCOL["offset_delta"]], done)
            data = out[:n].copy()
            self._shift(data, shift)
            bidx = np.full(n, i, dtype=np.int64)
            yield from self._add(data, bidx, *self._absolute(data, bidx))
            done += n
            if st == kernels.RS_FULL:
                p = stop
                continue
            if st != kernels.RS_OK:
                self._error(i, "RECORD_DECODE_ERROR", kernels.RECORD_STATUS_TEXT[st], record_index=done)
            return

    def run(self) -> Iterator[TablePair]:
        t = self.table
        held = self.reader.held()
        if held is None:  # no batch bytes in the window: nothing to decode here
            yield self._emit()
            return
        magic = t["magic"]
        codec = t["attributes"] & record_batch.COMPRESSION_MASK
        pos, size = t["position"], t["size_in_bytes"]
        v2 = (magic == record_batch.MAGIC) & (pos >= held.file_pos) & (pos + size <= held.end)
        plain = np.flatnonzero(v2 & (codec == 0))
        if len(plain):
            every = len(plain) == len(t)  # no gather then
            rel = (pos if every else pos[plain]) - held.file_pos
            end = rel + (size if every else size[plain])
            yield from self._many(plain, held.buf, rel + record_batch.HEADER_SIZE, end,
                                  np.full(len(plain), held.file_pos, dtype=np.int64), compressed=False)
        packed = np.flatnonzero(v2 & (codec != 0))
        if len(packed):
            yield from self._compressed(packed, held.buf, held.file_pos)
        if self.parts or self.errors or not self.emitted:
            yield self._emit()

    def _compressed(self, packed: np.ndarray, buf: np.ndarray, file_pos: int) -> Iterator[TablePair]:
        """Compressed batches: decompressed one by one, decoded a group of payloads per compiled call."""
        t = self.table
        mv = buf.data
        group: list[int] = []
        pieces: list[bytes | bytearray] = []
        total = 0
        one_call, limit = self.dec.one_call, self.max_decompressed
        rel = t["position"][packed] - file_pos
        for i, a, b, codec in zip(packed.tolist(), (rel + record_batch.HEADER_SIZE).tolist(),
                                  (rel + t["size_in_bytes"][packed]).tolist(),
                                  (t["attributes"][packed] & record_batch.COMPRESSION_MASK).tolist()):
            payload: bytes | bytearray | None = one_call(codec, mv[a:b], limit)  # the common case: one call
            if payload is None:
                try:
                    payload = self.dec.decompress(codec, mv[a:b], magic=2, max_output=limit)
                except DecodeError as e:
                    # decoder positions are relative to the records section; an unplaced error goes at the batch
                    self.pending.append((i, e.finding.at(self.label, offset=file_pos + a, default=file_pos + a
                                                         - record_batch.HEADER_SIZE)))
                    continue
                if len(payload) >= GROUP_BYTES:  # a large payload alone: never joined (held once, not twice)
                    yield from self._group(group, pieces)
                    group, pieces, total = [], [], 0
                    yield from self._group([i], [payload])
                    continue
            group.append(i)
            pieces.append(payload)
            total += len(payload)
            if total >= GROUP_BYTES:
                yield from self._group(group, pieces)
                group, pieces, total = [], [], 0
        yield from self._group(group, pieces)
        self._release_pending(None)

    def _group(self, group: list[int], pieces: list[bytes | bytearray]) -> Iterator[TablePair]:
        """Decode the payloads of ``group`` (batch indices) joined in one buffer; positions stay relative to each
        batch's records section."""
        if not group:
            return
        joined = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        buf = np.frombuffer(joined, dtype=np.uint8)
        ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)))
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1]
        yield from self._many(np.asarray(group, dtype=np.int64), buf, starts, ends, -starts, compressed=True)

    def _release_pending(self, before: int | None) -> list[tuple[int, Finding]]:
        """The held decompression findings of batches before index ``before`` (all: None), taken off the list;
        with ``None`` they go straight to the errors."""
        if before is None:
            self.errors.extend(f for _, f in self.pending)
            self.pending = []
            return []
        k = 0
        while k < len(self.pending) and self.pending[k][0] < before:
            k += 1
        out, self.pending = self.pending[:k], self.pending[k:]
        return out

    def _batch_info(self, idx: np.ndarray, starts: np.ndarray, ends: np.ndarray, shifts: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The kernel's per-batch input (:data:`~kforensics.log.kernels.records_columns.BATCH_INFO`), with the
        records each batch can fill at most and the count asked of the kernel."""
        t = self.table
        # every batch of the chunk (the usual case): its columns as they are, no gather
        sel: np.ndarray | slice = slice(None) if len(idx) == len(t) else idx
        counts = t["records_count"][sel]
        # rows each batch can fill at most: bounded by its bytes, whatever its header claims
        fit = np.minimum(np.clip(counts, 0, None), (ends - starts) // record_batch.MIN_RECORD_SIZE + 1)
        cnt = np.where(counts > fit, fit + 1, counts)  # one more than fits: reported as too few
        info = np.empty((len(BATCH_INFO), len(idx)), dtype=np.int64).T  # column-major: each column written whole
        base = t["base_offset"][sel]
        with np.errstate(over="ignore"):
            last = t["last_offset"][sel] - base  # wraps as a long, as lastOffsetDelta does
        for name, col in (("start", starts), ("end", ends), ("count", np.minimum(cnt, fit)), ("shift", shifts),
                          ("base_offset", base), ("last_offset_delta", last),
                          ("base_timestamp", t["base_timestamp"][sel]), ("max_timestamp", t["max_timestamp"][sel]),
                          ("log_append_time", t["attributes"][sel] & record_batch.TIMESTAMP_TYPE_BIT)):
            info[:, _INFO[name]] = col
        return info, fit, cnt

    def _many(self, idx: np.ndarray, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, shifts: np.ndarray,
              compressed: bool) -> Iterator[TablePair]:
        """The batches ``idx`` whose records lie at ``starts``..``ends`` of ``buf``: many per compiled call, each
        batch's rows bounded by its bytes; ``shifts`` moves each batch's positions where the table says they are."""
        K = self.K
        info, fit, cnt = self._batch_info(idx, starts, ends, shifts)
        j = 0
        while j < len(idx):
            if fit[j] > self.rows:  # more records than a table holds: this batch alone, a table at a time
                if compressed:
                    self.errors.extend(f for _, f in self._release_pending(int(idx[j])))
                yield from self._single(int(idx[j]), buf, int(starts[j]), int(ends[j]),
                                        int(self.table["records_count"][idx[j]]), int(shifts[j]))
                j += 1
                continue
            cap = max(self.rows - self.n, int(fit[j]), 1)
            out = K.new_record_table(cap)
            bout = np.empty(cap, dtype=np.int64)
            absolute = np.empty((2, cap), dtype=np.int64)  # offsets, timestamps: each contiguous
            status = np.empty((len(idx) - j, 3), dtype=np.int64)
            done, nrows = K.decode_records_columns(buf, info[j:], out, bout, absolute.T, status)
            st = status[:done, 0]
            st[(cnt[j : j + done] > fit[j : j + done]) & (st == kernels.RS_OK)] = kernels.RS_TOO_FEW
            data, local = out[:nrows], bout[:nrows]
            mark = len(self.errors)
            self._order_findings(idx[j : j + done], status[:done], data, local, info[j : j + done])
            bad = np.flatnonzero(st != kernels.RS_OK)
            rows_of = np.bincount(local, minlength=done) if compressed and len(bad) else None
            for k in bad.tolist():
                facts = {} if rows_of is None else {"record_index": int(rows_of[k])}
                self._error(int(idx[j + k]), "RECORD_DECODE_ERROR", kernels.RECORD_STATUS_TEXT[int(st[k])], **facts)
            if compressed:
                self._in_batch_order(mark, int(idx[j + done - 1]) + 1 if done else int(idx[j]))
            bidx = idx[j + local]
            j += done
            yield from self._add(data, bidx, absolute[0, :nrows], absolute[1, :nrows])

    def _order_findings(self, idx: np.ndarray, status: np.ndarray, data: np.ndarray, local: np.ndarray,
                        info: np.ndarray) -> None:
        """Record offsets outside their batch, then offsets not increasing, as the kernel noted them (the first
        of each per batch)."""
        od = self.K.RCOL["offset_delta"]
        for code, col in (("RECORD_OFFSET_OUT_OF_BATCH", 1), ("RECORD_OFFSETS_NOT_INCREASING", 2)):
            for b in np.flatnonzero(status[:, col] >= 0).tolist():
                k = int(status[b, col])
                delta = int(data[int(np.searchsorted(local, b)) + k, od])
                last = int(info[b, _INFO["last_offset_delta"]])
                self._error(int(idx[b]), code, OffsetOrder.message(code, k, delta, last), record_index=k,
                            offset_delta=delta, last_offset_delta=last)

    def _in_batch_order(self, mark: int, before: int) -> None:
        """The findings made since ``mark`` and the held ones of batches before ``before``, in batch order (each
        batch's own in the order made), as decoding the batches one by one gives them."""
        made = self.errors[mark:]
        if not made and not self.pending:
            return
        # a finding made here is at its batch's position
        at = {id(f): int(np.searchsorted(self.table["position"], f.position or 0)) for f in made}
        merged = [(at[id(f)], f) for f in made] + self._release_pending(before)
        merged.sort(key=lambda x: x[0])  # stable: a batch's findings keep their order
        self.errors[mark:] = [f for _, f in merged]


__all__ = ["DEFAULT_MAX_DECOMPRESSED", "GROUP_BYTES", "RECORD_TABLE_ROWS", "TablePair", "iter_record_tables"]
