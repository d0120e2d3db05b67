"""``kforensics spark`` (local[2]) reading ``s3a://`` snapshots and writing its tables to ``s3a://`` prints what the
run on the same snapshots on disk prints and writes the same tables, table for table (read back with pyarrow);
Spark reads the tables from the store through Hadoop's S3A connector (fetched by the set-up for pyspark's Hadoop).
One process, one Spark session for both runs: see ``spark_on_s3a.py``."""

from __future__ import annotations

import json
import posixpath
import shutil
import subprocess
import sys

import pytest

from .conftest import FIXTURES
from .s3server import ROOT
from .spark_on_s3a import TABLES

#: seconds the Spark process may take (two jobs and two reads on one session; see docs/object-storage.md for what
#: was measured)
LIMIT = 600


def parquet_rows(fs, root: str) -> dict[str, list[str]]:
    """Every table under ``root`` (pyarrow: ``fs`` None is the local disk): its rows as sorted JSON lines, keyed by
    table and the cluster/topic directory they were laid in (part file names are the tasks')."""
    import pyarrow.parquet as pq
    from pyarrow import fs as pafs

    fs = fs or pafs.LocalFileSystem()
    tables: dict[str, list[str]] = {}
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        if info.type == pafs.FileType.File and info.path.endswith(".parquet"):
            where = posixpath.dirname(posixpath.relpath(info.path, root))
            rows = pq.read_table(info.path, filesystem=fs).to_pylist()
            tables.setdefault(where, []).extend(json.dumps(r, sort_keys=True, default=str) for r in rows)
    return {k: sorted(v) for k, v in sorted(tables.items())}


def test_spark_reads_and_writes_s3a_as_it_does_local_dirs(s3env, tmp_path):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no java: Spark needs Java 17 (scripts/setup.sh installs it)")
    from kforensics.log.object_store import filesystem
    from kforensics.spark.session import s3a_jars

    if not s3a_jars():
        pytest.skip("no S3A connector: scripts/setup.sh fetches hadoop-aws for pyspark's Hadoop into scripts/s3/.cache")
    (s3env.basedir / "tables").mkdir(exist_ok=True)
    local_out = str(tmp_path / "from-disk")
    args = {"s3_snapshots": ["s3a://evidence/damaged"], "s3_out": "s3a://tables/i42",
            "local_snapshots": [str(FIXTURES)], "local_out": local_out}
    p = subprocess.run([sys.executable, "-m", "tests.objectstore.spark_on_s3a", json.dumps(args)], cwd=ROOT,
                       env=s3env.env(PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=LIMIT)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout.splitlines()[-1])
    assert "hadoop-aws-" in doc["jars"]
    s3_run, local_run = doc["s3"], doc["local"]
    assert local_run["code"] == 1 and "answer:" in local_run["text"]
    names = {"s3a://tables/i42": local_out, "s3a://evidence/damaged": str(FIXTURES),
             "s3://evidence/damaged": str(FIXTURES)}

    def local_names(text: str) -> str:
        for a, b in names.items():
            text = text.replace(a, b)
        return text

    assert (s3_run["code"], local_names(s3_run["text"])) == (local_run["code"], local_run["text"])
    # table for table: the same tables, laid out alike, the same rows once locations are named alike
    in_store, on_disk = parquet_rows(filesystem(), "tables/i42"), parquet_rows(None, local_out)
    assert {k.split("/")[0] for k in on_disk} == set(TABLES)
    assert list(in_store) == list(on_disk)
    for where, rows in on_disk.items():
        assert rows, where
        assert [local_names(r) for r in in_store[where]] == rows, where
    assert not [k for k in in_store if ".staging" in k]  # nothing left of the run's staging
    through_s3a = doc["through_s3a"]
    assert through_s3a["local"] and [local_names(r) for r in through_s3a["s3"]] == through_s3a["local"]
    on_evidence = {m for m, url in s3env.requests() if url.split("/", 3)[3].startswith("evidence")}
    assert on_evidence <= {"GET", "HEAD"}, on_evidence
