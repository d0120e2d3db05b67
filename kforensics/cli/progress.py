"""Progress bars on long work, on stderr, only when it is a terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..scan.model import ScanReport


def segment_bytes(log_dirs: list[Any]) -> int:
    """Bytes of every segment in the log dirs, from the listings (nothing is opened)."""
    from ..log.log_dir import open_log_dir

    total = 0
    for d in log_dirs:
        for pd in open_log_dir(d).partitions:
            for seg in pd.segments.values():
                if seg.log is not None:
                    try:
                        total += seg.log.stat().st_size
                    except OSError:
                        pass  # reported by the scan itself
    return total


def scan_with_progress(log_dirs: list[Any], **kw: Any) -> ScanReport:
    """Scan with a progress bar over the bytes of every segment."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from ..scan.broker import scan_log_dirs

    total = segment_bytes(log_dirs)
    with Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("scanning", total=total or None)
        return scan_log_dirs(log_dirs, progress=lambda n: bar.advance(task, n),
                             on_partition=lambda name: bar.update(task, description=f"scanning {name}"), **kw)
