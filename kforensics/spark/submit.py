"""Entry point for ``spark-submit`` (the master and resources come from spark-submit).

    spark-submit --master spark://host:7077 "$(python -c 'import kforensics.spark.submit as m; print(m.__file__)')" \\
        SNAPSHOT... --out DIR [--manifest FILE] [--metadata [CLUSTER=]PATH]... [--kafka-version V] [--overwrite]
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    # absolute imports: spark-submit runs this file as a script, outside its package
    from kforensics.outputs import OutputRefused
    from kforensics.spark.inputs import parse_metadata, resolve_snapshots
    from kforensics.spark.job import OutputExists, check_output, run, session

    ap = argparse.ArgumentParser(prog="kforensics-spark")
    ap.add_argument("snapshots", nargs="*")
    ap.add_argument("--out", required=True)
    ap.add_argument("--manifest")
    ap.add_argument("--metadata", action="append", default=[], metavar="[CLUSTER=]PATH")
    ap.add_argument("--kafka-version", default="latest")
    ap.add_argument("--overwrite", action="store_true")
    args = ap.parse_args(argv)
    snaps = resolve_snapshots(args.snapshots, args.manifest)
    if not snaps:
        ap.error("no snapshots given")
    metadata = parse_metadata(args.metadata)
    try:
        check_output(args.out, snaps, args.overwrite, metadata)
    except (OutputExists, OutputRefused) as e:
        print(f"kforensics: {e}", file=sys.stderr)
        return 2
    spark = session(master=None)
    try:
        summary = run(spark, snaps, args.out, kafka_version=args.kafka_version, overwrite=args.overwrite,
                      metadata=metadata)
    except (ValueError, FileNotFoundError) as e:
        print(f"kforensics: --metadata: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary))
    return 1 if summary["failed_tasks"] else 0


if __name__ == "__main__":
    sys.exit(main())
