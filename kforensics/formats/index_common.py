"""Shared decoding of Kafka's fixed-entry index files (``.index``, ``.timeindex``, ``.txnindex``).

Entries are decoded in bulk through a numpy dtype derived from the entry's
Construct declaration (field order, widths and big-endianness come from it).
"""

from __future__ import annotations

import numpy as np
from construct import Struct

from ..findings import Finding, Severity
from .layout import fixed_layout


def entry_dtype(declaration: Struct) -> np.dtype:
    """A big-endian numpy structured dtype with the declaration's fields."""
    layout = fixed_layout(declaration)
    return np.dtype([(f.name, f">{'i' if f.signed else 'u'}{f.size}") for f in layout.fields])


def decode_entries(data: bytes, declaration: Struct) -> tuple[np.ndarray, int]:
    """All whole entries in ``data`` and the number of trailing bytes that do not make one."""
    dt = entry_dtype(declaration)
    whole = len(data) // dt.itemsize
    return np.frombuffer(data, dtype=dt, count=whole), len(data) - whole * dt.itemsize


def padding_start(relative_offsets: np.ndarray, also_zero: np.ndarray | None = None) -> int:
    """Where preallocated padding begins: the first slot after the first whose relative offset is 0
    (and, for the time index, whose timestamp is 0 too) — DumpLogSegments' rule."""
    n = len(relative_offsets)
    if n <= 1:
        return n
    zero = relative_offsets[1:] == 0
    if also_zero is not None:
        zero &= also_zero[1:] == 0
    hits = zero.nonzero()[0]
    return int(hits[0]) + 1 if len(hits) else n


def layout_findings(arr: np.ndarray, pad_at: int, trailing: int, entry_size: int, what: str) -> list[Finding]:
    """Findings for a padded tail (normal on an active segment) and a partial trailing entry."""
    out = []
    n = len(arr)
    if pad_at < n:
        tail = arr[pad_at:]
        clean = all(not (tail[name] != 0).any() for name in arr.dtype.names)
        out.append(Finding(
            "INDEX_PREALLOCATED_TAIL" if clean else "INDEX_DATA_AFTER_PADDING",
            Severity.INFO if clean else Severity.LOW,
            f"{n - pad_at} preallocated (zero) {what} slots after {pad_at} entries" if clean
            else f"{what} entries after the padding that starts at slot {pad_at}",
            position=pad_at * entry_size,
            facts={"entries": pad_at, "padding_entries": n - pad_at},
        ))
    if trailing:
        out.append(Finding("INDEX_PARTIAL_ENTRY", Severity.LOW,
                           f"length {n * entry_size + trailing} is not a multiple of {entry_size}",
                           position=n * entry_size, facts={"trailing_bytes": trailing}))
    return out
