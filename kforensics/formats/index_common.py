"""What Kafka's fixed-entry index files (``.index``, ``.timeindex``, ``.txnindex``) share.

Entries are decoded in bulk through a numpy dtype derived from the entry's
Construct declaration (field order, widths and big-endianness come from it),
and kept as arrays: a 10 MiB index is 1.3 million entries, not 1.3 million
Python objects.  Problems are reported one finding per kind of problem, at
the first entry that has it, with the count: a file of garbage yields a few
findings, not millions.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from construct import Struct

from ..findings import Finding, finding
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


def padding_start(relative_offsets: np.ndarray) -> int:
    """Where preallocated padding begins: the first slot after slot 0 whose relative offset is 0
    (DumpLogSegments' rule)."""
    n = len(relative_offsets)
    if n <= 1:
        return n
    hits = np.flatnonzero(relative_offsets[1:] == 0)
    return int(hits[0]) + 1 if len(hits) else n


def first_of(mask: np.ndarray, code: str, text: str, entry_size: int, what: str, **facts: np.ndarray) -> list[Finding]:
    """One finding for every entry in ``mask``, placed at the first, with the count."""
    hits = np.flatnonzero(mask)
    if not len(hits):
        return []
    i = int(hits[0])
    at: dict[str, Any] = {k: int(v[i]) for k, v in facts.items()}  # finding facts
    return [finding(code, f"{len(hits)} {what} entries {text} (first: entry {i})", position=i * entry_size,
                    count=len(hits), entry=i, **at)]


def layout_findings(arr: np.ndarray, pad_at: int, trailing: int, entry_size: int, what: str) -> list[Finding]:
    """Findings for a padded tail (normal on an active segment) and a partial trailing entry."""
    out = []
    n = len(arr)
    if pad_at < n:
        tail = arr[pad_at:]
        clean = all(not (tail[name] != 0).any() for name in cast(tuple[str, ...], arr.dtype.names))  # structured
        out.append(finding(
            "INDEX_PREALLOCATED_TAIL" if clean else "INDEX_DATA_AFTER_PADDING",
            f"{n - pad_at} preallocated (zero) {what} slots after {pad_at} entries" if clean
            else f"{what} entries after the padding that starts at slot {pad_at}",
            position=pad_at * entry_size, entries=pad_at, padding_entries=n - pad_at))
    if trailing:
        out.append(finding("INDEX_PARTIAL_ENTRY", f"length {n * entry_size + trailing} is not a multiple of "
                                                  f"{entry_size}", position=n * entry_size, trailing_bytes=trailing))
    return out


def order_findings(offsets: np.ndarray, base_offset: int, entry_size: int, what: str, *,
                   positions: np.ndarray | None = None, strict: bool = True) -> list[Finding]:
    """Entries out of order or out of range, one finding per kind of problem.

    ``strict``: offsets must exceed the previous entry's (the offset index);
    otherwise they must only not go back (the time index).  Kafka refuses
    such appends, and its lookups binary-search the entries, so a disordered
    index sends reads to the wrong place until the segment is recovered.
    """
    out: list[Finding] = []
    if len(offsets) > 1:
        prev = np.concatenate(([offsets[0]], offsets[:-1]))
        ok = offsets > prev if strict else offsets >= prev
        ok[0] = True
        out += first_of(~ok, "INDEX_NOT_INCREASING", "whose offset does not exceed the previous entry's" if strict
                        else "whose offset is below the previous entry's", entry_size, what,
                        offset=offsets, previous_offset=prev)
    bad = offsets < base_offset
    if positions is not None:
        bad = bad | (positions < 0)
    out += first_of(bad, "INDEX_ENTRY_OUT_OF_RANGE", f"below the base offset {base_offset} or at a negative position",
                    entry_size, what, offset=offsets)
    if positions is not None and len(positions) > 1:
        back = np.concatenate(([False], positions[1:] < positions[:-1]))
        out += first_of(back, "INDEX_NOT_INCREASING", "whose position is below the previous entry's", entry_size, what,
                        log_position=positions)
    return out
