"""Producer-state snapshots against the log they were taken from."""

from __future__ import annotations

from ..findings import Finding, finding
from ..formats.producer_snapshot import ProducerSnapshot


def check_snapshot(snapshot: ProducerSnapshot, *, path: str, snapshot_offset: int, log_end: int | None,
                   has_segments: bool) -> list[Finding]:
    """A snapshot taken beyond the log end (deleted at load), or naming offsets beyond it (stale)."""
    out: list[Finding] = []
    if log_end is None:
        return out
    if snapshot_offset > log_end and has_segments:
        out.append(finding("SNAPSHOT_BEYOND_LEO", f"producer snapshot taken at offset {snapshot_offset}, beyond the "
                                                  f"log end offset {log_end}; Kafka deletes it", file=path,
                           snapshot_offset=snapshot_offset, log_end_offset=log_end))
    beyond = [e.producer_id for e in snapshot.entries if e.last_offset >= max(log_end, snapshot_offset)]
    if beyond:
        out.append(finding("SNAPSHOT_ENTRY_BEYOND_LOG", f"{len(beyond)} producer entries name a last offset at or "
                                                        "beyond the snapshot/log end", file=path,
                           producer_ids=beyond[:20], count=len(beyond)))
    return out
