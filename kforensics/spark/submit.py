"""Entry point for ``spark-submit`` (the master and resources come from spark-submit).

    pip wheel --no-deps /path/to/kforensics -w dist && cp dist/kforensics-*.whl kforensics.zip
    spark-submit --master spark://host:7077 --py-files kforensics.zip \\
        "$(python -c 'import kforensics.spark.submit as m; print(m.__file__)')" \\
        SNAPSHOT... --out DIR [--manifest FILE] [--metadata [CLUSTER=]PATH]... [--kafka-version V] [--overwrite] \\
        [--tables NAME,...] [--format text|json] [--fail-on SEVERITY]

This file runs as a script (absolute imports only); the executors import kforensics from the shipped wheel
(Spark puts only ``.zip``/``.egg``/``.jar`` py-files on their path, hence the copy).

Exit codes as ``kforensics spark``: 0 clean, 1 findings at or above ``--fail-on`` or a failed task, replay or
unreadable snapshot, 2 usage or refusal, 3 the job itself failed.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    # absolute imports: spark-submit runs this file as a script, outside its package
    from kforensics.outputs import OutputRefused
    from kforensics.severity import Severity
    from kforensics.spark.inputs import InputError, parse_metadata, resolve_snapshots
    from kforensics.spark.job import MetadataInputError, OutputExists, check_output, parse_tables, run, session
    from kforensics.spark.report import exit_code, from_spark, render_text, short_error

    ap = argparse.ArgumentParser(prog="kforensics-spark")
    ap.add_argument("snapshots", nargs="*")
    ap.add_argument("--out", required=True)
    ap.add_argument("--manifest")
    ap.add_argument("--metadata", action="append", default=[], metavar="[CLUSTER=]PATH")
    ap.add_argument("--kafka-version", default="latest")
    ap.add_argument("--overwrite", action="store_true")
    ap.add_argument("--format", choices=["text", "json"], default="text")
    ap.add_argument("--fail-on", default="high")
    ap.add_argument("--tables", metavar="NAME[,NAME...]", help="write only these tables (default: all)")
    args = ap.parse_args(argv)
    try:
        threshold = Severity.parse(args.fail_on)
        tables = parse_tables(args.tables)
        snaps = resolve_snapshots(args.snapshots, args.manifest)
    except (InputError, ValueError) as e:
        ap.error(str(e))
    if not snaps:
        ap.error("no snapshots given")
    metadata = parse_metadata(args.metadata)
    try:
        check_output(args.out, snaps, args.overwrite, metadata, args.manifest)
    except (OutputExists, OutputRefused) as e:
        print(f"kforensics: {e}", file=sys.stderr)
        return 2
    try:
        summary = run(lambda: session(master=None), snaps, args.out, kafka_version=args.kafka_version,
                      overwrite=args.overwrite, metadata=metadata, manifest=args.manifest, tables=tables)
    except MetadataInputError as e:
        print(f"kforensics: --metadata: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the job itself failed: one line (the traceback with KFORENSICS_DEBUG)
        import os

        if os.environ.get("KFORENSICS_DEBUG"):
            raise
        print(f"kforensics: internal error: {short_error(e) if from_spark(e) else f'{type(e).__name__}: {e}'}",
              file=sys.stderr)
        return 3
    if args.format == "json":
        print(json.dumps(summary, default=str))
    else:
        render_text(summary, sys.stdout)
    return exit_code(summary, threshold)


if __name__ == "__main__":
    sys.exit(main())
