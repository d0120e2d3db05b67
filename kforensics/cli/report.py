"""``kforensics report``: the incident report as one self-contained HTML file and as Markdown for tickets."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ..errors import ExitCode, UsageError
from .options import kafka_version_option, metadata_option
from .replay_inputs import replay_input_options, resolve_replay_inputs, zookeeper_option
from .restart_options import alive_option, min_insync_replicas_option

if TYPE_CHECKING:
    from ..epoch.versions import KafkaVersion


@click.command()
@replay_input_options
@click.option("--tables", type=click.Path(exists=True, file_okay=False),
              help="Report on the Parquet tables of `scan --out` or `spark --out` (this DIR) instead of replaying.")
@kafka_version_option("Truncation rules to replay: 0.10, 0.11, 2.0.0, 2.0.1, 2.8, ... latest.")
@metadata_option("A KRaft metadata log (dir or files) to take leaders and epochs from; found automatically "
                 "inside the brokers' log dirs.")
@zookeeper_option
@alive_option
@min_insync_replicas_option
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Write the HTML report to this file.")
@click.option("--markdown", "markdown", type=click.Path(dir_okay=False),
              help="Write the report as Markdown (for tickets) to this file.")
@click.option("--title", default=None, help="The report's title (default: 'Incident report: ' and the cluster).")
def report(log_dirs: tuple[str, ...], broker_dirs: tuple[str, ...], scenario: str | None, tables: str | None,
           kafka_version: KafkaVersion, metadata: tuple[str, ...], zookeeper: tuple[str, ...],
           alive: tuple[int, ...] | None, running: tuple[int, ...] | None, restart_order: tuple[int, ...] | None,
           min_insync_replicas: int | None, out: str | None, markdown: str | None, title: str | None,
           jobs: int | None) -> None:
    """Write the incident report: evidence, elections, verdicts, losses, consumers, transactions, findings.

    Takes what `replay` takes (broker log dirs, archives, --broker ID=DIR,
    --scenario DIR, --metadata, --zookeeper, --alive, --running,
    --restart-order, --min-insync-replicas) and replays it, or the Parquet tables of
    `scan --out` / `spark --out` with --tables DIR.  The HTML needs nothing
    but a browser (figures inline, no script, nothing fetched); the Markdown
    holds the same sections and numbers.  Two runs on the same evidence give
    the same bytes but for the one line that says when the report was made.
    Exits 1 when the replay would (a loss, fork or unclean verdict, or a
    consumer or transaction impact).

    \b
    Examples:
      kforensics report /snap/b1 /snap/b2 /snap/b3 --out incident.html --markdown incident.md
      kforensics report --scenario fixtures/scenarios/unclean-leader-election --out report.html
      kforensics report /snap/b1 /snap/b2 /snap/b3 --zookeeper /snap/zk --restart-order 2,1,3 --markdown zk.md
      kforensics report --tables /tmp/fleet-out --out fleet.html
    """
    from ..outputs import refuse_output_in_evidence as refuse

    if not out and not markdown:
        raise click.UsageError("give --out FILE.html and/or --markdown FILE.md")
    restart_given = any(x is not None and x != () for x in (zookeeper, alive, running, restart_order,
                                                             min_insync_replicas))
    if tables and (log_dirs or broker_dirs or scenario or metadata or restart_given):
        raise click.UsageError("give either --tables DIR or the replay's inputs, not both")
    outputs = [o for o in (out, markdown) if o]
    if out and markdown and out == markdown:
        raise UsageError("--out and --markdown name the same file")
    named = [tables] if tables else [*log_dirs, *(s.partition("=")[2] for s in broker_dirs), *metadata,
                                      *zookeeper, *([scenario] if scenario else [])]
    for o in outputs:
        refuse(o, named)  # before anything is read: never inside, onto or above evidence
    from ..report.build import build_from_replay, build_from_tables, write_report
    from ..report.figures import use_headless_backend

    use_headless_backend()
    if tables:
        doc, failing = build_from_tables(tables, title=title)
    else:
        from ..consumers.replay_impact import replay_impact
        from ..replay.report import replay_all
        from .replay_inputs import replay_document

        inputs = resolve_replay_inputs(log_dirs, broker_dirs, scenario, metadata)
        rep = replay_all(inputs.brokers, kafka_version=kafka_version, events=inputs.events,
                         metadata=inputs.metadata, alive=alive, running=running or (),
                         min_insync_replicas=min_insync_replicas, order=restart_order, zookeeper=list(zookeeper),
                         jobs=jobs)
        impact = replay_impact(rep, inputs.impact_log_dirs(rep))
        doc, failing = build_from_replay(replay_document(rep, impact), rep, inputs.evidence, title=title,
                                         salvage=_salvage_summary(rep, impact),
                                         salvage_command=_salvage_command(
                                             log_dirs, broker_dirs, scenario, metadata,
                                             _restart_args(zookeeper, alive, running, restart_order,
                                                           min_insync_replicas)))
    write_report(doc, html_path=out, markdown_path=markdown)
    for o in outputs:
        click.echo(f"wrote {o}", err=True)
    sys.exit(ExitCode.FINDINGS if failing else ExitCode.CLEAN)


def _salvage_summary(rep: Any, impact: Any) -> Any:
    """What ``kforensics salvage`` would export (records counted, not kept: memory stays bounded)."""
    from ..salvage.records import Salvage

    s = Salvage(rep, impact.committed)
    for _ in s.records():
        pass
    return s.summary


def _restart_args(zookeeper: tuple[str, ...], alive: tuple[int, ...] | None, running: tuple[int, ...] | None,
                  order: tuple[int, ...] | None, min_insync_replicas: int | None) -> list[str]:
    """The options of the restart as given, for the salvage command the report shows (salvage takes them all)."""
    out = [a for z in zookeeper for a in ("--zookeeper", z)]
    for flag, ids in (("--alive", alive), ("--running", running), ("--restart-order", order)):
        if ids is not None:
            out += [flag, ",".join(map(str, ids))]
    return out + (["--min-insync-replicas", str(min_insync_replicas)] if min_insync_replicas is not None else [])


def _salvage_command(log_dirs: tuple[str, ...], broker_dirs: tuple[str, ...], scenario: str | None,
                     metadata: tuple[str, ...], restart: list[str]) -> str:
    """The salvage command on the same inputs, as the report shows it."""
    import shlex

    args = [*log_dirs, *(a for b in broker_dirs for a in ("--broker", b)),
            *(["--scenario", scenario] if scenario else []), *(a for m in metadata for a in ("--metadata", m)),
            *restart]
    return shlex.join(["kforensics", "salvage", *args, "--out", "DIR"])
