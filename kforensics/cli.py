"""The ``kforensics`` command line (click).  Thin: parse options, call the library, print.

Exit codes: 0 clean, 1 findings, 2 usage or I/O error.
"""

from __future__ import annotations

import json
import os
import sys

import click

from . import __version__
from .dump import DumpOptions, DumpResult, dump_batches_json, dump_batches_text, json_default
from .findings import Finding, Severity
from .serialize import to_jsonable
from .log.file_kinds import classify_name

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Group(click.Group):
    def main(self, *args, **kwargs):
        # click's usage errors exit 2 already; make I/O errors 2 as well
        try:
            return super().main(*args, standalone_mode=False, **kwargs)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except click.ClickException as e:
            e.show()
            sys.exit(EXIT_ERROR)
        except click.exceptions.Abort:
            sys.exit(EXIT_ERROR)
        except OSError as e:
            click.echo(f"kforensics: {e}", err=True)
            sys.exit(EXIT_ERROR)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="kforensics")
def main() -> None:
    """Kafka log-segment forensics: decode, scan and replay broker log dirs."""


def _finding_text(f: Finding) -> str:
    where = f.file or ""
    if f.position is not None:
        where += f" @ byte {f.position}"
    elif f.line is not None:
        where += f" line {f.line}"
    return f"{str(f.severity).upper()} {f.code} {where}: {f.message}"


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, readable=True))
@click.option("--deep", "--deep-iteration", "deep", is_flag=True, help="One line per record, not just per batch.")
@click.option("--print-data", "--print-data-log", "print_data", is_flag=True, help="Print keys and payloads (implies --deep).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: like kafka-dump-log; json: NDJSON, one object per batch/entry/finding.")
@click.option("--verify-index-only", is_flag=True, help="For .index/.timeindex: check entries against the .log.")
@click.option("--index-sanity-check", is_flag=True, help="For .index/.timeindex: run Kafka's sanityCheck only.")
@click.option("--max-message-size", type=int, default=5 * 1024 * 1024, show_default=True,
              help="Bytes read at an index entry's position when verifying an index.")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Decode KRaft metadata records (on by default for __cluster_metadata segments and snapshots).")
def dump(files, deep, print_data, fmt, verify_index_only, index_sanity_check, max_message_size,
         cluster_metadata_decoder):
    """Decode Kafka files: segments, indexes, checkpoints, snapshots, metadata files.

    The kind of each FILE is chosen by its name (as Kafka names files) and
    confirmed by its content.  Example: kforensics dump --deep 00000000000000000000.log
    """
    from .dump_files import dump_other_json, dump_other_text

    opts = DumpOptions(
        deep=deep or print_data,
        print_data=print_data,
        verify_index_only=verify_index_only,
        index_sanity_check=index_sanity_check,
        max_message_size=max_message_size,
        metadata=cluster_metadata_decoder,
    )
    result = DumpResult()
    out = sys.stdout
    for path in files:
        kind = classify_name(path)
        if fmt == "text":
            lines = (
                dump_batches_text(path, kind, opts, result)
                if kind.is_batches
                else dump_other_text(path, kind, opts, result)
            )
            for line in lines:
                out.write(line + "\n")
        else:
            objs = dump_batches_json(path, opts, result, kind) if kind.is_batches else dump_other_json(path, kind, opts, result)
            for obj in objs:
                out.write(json.dumps(obj, default=json_default, ensure_ascii=False) + "\n")
    reported = [f for f in result.findings]
    if fmt == "json":
        for f in reported:
            out.write(json.dumps({"kind": "finding", **to_jsonable(f)}, default=json_default) + "\n")
    else:
        for line in result.stderr:
            click.echo(line, err=True)
        for f in reported:
            click.echo(_finding_text(f), err=True)
    out.flush()
    sys.exit(EXIT_FINDINGS if any(f.severity > Severity.INFO for f in reported) else EXIT_CLEAN)


def _inside(child: str, parent: str) -> bool:
    child, parent = os.path.realpath(child), os.path.realpath(parent)
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


