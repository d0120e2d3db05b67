"""``kforensics spark``: scan and replay many archived broker snapshots on Spark."""

from __future__ import annotations

import json
import sys

import click

from . import EXIT_CLEAN, EXIT_FINDINGS
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
@click.option("--overwrite", is_flag=True, help="Replace the tables of an earlier run in --out.")
def spark(snapshots, out, manifest, master, confs, kafka_version, metadata, overwrite):
    """Scan and replay many archived broker snapshots on Spark.

    Each SNAPSHOT is a broker log dir (or a dir holding one) or a
    .tar/.tar.gz/.tgz of one, local or on any filesystem pyarrow supports
    (hdfs://, s3://, gs://); local globs are expanded.  The output is refused
    inside, onto or above any snapshot, before Spark starts.

    Every partition is replayed as `kforensics replay` replays it: with the
    controller's record (the KRaft metadata log of its cluster, from the
    snapshots and --metadata) when there is one.

    \b
    Examples:
      kforensics spark /archive/incident-42/*.tgz --out /tmp/incident-42
      kforensics spark --manifest snapshots.csv --out hdfs:///forensics/i42 --master spark://host:7077
      kforensics spark /snap/b1 /snap/b2 --metadata /snap/controller/__cluster_metadata-0 --out /tmp/i42
    """
    from ..outputs import OutputRefused
    from ..spark.inputs import resolve_snapshots
    from ..spark.inputs import parse_metadata
    from ..spark.job import OutputExists, check_output, run, session

    conf = {}
    for c in confs:
        k, sep, v = c.partition("=")
        if not sep:
            raise click.BadParameter(f"{c!r} is not K=V", param_hint="--conf")
        conf[k] = v
    snaps = resolve_snapshots(list(snapshots), manifest)
    if not snaps:
        raise click.UsageError("no snapshots (paths, globs or --manifest)")
    meta = parse_metadata(metadata)
    try:
        check_output(out, snaps, overwrite, meta)
    except OutputRefused as e:
        raise click.BadParameter(str(e), param_hint="--out") from None
    except OutputExists as e:
        raise click.ClickException(str(e)) from None
    sess = session(master, conf)
    try:
        summary = run(sess, snaps, out, kafka_version=kafka_version, overwrite=overwrite, metadata=meta)
    except (ValueError, FileNotFoundError) as e:
        raise click.BadParameter(str(e), param_hint="--metadata") from None
    click.echo(json.dumps(summary))
    sys.exit(EXIT_FINDINGS if summary["failed_tasks"] else EXIT_CLEAN)
