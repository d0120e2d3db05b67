"""Run by ``test_s3_spark.py`` in a process of its own, on one Spark session (one JVM, started with Hadoop's S3A
connector and the store's endpoint): ``kforensics spark`` on ``s3a://`` snapshots writing its tables to
``s3a://``, then on the same snapshots on disk writing to a local directory (both runs reuse the session); then
Spark reads the store run's verdicts back through ``s3a://`` (the connector the set-up fetched, against the real
server).  Prints one JSON document: each run's exit code and text, the session's jars and the rows read through
S3A (and the local run's, read alike).  The tables themselves are compared by the test, read with pyarrow."""

from __future__ import annotations

import contextlib
import io
import json
import sys

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


def run(s3_snapshots: list[str], s3_out: str, local_snapshots: list[str], local_out: str) -> dict:
    from kforensics.log import object_store
    from kforensics.spark.session import session

    object_store.filesystem()  # this process uses the store: the session gets the S3A connector and endpoint
    spark = session("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                                 "spark.log.level": "ERROR"})
    common = ["--master", "local[2]", "--tables", ",".join(TABLES)]
    doc = {"s3": cli(["spark", *s3_snapshots, "--out", s3_out, *common]),
           "local": cli(["spark", *local_snapshots, "--out", local_out, *common]),
           "jars": spark.conf.get("spark.jars", "")}
    print(json.dumps(doc), flush=True)  # what the runs gave, should the read through S3A fail
    doc["through_s3a"] = {"s3": rows(spark, f"{s3_out}/verdicts"), "local": rows(spark, f"{local_out}/verdicts")}
    spark.stop()
    return doc


if __name__ == "__main__":
    print(json.dumps(run(**json.loads(sys.argv[1]))))
