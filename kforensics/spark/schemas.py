"""The tables the Spark job writes, their hive-style layout, and the rows its stages pass each other.

Every table but ``brokers`` and ``summary`` has the schema ``kforensics scan
--out`` and the replay tables give it (:mod:`kforensics.tables.schemas`).  A
table is a directory partitioned by cluster (and topic): ``OUT/<table>/
cluster=C[/topic=T]/<part>.parquet``.  Between the stages move three kinds of
rows: a *task* per partition dir (driver to executors), a *status* per task
(executors to the driver and to the replay stage) and a *group status* per
replayed partition group (back to the driver).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol
from urllib.parse import quote

import pyarrow as pa

from ..errors import UsageError
from ..tables.schemas import CONTEXT, SCHEMAS

BROKERS_SCHEMA = pa.schema(CONTEXT + [
    ("spec", pa.string()), ("log_dirs", pa.string()), ("meta_version", pa.int64()), ("directory_ids", pa.string()),
    ("clean_shutdown", pa.string()), ("archive_members_ignored", pa.int64())])
SUMMARY_SCHEMA = pa.schema([
    ("cluster", pa.string()), ("topic", pa.string()), ("broker_id", pa.int32()), ("verdict", pa.string()),
    ("records", pa.int64()), ("bytes", pa.int64()), ("partitions", pa.int64())])
#: every table the job writes, and its schema
TABLE_SCHEMAS: dict[str, pa.Schema] = {"brokers": BROKERS_SCHEMA, **{n: SCHEMAS[n] for n in (
    "partitions", "segments", "batches", "epochs", "findings", "files", "checkpoints", "transactions",
    "committed_offsets", "verdicts", "divergence", "consumer_impact")}, "summary": SUMMARY_SCHEMA}
TABLES = tuple(TABLE_SCHEMAS)

#: a scan task: one partition dir of one snapshot (``raw``: its log dir and dir name as hex, as they are on disk;
#: ``topic`` and ``partition``: as its name gives them, the keys its replica is replayed by)
TASK_COLUMNS = ["snapshot_id", "log_dir", "dir_name", "raw", "broker_id", "cluster", "snapshot_time", "context",
                "part", "topic", "partition"]
TASK_SCHEMA = ("snapshot_id string, log_dir string, dir_name string, raw string, broker_id int, cluster string, "
               "snapshot_time string, context string, part string, topic string, partition int")


class TaskRow(Protocol):
    """A scan task as the executors get it (a row of :data:`TASK_COLUMNS`; cells may be missing values)."""

    snapshot_id: str
    log_dir: str
    dir_name: str
    raw: str
    broker_id: object
    cluster: object
    snapshot_time: object
    context: str
    part: str
    topic: str
    partition: int


#: a scan task's status: counts, the pickled committed offsets of a ``__consumer_offsets`` copy (``payload``), the
#: replica's sketch for the replay stage, its findings per severity, what the broker checks read of it, and (a dir
#: the replay leaves out: the metadata log, ``-delete``/``-future``/``-stray``) its pickled ``LeftOut``
STATUS_COLUMNS = ["snapshot_id", "dir_name", "status", "error", "batches", "bytes", "payload", "cluster", "topic",
                  "partition", "sketch", "findings", "check", "left_out"]
STATUS_SCHEMA = ("snapshot_id string, dir_name string, status string, error string, batches long, bytes long, "
                 "payload binary, cluster string, topic string, partition int, sketch binary, findings string, "
                 "check binary, left_out binary")
#: the status columns the driver collects (the replica sketches go from executor to executor)
COLLECTED = STATUS_COLUMNS[:10] + ["findings", "check", "left_out"]
#: a partition group's status after its replay
GROUP_COLUMNS = ["cluster", "topic", "partition", "status", "error", "verdicts", "affected", "findings", "summary"]
GROUP_SCHEMA = ("cluster string, topic string, partition int, status string, error string, verdicts long, "
                "affected boolean, findings string, summary string")
#: what identifies a partition group
KEYS = ["cluster", "topic", "partition"]
#: a partition group's key, those columns' values; groups are of partition dirs, whose names carry the partition
GroupKey = tuple[str | None, str, int]
#: the status columns the replay stage reads
REPLAY_INPUT = ["cluster", "topic", "partition", "sketch"]
#: the ``partitions`` columns the broker checks read (what ``scan``'s broker-level checks take of a partition)
CHECK_COLUMNS = ["snapshot_id", "log_dir", "dir_name", "topic", "partition", "suffix", "topic_id",
                 "epoch_cache_written", "epochs_seen"]
#: the scan tables whose rows carry the topic name ``scan`` corrects (``batches`` are written as they are read)
NAMED_TABLES = ("partitions", "segments", "epochs")

#: where the batch rows go when the ``batches`` table is not wanted (the replay still reads them; never published)
WORK_BATCHES = ".work-batches"
#: where the scan tables of ``-delete`` and ``-stray`` dirs wait for the broker checks (their topic names may be
#: corrected) before they are laid out by topic
PENDING = ".pending"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def parse_tables(tables: str | Iterable[str] | None) -> tuple[str, ...]:
    """The tables to write: all (None), or the names given (a list, or one comma-separated string); an unknown
    name is a :class:`~kforensics.errors.UsageError` naming the known ones."""
    if tables is None:
        return TABLES
    names = [n.strip() for n in (tables.split(",") if isinstance(tables, str) else
                                 [x for t in tables for x in str(t).split(",")]) if n.strip()]
    unknown = [n for n in names if n not in TABLES]
    if unknown or not names:
        raise UsageError(f"unknown table(s) {', '.join(unknown) or '(none given)'}; the tables are "
                         f"{', '.join(TABLES)}")
    return tuple(n for n in TABLES if n in names)


def hive_value(v: object) -> str:
    """A partition value as a hive-style directory name holds it (percent-encoded; null as Spark writes it)."""
    return HIVE_NULL if v is None else quote(str(v).encode("utf-8", "surrogatepass"), safe="")


def hive_dir(name: str, cluster: str | None, topic: str | None = None) -> str:
    """``name/cluster=C/topic=T`` (``name/cluster=C`` for a table without topics)."""
    d = f"{name}/cluster={hive_value(cluster)}"
    return d if "topic" not in TABLE_SCHEMAS[name].names else f"{d}/topic={hive_value(topic)}"
