"""``kforensics timeline``: the election timeline of each partition from a KRaft metadata log."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from ..errors import ExitCode
from .common import count_text, echo_findings, plural, printable, severity_counts
from .options import EVIDENCE_PATH, s3_endpoint_option

if TYPE_CHECKING:  # the timeline is imported only when the command runs
    from ..kraft.timeline import Timeline, TimelineEntry


def _time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace(
            "+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _ids(xs: list[int]) -> str:
    return "[" + ",".join(map(str, xs)) + "]"


def answer_line(chosen: list[tuple[tuple[str, int], list[TimelineEntry]]], tl: Timeline | None = None) -> str:
    """What matters first: the unclean elections (a leader from outside the previous ISR, or RECOVERING), or none;
    and, before them, a metadata log that lost its tail (elections after its end are not shown)."""
    lost = ""
    if tl is not None and tl.tail_missing:
        lost = (f"the metadata log given lost its tail (it holds offsets below {tl.trusted_end}; on disk: "
                f"{printable(tl.missing[0])}{' …' if len(tl.missing) > 1 else ''}): elections after it are not "
                "shown; ")
    unclean = [(t, p, e) for (t, p), es in chosen for e in es if e.unclean]
    if not unclean:
        return (f"answer: {lost}no unclean election ({plural(len(chosen), 'partition')}, "
                f"{plural(sum(len(es) for _, es in chosen), 'entry', 'entries')})")
    shown = ", ".join(f"{printable(t)}-{p} at metadata offset {e.offset} (leader {e.leader}, epoch {e.leader_epoch})"
                      for t, p, e in unclean[:4])
    more = f", … ({len(unclean) - 4} more)" if len(unclean) > 4 else ""
    return f"answer: {lost}{plural(len(unclean), 'unclean election')}: {shown}{more}"


def quorum_lines(tl: Timeline) -> list[str]:
    """The quorum view (several copies, or one that lost its tail): per controller copy its log, last Raft epoch,
    quorum-state, where it diverges or what it lost; the committed bound and the copy holding the most complete
    committed metadata."""
    q = tl.quorum
    # one copy with nothing to say of it (no divergence, no lost tail, no note) needs no view
    if q is None or not q.copies or (len(q.copies) == 1 and not (q.copies[0].missing or q.copies[0].notes)):
        return []
    committed = (f"committed below offset {q.committed_end} ({q.committed_by})" if q.committed_by != "unknown"
                 else "committed bound unknown (no snapshot; no majority of voters past the leader's epoch start)")
    voters = f"voters {list(q.voters)}" if q.voters else "voters unknown"
    out = [f"metadata quorum: {plural(len(q.copies), 'copy', 'copies')}, {voters}, {committed}; the high watermark "
           f"is not on disk; most complete committed metadata: {printable(q.reference or '-')}"]
    for c in q.copies:
        node = "?" if c.node_id is None else c.node_id
        line = (f"  node {node} {printable(c.label)}: log {c.log_start if c.log_start is not None else '-'}-"
                f"{c.log_end - 1} (end {c.log_end}), last epoch {c.last_epoch}, quorum-state epoch "
                f"{'-' if c.quorum_epoch is None else c.quorum_epoch} leader "
                f"{'-' if c.quorum_leader is None else c.quorum_leader}, holds the committed offsets below "
                f"{min(c.valid_end, q.committed_end) if q.committed_by != 'unknown' else '(unknown)'}")
        if c.deposed:
            ref = "ends there" if c.reference_epoch is None else f"has epoch {c.reference_epoch} there"
            line += (f"; diverges at offset {c.valid_end} (epoch {c.diverged_epoch}; the reference {ref}): "
                     f"{c.deposed[0]}-{c.deposed[1] - 1} a deposed leader's tail, not replayed")
        for m in c.missing:
            line += f"; LOST ITS TAIL: {m}"
        for n in c.notes:
            line += f"; {n}"
        out.append(line)
    return out


def entry_line(topic: str, partition: int, e: TimelineEntry) -> str:
    """One text line for one timeline entry."""
    from ..kraft.timeline import LEADER_RECOVERY_STATES

    lrs = LEADER_RECOVERY_STATES.get(e.leader_recovery_state, str(e.leader_recovery_state))
    line = (f"{printable(topic)}-{partition} offset: {e.offset} time: {_time(e.timestamp)} leader: {e.leader} "
            f"leaderEpoch: {e.leader_epoch} partitionEpoch: {e.partition_epoch} isr: {_ids(e.isr)} "
            f"elr: {_ids(e.elr)} lastKnownElr: {_ids(e.last_known_elr)} leaderRecoveryState: {lrs} "
            f"replicas: {_ids(e.replicas)} record: {e.record}")
    if e.adding_replicas or e.removing_replicas:
        line += f" adding: {_ids(e.adding_replicas)} removing: {_ids(e.removing_replicas)}"
    if e.unclean:
        line += " UNCLEAN"
    if e.committed is False:
        line += " UNCOMMITTED"
    return line


@click.command()
@click.argument("paths", metavar="LOGDIR|FILE...", nargs=-1, required=True, type=EVIDENCE_PATH)
@s3_endpoint_option()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: one line per entry; json: one document.")
@click.option("--topic", help="Only this topic.")
@click.option("--partition", type=int, help="Only this partition number.")
def timeline(paths: tuple[str, ...], fmt: str, topic: str | None, partition: int | None) -> None:
    """Leader elections per partition, replayed from a KRaft metadata log and its snapshots.

    Each LOGDIR|FILE is a broker log dir, a __cluster_metadata-0 dir, a metadata
    segment or a snapshot (*.checkpoint, bootstrap.checkpoint), on disk or in a
    .tar/.tgz.  Leader epochs are reconstructed as the controller increments
    them; elections of a leader outside the previous ISR (and ELR), or into
    RECOVERING, are marked UNCLEAN.

    \b
    Examples:
      kforensics timeline /data/kraft-logs --topic orders
      kforensics timeline /archive/broker-1.tgz --format json
    """
    from ..kraft.timeline import build_timeline
    from ..log import kernels
    from ..log.sources import resolve

    kernels.check_cache_location(paths)  # the compiled kernels' cache never in, on or above an input
    try:
        roots = [resolve(p) for p in paths]
        tl = build_timeline(roots)
    except OSError as e:
        click.echo(f"kforensics timeline: {printable(str(e))}", err=True)
        sys.exit(ExitCode.ERROR)
    archives = {id(a): a for a in (getattr(r, "archive", None) for r in roots) if a is not None}
    for a in archives.values():  # what the archives themselves hold: truncation, damage, copies
        tl.findings += a.findings()
    if not tl.sources:
        echo_findings(tl.findings)  # an archive may say why (cut before its metadata log)
        click.echo("kforensics timeline: no KRaft metadata log or snapshot in "
                   + ", ".join(printable(p) for p in paths), err=True)
        sys.exit(ExitCode.ERROR)
    chosen = [(k, es) for k, es in sorted(tl.partitions.items())
              if (topic is None or k[0] == topic) and (partition is None or k[1] == partition)]
    if topic is not None and not chosen:
        raise click.BadParameter(f"no partition of topic {printable(repr(topic))} in the metadata log",
                                 param_hint="--topic")
    if partition is not None and not chosen:
        raise click.BadParameter(f"no partition {partition} in the metadata log", param_hint="--partition")
    if fmt == "json":
        from .json_out import Items, document, write_streamed

        # a partition at a time: a large cluster's metadata log gives one entry list per partition
        doc = document("timeline", tl, ("partitions",))
        keep = {k for k, _ in chosen}
        doc["partitions"] = Items(p for p in doc["partitions"].items if (p["topic"], p["partition"]) in keep)
        write_streamed(doc, sys.stdout)
    else:
        click.echo(answer_line(chosen, tl))
        for line in quorum_lines(tl):
            click.echo(line)
        removed = {(v["name"], v["offset"]) for v in tl.removed_topics.values()}
        for (t, p), es in chosen:
            for entry in es:
                click.echo(entry_line(t, p, entry))
            for name, offset in sorted(removed, key=str):
                if name == t and offset is not None:
                    click.echo(f"{printable(t)}-{p} offset: {offset} record: RemoveTopicRecord (topic deleted)")
        echo_findings(tl.findings)
        entries = sum(len(es) for _, es in chosen)
        unclean = sum(1 for _, es in chosen for e in es if e.unclean)
        click.echo(f"{plural(tl.records, 'metadata record')}, {plural(len(chosen), 'partition')}, "
                   f"{plural(entries, 'entry', 'entries')}, {plural(unclean, 'unclean election')}; "
                   + count_text(severity_counts(tl.findings)))
    sys.exit(ExitCode.FINDINGS if any(f.severity.value > 0 for f in tl.findings) else ExitCode.CLEAN)
