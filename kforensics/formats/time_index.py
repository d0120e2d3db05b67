"""``.timeindex`` (TimeIndex): 12-byte entries ``(max timestamp so far, relative offset of its batch)``.

Kafka appends an entry only when a batch raises the segment's maximum
timestamp, so stored timestamps strictly increase and offsets never go back.
The file is preallocated like the offset index and padding reads as
``(0, relative offset 0)``; decoding stops at the first slot after slot 0
whose relative offset is 0 (DumpLogSegments' rule).

One deviation from DumpLogSegments: an all-zero slot 0 is treated as padding
too (DumpLogSegments would print it as ``timestamp: 0``).  It is what the
time index of a segment with no entry yet looks like, and a real entry with
timestamp 0 at the base offset would need a record stamped 1970-01-01.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from construct import Int32sb, Int64sb, Struct

from ..findings import Finding, Severity, finding
from .index_common import decode_entries, first_of, layout_findings, order_findings, padding_start

#: the one declaration of an entry; decode derives its numpy dtype from it
ENTRY = Struct("timestamp" / Int64sb, "relative_offset" / Int32sb)
ENTRY_SIZE = ENTRY.sizeof()


class TimestampOffset(NamedTuple):
    """One time-index entry: a timestamp and the absolute last offset of the batch that holds it."""

    timestamp: int
    offset: int


@dataclass
class TimeIndex:
    """A decoded ``.timeindex``: entries (padding excluded) as arrays, and what was odd about the file.

    ``first_slot``/``last_slot`` are the entries in the file's first and last
    whole slots, padding included, which is what Kafka's sanity check reads.
    """

    base_offset: int
    timestamps: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    offsets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    padding_entries: int = 0
    trailing_bytes: int = 0
    slots: int = 0
    first_slot: TimestampOffset | None = None
    last_slot: TimestampOffset | None = None
    findings: list[Finding] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offsets)

    def entries(self) -> Iterator[TimestampOffset]:
        for t, o in zip(self.timestamps.tolist(), self.offsets.tolist()):
            yield TimestampOffset(t, o)

    @property
    def file_length(self) -> int:
        return self.slots * ENTRY_SIZE + self.trailing_bytes


def decode(data: bytes, base_offset: int) -> TimeIndex:
    """Decode a ``.timeindex`` of the segment starting at ``base_offset``."""
    arr, trailing = decode_entries(data, ENTRY)
    ts = arr["timestamp"].astype(np.int64)
    rel = arr["relative_offset"].astype(np.int64)
    pad_at = padding_start(rel)
    if len(arr) and ts[0] == 0 and rel[0] == 0:
        pad_at = 0
    idx = TimeIndex(base_offset, ts[:pad_at], rel[:pad_at] + base_offset, len(arr) - pad_at, trailing, len(arr))
    if len(arr):
        idx.first_slot = TimestampOffset(int(ts[0]), int(rel[0]) + base_offset)
        idx.last_slot = TimestampOffset(int(ts[-1]), int(rel[-1]) + base_offset)
    idx.findings += layout_findings(arr, pad_at, trailing, ENTRY_SIZE, "time-index")
    # Kafka only refuses an offset that goes back; an equal one is legal
    idx.findings += order_findings(idx.offsets, base_offset, ENTRY_SIZE, "time-index", strict=False)
    stamps = idx.timestamps
    if len(stamps) > 1:
        prev = np.concatenate((stamps[:1], stamps[:-1]))  # the first entry has none before it
        back = stamps <= prev
        back[0] = False
        idx.findings += first_of(back, "TIMEINDEX_OUT_OF_ORDER", "whose timestamp does not exceed the "
                                 "previous entry's", ENTRY_SIZE, "time-index", timestamp=stamps,
                                 previous_timestamp=prev)
    return idx


def sanity_findings(idx: TimeIndex) -> list[Finding]:
    """Kafka's ``TimeIndex.sanityCheck``: empty when it passes.

    Kafka counts every slot, so a zero-padded tail fails the first check (the
    last timestamp, 0, is below the first).  That failure is INFO: it is what
    every active segment looks like.
    """
    out = []
    first, last = idx.first_slot, idx.last_slot
    if first is not None and last is not None:
        last_at = (idx.slots - 1) * ENTRY_SIZE
        if last.timestamp < first.timestamp:
            padded = idx.padding_entries > 0 and last == (0, idx.base_offset)
            out.append(finding("INDEX_SANITY_CHECK_FAILED",
                               f"last timestamp {last.timestamp} is below the first timestamp {first.timestamp}"
                               + (" (the last slot is preallocated padding)" if padded else ""),
                               severity=Severity.INFO if padded else None, position=last_at,
                               last_timestamp=last.timestamp, first_timestamp=first.timestamp, padding=padded))
        if last.offset < idx.base_offset:
            out.append(finding("INDEX_SANITY_CHECK_FAILED",
                               f"last offset {last.offset} is below the base offset {idx.base_offset}",
                               position=last_at, last_offset=last.offset, base_offset=idx.base_offset))
    if idx.file_length % ENTRY_SIZE:
        out.append(finding("INDEX_SANITY_CHECK_FAILED",
                           f"time index file length {idx.file_length} is not a multiple of {ENTRY_SIZE}",
                           position=idx.slots * ENTRY_SIZE, length=idx.file_length))
    return out


def encode(entries: Iterable[tuple[int, int]], base_offset: int, preallocate_to: int = 0) -> bytes:
    """``(timestamp, offset)`` pairs as a ``.timeindex``, zero-filled up to ``preallocate_to`` bytes."""
    out = b"".join(ENTRY.build({"timestamp": t, "relative_offset": o - base_offset}) for t, o in entries)
    return out + bytes(max(0, preallocate_to - len(out)))
