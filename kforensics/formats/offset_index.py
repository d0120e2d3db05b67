"""``.index`` (OffsetIndex): 8-byte entries mapping a relative offset to a byte position in the ``.log``.

Kafka preallocates the active segment's index (10 MiB of zeros) and trims it on
roll or clean close, so a zero tail is normal on a running or crashed broker.
Like DumpLogSegments, decoding stops at the first entry after the first whose
relative offset is 0: that is preallocated padding, not data.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from construct import Int32sb, Struct

from ..findings import Finding, Severity
from .index_common import decode_entries, layout_findings, padding_start

OffsetIndexEntry = Struct("relative_offset" / Int32sb, "position" / Int32sb)
ENTRY_SIZE = OffsetIndexEntry.sizeof()


@dataclass
class OffsetIndex:
    """Decoded entries (absolute offsets) and what was odd about the file."""

    base_offset: int
    entries: list[tuple[int, int]]  # (offset, position)
    padding_entries: int = 0
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "kind": "offset_index",
            "base_offset": self.base_offset,
            "entries": [{"offset": o, "position": p} for o, p in self.entries],
            "padding_entries": self.padding_entries,
        }


def decode(data: bytes, base_offset: int) -> OffsetIndex:
    arr, trailing = decode_entries(data, OffsetIndexEntry)
    rel = arr["relative_offset"].astype("int64")
    pos = arr["position"].astype("int64")
    pad_at = padding_start(rel)
    idx = OffsetIndex(base_offset, list(zip((rel[:pad_at] + base_offset).tolist(), pos[:pad_at].tolist())))
    idx.padding_entries = len(arr) - pad_at
    idx.findings += layout_findings(arr, pad_at, trailing, ENTRY_SIZE, "index")
    prev = None
    for i, (o, p) in enumerate(idx.entries):
        if o < base_offset or p < 0:
            idx.findings.append(Finding("INDEX_ENTRY_OUT_OF_RANGE", Severity.LOW,
                                        f"entry {i}: offset {o} / position {p} below the segment's base",
                                        position=i * ENTRY_SIZE, facts={"offset": o, "position": p}))
        if prev is not None and (o <= prev[0] or p < prev[1]):
            idx.findings.append(Finding("INDEX_NOT_INCREASING", Severity.LOW,
                                        f"entry {i}: ({o}, {p}) does not follow ({prev[0]}, {prev[1]})",
                                        position=i * ENTRY_SIZE, facts={"offset": o, "previous_offset": prev[0]}))
        prev = (o, p)
    return idx


def sanity_check(idx: OffsetIndex, file_length: int) -> list[str]:
    """Kafka's OffsetIndex.sanityCheck: problems as messages (empty when it passes)."""
    problems = []
    if idx.entries and idx.entries[-1][0] < idx.base_offset:
        problems.append(f"last offset {idx.entries[-1][0]} is below the base offset {idx.base_offset}")
    if file_length % ENTRY_SIZE:
        problems.append(f"index file length {file_length} is not a multiple of {ENTRY_SIZE}")
    return problems


def encode(entries: list[tuple[int, int]], base_offset: int, preallocate_to: int = 0) -> bytes:
    out = b"".join(OffsetIndexEntry.build(dict(relative_offset=o - base_offset, position=p)) for o, p in entries)
    return out + bytes(max(0, preallocate_to - len(out)))


def text_lines(idx: OffsetIndex) -> Iterator[str]:
    for o, p in idx.entries:
        yield f"offset: {o} position: {p}"
