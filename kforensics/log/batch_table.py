"""The columnar batch table: one row per log entry, the one vocabulary for batch fields.

The compiled walk fills these columns; the Parquet ``batches`` table, the
replay's batch log and the dump use the same names (Kafka's, snake_cased).
Every magic fills every column; a legacy entry has -1 where v2 has a field
it lacks.
"""

from __future__ import annotations

import numpy as np

#: columns of a batch table, in kernel order
BATCH_COLUMNS = (
    "position",  # byte position of the entry in the file
    "size_in_bytes",  # 12 + size field
    "magic",
    "base_offset",  # -1 when unknown without decompression (legacy wrapper)
    "last_offset",
    "partition_leader_epoch",
    "crc",  # stored
    "crc_computed",  # -1 when not computed here
    "attributes",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "records_count",  # -1 when unknown without decompression
    "value_position",  # legacy: byte position of the value (the wrapper payload), else -1
    "value_length",  # legacy: value length (-1 = null)
    "key_length",  # legacy: key length (-1 = null)
    "flags",
)
COL = {name: i for i, name in enumerate(BATCH_COLUMNS)}
NCOLS = len(BATCH_COLUMNS)

FLAG_RECOVERED = 1  # found by resynchronising past corruption
FLAG_HUGE = 2  # too large to hold in memory; CRC streamed, records not decodable here


class BatchTable:
    """A chunk of shallow batch headers, one row per log entry (see :data:`BATCH_COLUMNS`)."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray):
        self.data = data  # (rows, NCOLS) int64; the reader makes it column-major (any layout works)

    def __len__(self) -> int:
        return int(self.data.shape[0])

    def __getitem__(self, name: str) -> np.ndarray:
        column: np.ndarray = self.data[:, COL[name]]
        return column

    def crc_valid(self) -> np.ndarray:
        valid: np.ndarray = self["crc"] == self["crc_computed"]
        return valid

    def first_offsets(self) -> np.ndarray:
        """Each entry's first offset; a legacy wrapper's (unknown without decompression) is its last."""
        base = self["base_offset"]
        first: np.ndarray = np.where(base >= 0, base, self["last_offset"])
        return first


#: rows of padding between the columns of a new table: with columns a multiple of 4 KiB apart, the walk's
#: stores to a row's columns alias in the cache and the walk runs at half speed
_PAD_ROWS = 24


def new_batch_rows(cap: int) -> np.ndarray:
    """An empty output array for the walk kernel, column-major: each column of a chunk is contiguous (consumers
    read a table a column at a time, and the Parquet writer takes the columns as they are)."""
    return np.empty((cap + _PAD_ROWS, NCOLS), dtype=np.int64, order="F")[:cap]
