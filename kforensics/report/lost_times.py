"""When the lost records were written: the timestamps of the batches that hold them, read back from the replica.

A verdict names offsets; the batch headers of the replica that held them
carry the first and the largest timestamp of each batch.  Only the segments
that can hold those offsets are read (shallow headers, through the log layer),
and a replica whose segments cannot be read simply has no times.
"""

from __future__ import annotations

from typing import Any


def lost_batch_times(log_dirs: list[Any], topic: str, partition: int,
                     ranges: list[list[int]]) -> tuple[int | None, int | None]:
    """(earliest base timestamp, latest max timestamp) in ms of the batches in ``log_dirs``' copy of
    ``topic``-``partition`` that overlap the inclusive offset ``ranges``; (None, None) when unknown."""
    from ..log.log_dir import open_log_dir

    if not ranges:
        return None, None
    lo, hi = min(r[0] for r in ranges), max(r[1] for r in ranges)
    first: int | None = None
    last: int | None = None
    for d in log_dirs:
        try:
            ld = open_log_dir(d)
        except OSError:
            continue  # unreadable evidence: the evidence section says so; the times stay unknown
        for pd in ld.partitions:
            if pd.topic != topic or pd.partition != partition or getattr(pd.name, "suffix", None):
                continue
            f, la = _scan_partition(pd, lo, hi, ranges)
            first = f if first is None or (f is not None and f < first) else first
            last = la if last is None or (la is not None and la > last) else last
    return first, last


def _scan_partition(pd: Any, lo: int, hi: int, ranges: list[list[int]]) -> tuple[int | None, int | None]:
    segs = pd.sorted_segments()
    first: int | None = None
    last: int | None = None
    for i, seg in enumerate(segs):
        nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
        if seg.base_offset > hi or (nxt is not None and nxt <= lo) or seg.log is None:
            continue  # this segment holds none of the offsets
        try:
            for t in seg.reader().tables():
                f, la = _overlapping(t, ranges)
                first = f if first is None or (f is not None and f < first) else first
                last = la if last is None or (la is not None and la > last) else last
        except (OSError, ValueError):
            continue
    return first, last


def _overlapping(t: Any, ranges: list[list[int]]) -> tuple[int | None, int | None]:
    import numpy as np

    if len(t) == 0:
        return None, None
    start, end = t.first_offsets(), t["last_offset"]
    hit = np.zeros(len(t), dtype=bool)
    for a, b in ranges:
        hit |= (start <= b) & (end >= a)
    base, mx = t["base_timestamp"][hit], t["max_timestamp"][hit]
    base, mx = base[base >= 0], mx[mx >= 0]  # -1: a legacy batch without timestamps
    return (int(base.min()) if base.size else None), (int(mx.max()) if mx.size else None)
