"""``kforensics timeline``: the election timeline of each partition from a KRaft metadata log.

Exit codes: 0 no finding above info, 1 findings above info, 2 usage or I/O
error (including inputs that hold no metadata log or snapshot).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone

import click

from .analysis.timeline import LEADER_RECOVERY_STATES, Timeline, TimelineEntry, build_timeline
from .findings import Finding, Severity

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    try:
        when = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
        return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _ids(xs: list[int]) -> str:
    return "[" + ",".join(map(str, xs)) + "]"


def entry_line(topic: str, partition: int, e: TimelineEntry) -> str:
    """One text line for one timeline entry."""
    lrs = LEADER_RECOVERY_STATES.get(e.leader_recovery_state, str(e.leader_recovery_state))
    line = (f"{topic}-{partition} offset: {e.offset} time: {_time(e.timestamp)} leader: {e.leader} "
            f"leaderEpoch: {e.leader_epoch} partitionEpoch: {e.partition_epoch} isr: {_ids(e.isr)} "
            f"elr: {_ids(e.elr)} lastKnownElr: {_ids(e.last_known_elr)} leaderRecoveryState: {lrs} "
            f"replicas: {_ids(e.replicas)} record: {e.record}")
    if e.adding_replicas or e.removing_replicas:
        line += f" adding: {_ids(e.adding_replicas)} removing: {_ids(e.removing_replicas)}"
    if e.unclean:
        line += " UNCLEAN"
    return line


def _finding_line(f: Finding) -> str:
    where = f.file or ""
    if f.position is not None:
        where += f" @ byte {f.position}"
    return f"{str(f.severity).upper()} {f.code} {where}: {f.message}"


def _selected(tl: Timeline, topic: str | None, partition: int | None) -> list[tuple[tuple[str, int], list]]:
    return [(k, es) for k, es in sorted(tl.partitions.items())
            if (topic is None or k[0] == topic) and (partition is None or k[1] == partition)]


@click.command()
@click.argument("paths", metavar="LOGDIR|FILE...", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: one line per entry; json: one document.")
@click.option("--topic", help="Only this topic.")
@click.option("--partition", type=int, help="Only this partition number.")
def timeline(paths, fmt, topic, partition):
    """Leader elections per partition, replayed from a KRaft metadata log and its snapshots.

    Each LOGDIR|FILE is a broker log dir, a __cluster_metadata-0 dir, a metadata
    segment or a snapshot (*.checkpoint, bootstrap.checkpoint).  Leader epochs
    are reconstructed as the controller increments them; elections of a leader
    outside the previous ISR (and ELR), or into RECOVERING, are marked UNCLEAN.

    Example: kforensics timeline /data/kraft-logs --topic orders
    """
    try:
        tl = build_timeline(list(paths))
    except OSError as e:
        click.echo(f"kforensics timeline: {e}", err=True)
        sys.exit(EXIT_ERROR)
    if not tl.sources:
        click.echo("kforensics timeline: no KRaft metadata log or snapshot under " + ", ".join(paths), err=True)
        sys.exit(EXIT_ERROR)
    chosen = _selected(tl, topic, partition)
    if fmt == "json":
        doc = tl.to_dict()
        keep = {k for k, _ in chosen}
        doc["partitions"] = [p for p in doc["partitions"] if (p["topic"], p["partition"]) in keep]
        click.echo(json.dumps(doc, default=str))
    else:
        removed = {(v["name"], v["offset"]) for v in tl.removed_topics.values()}
        for (t, p), es in chosen:
            for e in es:
                click.echo(entry_line(t, p, e))
            for name, offset in sorted(removed, key=str):
                if name == t and offset is not None:
                    click.echo(f"{t}-{p} offset: {offset} record: RemoveTopicRecord (topic deleted)")
        click.echo(f"{tl.records} metadata records, {len(chosen)} partition(s), "
                   f"{sum(len(es) for _, es in chosen)} entries, {len(tl.findings)} finding(s)", err=True)
    for f in tl.findings:
        click.echo(_finding_line(f), err=True)
    sys.exit(EXIT_FINDINGS if any(f.severity > Severity.INFO for f in tl.findings) else EXIT_CLEAN)
