"""One log entry read shallowly: its header fields (and its bytes, when held), and reading one back by position."""

from __future__ import annotations

import numpy as np

from ..formats import legacy, record_batch
from . import kernels
from .batch_table import COL, FLAG_RECOVERED, new_batch_rows
from .paths import Evidence
from .sources import open_binary

#: Largest entry held in memory whole; larger ones are CRC-checked by streaming.
DEFAULT_MAX_ENTRY = 64 << 20
HEADER_PREFIX = record_batch.ENTRY_PREFIX  # offset, size, epoch/crc, magic


class Batch:
    """One log entry's header fields (and its bytes, when held), read shallowly."""

    __slots__ = ("raw", "row")

    def __init__(self, row: list[int], raw: memoryview | None):
        self.row = row
        self.raw = raw

    def __getattr__(self, name: str) -> int:  # a header field (see BATCH_COLUMNS)
        try:
            return self.row[COL[name]]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def is_valid(self) -> bool:
        return self.row[COL["crc"]] == self.row[COL["crc_computed"]]

    @property
    def codec(self) -> int:
        return self.row[COL["attributes"]] & record_batch.COMPRESSION_MASK

    @property
    def recovered(self) -> bool:
        return bool(self.row[COL["flags"]] & FLAG_RECOVERED)


def read_entry(path: Evidence, position: int, size: int, *, max_entry: int = DEFAULT_MAX_ENTRY) -> Batch | None:
    """One entry read back at a known position (its size bounded), or None when it no longer frames there
    (a short read included: the file shrank or the copy is cut)."""
    if not HEADER_PREFIX <= size <= max_entry:
        return None
    with open_binary(path) as fh:
        fh.seek(position)
        raw = fh.read(size)
    if len(raw) != size:
        return None
    out = new_batch_rows(1)
    k, _end, _status = kernels.get().walk(np.frombuffer(raw, dtype=np.uint8), size, 0, out, 0, 1)
    if not k:
        return None
    out[0, COL["position"]] += position
    if out[0, COL["value_position"]] >= 0:
        out[0, COL["value_position"]] += position
    if out[0, COL["crc_computed"]] < 0:
        out[0, COL["crc_computed"]] = (record_batch.compute_crc(raw) if out[0, COL["magic"]] == record_batch.MAGIC
                                       else legacy.compute_crc(raw))
    return Batch(out[0].tolist(), memoryview(raw))
