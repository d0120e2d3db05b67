"""The training session of :mod:`kforensics.spark.class_archive`: ``python -m kforensics.spark.class_training OUT``
starts a local session whose JVM writes the classes it loaded to ``OUT`` when it exits."""

from __future__ import annotations

import sys

from .class_archive import QUIET, TRAINING_TIMEOUT_S
from .session import session


def train(out: str) -> None:
    """A local session whose JVM writes the classes it loaded to ``out`` when it exits: started, a small job
    shaped like the pipeline's, stopped; and the JVM waited for, so the archive is whole when this returns."""
    s = session("local[2]", {"spark.ui.enabled": "false", "spark.log.level": "ERROR",
                             "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={out} {QUIET}"})
    import pandas as pd

    # the pipeline's shape: an Arrow frame of tasks through a pandas function, persisted; a column collected; the
    # rows repartitioned and sorted by key through another pandas function, collected (the classes of each step)
    frame = pd.DataFrame({"a": [str(i % 7) for i in range(1000)], "b": pd.array(range(1000), dtype="Int32")})
    done = s.createDataFrame(frame, "a string, b int").repartition(4).mapInPandas(_same, schema="a string, b int")
    done = done.persist()
    done.select("b").collect()
    done.where("b IS NOT NULL").repartition(4, "a").sortWithinPartitions("a").mapInPandas(
        _same, schema="a string, b int").collect()
    done.unpersist()
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
