"""The report's salvage section: the records a restart will destroy that no surviving replica keeps, and how to
keep them (``kforensics salvage``), from the salvage library's summary (:mod:`kforensics.salvage`)."""

from __future__ import annotations

from typing import Any

from .model import Section, count

MAX_ROWS = 40


def salvage_section(summary: Any, command: str) -> Section:
    """Records and bytes to salvage per topic, partition and cause; ``summary`` a
    :class:`~kforensics.salvage.model.SalvageSummary` (None: salvage was not run)."""
    s = Section("salvage", "Salvage: records the restart destroys that no replica keeps")
    if summary is None:
        s.text("Salvage was not run for this report: run kforensics salvage on the snapshots.")
        return s
    if not summary.rows:
        s.text(f"Nothing to salvage: every record a replica loses is kept, with the same content, by the new leader "
               f"({summary.kept_by_leader} such records)." if summary.kept_by_leader else
               "Nothing to salvage: the replay loses no record.")
        return s
    parts = len({(r.topic, r.partition) for r in summary.rows})
    s.text(f"{count(summary.records, 'record')} ({summary.bytes} bytes of keys, values and headers) on "
           f"{count(parts, 'partition')} are lost by the restart and held by no surviving replica; "
           f"{summary.kept_by_leader} more that a replica loses are kept by the new leader. They are still on "
           f"disk: {command} exports them (Parquet, and JSON lines in kcat's envelope), and the same command with "
           "--produce BOOTSTRAP --send puts them back, once.")
    rows = [[r.topic, r.partition, r.cause, r.records, r.bytes,
             ", ".join(f"{k} {v}" for k, v in sorted(r.transactional.items()) if k != "none") or "-",
             ", ".join(r.groups) or "-"] for r in summary.rows]
    s.table(["topic", "partition", "cause", "records", "bytes", "transactional", "groups that had consumed them"],
            rows, limit=MAX_ROWS, what="rows")
    if summary.findings:
        s.text(f"{len(summary.findings)} findings while reading them back (listed by `kforensics salvage`).")
    return s
