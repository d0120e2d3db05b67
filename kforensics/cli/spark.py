"""``kforensics spark``: scan and replay many archived broker snapshots on Spark.

The one front end of the Spark job: ``spark-submit`` runs this command too
(:mod:`kforensics.spark.submit`), so options, refusals and exit codes are the
same however the job is started.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from .options import fail_on_option, format_option, kafka_version_option, metadata_option, s3_endpoint_option
from .restart_options import alive_option, min_insync_replicas_option

if TYPE_CHECKING:  # the job's modules and Spark are imported only when the command runs
    from pyspark.sql import SparkSession

    from ..epoch.versions import KafkaVersion
    from ..severity import Severity
    from ..spark.inputs import Located
    from ..spark.job import JobOptions
    from ..spark.report import Summary


@click.command()
@click.argument("snapshots", nargs=-1)
@click.option("--out", required=True, help="Output directory (local or a pyarrow.fs URI) for the Parquet tables.")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False),
              help="CSV/JSON: path, optional broker_id, snapshot_time, cluster.")
@click.option("--master", default=None,
              help="Spark master URL (default local[*]; under spark-submit, the master spark-submit was given).")
@click.option("--conf", "confs", multiple=True, metavar="K=V", help="Spark configuration (repeatable).")
@kafka_version_option("Kafka behaviour to model (epoch cache and truncation rules).")
@metadata_option("A KRaft metadata log (dir, files or archive; local or a URI) to take leaders and epochs from "
                 "(repeatable); those among the snapshots are found automatically.  Its cluster is the one "
                 "meta.properties beside it names, else the snapshots' when they are of one cluster; or say it "
                 "with CLUSTER=PATH.", metavar="[CLUSTER=]PATH", local_only=False)
@click.option("--zookeeper", "zookeeper", multiple=True, metavar="DIR",
              help="The ZooKeeper data dir of a ZooKeeper-mode cluster (version-2/ with snapshot.* and log.*): its "
                   "controller's partition states name the leaders and epochs; one among the snapshots is found "
                   "automatically.  Not with a KRaft metadata log.")
@alive_option
@min_insync_replicas_option
@click.option("--overwrite", is_flag=True, help="Replace the tables of an earlier run in --out (nothing else).")
@s3_endpoint_option()
@format_option("The summary on stdout: a table per cluster and a summary line, or one JSON document.")
@click.option("--tables", "tables", metavar="NAME[,NAME...]",
              help="Write only these tables (e.g. verdicts,findings: no batches table); the default is every table. "
                   "The replay reads the batch rows either way.")
@fail_on_option("Exit 1 when a finding is at or above this severity (a failed task, a failed replay or an "
                "unreadable snapshot always does).")
def spark(snapshots: tuple[str, ...], out: str, manifest: str | None, master: str | None, confs: tuple[str, ...],
          kafka_version: KafkaVersion, metadata: tuple[str, ...], alive: tuple[int, ...] | None,
          running: tuple[int, ...] | None, restart_order: tuple[int, ...] | None, min_insync_replicas: int | None,
          zookeeper: tuple[str, ...], overwrite: bool,
          fmt: str, tables: str | None, fail_on: Severity) -> None:
    """Scan and replay many archived broker snapshots on Spark.

    Each SNAPSHOT is a broker log dir (or a dir holding one broker's log
    dirs) or a .tar/.tar.gz/.tgz of one, local or on any filesystem pyarrow
    supports (hdfs://, s3://, gs://); local globs are expanded.  Inputs are
    refused as scan and replay refuse theirs (a path that does not exist, no
    log dir, several brokers' log dirs in one snapshot, two snapshots of one
    broker), and the output inside, onto or above any snapshot, manifest or
    metadata input, before Spark starts; an existing output is refused unless
    --overwrite.

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
    from ..spark.inputs import locate, parse_metadata, resolve_snapshots
    from ..spark.output import check_output
    from ..spark.report import exit_code, render_text
    from ..spark.schemas import parse_tables
    from ..spark.session import check_master, under_spark_submit

    if master is None and not under_spark_submit():
        master = "local[*]"
    conf = _conf(confs)
    # every refusal (a KforensicsError) goes up to the command line's one mapping of errors to exit codes; all of
    # them come before the job's own modules are imported, and before a JVM starts
    chosen_tables = parse_tables(tables)
    snaps = resolve_snapshots(list(snapshots), manifest)
    if not snaps:
        raise click.UsageError("no snapshots (paths, globs or --manifest)")
    meta = parse_metadata(list(metadata))
    snaps, zk = _zookeeper_dirs(snaps, zookeeper)
    check_output(out, snaps, overwrite, [*meta, *zk], manifest)
    located = locate(snaps)
    check_master(master)
    from ..spark.job import JobOptions

    options = JobOptions(kafka_version=kafka_version, overwrite=overwrite, metadata=meta, manifest=manifest,
                         tables=chosen_tables, alive=alive, running=running or (), restart_order=restart_order,
                         min_insync_replicas=min_insync_replicas, zookeeper=tuple(zk))
    summary = _run(master, conf, located, out, options)
    if fmt == "json":
        from .json_out import write_document

        write_document("spark", summary)
    else:
        render_text(summary, sys.stdout)
    sys.exit(exit_code(summary, fail_on))


def _zookeeper_dirs(snaps: list[Any], zookeeper: tuple[str, ...]) -> tuple[list[Any], list[str]]:
    """The snapshots that are broker log dirs, and the ZooKeeper data dirs (``--zookeeper`` and the local directories
    among the snapshots that are one); a ZooKeeper data dir with a KRaft metadata log is refused later, once the
    snapshots are planned."""
    from ..log.zookeeper_data_dir import found_zookeeper_dir

    found = [s for s in snaps if found_zookeeper_dir(s.spec)]
    return [s for s in snaps if s not in found], [*zookeeper, *(s.spec for s in found)]


def _conf(confs: tuple[str, ...]) -> dict[str, str]:
    """``--conf K=V`` values; Spark's own warnings (retries, stack traces) quiet unless ``--debug``."""
    conf = {}
    for c in confs:
        k, sep, v = c.partition("=")
        if not sep:
            raise click.BadParameter(f"{c!r} is not K=V", param_hint="--conf")
        conf[k] = v
    if not click.get_current_context().find_root().params.get("debug"):
        conf.setdefault("spark.log.level", "ERROR")
    return conf


def _run(master: str | None, conf: dict[str, str], snaps: list[Located], out: str, options: JobOptions
         ) -> Summary:
    """The job, which starts Spark once nothing is left to refuse (a session already running in this process is
    reused and left running; one started here is stopped when the job ends); a failure of the job itself is
    :class:`~kforensics.spark.session.SparkJobFailed`, with the Java exception's first line."""
    from ..spark import job
    from ..spark.session import SparkJobFailed, from_spark, short_error, start

    sessions: list[tuple[SparkSession, bool]] = []

    def begin() -> SparkSession:
        sessions.append(start(master, conf))
        return sessions[-1][0]

    try:
        return job.run(begin, snaps, out, options)
    except Exception as e:
        if from_spark(e):
            raise SparkJobFailed(f"the Spark job failed: {short_error(e)}") from e
        raise
    finally:
        for s, ours in sessions:
            if ours:
                try:
                    s.stop()
                except Exception:  # noqa: BLE001 - stopping a session that failed
                    pass
