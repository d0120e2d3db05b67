"""Many small segment files read and walked together: one read each, one kernel walk over them all.

A fleet's partition dirs each hold a segment of a few batches.  Read one at a time, the per-file work of the
segment reader (a window, a hash thread decision, a kernel call, a table, its CRC check) costs far more than the
bytes.  Here the segments' bytes are read back to back into one buffer and the compiled walk runs over the buffer,
from the first segment's start, and again from a segment's start only where the walk stopped.

A segment is *framed* when the walk's entries cover it exactly (its first entry at its first byte, each next one
where the last ended, the last ending at its last byte) and every entry's CRC was computed and matches.  The walk
reads an entry from its start's bytes alone, so the segment reader walking that file on its own finds the same
entries and nothing else: no finding, Kafka's reader reads it to the end.  Every other segment (damaged, torn, empty,
cut short, not readable here) is left to :class:`~kforensics.log.segment_reader.SegmentReader`, which says what is
wrong with it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import kernels
from .batch_table import COL, NCOLS, new_batch_rows
from .side_files import read_local

#: the largest segment read here (a larger one is not small: the segment reader walks it in windows); with
#: :data:`SMALL_ROUND` segments at a time, at most 32 MiB of them are held, and their rows
SMALL_SEGMENT = 64 << 10
SMALL_ROUND = 512


@dataclass
class WalkedSegments:
    """Segments walked together: the rows of every framed segment, in order, and where each segment's rows are.

    ``rows[first[i]:first[i] + count[i]]`` are segment ``i``'s entries (positions in its own file); ``framed[i]``
    False: the segment is left to the segment reader (its ``count`` is 0).  ``sha256[i]`` and ``size[i]`` are the
    file's (of a framed segment)."""

    rows: np.ndarray
    first: np.ndarray
    count: np.ndarray
    framed: np.ndarray
    size: list[int]
    sha256: list[str | None]


def walk_small_segments(paths: list[Path], cap: int = SMALL_SEGMENT) -> WalkedSegments:
    """Read each local segment file (at most ``cap`` bytes) and walk all of them together (see the module)."""
    n = len(paths)
    # an empty file, or one whose size changed while read, goes the segment reader's way, which reports it
    datas = [read_local(p, cap) or None for p in paths]
    size = [len(d) if d is not None else 0 for d in datas]
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(size, out=starts[1:])
    buf = np.frombuffer(b"".join(d for d in datas if d is not None), dtype=np.uint8)
    rows = _walk_all(buf, starts)
    framed, count, owner = _frame(rows, starts, np.array([d is not None for d in datas], dtype=bool))
    keep = framed[owner]
    rows = rows[keep]
    # positions in each segment's own file, as the segment reader gives them
    rows[:, COL["position"]] -= starts[owner[keep]]
    first = np.zeros(n, dtype=np.int64)
    if n:
        np.cumsum(count[:-1], out=first[1:])
    sha = [hashlib.sha256(d).hexdigest() if ok and d is not None else None for d, ok in zip(datas, framed.tolist())]
    return WalkedSegments(np.asfortranarray(rows), first, count, framed, size, sha)


def _walk_all(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Every entry the walk frames, from the first segment's start, restarting at the next segment's start
    wherever it stops (an error, or an entry that runs past the buffer)."""
    K = kernels.get()
    total = int(starts[-1])
    cap = max(64, total // 64)
    out = new_batch_rows(cap)
    pieces: list[np.ndarray] = []
    pos = 0
    while pos < total:
        k, end, status = K.walk(buf, total, pos, out, 0, cap)
        if k:
            got = out[:k]
            owner = np.searchsorted(starts, got[:, COL["position"]], side="right") - 1
            # an entry past its segment's end (a torn tail's last batch reaching into the next file's bytes) is kept,
            # so that its segment is not framed, and the walk goes on from the next segment's start: read on from
            # there, misaligned bytes could frame one entry over many segments and leave them all unframed
            crossing = np.flatnonzero(got[:, COL["position"]] + got[:, COL["size_in_bytes"]] > starts[owner + 1])
            if len(crossing):
                j = int(crossing[0])
                pieces.append(got[:j + 1].copy())
                pos = int(starts[owner[j] + 1])
                continue
            pieces.append(got.copy())
        if status == kernels.ST_FULL:
            pos = end
            continue
        # the entry at ``end`` does not frame: go on from the next segment's start
        nxt = int(np.searchsorted(starts, end, side="right"))
        if nxt >= len(starts) - 1:
            break
        pos = int(starts[nxt])
    if not pieces:
        return np.empty((0, NCOLS), dtype=np.int64)
    return np.concatenate(pieces)


def _frame(rows: np.ndarray, starts: np.ndarray, read: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which segments the rows cover exactly with valid CRCs: (framed, row count of each framed segment, each
    row's segment)."""
    n = len(starts) - 1
    pos = rows[:, COL["position"]]
    end = pos + rows[:, COL["size_in_bytes"]]
    owner = np.searchsorted(starts, pos, side="right") - 1
    # a row is good when it lies in its segment, its CRC was computed and matches, and it is not flagged
    good = ((end <= starts[owner + 1]) & (rows[:, COL["crc_computed"]] >= 0)
            & (rows[:, COL["crc"]] == rows[:, COL["crc_computed"]]) & (rows[:, COL["flags"]] == 0))
    count = np.bincount(owner, minlength=n)[:n]
    bad = np.bincount(owner[~good], minlength=n)[:n]
    covered = np.bincount(owner, weights=rows[:, COL["size_in_bytes"]], minlength=n)[:n]
    size = np.diff(starts)
    # contiguous: each row starts where the one before it (in the same segment) ended, the first at the start
    prev_end = np.concatenate(([-1], end[:-1]))
    first_of = np.concatenate(([True], owner[1:] != owner[:-1])) if len(rows) else np.zeros(0, dtype=bool)
    broken = np.where(first_of, pos != starts[owner], pos != prev_end)
    gaps = np.bincount(owner[broken], minlength=n)[:n]
    framed = read & (count > 0) & (bad == 0) & (gaps == 0) & (covered == size)
    return framed, np.where(framed, count, 0), owner
