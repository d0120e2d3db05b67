"""``.timeindex`` (TimeIndex): 12-byte entries ``(max timestamp so far, relative offset of its batch)``.

Preallocated like the offset index; padding reads as ``(0, rel 0)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from construct import Int32sb, Int64sb, Struct

from ..findings import Finding, Severity
from .index_common import decode_entries, layout_findings, padding_start

TimeIndexEntry = Struct("timestamp" / Int64sb, "relative_offset" / Int32sb)
ENTRY_SIZE = TimeIndexEntry.sizeof()


@dataclass
class TimeIndex:
    base_offset: int
    entries: list[tuple[int, int]]  # (timestamp, offset)
    padding_entries: int = 0
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "kind": "time_index",
            "base_offset": self.base_offset,
            "entries": [{"timestamp": t, "offset": o} for t, o in self.entries],
            "padding_entries": self.padding_entries,
        }


def decode(data: bytes, base_offset: int) -> TimeIndex:
    arr, trailing = decode_entries(data, TimeIndexEntry)
    ts = arr["timestamp"].astype("int64")
    rel = arr["relative_offset"].astype("int64")
    pad_at = padding_start(rel, ts)
    if len(arr) == 1 and ts[0] == 0 and rel[0] == 0:
        pad_at = 0  # a single all-zero slot is padding too
    idx = TimeIndex(base_offset, list(zip(ts[:pad_at].tolist(), (rel[:pad_at] + base_offset).tolist())))
    idx.padding_entries = len(arr) - pad_at
    idx.findings += layout_findings(arr, pad_at, trailing, ENTRY_SIZE, "time-index")
    prev = None
    for i, (t, o) in enumerate(idx.entries):
        if prev is not None and (t <= prev[0] or o < prev[1]):
            idx.findings.append(Finding("INDEX_NOT_INCREASING", Severity.LOW,
                                        f"entry {i}: ({t}, {o}) does not follow ({prev[0]}, {prev[1]})",
                                        position=i * ENTRY_SIZE, facts={"timestamp": t, "offset": o}))
        prev = (t, o)
    return idx


def sanity_check(idx: TimeIndex, file_length: int, raw_entries: int | None = None) -> list[str]:
    """Kafka's TimeIndex.sanityCheck over every slot (padding included, as Kafka counts them)."""
    problems = []
    entries = idx.entries + [(0, idx.base_offset)] * idx.padding_entries
    if entries:
        if entries[-1][0] < entries[0][0]:
            problems.append(f"last timestamp {entries[-1][0]} is below the first {entries[0][0]}")
        if entries[-1][1] < idx.base_offset:
            problems.append(f"last offset {entries[-1][1]} is below the base offset {idx.base_offset}")
    if file_length % ENTRY_SIZE:
        problems.append(f"time index file length {file_length} is not a multiple of {ENTRY_SIZE}")
    return problems


def encode(entries: list[tuple[int, int]], base_offset: int, preallocate_to: int = 0) -> bytes:
    out = b"".join(TimeIndexEntry.build(dict(timestamp=t, relative_offset=o - base_offset)) for t, o in entries)
    return out + bytes(max(0, preallocate_to - len(out)))


def text_lines(idx: TimeIndex) -> Iterator[str]:
    for t, o in idx.entries:
        yield f"timestamp: {t} offset: {o}"
