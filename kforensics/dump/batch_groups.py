"""Runs of small v2 data batches whose records decode cleanly, as one block of columns: the batches' rows, all
their records' rows and which batch each record is in, for a renderer that formats a whole run at once.

A batch joins a run only when nothing about it needs more than its columns to
render: a v2 batch that is not a control batch, of at most ``PY_ROWS``
records, not found after the point Kafka's reader stops, whose payload
decompresses, whose records decode (every one its count claims, offset deltas
within the batch and increasing, no headers), whose last offset is below
``Long.MAX_VALUE`` (so its next offset is a long).  Any other batch is handed
out on its own (:func:`runs` yields its row index), to be dumped as before,
findings included; a batch that is clean here has none of the record decoder's
findings to give.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..findings import DecodeError
from ..formats import record_batch
from ..formats.compression import CODECS, Decompressor
from ..log import kernels
from ..log.batch_table import COL, FLAG_RECOVERED
from ..log.segment_reader import SegmentReader
from .record_chunks import PY_ROWS

#: a run holds at most this many records and this many bytes of (decompressed) records sections, so the columns
#: a renderer builds over a run's keys and values stay a few tens of MB
RUN_RECORDS = 1 << 13
RUN_PAYLOAD = 1 << 20
#: a run of fewer records is handed out batch by batch (with its records decoded): formatting columns costs
#: pyarrow's import (about 0.3 s), more than a few hundred records' lines cost in Python
MIN_RUN_RECORDS = 256
_MAX_LONG = (1 << 63) - 1


@dataclass
class BatchGroup:
    """Consecutive batches of one table of the reader, with their records as columns."""

    batches: np.ndarray  # batch-table rows (``COL``), in file order
    payload: bytes | bytearray  # the batches' records sections (decompressed), one after another
    records: np.ndarray  # record-table rows (``kernels.get().RCOL``) of every record, positions within ``payload``
    record_batch: np.ndarray  # for each record row, its batch's index in ``batches``
    first_record: np.ndarray  # for each batch, the index of its first record row (and the total last)


def candidates(data: np.ndarray) -> np.ndarray:
    """Which rows of a batch table may join a run, by their header fields alone."""
    attrs = data[:, COL["attributes"]]
    count = data[:, COL["records_count"]]
    ok: np.ndarray = ((data[:, COL["magic"]] == record_batch.MAGIC) & (attrs & record_batch.CONTROL_BIT == 0)
                      & ((attrs & record_batch.COMPRESSION_MASK) < len(CODECS)) & (count >= 0) & (count <= PY_ROWS)
                      & (data[:, COL["flags"]] & FLAG_RECOVERED == 0) & (data[:, COL["last_offset"]] < _MAX_LONG))
    return ok


def runs(reader: SegmentReader, data: np.ndarray, max_decompressed: int) -> Iterator[BatchGroup | int]:
    """The rows of one table of the reader (``data``) in file order: runs of clean batches as a
    :class:`BatchGroup`, every other batch as its row index."""
    ok = candidates(data).tolist()
    # columns as lists: a numpy scalar a batch costs more than a small batch's decoding
    pos, size, attrs, count = (data[:, COL[c]].tolist() for c in ("position", "size_in_bytes", "attributes",
                                                                    "records_count"))
    i, n = 0, len(data)
    codecs = Decompressor()  # contexts reused from batch to batch (one costs more than a small batch's payload)
    while i < n:
        parts: list[bytes | bytearray | memoryview] = []
        records = held = 0
        j = i
        while j < n and ok[j] and records < RUN_RECORDS and held < RUN_PAYLOAD:
            part = _section(reader, pos[j], size[j], attrs[j] & record_batch.COMPRESSION_MASK, max_decompressed,
                            codecs)
            if part is None:
                break
            parts.append(part)
            records += count[j]
            held += len(part)
            j += 1
        if j == i:  # not a candidate, does not decompress, or larger than a run: on its own
            yield i
            i += 1
            continue
        yield from _split(data, i, parts)
        i = j


def _section(reader: SegmentReader, position: int, size: int, codec: int, max_decompressed: int,
             codecs: Decompressor) -> bytes | bytearray | memoryview | None:
    """A batch's records section, decompressed (None when it is not held, does not decompress or is too large)."""
    raw = reader.entry_bytes(position, size)
    if raw is None:
        return None
    section = raw[record_batch.HEADER_SIZE :]
    if not codec:
        return section if len(section) <= RUN_PAYLOAD else None
    try:
        data = codecs.decompress(codec, section, magic=record_batch.MAGIC, max_output=max_decompressed)
    except DecodeError:
        return None
    return data if len(data) <= RUN_PAYLOAD else None


def _split(data: np.ndarray, first: int, parts: list[bytes | bytearray | memoryview]) -> Iterator[BatchGroup | int]:
    """The batches ``first``.. (one part each) decoded by one kernel call, cut into runs of clean batches."""
    K = kernels.get()
    rc = K.RCOL
    k = len(parts)
    rows = data[first : first + k]
    lens = np.fromiter(map(len, parts), dtype=np.int64, count=k)
    ends = np.cumsum(lens)
    starts = ends - lens
    counts = rows[:, COL["records_count"]]
    payload = b"".join(parts)
    total = int(counts.sum())
    table = K.new_record_table(total + 1)  # a row to spare: no batch ever fills the table
    bout = np.empty(total + 1, dtype=np.int64)
    status = np.full(k, -1, dtype=np.int64)
    done, nrows = K.decode_records_many(np.frombuffer(payload, dtype=np.uint8), starts, ends, counts, table, bout,
                                        status)
    recs, owner = table[:nrows], bout[:nrows]
    got = np.bincount(owner, minlength=k)[:k]
    clean = (np.arange(k) < done) & (status == kernels.RS_OK) & (got == counts)
    # a record that breaks the offset order or has headers spoils its batch (the per-batch decoder says why)
    with np.errstate(over="ignore"):
        last_delta = rows[:, COL["last_offset"]] - rows[:, COL["base_offset"]]
    d = recs[:, rc["offset_delta"]]
    bad = (d < 0) | (d > last_delta[owner]) | (recs[:, rc["headers_count"]] != 0)
    bad[1:] |= (owner[1:] == owner[:-1]) & (d[1:] <= d[:-1])
    clean &= np.bincount(owner[bad], minlength=k)[:k] == 0
    edges = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(got, out=edges[1:])
    a = 0
    for b in [*np.flatnonzero(~clean).tolist(), k]:
        if b > a:
            lo, hi = int(edges[a]), int(edges[b])
            yield BatchGroup(rows[a:b], payload, recs[lo:hi], owner[lo:hi] - a, edges[a : b + 1] - lo)
        if b < k:
            yield first + b
        a = b + 1
