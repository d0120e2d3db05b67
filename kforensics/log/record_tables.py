"""The columnar deep path: every record of a segment as record tables, no Python object per record.

Uncompressed v2 batches are decoded many at a time by one compiled call on
the bytes the reader holds.  lz4 and zstd batches are decompressed many at a
time by one compiled call too (the ``inflate`` kernel, which calls the codec
libraries' C entry points) into one reused buffer, then decoded from it by
the same call as uncompressed ones: a chunk of small compressed batches costs
two compiled calls, nothing per batch in Python.  A batch the kernel does not
settle (damage, a payload larger than the buffer, gzip and snappy) is
decompressed in Python with contexts reused from batch to batch
(:class:`~kforensics.formats.compression.Decompressor`), which gives the
findings; such payloads are gathered and decoded many at a time as well.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..findings import DecodeError, Finding, finding
from ..formats import record_batch
from ..formats.compression import Decompressor
from . import kernels
from .batch_table import BatchTable
from .kernels.codecs import HAVE_INFLATE, Contexts
from .kernels.inflate import INFLATE_DONE, INFLATE_FULL
from .kernels.kernel_set import Kernels
from .kernels.records_columns import BATCH_INFO
from .record_offsets import OffsetOrder, last_offset_delta, wrap_long
from .record_types import RecordTable

if TYPE_CHECKING:
    from .read_window import HeldBytes
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
    inflater = Inflater(K) if HAVE_INFLATE else None
    try:
        for table in reader.tables():
            yield from _RecordTables(K, table, reader, max_decompressed, rows, dec, inflater).run()
    finally:
        if inflater is not None:
            inflater.close()


class Inflater:
    """The ``inflate`` kernel's state for one walk: the codec contexts, the output buffer (:data:`GROUP_BYTES`,
    reused for every run of batches) and scratch arrays, allocated once."""

    def __init__(self, K: Kernels):
        self.K = K
        self.contexts = Contexts()
        self.dst = np.empty(GROUP_BYTES, dtype=np.uint8)
        self.sizes = np.zeros(6, dtype=np.int64)
        self.info = np.empty((0, 3), dtype=np.int64)
        self.out = np.empty((0, 2), dtype=np.int64)

    def batches(self, codec: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        """Set the chunk's compressed batches: codec id and records section (``starts``..``ends`` of the held
        bytes) of each."""
        n = len(codec)
        if len(self.info) < n:  # grown, never shrunk: the next chunks reuse it
            self.info = np.empty((3, n), dtype=np.int64).T
            self.out = np.empty((n, 2), dtype=np.int64)
        info = self.info[:n]
        info[:, 0] = codec
        info[:, 1] = starts
        info[:, 2] = ends
        self.n = n

    def run(self, src: np.ndarray, j: int, limit: int) -> tuple[int, int]:
        """Decompress the chunk's batches from ``j`` into :attr:`dst`, one after another: ``(batches done,
        status)``; each done batch's payload lies at ``out[j + k]`` (start, end) of :attr:`dst`."""
        c = self.contexts
        done, status = self.K.inflate(src, self.info[j : self.n], self.dst, limit, c.zstd, c.lz4, self.sizes,
                                      self.out[j : self.n])
        return int(done), int(status)

    def close(self) -> None:
        """Free the codec contexts."""
        self.contexts.close()


