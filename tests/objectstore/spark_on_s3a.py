"""Run by ``test_s3_spark.py`` in a process of its own (one JVM, started with Hadoop's S3A connector):
``kforensics spark`` on ``s3a://`` snapshots, then on the same snapshots on disk; Spark reads both runs' tables
back; and Spark reads the local run's verdicts laid as objects in the store through ``s3a://`` (the connector the
set-up fetched, against the real server).  Prints one JSON document: each run's exit code and text, each table's
rows, and the rows read through S3A."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from kforensics.cli import main

TABLES = ("partitions", "verdicts", "findings", "summary")


def cli(args: list[str]) -> dict:
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out):
        try:
            main.main(args=args)
        except SystemExit as e:
            code = int(e.code or 0)
    return {"code": code, "text": out.getvalue()}


def rows(spark, uri: str) -> list[str]:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in spark.read.parquet(uri).collect())


def run(s3_snapshots: list[str], s3_out: str, local_snapshots: list[str], local_out: str, bucket: str) -> dict:
    common = ["--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2",
              "--conf", "spark.default.parallelism=2", "--tables", ",".join(TABLES)]
    doc = {"s3": cli(["spark", *s3_snapshots, "--out", s3_out, *common]),
           "local": cli(["spark", *local_snapshots, "--out", local_out, *common])}
    from kforensics.spark.session import session

    spark = session("local[2]")
    doc["jars"] = spark.conf.get("spark.jars", "")
    doc["tables"] = {name: {"s3": rows(spark, f"{s3_out}/{name}"), "local": rows(spark, f"{local_out}/{name}")}
                     for name in TABLES}
    print(json.dumps(doc), flush=True)  # what the runs gave, should the read through S3A fail
    # the local run's verdicts uploaded to the store (PUTs to its own bucket, never the evidence's), read by Spark
    from pyarrow import fs as pafs

    from kforensics.log.object_store import filesystem

    pafs.copy_files(str(Path(local_out) / "verdicts"), f"{bucket}/verdicts",
                    source_filesystem=pafs.LocalFileSystem(), destination_filesystem=filesystem())
    doc["through_s3a"] = rows(spark, f"s3a://{bucket}/verdicts")
    spark.stop()
    return doc


if __name__ == "__main__":
    print(json.dumps(run(**json.loads(sys.argv[1]))))
