"""``kforensics spark`` (local[2]) on ``s3a://`` snapshots equals the run on the same snapshots on disk, and the
session reads ``s3a://`` through Hadoop's S3A connector (fetched by the set-up for pyspark's Hadoop) from the real
server.  One process, one JVM: see ``spark_on_s3a.py``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from .conftest import FIXTURES
from .s3server import ROOT

#: seconds the Spark process may take (two jobs and a read-back, on one JVM: 106 s in the suite on 2 cores shared
#: with other work, 5 minutes under a load of 12)
LIMIT = 600


def test_spark_on_s3a_equals_the_local_run(s3, tmp_path):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no java: Spark needs Java 17 (scripts/setup.sh installs it)")
    from kforensics.spark.session import s3a_jars

    if not s3a_jars():
        pytest.skip("no S3A connector: scripts/setup.sh fetches hadoop-aws for pyspark's Hadoop into scripts/s3/.cache")
    (s3.basedir / "tables").mkdir(exist_ok=True)
    args = {"s3_snapshots": ["s3a://evidence/damaged"], "s3_out": str(tmp_path / "from-s3"),
            "local_snapshots": [str(FIXTURES)], "local_out": str(tmp_path / "from-disk"),
            "bucket": "tables"}
    p = subprocess.run([sys.executable, "-m", "tests.objectstore.spark_on_s3a", json.dumps(args)], cwd=ROOT,
                       env=s3.env(PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=LIMIT)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout.splitlines()[-1])
    assert "hadoop-aws-" in doc["jars"]
    s3_run, local_run = doc["s3"], doc["local"]
    assert local_run["code"] == 1 and "answer:" in local_run["text"]
    name = {str(tmp_path / "from-s3"): str(tmp_path / "from-disk"), "s3a://evidence/damaged": str(FIXTURES),
            "s3://evidence/damaged": str(FIXTURES)}

    def local_names(text: str) -> str:
        for a, b in name.items():
            text = text.replace(a, b)
        return text

    assert (s3_run["code"], local_names(s3_run["text"])) == (local_run["code"], local_run["text"])
    for table, both in doc["tables"].items():
        assert both["local"], table
        assert [local_names(r) for r in both["s3"]] == both["local"], table
    assert doc["through_s3a"] == doc["tables"]["verdicts"]["local"]
    on_evidence = {m for m, url in s3.requests() if url.split("/", 3)[3].startswith("evidence")}
    assert on_evidence <= {"GET", "HEAD"}, on_evidence
