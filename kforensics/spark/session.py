"""The Spark session: starting one (or reusing the one running), checking a master first, and Spark's errors.

Nothing here runs before the inputs and the output have been checked: a
JVM is started only for a job that can run.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InternalError, UsageError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class MasterUnreachable(UsageError):
    """The Spark master named by ``--master`` does not answer."""


class SparkStartFailed(UsageError):
    """Spark could not start (no Java, a master that refuses the application, a bad configuration)."""


class SparkJobFailed(InternalError):
    """The Spark job itself failed (not one task or group, which become findings): an internal error."""


def under_spark_submit() -> bool:
    """Whether this process is a driver spark-submit started (its JVM is already up, and its master stands):
    pyspark connects to that JVM in the same case."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session(master: str | None = "local[*]", conf: dict[str, str] | None = None,
            app: str = "kforensics") -> SparkSession:
    """A SparkSession (embedded ``local[*]`` unless told otherwise; ``None`` leaves the master to
    spark-submit); executors use this Python."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    b = SparkSession.builder.appName(app)
    if master:
        b = b.master(master)
    if master and master.startswith("local"):
        # embedded mode: keep every socket on loopback
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        b = b.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    b = (b.config("spark.sql.execution.arrow.pyspark.enabled", "true").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false"))
    settings = {**s3a_conf(conf or {}), **(conf or {})}
    if master and master.startswith("local"):
        settings = local_settings(settings)
    for k, v in settings.items():
        b = b.config(k, v)
    return b.getOrCreate()


#: the setting naming the module Spark runs as each executor's Python daemon (``kforensics.spark.daemon`` in a local
#: session, unless the settings name one)
DAEMON_MODULE = "spark.python.daemon.module"

#: how a local session's JVM compiles: with the quick compiler (C1) alone.  Its work is light (the Python workers scan
#: and replay; it moves their rows between stages), and over a job of minutes the optimising compiler's threads took
#: more of the cores than they gave back: on 2 cores a cold job of 3 x 10 000 small partition dirs took 51 s with
#: C1 alone against 56 to 58 s (``benchmarks/bench_spark.py --cold``)
LOCAL_JIT = "-XX:TieredStopAtLevel=1"


def local_settings(settings: dict[str, str]) -> dict[str, str]:
    """A local session's settings: the driver is this machine's JVM, so Spark's classes are mapped from the class
    archive if one is sealed and compiled by the quick JIT only (:func:`with_local_jit`), and its executors'
    Python daemon is :mod:`kforensics.spark.daemon` (the installed pyspark, its bytecode cached, not the zip);
    each unless ``settings`` say otherwise."""
    from .class_archive import with_archive

    return {DAEMON_MODULE: "kforensics.spark.daemon", **with_local_jit(with_archive(settings))}


def with_local_jit(settings: dict[str, str]) -> dict[str, str]:
    """A local session's settings with :data:`LOCAL_JIT` added to the driver's JVM options, unless they say how it
    compiles already (a ``TieredStopAtLevel`` or ``TieredCompilation`` of their own)."""
    given = settings.get("spark.driver.extraJavaOptions", "")
    if "TieredStopAtLevel" in given or "TieredCompilation" in given:
        return settings
    return {**settings, "spark.driver.extraJavaOptions": f"{given} {LOCAL_JIT}".strip()}


#: where scripts/setup.sh puts Hadoop's S3A connector (s3a-<hadoop version>/*.jar), in a checkout
S3A_CACHE = Path(__file__).resolve().parents[2] / "scripts" / "s3" / ".cache"


def hadoop_version() -> str | None:
    """The Hadoop release inside the installed pyspark (from its ``hadoop-client-api-<version>.jar``): the S3A
    connector (``hadoop-aws``) must be the same release."""
    import pyspark

    jars = sorted(Path(pyspark.__file__).parent.glob("jars/hadoop-client-api-*.jar"))
    return jars[-1].name[len("hadoop-client-api-"):-len(".jar")] if jars else None


def s3a_jars() -> list[str]:
    """The S3A connector's jars the set-up fetched for this pyspark's Hadoop (none when it did not)."""
    version = hadoop_version()
    if version is None:
        return []
    return sorted(str(p) for p in (S3A_CACHE / f"s3a-{version}").glob("*.jar"))


def s3a_conf(given: dict[str, str]) -> dict[str, str]:
    """Spark settings for ``s3a://`` when this process reads or writes an object store: the S3A connector's jars
    (unless ``spark.jars``/``spark.jars.packages`` are given, or spark-submit was given ``--jars``/``--packages``),
    the endpoint of an S3-compatible store (path-style requests, TLS as its URL says) for Spark and for the
    executors' reads.  Credentials are left to the AWS SDK's default chain, on the driver and executors alike:
    none is put into Spark's configuration."""
    from ..log.object_store import SETTINGS, endpoint

    if not SETTINGS.used:
        return {}
    conf: dict[str, str] = {"spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}
    jars = s3a_jars()
    if jars and not ({"spark.jars", "spark.jars.packages"} & set(given)) and not under_spark_submit():
        conf["spark.jars"] = ",".join(jars)
    ep = endpoint()
    if ep:
        from urllib.parse import urlsplit

        parts = urlsplit(ep if "://" in ep else f"http://{ep}")
        conf.update({"spark.hadoop.fs.s3a.endpoint": parts.netloc,
                     "spark.hadoop.fs.s3a.connection.ssl.enabled": str(parts.scheme == "https").lower(),
                     "spark.hadoop.fs.s3a.path.style.access": "true",
                     "spark.hadoop.fs.s3a.endpoint.region": os.environ.get("AWS_REGION")
                     or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
                     "spark.executorEnv.KFORENSICS_S3_ENDPOINT": ep})
    return conf


def start(master: str | None, conf: dict[str, str]) -> tuple[SparkSession, bool]:
    """A SparkSession and whether this call started it (one already running in this process is reused and left
    running); :class:`SparkStartFailed` with one line saying why Spark could not start."""
    try:
        from pyspark.sql import SparkSession

        running = SparkSession.getActiveSession()
        return session(master, conf), running is None
    except Exception as e:  # no Java, a master refusing the application, a bad --conf
        raise SparkStartFailed(f"cannot start Spark (master {master or 'of spark-submit'}): {short_error(e)}") from e


def check_master(master: str | None, timeout: float = 5.0) -> None:
    """Fail fast, before a JVM starts, when a standalone master (``spark://host:port[,host:port]``) accepts no
    connection: raise :class:`MasterUnreachable` with one line saying so.  Other masters are left to Spark."""
    if not master or not master.startswith("spark://"):
        return
    errors = []
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return
        except (OSError, ValueError) as e:
            errors.append(f"{hostport}: {e.strerror if isinstance(e, OSError) and e.strerror else e}")
    raise MasterUnreachable(f"cannot reach the Spark master {master} ({'; '.join(errors)})")


def short_error(e: BaseException, limit: int = 300) -> str:
    """One line for an error from Spark: the Java exception's first line when there is one (a Py4J error's text
    is the whole Java stack)."""
    text = None
    java = getattr(e, "java_exception", None)
    if java is not None:
        try:
            text = java.toString()
        except Exception:  # noqa: BLE001 - the JVM may be gone
            text = None
    if not text:
        text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("at ")]
    line = next((ln for ln in lines if not ln.startswith("An error occurred while calling")), lines[0] if lines
                else type(e).__name__)
    line = line.lstrip(": ")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def from_spark(e: BaseException) -> bool:
    """Whether ``e`` was raised by Spark or Py4J (the JVM side of the job), not by kforensics' Python code."""
    return type(e).__module__.split(".")[0] in ("py4j", "pyspark")
