"""The incident report: one document model, rendered as self-contained HTML and as Markdown (a front end).

A report is a list of :class:`~kforensics.report.model.Section` objects,
each built by one section builder from what the analyses produced (the
``replay`` JSON document and the typed report, or the ``scan --out`` /
``spark`` Parquet tables).  Builders are listed in order in
:mod:`kforensics.report.from_replay` and :mod:`kforensics.report.from_tables`;
a new analysis (a leader choice, a salvage plan) adds a builder, and both
renderers show its section without change.
"""

from __future__ import annotations

from .model import Figure, Report, Section, Table, Text

__all__ = ["Figure", "Report", "Section", "Table", "Text"]
