"""``kforensics spark``: scan and replay many archived broker snapshots on Spark."""

from __future__ import annotations

import json
import sys

import click

from .common import parse_fail_on, printable
from .scan import _kafka_version


@click.command()
@click.argument("snapshots", nargs=-1)
@click.option("--out", required=True, help="Output directory (local or a pyarrow.fs URI) for the Parquet tables.")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False),
              help="CSV/JSON: path, optional broker_id, snapshot_time, cluster.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--conf", "confs", multiple=True, metavar="K=V", help="Spark configuration (repeatable).")
@click.option("--kafka-version", default="latest", show_default=True, callback=_kafka_version)
@click.option("--metadata", "metadata", multiple=True, metavar="[CLUSTER=]PATH",
              help="A KRaft metadata log (dir, files or archive; local or a URI) to take leaders and epochs from "
                   "(repeatable); those among the snapshots are found automatically.  Its cluster is the one "
                   "meta.properties beside it names, else the snapshots' when they are of one cluster; or say it "
                   "with CLUSTER=PATH.")
@click.option("--overwrite", is_flag=True, help="Replace the tables of an earlier run in --out (nothing else).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="The summary on stdout: a table per cluster and a summary line, or one JSON document.")
@click.option("--tables", "tables", metavar="NAME[,NAME...]",
              help="Write only these tables (e.g. verdicts,findings: no batches table); the default is every table. "
                   "The replay reads the batch rows either way.")
@click.option("--fail-on", default="high", show_default=True,
              help="Exit 1 when a finding is at or above this severity (a failed task, a failed replay or an "
                   "unreadable snapshot always does).")
def spark(snapshots, out, manifest, master, confs, kafka_version, metadata, overwrite, fmt, tables, fail_on):
    """Scan and replay many archived broker snapshots on Spark.

    Each SNAPSHOT is a broker log dir (or a dir holding one) or a
    .tar/.tar.gz/.tgz of one, local or on any filesystem pyarrow supports
    (hdfs://, s3://, gs://); local globs are expanded.  The output is refused
    inside, onto or above any snapshot, manifest or metadata input, before
    Spark starts; an existing output is refused unless --overwrite.

    Every partition is replayed as `kforensics replay` replays it: with the
    controller's record (the KRaft metadata log of its cluster, from the
    snapshots and --metadata) when there is one, and with what it does to
    consumer groups and transactions where the snapshots hold
    __consumer_offsets and __transaction_state.

    Prints a table per cluster (snapshots, partitions, batches, failures,
    findings by severity, verdicts) and one summary line.  Exit codes: 0
    clean, 1 findings at or above --fail-on or any failed task, replay or
    unreadable snapshot, 2 usage, refusal or a Spark that cannot start, 3 the
    job itself failed.

    \b
    Examples:
      kforensics spark /archive/incident-42/*.tgz --out /tmp/incident-42
      kforensics spark --manifest snapshots.csv --out hdfs:///forensics/i42 --master spark://host:7077
      kforensics spark /snap/b1 /snap/b2 --metadata /snap/controller/__cluster_metadata-0 --out /tmp/i42
      kforensics spark /snap/*.tgz --out /tmp/i42 --format json --fail-on medium
      kforensics spark /snap/*.tgz --out /tmp/i42 --tables verdicts,findings,summary
    """
    from ..outputs import OutputRefused
    from ..spark.inputs import InputError, parse_metadata, resolve_snapshots
    from ..spark.job import (MasterUnreachable, MetadataInputError, OutputExists, check_master, check_output,
                             parse_tables, run)
    from ..spark.report import SparkJobFailed, SparkStartFailed, exit_code, from_spark, render_text, short_error

    threshold = parse_fail_on(fail_on)
    try:
        tables = parse_tables(tables)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--tables") from None
    conf = {}
    for c in confs:
        k, sep, v = c.partition("=")
        if not sep:
            raise click.BadParameter(f"{c!r} is not K=V", param_hint="--conf")
        conf[k] = v
    debug = bool(click.get_current_context().find_root().params.get("debug"))
    if not debug:
        conf.setdefault("spark.log.level", "ERROR")  # Spark's own warnings (retries, stack traces) stay quiet
    try:
        snaps = resolve_snapshots(list(snapshots), manifest)
    except InputError as e:
        raise click.UsageError(printable(str(e))) from None
    if not snaps:
        raise click.UsageError("no snapshots (paths, globs or --manifest)")
    meta = parse_metadata(metadata)
    # everything that can be refused is refused here, before a JVM starts
    try:
        check_output(out, snaps, overwrite, meta, manifest)
    except OutputRefused as e:
        raise click.BadParameter(printable(str(e)), param_hint="--out") from None
    except OutputExists as e:
        raise click.ClickException(printable(str(e))) from None
    try:
        check_master(master)
    except MasterUnreachable as e:
        raise click.ClickException(printable(str(e))) from None
    sessions = []

    def start():
        # after the snapshots are planned: a --metadata mistake is found before a JVM starts too
        sessions.append(_start(master, conf))
        return sessions[-1][0]

    try:
        summary = run(start, snaps, out, kafka_version=kafka_version, overwrite=overwrite, metadata=meta,
                      manifest=manifest, tables=tables)
    except MetadataInputError as e:
        raise click.BadParameter(printable(str(e)), param_hint="--metadata") from None
    except SparkStartFailed as e:
        raise click.ClickException(printable(str(e))) from None
    except Exception as e:
        if from_spark(e):
            raise SparkJobFailed(f"the Spark job failed: {short_error(e)}") from e
        raise
    finally:
        for s, ours in sessions:
            try:
                if ours:
                    s.stop()
            except Exception:  # noqa: BLE001 - stopping a session that failed
                pass
    if fmt == "json":
        click.echo(json.dumps(summary, default=str))
    else:
        render_text(summary, sys.stdout)
    sys.exit(exit_code(summary, threshold))


def _start(master, conf):
    """A SparkSession and whether this command started it (one already running in this process is reused and
    left running); or one line saying why Spark could not start (exit 2)."""
    from ..spark.job import session
    from ..spark.report import SparkStartFailed, short_error

    try:
        from pyspark.sql import SparkSession

        running = SparkSession.getActiveSession()
        return session(master, conf), running is None
    except Exception as e:  # noqa: BLE001 - no Java, a master refusing the application, a bad --conf
        raise SparkStartFailed(f"cannot start Spark (master {master}): {short_error(e)}") from e
