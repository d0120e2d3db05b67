"""The records of one v2 batch as chunks of decoded columns, for dumping millions of records without a
:class:`~kforensics.log.records.Record` each.

The same kernel call, the same checks and the same findings as
:class:`~kforensics.log.records.EntryRecords` (which this extends): record
offsets outside the batch or not increasing, a record that does not decode.
What differs is what is handed out: ``(payload, rows)`` where ``rows`` are up
to a kernel chunk (``RECORD_CHUNK``) of record-table rows (an int64 array,
columns named by ``kernels.get().RCOL``), positions within ``payload``.
:meth:`record` turns one row into the :class:`Record` the per-record path
gives, for the records a fast renderer does not format itself (those with
headers).  A large zstd records section is decompressed a window at a time
(:mod:`.streamed_section`), so ``payload`` is then a window of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..findings import DecodeError
from ..formats import record_batch
from ..formats.compression import Decompressor
from ..log import kernels
from ..log.log_entry import Batch
from ..log.record_offsets import OffsetOrder, last_offset_delta
from ..log.records import RECORD_CHUNK, EntryRecords, Record
from . import streamed_section

#: the most records of a batch decoded with others (:func:`decode_group`) or in a run (``batch_groups``); a chunk of
#: more rows is handed out whole, to be formatted from columns
PY_ROWS = 1 << 12

Chunk = tuple[bytes | bytearray, np.ndarray]
#: the codec id of zstd (``attributes & COMPRESSION_MASK``)
ZSTD = 4


class _SmallTable:
    """One record table of ``PY_ROWS`` rows for the small batches of a dump (the kernel's call costs less with
    an array it has seen)."""

    def __init__(self) -> None:
        self._table: np.ndarray | None = None

    def table(self, K: Any) -> np.ndarray:
        if self._table is None or self._table.shape[1] != len(K.RCOL):
            self._table = K.new_record_table(PY_ROWS)
        return self._table


_SMALL = _SmallTable()


class RecordChunks(EntryRecords):
    """The records of one v2 batch (not a control batch), a chunk of rows at a time; ``findings`` after."""

    #: the batch's records decoded with others (:func:`decode_group`), cleanly: handed out as they are
    decoded: Chunk | None = None
    #: a streamed section's cap (:data:`~.streamed_section.STREAM_MAX_DECOMPRESSED`)
    stream_max: int = streamed_section.STREAM_MAX_DECOMPRESSED

    def chunks(self) -> Iterator[Chunk]:
        """``(payload, rows)`` pairs in record order (see the module's docstring)."""
        if self.decoded is not None:
            if len(self.decoded[1]):
                yield self.decoded
            return
        b = self.batch
        raw = b.raw
        if raw is None:
            self._fail("BATCH_NOT_DECODED", "entry bytes not held in memory (too large); records not decoded")
            return
        if (b.attributes & record_batch.COMPRESSION_MASK) == ZSTD \
                and len(raw) - record_batch.HEADER_SIZE >= streamed_section.STREAM_FROM:
            yield from self._streamed(bytes(raw[record_batch.HEADER_SIZE :]))
            return
        got = self._records_section(raw)
        if got is None:
            return
        payload, in_file = got
        buf = np.frombuffer(payload, dtype=np.uint8)
        cap = min(RECORD_CHUNK, len(payload) // record_batch.MIN_RECORD_SIZE + 1)
        # a small batch decodes into one table kept for all of them (its rows are copied out as lists before the
        # next call); a table larger than the records' bytes can fill gives the same rows, so only its cost differs
        table = _SMALL.table(kernels.get()) if cap <= PY_ROWS else kernels.get().new_record_table(cap)
        offsets = self._offsets()
        p, done = 0, 0
        while True:
            n, stop, status = kernels.get().decode_records(buf, p, len(payload), self._left(done), table)
            yield from self._rows(payload, table, n, done, offsets, in_file)
            done += n
            if status == kernels.RS_FULL:
                p = stop
                continue
            self._end(status, done, stop, in_file)
            return

    def _offsets(self) -> OffsetOrder:
        b = self.batch
        return OffsetOrder(last_offset_delta(b.base_offset, b.last_offset))

    def _left(self, done: int) -> int:
        """The records still to decode (a negative count as it is: the decoder's finding)."""
        count = self.batch.records_count
        return count - done if count >= 0 else count

    def _rows(self, payload: bytes | bytearray, table: np.ndarray, n: int, done: int, offsets: OffsetOrder,
              in_file: int | None) -> Iterator[Chunk]:
        """The ``n`` rows a decoder call left in ``table`` (copied: it is decoded into again), their offsets
        checked."""
        c = kernels.get().RCOL
        rows = table[:n].copy()
        if n > PY_ROWS or not _in_order(offsets, rows[:, c["offset_delta"]].tolist()):
            for code, i, delta in offsets.check(rows[:, c["offset_delta"]], done):
                at = int(rows[i - done, c["position"]]) + in_file if in_file is not None else None
                self._fail(code, offsets.message(code, i, delta, offsets.last), at, record_index=i,
                           offset_delta=delta, last_offset_delta=offsets.last)
        if n:
            yield payload, rows

    def _streamed(self, section: bytes) -> Iterator[Chunk]:
        """The records of a large zstd section, decompressed a window at a time (:mod:`.streamed_section`): the
        same rows, in the same chunks of at most ``RECORD_CHUNK``, and the same findings as held whole."""
        try:
            streamed_section.check_stream(section, self.stream_max)
        except DecodeError as e:  # as _records_section places it
            self._add(e.finding.at(self.file, offset=self.batch.position + record_batch.HEADER_SIZE,
                                   default=self.batch.position))
            return
        K = kernels.get()
        table = K.new_record_table(RECORD_CHUNK)
        offsets = self._offsets()
        w = streamed_section.Windows(section)
        p = w.more(0)
        done = 0
        while True:
            window = w.window
            n, stop, status = K.decode_records(np.frombuffer(window, dtype=np.uint8), p, len(window),
                                               self._left(done), table)
            yield from self._rows(window, table, n, done, offsets, None)
            done += n
            p = stop
            if status == kernels.RS_FULL:
                continue
            if not w.eof:
                # the window's end, not the section's: read on and decode from the same record
                if status in (kernels.RS_OK, kernels.RS_TOO_FEW):
                    p = w.more(p)
                    continue
                need = streamed_section.windows_needed(window, p) if status == kernels.RS_TRUNCATED else None
                if need is not None:
                    p = w.more(p, max(need, streamed_section.WINDOW))
                    continue
            self._end(status, done, w.base + stop, None)
            return

    def record(self, payload: bytes | bytearray, row: list[int]) -> Record:  # row: one row as a list
        """One row as the per-record path's :class:`Record`."""
        log_append = bool(self.batch.attributes & record_batch.TIMESTAMP_TYPE_BIT)
        return self._v2_record(payload, row, kernels.get().RCOL, log_append, False)


def _in_order(order: OffsetOrder, deltas: list[int]) -> bool:
    """Whether a few offset deltas pass :meth:`OffsetOrder.check` (within the batch, increasing, after the
    deltas before them); when they do, ``order`` is left as the check leaves it, so the check (numpy calls on a
    few values, the cost of a small batch) is needed only when they do not."""
    if not deltas:
        return True
    prev = order.prev
    if deltas[0] < 0 or deltas[-1] > order.last or (prev is not None and deltas[0] <= prev):
        return False
    if any(a >= b for a, b in zip(deltas, deltas[1:])):
        return False
    order.prev = deltas[-1] if prev is None else max(prev, deltas[-1])
    return True


#: a group of batches decoded by one kernel call: at most this many records, bytes read and bytes decompressed
GROUP_RECORDS = 1 << 15
GROUP_BYTES = 4 << 20
GROUP_PAYLOAD = 64 << 20


def group_size(batch: Batch) -> int | None:
    """The records a batch adds to a group (None: it is decoded on its own)."""
    count = batch.records_count
    if batch.magic != record_batch.MAGIC or batch.attributes & record_batch.CONTROL_BIT or batch.raw is None \
            or not 0 <= count <= PY_ROWS:
        return None
    return int(count)


def decode_group(batches: list[Batch], max_decompressed: int) -> list[Chunk | None]:
    """The records of small v2 batches, their payloads in one buffer decoded by one kernel call (a call per
    batch costs more than a small batch's records).  A batch's entry is ``(buffer, rows)`` when it decoded
    cleanly (every record its count claims, offsets in order); None when it is to be decoded on its own (so its
    findings are the per-batch path's: a payload that does not decompress, records that do not decode...)."""
    K = kernels.get()
    codecs = Decompressor()  # one set of contexts for the group's payloads
    parts, index, starts, ends, counts = [], [], [], [], []
    pos = 0
    for k, b in enumerate(batches):
        if group_size(b) is None or b.raw is None or pos >= GROUP_PAYLOAD:
            continue
        codec = b.attributes & record_batch.COMPRESSION_MASK
        section = b.raw[record_batch.HEADER_SIZE :]
        if codec:
            try:
                data: bytes | bytearray | memoryview = codecs.decompress(codec, section, magic=b.magic,
                                                                         max_output=max_decompressed)
            except DecodeError:
                continue
        else:
            data = section
        parts.append(data)
        index.append(k)
        starts.append(pos)
        ends.append(pos + len(data))
        counts.append(b.records_count)
        pos += len(data)
    out: list[Chunk | None] = [None] * len(batches)
    if not index:
        return out
    payload = b"".join(parts)
    total = sum(counts)
    table = K.new_record_table(total + 1)  # a row to spare: no batch ever fills the table
    bout = np.empty(total + 1, dtype=np.int64)
    status = np.zeros(len(index), dtype=np.int64)
    done, nrows = K.decode_records_many(np.frombuffer(payload, dtype=np.uint8), np.array(starts, dtype=np.int64),
                                        np.array(ends, dtype=np.int64), np.array(counts, dtype=np.int64), table,
                                        bout, status)
    rows = table[:nrows]
    edges = np.searchsorted(bout[:nrows], np.arange(done + 1)).tolist()
    od = K.RCOL["offset_delta"]
    for j, k in enumerate(index[:done]):
        mine = rows[edges[j] : edges[j + 1]]
        if status[j] != kernels.RS_OK or len(mine) != counts[j]:
            continue
        b = batches[k]
        if _in_order(OffsetOrder(last_offset_delta(b.base_offset, b.last_offset)), mine[:, od].tolist()):
            out[k] = (payload, mine)
    return out