@main.command()
@click.argument("log_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Also write Parquet tables to this directory.")
@click.option("--fail-on", default="high", show_default=True, help="Exit 1 when a finding is at or above this severity.")
@click.option("--kafka-version", default="latest", show_default=True, help="Kafka behaviour to model (epoch cache rules).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
def scan(log_dirs, fmt, out_dir, fail_on, kafka_version, progress):
    """Scan a broker's log dir(s) (several for JBOD) as forensic evidence.

    Reports per-partition facts (log start/end, high watermark, epoch caches,
    producers) and findings with file and byte position.  Nothing inside
    LOG_DIRS is ever written.  Example: kforensics scan /data/kafka-logs --out /tmp/evidence
    """
    from .analysis.scan import scan_log_dirs
    from .render import render_scan_text

    try:
        threshold = Severity.parse(fail_on)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--fail-on")
    if out_dir:
        for d in log_dirs:
            if _inside(out_dir, d):
                raise click.BadParameter(f"{out_dir} is inside the evidence {d}; write elsewhere", param_hint="--out")
    show = sys.stderr.isatty() if progress is None else progress
    if show:
        from .render import scan_with_progress

        report = scan_with_progress(log_dirs, kafka_version=kafka_version, keep_batches=bool(out_dir))
    else:
        report = scan_log_dirs(log_dirs, kafka_version=kafka_version, keep_batches=bool(out_dir))
    if out_dir:
        from .analysis.tables import write_parquet

        write_parquet(report, out_dir)
    if fmt == "json":
        sys.stdout.write(json.dumps(report.to_dict(), default=json_default) + "\n")
    else:
        render_scan_text(report, sys.stdout)
    worst = report.max_severity()
    sys.exit(EXIT_FINDINGS if worst is not None and worst >= threshold else EXIT_CLEAN)


@main.command()
@click.argument("log_dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option("--broker", "broker_dirs", multiple=True, metavar="ID=DIR", help="A broker's log dir with its id.")
@click.option("--scenario", type=click.Path(exists=True, file_okay=False),
              help="A scenario dir (broker-<id>/ dirs and scenario.json events) written by the scenario builder.")
@click.option("--topic", help="Only this topic.")
@click.option("--partition", type=int, help="Only this partition.")
@click.option("--kafka-version", default="latest", show_default=True,
              help="Truncation rules to replay: 0.10, 0.11, 2.0.0, 2.0.1, 2.8, ... latest.")
@click.option("--leader", type=int, help="Broker to elect (default: highest latest epoch, then longest log).")
@click.option("--what-if", is_flag=True, help="Replay with every replica as leader and compare what each loses.")
@click.option("--digests", is_flag=True, help="List key/value SHA-256 of every lost or forked record (reads them back).")
@click.option("--metadata", "metadata", multiple=True, type=click.Path(exists=True),
              help="A KRaft metadata log (dir or files) to take leaders and epochs from; found automatically "
                   "inside the brokers' log dirs.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def replay(log_dirs, broker_dirs, scenario, topic, partition, kafka_version, leader, what_if, digests, metadata, fmt):
    """Replay leader-epoch truncation across brokers: divergence, loss and fork verdicts.

    Each LOG_DIR is one broker's log dir (broker id from meta.properties), or
    use --broker ID=DIR.  Example: kforensics replay /snap/b1 /snap/b2 /snap/b3 --kafka-version 2.0.0
    """
    from .analysis.replay_report import replay_all, render_replay_text

    brokers: dict[int, list[str]] | list[str]
    events = None
    metadata = list(metadata)
    if scenario:
        from .analysis.replay_inputs import load_scenario

        sc = load_scenario(scenario)
        brokers, events = sc["brokers"], sc["events"] or None
        metadata += sc["metadata"]
    elif broker_dirs:
        brokers = {}
        for spec in broker_dirs:
            bid, _, d = spec.partition("=")
            if not bid.isdigit() or not d:
                raise click.BadParameter(f"{spec!r} is not ID=DIR", param_hint="--broker")
            brokers.setdefault(int(bid), []).append(d)
        if log_dirs:
            raise click.BadParameter("give either LOG_DIRS or --broker, not both")
    else:
        if not log_dirs:
            raise click.UsageError("give broker log dirs, --broker ID=DIR or --scenario DIR")
        brokers = list(log_dirs)
    try:
        doc = replay_all(brokers, kafka_version=kafka_version, topic=topic, partition=partition, leader=leader,
                         what_if=what_if, events=events, digests=digests, metadata=metadata)
    except ValueError as e:
        raise click.BadParameter(str(e))
    if fmt == "json":
        sys.stdout.write(json.dumps(doc, default=json_default) + "\n")
    else:
        render_replay_text(doc, sys.stdout)
    bad = {"LOSS_COMMITTED", "FORK", "UNCLEAN_ELECTION", "POSSIBLY_COMMITTED"}
    hit = any(v["code"] in bad for p in doc["partitions"] for r in p["replicas"] for v in r["verdicts"])
    sys.exit(EXIT_FINDINGS if hit else EXIT_CLEAN)


@main.command()
@click.argument("snapshots", nargs=-1)
@click.option("--out", required=True, help="Output directory (local or a pyarrow.fs URI) for the Parquet tables.")
@click.option("--manifest", type=click.Path(exists=True, dir_okay=False),
              help="CSV/JSON: path, optional broker_id, snapshot_time, cluster.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--conf", "confs", multiple=True, metavar="K=V", help="Spark configuration (repeatable).")
@click.option("--kafka-version", default="latest", show_default=True)
@click.option("--overwrite", is_flag=True, help="Replace the tables of an earlier run in --out.")
def spark(snapshots, out, manifest, master, confs, kafka_version, overwrite):
    """Scan and replay many archived broker snapshots on Spark.

    Each SNAPSHOT is a broker log dir (or a dir holding one) or a .tar/.tar.gz/.tgz
    of one, local or on any filesystem pyarrow supports (hdfs://, s3://, gs://);
    local globs are expanded.  Example: kforensics spark /archive/incident-42/*.tgz --out /tmp/incident-42
    """
    from .spark.inputs import resolve_snapshots
    from .spark.job import OutputExists, run, session

    conf = {}
    for c in confs:
        k, sep, v = c.partition("=")
        if not sep:
            raise click.BadParameter(f"{c!r} is not K=V", param_hint="--conf")
        conf[k] = v
    snaps = resolve_snapshots(list(snapshots), manifest)
    if not snaps:
        raise click.UsageError("no snapshots (paths, globs or --manifest)")
    sess = session(master, conf)
    try:
        summary = run(sess, snaps, out, kafka_version=kafka_version, overwrite=overwrite)
    except OutputExists as e:
        raise click.ClickException(str(e))
    click.echo(json.dumps(summary))
    sys.exit(EXIT_FINDINGS if summary["failed_tasks"] else EXIT_CLEAN)


from .cli_timeline import timeline  # noqa: E402  (the command lives in its own module)

main.add_command(timeline)


if __name__ == "__main__":  # pragma: no cover
    main()
