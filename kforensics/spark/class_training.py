"""The training session of :mod:`kforensics.spark.class_archive`: ``python -m kforensics.spark.class_training OUT``
starts a local session whose JVM writes the classes it loaded to ``OUT`` when it exits."""

from __future__ import annotations

import sys

from .class_archive import QUIET, TRAINING_TIMEOUT_S
from .session import session


def train(out: str) -> None:
    """A local session whose JVM writes the classes it loaded to ``out`` when it exits: started, one job like
    the pipeline's (a frame of rows, repartitioned, through a pandas function), stopped; and the JVM waited for,
    so the archive is whole when this returns."""
    s = session("local[2]", {"spark.ui.enabled": "false", "spark.log.level": "ERROR",
                             "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={out} {QUIET}"})
    rows = [(str(i), i) for i in range(1000)]
    s.createDataFrame(rows, "a string, b long").repartition(4).mapInPandas(_same, schema="a string, b long").count()
    gateway = s.sparkContext._gateway
    proc = getattr(gateway, "proc", None)
    s.stop()
    if gateway is not None:
        gateway.shutdown()
    if proc is not None:
        proc.stdin.close()  # the JVM ends when its standard input does, and writes the archive then
        proc.wait(timeout=TRAINING_TIMEOUT_S)


def _same(frames):  # type: ignore[no-untyped-def]
    yield from frames


if __name__ == "__main__":
    train(sys.argv[1])
