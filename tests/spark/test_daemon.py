"""A local session's Python daemon imports the installed pyspark (its bytecode cached), not the zip Spark puts
first on its path."""

from __future__ import annotations

import zipfile
from pathlib import Path

from kforensics.spark import daemon
from kforensics.spark.session import DAEMON_MODULE, local_settings


def _zip(p: Path) -> str:
    p.parent.mkdir(parents=True, exist_ok=True)
    zipfile.ZipFile(p, "w").close()
    return str(p)


def test_the_installed_packages_zips_go_last_and_nothing_else_moves(tmp_path):
    pkg = tmp_path / "site" / "pyspark"
    ours = [_zip(pkg / "python" / "lib" / "pyspark.zip"), _zip(pkg / "python" / "lib" / "py4j-0.10.9.9-src.zip")]
    other = _zip(tmp_path / "elsewhere" / "pyspark.zip")  # a zip of another Spark: left where it is
    shipped = _zip(tmp_path / "job" / "deps.zip")
    path = [ours[0], ours[1], other, "/usr/lib/python3.11", shipped, str(tmp_path / "site")]
    assert daemon.installed_first(path, str(pkg)) == [other, "/usr/lib/python3.11", shipped, str(tmp_path / "site"),
                                                      *ours]
    assert daemon.installed_first(path, None) == path


def test_a_local_session_names_the_daemon_unless_told_otherwise():
    assert local_settings({})[DAEMON_MODULE] == "kforensics.spark.daemon"
    assert local_settings({DAEMON_MODULE: "site.daemon"})[DAEMON_MODULE] == "site.daemon"


def _probe(_):
    import sys

    import pyspark

    return pyspark.__file__, sys.argv[0]


def test_the_workers_of_a_local_session_import_the_installed_pyspark(spark):
    got = set(spark.sparkContext.parallelize(range(4), 2).map(_probe).collect())
    assert len(got) == 1
    ((pyspark_file, daemon_file),) = got
    assert ".zip" not in pyspark_file and Path(pyspark_file).is_file()
    assert Path(daemon_file).resolve() == Path(daemon.__file__).resolve()
