"""Inclusive offset ranges ``(first, last)``: merged, intersected, cut and counted the one way every module does.

Pure arithmetic on pairs of integers (no Kafka rule): the consumer impact,
the acknowledgement classes, the fleet plots and the tiered coverage all
take their ranges from here.
"""

from __future__ import annotations

from collections.abc import Iterable

#: ``(first, last)`` offsets, both inclusive
Range = tuple[int, int]


def union(ranges: Iterable[Range]) -> list[Range]:
    """``ranges`` merged where they overlap or touch, sorted."""
    out: list[Range] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def intersect(x: Iterable[Range], y: list[Range]) -> list[Range]:
    """The offsets both ``x`` and ``y`` hold, as merged ranges."""
    out = []
    for a, b in x:
        for c, d in y:
            lo, hi = max(a, c), min(b, d)
            if lo <= hi:
                out.append((lo, hi))
    return union(out)


def below(ranges: Iterable[Range], end: int) -> list[Range]:
    """The parts of ``ranges`` below ``end`` (exclusive)."""
    return [(a, min(b, end - 1)) for a, b in ranges if a < end]


def span(ranges: Iterable[Range]) -> int:
    """How many offsets ``ranges`` hold (counted once each only when they do not overlap: see :func:`union`)."""
    return sum(b - a + 1 for a, b in ranges)


def uncovered(first: int, last: int, ranges: Iterable[Range]) -> list[Range]:
    """The parts of ``[first, last]`` no range of ``ranges`` covers."""
    out, at = [], first
    for a, b in union(ranges):
        if b < at or a > last:
            continue
        if a > at:
            out.append((at, a - 1))
        at = max(at, b + 1)
    if at <= last:
        out.append((at, last))
    return out
