"""The text of ``scan``: the partitions table, the findings, one summary line.

On a terminal the table is drawn with rich (names fold, never cut); elsewhere
it is plain aligned text, so a pipe or a file gets every character.  Every
value from the evidence is printed as text, never interpreted as markup.
"""

from __future__ import annotations

from typing import Any, TextIO

import click

from ..findings import Severity
from ..scan.model import PartitionScan, ScanReport
from .common import finding_line, printable, severity_counts, summary_line

COLUMNS = ("partition", "segs", "batches", "log start", "LEO", "HW", "uncommitted", "at next start", "epochs",
           "findings")
_LEFT = {"partition", "at next start", "epochs"}
MAX_EPOCHS = 4


def resolve_log_dirs(paths: tuple[str, ...]) -> list[Any]:
    """The log dirs to scan: each path is one, or a directory holding one broker's log dirs (searched).

    A directory holding log dirs of several brokers is a usage error naming them.
    """
    from ..scan.broker import resolve_log_dirs as resolve

    try:
        return resolve(list(paths))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="LOG_DIRS") from None


def _s(v: Any) -> str:
    return "-" if v is None else str(v)


def _epochs(p: PartitionScan) -> str:
    cache = p.epoch_cache_written if p.epoch_cache_written is not None else p.epoch_cache_rebuilt
    shown = " ".join(f"{e}:{o}" for e, o in cache[-MAX_EPOCHS:])
    return ("… " if len(cache) > MAX_EPOCHS else "") + shown if cache else "-"


def next_start(p: PartitionScan) -> str:
    """What the next start does to the partition, in offsets and records."""
    r = p.recovery
    if r.note:
        return "deleted"
    if r.truncates:
        if r.lost_first_offset is None:
            return f"cut at byte {r.truncate_position} (torn bytes only)"
        text = f"truncated to {r.log_end_offset}: -{r.lost_records} records"
        if r.lost_committed_records:
            text += f" ({r.lost_committed_records} committed)"
        return text
    if r.damage_kept:
        return "damage kept (clean shutdown)"
    if r.rebuilds_indexes:
        return f"rebuilds {len(r.rebuilds_indexes)} index(es)"
    return "recovered, no loss" if r.recovers else "-"


def rows(report: ScanReport, topics: set[str]) -> list[list[str]]:
    out = []
    for p in sorted(report.partitions, key=lambda p: (p.topic, p.partition, p.dir_name)):
        if topics and p.topic not in topics:
            continue
        worst = p.worst()
        out.append([printable(p.dir_name), str(len(p.segments)), str(p.batch_count), _s(p.log_start_offset),
                    _s(p.log_end_offset) + ("" if p.complete else "?"), _s(p.high_watermark), _s(p.uncommitted),
                    next_start(p), _epochs(p), f"{len(p.findings)}" + (f" ({worst})" if worst is not None else "")])
    return out


def plain_table(header: tuple[str, ...], body: list[list[str]], left: set[str]) -> list[str]:
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(c.ljust(w) if h in left else c.rjust(w) for c, w, h in zip(cells, widths, header)).rstrip()

    return [line(header)] + [line(r) for r in body]


def render_scan_text(report: ScanReport, out: TextIO, *, min_severity: Severity = Severity.INFO,
                     topics: set[str] | None = None) -> None:
    topics = topics or set()
    b = report.broker
    out.write(f"broker {_s(b.node_id)}  cluster {printable(b.cluster_id or '-')}  log dirs: "
              f"{', '.join(printable(d) for d in b.log_dirs)}\n")
    body = rows(report, topics)
    if out.isatty():
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        console = Console(file=out, highlight=False)
        t = Table(title="partitions")
        for col in COLUMNS:
            t.add_column(col, justify="left" if col in _LEFT else "right",
                         overflow="fold" if col == "partition" else "ellipsis", no_wrap=col != "partition")
        for r in body:
            t.add_row(*(Text(c) for c in r))
        console.print(t)
    else:
        out.write("partitions\n")
        for line in plain_table(COLUMNS, body, _LEFT):
            out.write(line + "\n")
    findings = sorted(report.all_findings(), key=lambda f: (-int(f.severity), f.file or "", f.position or 0))
    if topics:
        findings = [f for f in findings if any(f"/{t}-" in (f.file or "") for t in topics) or f.file is None]
    listed = [f for f in findings if f.severity >= min_severity]
    if listed:
        out.write(f"\n{len(listed)} findings" + (f" at or above {min_severity}" if min_severity > Severity.INFO
                                                 else "") + "\n")
        for f in listed:
            out.write(finding_line(f) + "\n")
    out.write(summary_line(severity_counts(findings)) + f", {len(body)} partition(s)\n")