class _RecordTables:
    """The record tables of one chunk of batches (see :func:`iter_record_tables`)."""

    def __init__(self, K: Kernels, table: BatchTable, reader: SegmentReader, max_decompressed: int, rows: int,
                 dec: Decompressor, inflater: Inflater | None = None):
        self.K, self.table, self.reader, self.max_decompressed, self.rows = K, table, reader, max_decompressed, rows
        self.dec = dec
        self.inflater = inflater
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
        packed_held = yield from self._plain(held)
        if packed_held:
            codec = t["attributes"] & record_batch.COMPRESSION_MASK
            pos, size = t["position"], t["size_in_bytes"]
            v2 = (t["magic"] == record_batch.MAGIC) & (pos >= held.file_pos) & (pos + size <= held.end)
            yield from self._compressed(np.flatnonzero(v2 & (codec != 0)), held.buf, held.file_pos)
        if self.parts or self.errors or not self.emitted:
            yield self._emit()

    def _plain(self, held: HeldBytes) -> Generator[TablePair, None, int]:
        """The chunk's uncompressed v2 batches held: decoded by ``records_plain`` straight from the batch table,
        up to a record table's rows per call; returns how many compressed v2 batches are held."""
        K, t = self.K, self.table
        status = np.empty((len(t), 3), dtype=np.int64)
        j = packed = 0
        while j < len(t):
            out = K.new_record_table(self.rows)
            bout = np.empty(self.rows, dtype=np.int64)
            absolute = np.empty((2, self.rows), dtype=np.int64)  # offsets, timestamps: each contiguous
            nxt, nrows, bad, stop, more = K.records_plain(held.buf, t.data, held.file_pos, held.end, self.rows,
                                                           max(self.rows - self.n, 1), out, bout, absolute.T, status, j)
            packed += more
            data, bidx = out[:nrows], bout[:nrows]
            if bad:
                self._plain_findings(j, nxt, status, data, bidx)
            yield from self._add(data, bidx, absolute[0, :nrows], absolute[1, :nrows])
            if stop == 1:  # more records than a table holds: this batch alone, a table at a time
                p, size = int(t["position"][nxt]), int(t["size_in_bytes"][nxt])
                rel = p - held.file_pos
                yield from self._single(nxt, held.buf, rel + record_batch.HEADER_SIZE, rel + size,
                                        int(t["records_count"][nxt]), held.file_pos)
                nxt += 1
            j = nxt
            if stop == 0:
                break
        return packed

    def _plain_findings(self, j0: int, end: int, status: np.ndarray, data: np.ndarray, bidx: np.ndarray) -> None:
        """Findings of ``records_plain``'s batches ``j0``..``end``: offsets outside the batch, then offsets not
        increasing (the first of each per batch), then decoding errors, as :meth:`_many` makes them."""
        t, od = self.table, self.K.RCOL["offset_delta"]
        for code, col in (("RECORD_OFFSET_OUT_OF_BATCH", 1), ("RECORD_OFFSETS_NOT_INCREASING", 2)):
            for b in (j0 + np.flatnonzero(status[j0:end, col] >= 0)).tolist():
                k = int(status[b, col])
                delta = int(data[int(np.searchsorted(bidx, b)) + k, od])
                last = wrap_long(int(t["last_offset"][b]) - int(t["base_offset"][b]))
                self._error(b, code, OffsetOrder.message(code, k, delta, last), record_index=k, offset_delta=delta,
                            last_offset_delta=last)
        st = status[j0:end, 0]
        for b in (j0 + np.flatnonzero((st != -1) & (st != kernels.RS_OK))).tolist():
            self._error(b, "RECORD_DECODE_ERROR", kernels.RECORD_STATUS_TEXT[int(status[b, 0])])

    def _compressed(self, packed: np.ndarray, buf: np.ndarray, file_pos: int) -> Iterator[TablePair]:
        """Compressed batches: runs of lz4/zstd ones decompressed by the ``inflate`` kernel, the others one by one
        in Python; decoded a run or a group of payloads per compiled call, in batch order."""
        t = self.table
        rel = t["position"][packed] - file_pos
        starts, ends = rel + record_batch.HEADER_SIZE, rel + t["size_in_bytes"][packed]
        codec = t["attributes"][packed] & record_batch.COMPRESSION_MASK
        inf = self.inflater
        native = None
        if inf is not None:
            native = ((codec == 3) | (codec == 4)).tolist()
            inf.batches(codec, starts, ends)
        held = _Held(self)  # payloads decompressed in Python, waiting to be decoded
        a_list, b_list, c_list = starts.tolist(), ends.tolist(), codec.tolist()
        j, n = 0, len(packed)
        while j < n:
            if native is not None and inf is not None and native[j]:
                yield from held.flush()
                done, status = inf.run(buf, j, self.max_decompressed)
                if done:
                    out = inf.out[j : j + done]
                    yield from self._many(packed[j : j + done], inf.dst, out[:, 0], out[:, 1], -out[:, 0],
                                          compressed=True)
                    j += done
                if status in (INFLATE_DONE, INFLATE_FULL):
                    continue
            # this batch the long way: the kernel left it, or there is no kernel for its codec
            yield from held.add(int(packed[j]), buf.data[a_list[j] : b_list[j]], c_list[j], file_pos + a_list[j])
            j += 1
        yield from held.flush()
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


class _Held:
    """Payloads decompressed in Python, gathered until :data:`GROUP_BYTES` and decoded a group per compiled call
    (a payload that large alone: held once, never joined)."""

    def __init__(self, tables: _RecordTables):
        self.tables = tables
        self.group: list[int] = []
        self.pieces: list[bytes | bytearray] = []
        self.total = 0

    def add(self, i: int, data: memoryview, codec: int, at: int) -> Iterator[TablePair]:
        """Batch ``i``'s records section ``data`` (at file position ``at``): decompressed, or its finding held."""
        rt = self.tables
        limit = rt.max_decompressed
        payload: bytes | bytearray | None = rt.dec.one_call(codec, data, limit)  # the common case: one call
        if payload is None:
            try:
                payload = rt.dec.decompress(codec, data, magic=2, max_output=limit)
            except DecodeError as e:
                # decoder positions are relative to the records section; an unplaced error goes at the batch
                rt.pending.append((i, e.finding.at(rt.label, offset=at, default=at - record_batch.HEADER_SIZE)))
                return
            if len(payload) >= GROUP_BYTES:
                yield from self.flush()
                yield from rt._group([i], [payload])
                return
        self.group.append(i)
        self.pieces.append(payload)
        self.total += len(payload)
        if self.total >= GROUP_BYTES:
            yield from self.flush()

    def flush(self) -> Iterator[TablePair]:
        """Decode the payloads gathered so far."""
        if self.group:
            group, pieces = self.group, self.pieces
            self.group, self.pieces, self.total = [], [], 0
            yield from self.tables._group(group, pieces)


__all__ = ["DEFAULT_MAX_DECOMPRESSED", "GROUP_BYTES", "RECORD_TABLE_ROWS", "TablePair", "iter_record_tables"]
