"""``kforensics scan``: one broker's log dir(s) as evidence: table, findings, summary; JSON; Parquet."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import click

from .common import exit_for, printable
from .evidence import refuse_output_in_evidence
from .options import (
    EVIDENCE_PATH,
    fail_on_option,
    format_option,
    kafka_version_option,
    min_severity_option,
    s3_endpoint_option,
)

if TYPE_CHECKING:
    from ..epoch.versions import KafkaVersion
    from ..severity import Severity


@click.command()
@click.argument("log_dirs", nargs=-1, required=True, type=EVIDENCE_PATH)
@s3_endpoint_option()
@format_option()
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Also write Parquet tables to this directory.")
@fail_on_option()
@kafka_version_option()
@min_severity_option()
@click.option("--topic", "topics", multiple=True, help="Text output: only these topics (repeatable).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@click.option("-v", "--verbose", is_flag=True,
              help="Text output: every partition and every finding (by default findings below medium are counted "
                   "per code, and partitions with no batch and nothing to report are one line).")
def scan(log_dirs: tuple[str, ...], fmt: str, out_dir: str | None, fail_on: Severity, kafka_version: KafkaVersion,
         min_severity: Severity | None, topics: tuple[str, ...], progress: bool | None, verbose: bool) -> None:
    """Scan a broker's log dir(s) (several for JBOD) as forensic evidence.

    Reports per-partition facts (log start/end, high watermark, epoch caches,
    producers, open and hanging transactions and the last stable offset, what
    recovery would cut at the next start) and findings with file and byte
    position; transactions are checked against __transaction_state when the
    log dirs hold it.  Nothing inside LOG_DIRS is ever written.  A directory
    or a .tar/.tgz archive holding one broker's log dirs is searched
    (archives are read in place, never extracted).  With --out, the
    committed offsets of __consumer_offsets are decoded too.

    \b
    Examples:
      kforensics scan /data/kafka-logs
      kforensics scan /data/kafka-logs-1 /data/kafka-logs-2 --fail-on medium
      kforensics scan /data/kafka-logs --format json > scan.json
      kforensics scan /data/kafka-logs --out /tmp/evidence
    """
    from ..log import kernels
    from ..log.file_hash import cancel_prefetched, prefetch, segment_files

    kernels.check_cache_location(log_dirs)  # the compiled kernels' cache never in, on or above an input
    # the segments' hashing starts now, on a helper thread, and runs while the rest loads and the walk goes on
    prefetch(segment_files(log_dirs))
    try:
        _scan(log_dirs, fmt, out_dir, fail_on, kafka_version, min_severity, topics, progress, verbose)
    finally:
        cancel_prefetched()


def _scan(log_dirs: tuple[str, ...], fmt: str, out_dir: str | None, fail_on: Severity, kafka_version: KafkaVersion,
          min_severity: Severity | None, topics: tuple[str, ...], progress: bool | None, verbose: bool = False) -> None:
    from ..scan.broker import scan_log_dirs
    from ..scan.partition import CoordinatorSource, transaction_coordinator
    from .scan_text import render_scan_text, resolve_log_dirs

    threshold = fail_on
    dirs = resolve_log_dirs(log_dirs)
    if topics:
        _check_topics(dirs, topics)
    if out_dir:
        refuse_output_in_evidence(out_dir, dirs)
    show = sys.stderr.isatty() if progress is None else progress
    parquet = None
    tables: AbstractContextManager[None] = nullcontext()
    if out_dir:
        from ..scan.broker import broker_identity
        from ..tables.scan_tables import ScanParquet, tables_beside

        who = broker_identity(dirs)
        parquet = ScanParquet(out_dir, {"cluster": who.cluster_id, "broker_id": who.node_id})
    sink = parquet.batches if parquet is not None else None
    # the transaction coordinator's log, read once if a partition has transactions to check against it
    coordinator = CoordinatorSource({None: dirs})
    with transaction_coordinator(coordinator):
        if show:
            from .progress import scan_with_progress

            report = scan_with_progress(dirs, kafka_version=kafka_version, batch_sink=sink)
        else:
            report = scan_log_dirs(dirs, kafka_version=kafka_version, batch_sink=sink)
    if coordinator.view is not None:
        report.add_findings(coordinator.view.findings)  # its records that do not decode
    if parquet is not None:
        from ..consumers.committed_offsets import TOPIC, coordinator_copies, read_committed_offsets

        committed = read_committed_offsets(coordinator_copies({report.broker.node_id: dirs}, TOPIC))
        report.add_findings(committed.findings)
        tables = tables_beside(parquet, report, committed)
    with tables:  # a fleet's tables are written on another core meanwhile
        if fmt == "json":
            from .json_out import document, write_streamed

            # a list at a time: a fleet's scan is tens of MB of JSON, never held whole (as text or as values)
            # with tables written beside it, a helper of its own would only share the cores with theirs
            write_streamed(document("scan", report, _SCAN_LISTS), sys.stdout, jobs=1 if out_dir else None)
        else:
            render_scan_text(report, sys.stdout, min_severity=min_severity, topics=set(topics), verbose=verbose)
    sys.exit(exit_for(report.all_findings(), threshold))


#: the lists of the scan's JSON document written an item at a time (:func:`.json_out.write_streamed`)
_SCAN_LISTS = ("partitions", "findings", "files", "checkpoints")


def _check_topics(dirs: list[Any], topics: tuple[str, ...]) -> None:
    """Every ``--topic`` names a topic with a partition directory in the log dirs (read from their listings, before
    anything is scanned or written)."""
    from ..log.file_kinds import parse_partition_dir_name
    from ..log.listing import list_dir

    present: set[str] = set()
    for d in dirs:
        for entry in list_dir(d):
            name = parse_partition_dir_name(entry.name) if entry.is_dir else None
            if name is not None:
                present.add(name.topic)
    unknown = sorted(set(topics) - present)
    if unknown:
        names = ", ".join(printable(repr(t)) for t in unknown)
        shown = sorted(present)
        listed = ", ".join(printable(t) for t in shown[:20]) + (f", … ({len(shown) - 20} more)" if len(shown) > 20
                                                                   else "")
        raise click.BadParameter(f"no partition of topic {names} in these log dirs (topics: {listed or 'none'})",
                                 param_hint="--topic")
