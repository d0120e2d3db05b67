"""``.index`` (OffsetIndex): 8-byte entries mapping an offset to the byte position of a batch in the ``.log``.

Each entry holds the offset relative to the segment's base offset (the file
name) and a position.  Kafka preallocates the active segment's index (10 MiB
of zeros by default) and trims it on roll or clean close, so a zero tail is
normal on a running or crashed broker.  Like DumpLogSegments, decoding stops
at the first slot after slot 0 whose relative offset is 0: from there on the
file is preallocated padding, not data.

Problems are reported, never raised.  :func:`sanity_findings` is Kafka's own
``OffsetIndex.sanityCheck``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from construct import Int32sb, Struct

from ..findings import Finding, finding
from .index_common import decode_entries, layout_findings, order_findings, padding_start

#: the one declaration of an entry; decode derives its numpy dtype from it
ENTRY = Struct("relative_offset" / Int32sb, "position" / Int32sb)
ENTRY_SIZE = ENTRY.sizeof()


class OffsetPosition(NamedTuple):
    """One index entry: an absolute offset and the ``.log`` byte position it points at."""

    offset: int
    position: int


@dataclass
class OffsetIndex:
    """A decoded ``.index``: its entries (padding excluded) as arrays, and what was odd about the file.

    ``slots`` counts every whole slot, padding included, and ``last_slot`` is
    the entry in the last one: what Kafka itself sees, and what its sanity
    check reads.
    """

    base_offset: int
    offsets: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    positions: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    padding_entries: int = 0
    trailing_bytes: int = 0
    slots: int = 0
    last_slot: OffsetPosition | None = None
    findings: list[Finding] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offsets)

    def entries(self) -> Iterator[OffsetPosition]:
        for o, p in zip(self.offsets.tolist(), self.positions.tolist()):
            yield OffsetPosition(o, p)

    @property
    def file_length(self) -> int:
        return self.slots * ENTRY_SIZE + self.trailing_bytes


def decode(data: bytes, base_offset: int) -> OffsetIndex:
    """Decode an ``.index`` of the segment starting at ``base_offset``."""
    arr, trailing = decode_entries(data, ENTRY)
    rel = arr["relative_offset"].astype(np.int64)
    pos = arr["position"].astype(np.int64)
    pad_at = padding_start(rel)
    idx = OffsetIndex(base_offset, rel[:pad_at] + base_offset, pos[:pad_at], len(arr) - pad_at, trailing, len(arr))
    if len(arr):
        idx.last_slot = OffsetPosition(int(rel[-1]) + base_offset, int(pos[-1]))
    idx.findings += layout_findings(arr, pad_at, trailing, ENTRY_SIZE, "index")
    idx.findings += order_findings(idx.offsets, base_offset, ENTRY_SIZE, "index", positions=idx.positions)
    return idx


def sanity_findings(idx: OffsetIndex) -> list[Finding]:
    """Kafka's ``OffsetIndex.sanityCheck``: empty when it passes.

    Kafka counts every slot as an entry, so a zero-padded index passes (its
    last slot reads as the base offset).
    """
    out = []
    if idx.last_slot is not None and idx.last_slot.offset < idx.base_offset:
        out.append(finding("INDEX_SANITY_CHECK_FAILED",
                           f"last offset {idx.last_slot.offset} is below the base offset {idx.base_offset}",
                           position=(idx.slots - 1) * ENTRY_SIZE, last_offset=idx.last_slot.offset,
                           base_offset=idx.base_offset))
    if idx.file_length % ENTRY_SIZE:
        out.append(finding("INDEX_SANITY_CHECK_FAILED",
                           f"index file length {idx.file_length} is not a multiple of {ENTRY_SIZE}",
                           position=idx.slots * ENTRY_SIZE, length=idx.file_length))
    return out


def encode(entries: Iterable[tuple[int, int]], base_offset: int, preallocate_to: int = 0) -> bytes:
    """``(offset, position)`` pairs as an ``.index``, zero-filled up to ``preallocate_to`` bytes."""
    out = b"".join(ENTRY.build({"relative_offset": o - base_offset, "position": p}) for o, p in entries)
    return out + bytes(max(0, preallocate_to - len(out)))
