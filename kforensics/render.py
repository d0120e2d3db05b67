"""Human output for the CLI: rich tables on a terminal, plain aligned text elsewhere."""

from __future__ import annotations

import os
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from .analysis.scan import ScanReport, scan_log_dirs
from .findings import Severity

SEV_STYLE = {"info": "dim", "low": "cyan", "medium": "yellow", "high": "red", "critical": "bold red"}


def scan_with_progress(log_dirs, **kw) -> ScanReport:
    """Scan with a progress bar over the bytes of every segment."""
    total = 0
    for d in log_dirs:
        for root, _, files in os.walk(d):
            total += sum(os.path.getsize(os.path.join(root, f)) for f in files if f.endswith(".log"))
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("scanning", total=total or None)
        return scan_log_dirs(
            log_dirs,
            progress=lambda n: bar.advance(task, n),
            on_partition=lambda name: bar.update(task, description=f"scanning {name}"),
            **kw,
        )


def render_scan_text(report: ScanReport, out: TextIO) -> None:
    console = Console(file=out, highlight=False, soft_wrap=True, width=None if out.isatty() else 200)
    b = report.broker
    console.print(f"broker {b.node_id if b.node_id is not None else '?'}  cluster {b.cluster_id or '?'}  "
                  f"log dirs: {', '.join(b.log_dirs)}")
    t = Table(title="partitions", box=None if not console.is_terminal else None)
    for col in ("partition", "segs", "batches", "log start", "LEO", "HW", "uncommitted", "epochs (cache)", "findings"):
        t.add_column(col, justify="left" if col in ("partition", "epochs (cache)") else "right")
    for p in sorted(report.partitions, key=lambda p: (p.topic, p.partition, p.dir_name)):
        worst = max((f.severity for f in p.findings), default=None)
        cache = p.epoch_cache_written if p.epoch_cache_written is not None else p.epoch_cache_rebuilt
        t.add_row(p.dir_name, str(len(p.segments)), str(p.batch_count), _s(p.log_start_offset), _s(p.log_end_offset),
                  _s(p.high_watermark), _s(p.uncommitted), " ".join(f"{e}:{o}" for e, o in cache[-4:]),
                  f"{len(p.findings)}" + (f" ({worst})" if worst is not None else ""))
    console.print(t)
    findings = sorted(report.all_findings(), key=lambda f: (-int(f.severity), f.file or "", f.position or 0))
    if findings:
        console.print(f"\n{len(findings)} findings")
        for f in findings:
            where = f.file or ""
            if f.position is not None:
                where += f" @ byte {f.position}"
            elif f.line is not None:
                where += f" line {f.line}"
            sev = str(f.severity)
            console.print(f"[{SEV_STYLE[sev]}]{sev.upper():8}[/] {f.code:28} {where}\n         {f.message}")
    else:
        console.print("no findings")
    by = {}
    for f in findings:
        by[str(f.severity)] = by.get(str(f.severity), 0) + 1
    console.print("summary: " + ", ".join(f"{by.get(str(s), 0)} {s}" for s in reversed(list(Severity))))


def _s(v) -> str:
    return "-" if v is None else str(v)
