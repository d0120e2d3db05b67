"""The report's document model: sections of paragraphs, tables and figures, rendered alike as HTML and Markdown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Text:
    """A paragraph of plain text (escaped by the renderers)."""

    text: str


@dataclass
class Table:
    """A table: ``rows`` of cells (str, int, None) under ``headers``; ``note`` is said when rows were left out."""

    headers: list[str]
    rows: list[list[Any]]
    caption: str | None = None
    note: str | None = None


@dataclass
class Figure:
    """A figure as inline SVG (HTML) with its caption (both formats; Markdown names the figure)."""

    svg: str
    caption: str
    width_px: int = 0
    height_px: int = 0


Block = Text | Table | Figure


@dataclass
class Section:
    """One section of the report: an id (the HTML anchor, stable across versions), a title and its blocks."""

    id: str
    title: str
    blocks: list[Block] = field(default_factory=list)

    def text(self, text: str) -> Section:
        self.blocks.append(Text(text))
        return self

    def table(self, headers: list[str], rows: list[list[Any]], caption: str | None = None,
              limit: int | None = None, what: str = "rows") -> Section:
        """Add a table; with ``limit``, at most that many rows and a note of how many were left out."""
        note = None
        if limit is not None and len(rows) > limit:
            note = f"{limit} of {len(rows)} {what} shown (the first in the order above)"
            rows = rows[:limit]
        self.blocks.append(Table(headers, rows, caption, note))
        return self


@dataclass
class Report:
    """The whole report: title, the facts of the run (``subtitle``), its sections, and one generation line."""

    title: str
    subtitle: str
    sections: list[Section]
    generated: str  # the only line that differs between two runs on the same evidence

    def section_ids(self) -> list[str]:
        return [s.id for s in self.sections]


def cell(value: Any) -> str:
    """A table cell's text: ``-`` for nothing, ints as digits, lists joined."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value) if value else "-"
    return str(value)


def ranges_text(ranges: Any) -> str:
    """Inclusive offset ranges ``[[a, b], ...]`` as ``a..b, c``."""
    if not ranges:
        return "-"
    out = []
    for r in ranges:
        if isinstance(r, (list, tuple)) and len(r) == 2:
            out.append(str(r[0]) if r[0] == r[1] else f"{r[0]}..{r[1]}")
        else:
            out.append(str(r))
    return ", ".join(out)


def utc(ms: Any) -> str | None:
    """A Kafka timestamp (ms since the epoch) as ISO-8601 UTC, None when unknown or negative (no timestamp)."""
    import datetime as dt

    if ms is None or not isinstance(ms, int) or ms < 0:
        return None
    try:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return None


def time_range(first_ms: Any, last_ms: Any) -> str | None:
    """``first .. last`` in UTC (one time when equal), None when neither is known."""
    a, b = utc(first_ms), utc(last_ms)
    if a is None and b is None:
        return None
    if a == b or b is None:
        return a
    return f"{a or '?'} .. {b}"


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``1 partition``, ``2 partitions``."""
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"
