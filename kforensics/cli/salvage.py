"""``kforensics salvage``: keep the records a restart will destroy, see what they were, and put them back."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from ..errors import ExitCode
from .options import format_option, kafka_version_option, metadata_option
from .replay_inputs import replay_input_options, resolve_replay_inputs, zookeeper_option
from .restart_options import alive_option, min_insync_replicas_option

if TYPE_CHECKING:
    from ..epoch.versions import KafkaVersion
    from ..salvage.model import SalvagedRecord, SalvageSummary
    from ..salvage.produce import ProducePlan

#: version of docs/schemas/salvage.schema.json
SCHEMA_VERSION = 1


def _topic_map(specs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for spec in specs:
        src, sep, dst = spec.partition("=")
        if not sep or not src or not dst:
            raise click.BadParameter(f"{spec!r} is not SOURCE=TARGET", param_hint="--topic-map")
        out[src] = dst
    return out


@click.command()
@replay_input_options
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for salvaged.parquet, salvaged.jsonl and the produce ledger (never in the evidence).")
@click.option("--topic", help="Only this topic.")
@click.option("--partition", type=int, help="Only this partition.")
@kafka_version_option("Truncation rules to replay: 0.10, 0.11, 2.0.0, 2.0.1, 2.8, ... latest.")
@click.option("--leader", type=int, help="Broker to elect (default: the controller's record, else replay's choice).")
@alive_option
@min_insync_replicas_option
@metadata_option("A KRaft metadata log (dir or files) to take leaders and epochs from; found automatically "
                 "inside the brokers' log dirs.")
@zookeeper_option
@click.option("--produce", "bootstrap", metavar="BOOTSTRAP",
              help="Put the salvaged records back into this cluster (dry run unless --send).")
@click.option("--send/--dry-run", default=False, show_default=True,
              help="With --produce: send, or only say what would be sent (the default).")
@click.option("--topic-map", multiple=True, metavar="SOURCE=TARGET", help="With --produce: send SOURCE's records "
                                                                           "to TARGET (repeatable).")
@click.option("--include-aborted", is_flag=True, help="With --produce: send aborted transactional records too.")
@click.option("--command-config", type=click.Path(exists=True, dir_okay=False),
              help="With --produce: client settings (SASL, SSL) in Kafka's properties format.")
@format_option()
def salvage(log_dirs: tuple[str, ...], broker_dirs: tuple[str, ...], scenario: str | None, out_dir: str,
            topic: str | None, partition: int | None, kafka_version: KafkaVersion, leader: int | None,
            alive: tuple[int, ...] | None, running: tuple[int, ...] | None, restart_order: tuple[int, ...] | None,
            min_insync_replicas: int | None, metadata: tuple[str, ...], zookeeper: tuple[str, ...],
            bootstrap: str | None, send: bool,
            topic_map: tuple[str, ...], include_aborted: bool, command_config: str | None, fmt: str,
            jobs: int | None) -> None:
    """Export the records the replay says a replica loses and no surviving replica keeps; put them back.

    Takes replay's inputs (LOG_DIRS, --broker ID=DIR or --scenario DIR, with
    --metadata or --zookeeper, --kafka-version, --leader, --alive, --running
    and --restart-order), and its leader.  Reads the evidence only; writes
    salvaged.parquet and salvaged.jsonl (kcat's -J envelope) into --out.
    Payloads framed for a Schema Registry whose _schemas topic is in the
    evidence are decoded for display.  Exit 1 when there are records to
    salvage (or some could not be sent), 0 when nothing is lost.

    \b
    Examples:
      kforensics salvage /snap/b1 /snap/b2 /snap/b3 --out /tmp/salvage
      kforensics salvage --scenario fixtures/scenarios/unclean-leader-election --out /tmp/s --format json
      kforensics salvage /snap/b1 /snap/b2 /snap/b3 --out /tmp/s --produce kafka:9092 --send
      kforensics salvage /snap/b1 /snap/b2 --out /tmp/s --produce k:9092 --topic-map orders=orders-back
    """
    from ..outputs import refuse_output_in_evidence

    inputs = resolve_replay_inputs(log_dirs, broker_dirs, scenario, metadata)
    # the files and the produce ledger: never in evidence (the ZooKeeper data dir is evidence too)
    refuse_output_in_evidence(out_dir, [*inputs.evidence, *zookeeper])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = _salvage(inputs, out, topic=topic, partition=partition, kafka_version=kafka_version, leader=leader,
                       alive=alive, running=running or (), min_insync_replicas=min_insync_replicas,
                       order=restart_order, zookeeper=list(zookeeper), jobs=jobs)
    plan = None
    if bootstrap is not None:
        plan = _produce(out, bootstrap, send=send, topic_map=_topic_map(topic_map), include_aborted=include_aborted,
                        command_config=command_config)
    if fmt == "json":
        from .json_out import dumps

        sys.stdout.write(dumps(salvage_document(summary, plan)) + "\n")
    else:
        render_salvage_text(summary, plan, sys.stdout, min_insync_replicas)
    failed = plan is not None and plan.failed > 0
    sys.exit(ExitCode.FINDINGS if summary.records or failed else ExitCode.CLEAN)


def _salvage(inputs: Any, out: Path, **kw: Any) -> SalvageSummary:
    """Replay, read the lost records back and write them; the summary."""
    from ..consumers.replay_impact import replay_impact
    from ..payloads.decoders import PayloadDecoder
    from ..payloads.registry import read_registry
    from ..replay.report import replay_all
    from ..salvage.export import RecordWriters
    from ..salvage.records import Salvage

    report = replay_all(inputs.brokers, events=inputs.events, metadata=inputs.metadata, **kw)
    impact = replay_impact(report, inputs.impact_log_dirs(report))
    registry = read_registry(d for dirs in report.log_dirs.values() for d in dirs)
    decoder = PayloadDecoder(registry) if registry.schemas else None
    s = Salvage(report, impact.committed)
    with RecordWriters(out, decoder) as w:
        for rec in s.records():
            w.write(rec)
    s.summary.outputs = {"parquet": str(w.parquet_path), "jsonl": str(w.jsonl_path)}
    s.summary.findings += registry.findings + (decoder.findings() if decoder is not None else [])
    return s.summary


def _salvaged(out: Path) -> Iterator[SalvagedRecord]:
    """The salvage file's records, one line at a time."""
    import json

    from ..salvage.export import record_from_envelope

    with open(out / "salvaged.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield record_from_envelope(json.loads(line))


def _produce(out: Path, bootstrap: str, *, send: bool, topic_map: dict[str, str], include_aborted: bool,
             command_config: str | None) -> ProducePlan:
    from ..salvage.produce import produce, read_properties

    props = read_properties(command_config) if command_config else {}
    return produce(_salvaged(out), bootstrap, out, topic_map=topic_map, props=props,
                   include_aborted=include_aborted, dry_run=not send)


def salvage_document(summary: SalvageSummary, plan: ProducePlan | None) -> dict[str, Any]:
    """The document ``salvage --format json`` prints (docs/schemas/salvage.schema.json)."""
    from .. import __version__
    from ..serialize import to_jsonable

    findings = list(summary.findings) + (list(plan.findings) if plan is not None else [])
    return {"schema_version": SCHEMA_VERSION, "tool": {"name": "kforensics", "version": __version__},
            "summary": to_jsonable(summary), "produce": to_jsonable(plan), "findings": to_jsonable(findings)}


def render_salvage_text(summary: SalvageSummary, plan: ProducePlan | None, out: TextIO,
                        min_insync_replicas: int | None = None) -> None:
    """The answer line, the table per topic, partition and cause, what was left aside, produce, findings
    (``min_insync_replicas``: given, said as the replay says it)."""
    from .common import finding_line, plural, printable

    w = out.write
    if summary.records:
        parts = sorted({f"{r.topic}-{r.partition}" for r in summary.rows})
        w(f"answer: {plural(summary.records, 'record')} ({summary.bytes} bytes of keys, values and headers) to "
          f"salvage on {plural(len(parts), 'partition')} ({printable(', '.join(parts[:8]))}"
          f"{', ...' if len(parts) > 8 else ''})\n")
    else:
        w("answer: nothing to salvage: no record a replica loses is missing from the new leader\n")
    w(f"salvage with Kafka {summary.kafka_version} rules" + (f", cluster {summary.cluster_id}" if summary.cluster_id
                                                              else "") + "\n")
    if min_insync_replicas is not None:
        w(f"min.insync.replicas {min_insync_replicas} given: the acknowledgement classes apply it to every topic "
          "instead of the metadata log's configs\n")
    if summary.rows:
        head = ("topic", "partition", "cause", "records", "bytes", "committed", "aborted", "open", "groups")
        rows = [(printable(r.topic), str(r.partition), r.cause, str(r.records), str(r.bytes),
                 str(r.transactional.get("committed", 0)), str(r.transactional.get("aborted", 0)),
                 str(r.transactional.get("open", 0)), printable(", ".join(r.groups)) or "-") for r in summary.rows]
        widths = [max(len(c) for c in col) for col in zip(head, *rows)]
        for row in (head, *rows):
            w("  ".join(c.ljust(n) for c, n in zip(row, widths)).rstrip() + "\n")
    w(f"left aside: {plural(summary.kept_by_leader, 'record')} the new leader keeps with the same content; "
      f"{plural(summary.duplicates, 'copy', 'copies')} on a second broker counted once\n")
    for kind, path in summary.outputs.items():
        w(f"{kind}: {printable(path)}\n")
    if plan is not None:
        _render_plan(plan, w)
    findings = list(summary.findings) + (list(plan.findings) if plan is not None else [])
    for f in findings:
        w(finding_line(f) + "\n")
    w(f"summary: {plural(summary.records, 'record')} salvaged from {plural(summary.partitions_read, 'partition')}"
      f" that lose records; {plural(len(findings), 'finding')}\n")


def _render_plan(plan: ProducePlan, w: Any) -> None:
    from .common import plural, printable

    total = sum(plan.to_send.values())
    targets = ", ".join(f"{k}: {n}" for k, n in sorted(plan.to_send.items())) or "none"
    if plan.dry_run:
        w(f"produce (dry run, --send to send) to {printable(plan.bootstrap)}: would send "
          f"{plural(total, 'record')} ({printable(targets)})\n")
    else:
        w(f"produce to {printable(plan.bootstrap)}: sent {plan.sent} of {plural(total, 'record')} "
          f"({printable(targets)}), {plan.failed} not acknowledged\n")
    w(f"  {plural(plan.already_sent, 'record')} acknowledged by an earlier run (ledger {printable(plan.ledger)}); "
      f"{plural(plan.aborted_left_out, 'aborted transactional record')} and "
      f"{plural(plan.damaged_left_out, 'record')} of batches failing their CRC left out\n")
