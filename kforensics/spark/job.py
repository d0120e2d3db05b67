"""The Spark job: plan on the driver, scan partition dirs on executors, replay per partition group.

Spark only distributes: the driver plans (lists snapshots, reads each log
dir's root files) with :func:`kforensics.scan.broker.plan_log_dir`, executors
scan partition dirs with :func:`kforensics.scan.partition.scan_partition`
and write the same tables as ``kforensics scan --out`` (batch headers
streamed to Parquet), and the replay runs
:func:`kforensics.replay.engine.replay_partition` per (cluster, topic,
partition) group.  Output (``--out``): ``brokers``, ``partitions``,
``segments``, ``batches``, ``epochs``, ``findings``, ``files``,
``checkpoints``, ``verdicts``, ``divergence``, ``summary``.  Everything is
written under a staging directory and moved into place at the end, so an
output directory never holds a mix of two runs.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
import traceback
import uuid
from dataclasses import asdict
from typing import Any, Iterator

import pandas as pd

from ..findings import FindingLog, finding
from ..log.file_kinds import parse_partition_dir_name
from ..log.log_dir import find_log_dirs
from ..log.partition import open_partition
from ..log.sources import resolve, split_uri
from ..outputs import refuse_output_in_evidence
from ..scan.broker import plan_log_dir
from ..scan.model import BrokerIdentity, PartitionContext, ScanReport
from ..scan.partition import scan_partition
from ..tables.replay_tables import divergence_rows, divergence_table, replicas_from_frames, verdict_rows, verdicts_table
from ..tables.scan_tables import REPORT_TABLES, BatchesWriter, write_table
from ..tables.schemas import SCHEMAS
from .inputs import Snapshot

TABLES = ("brokers", "partitions", "segments", "batches", "epochs", "findings", "files", "checkpoints", "verdicts",
          "divergence", "summary")
TASK_COLUMNS = ["snapshot_id", "spec", "log_dir", "dir_name", "broker_id", "cluster", "snapshot_time", "context"]
STATUS_SCHEMA = "snapshot_id string, dir_name string, status string, error string, batches long, bytes long"
KEYS = ["cluster", "topic", "partition"]


class OutputExists(Exception):
    pass


# ----------------------------------------------------------------------------- output location
def _exists(fs, path: str) -> bool:
    if fs is None:
        return os.path.exists(path)
    from pyarrow import fs as pafs

    return fs.get_file_info(path).type != pafs.FileType.NotFound


def _listdir(fs, path: str) -> list[str]:
    if fs is None:
        return sorted(os.listdir(path)) if os.path.isdir(path) else []
    from pyarrow import fs as pafs

    return sorted(posixpath.basename(i.path) for i in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))


def _rmtree(fs, path: str) -> None:
    if fs is None:
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    elif _exists(fs, path):
        fs.delete_dir(path)


def _move(fs, src: str, dst: str) -> None:
    if fs is None:
        os.replace(src, dst)
    else:
        fs.move(src, dst)


def _mkdirs(fs, path: str) -> None:
    if fs is None:
        os.makedirs(path, exist_ok=True)
    else:
        fs.create_dir(path, recursive=True)


def check_output(out: str, snapshots: list[Snapshot], overwrite: bool) -> None:
    """Refuse an output inside, onto or above any input, and an existing one without ``overwrite``.

    Called before Spark starts: nothing has been created yet.
    """
    refuse_output_in_evidence(out, [s.spec for s in snapshots])
    filesystem, out_path = split_uri(out)
    existing = [n for n in _listdir(filesystem, out_path) if not n.startswith(".")]
    if existing and not overwrite:
        raise OutputExists(f"{out} already holds {', '.join(existing[:5])}; use --overwrite to replace it")


# ----------------------------------------------------------------------------- driver planning
def _relative(root, path) -> str:
    s, r = str(path), str(root)
    return s[len(r):].lstrip("/") if s.startswith(r) else s


def _write_parts(report: ScanReport, staging: str, part: str, context: dict, filesystem=None) -> None:
    for name, make in REPORT_TABLES.items():
        d = f"{staging.rstrip('/')}/{name}"
        _mkdirs(filesystem, d)
        write_table(make(report, context), f"{d}/{part}.parquet", filesystem)


def plan(snapshots: list[Snapshot], staging: str, filesystem=None) -> tuple[pd.DataFrame, list[dict]]:
    """Read every snapshot's listing and root files on the driver; the partition dirs become tasks."""
    tasks: list[dict] = []
    brokers: list[dict] = []
    for snap in snapshots:
        broker = BrokerIdentity()
        findings = FindingLog()
        files: list = []
        checkpoints: list = []
        untrusted = 0
        plans, root = [], None
        try:
            root = resolve(snap.spec)
            untrusted = len(getattr(getattr(root, "archive", None), "untrusted", []))
            log_dirs = find_log_dirs(root)
            if not log_dirs:
                findings.add(finding("NO_LOG_DIR", "no broker log dir found in this snapshot", file=snap.spec))
            if untrusted:
                findings.add(finding("ARCHIVE_MEMBERS_IGNORED", f"{untrusted} archive members with absolute, "
                                     "escaping or link names ignored", file=snap.spec,
                                     members=root.archive.untrusted[:50]))
            plans = [plan_log_dir(d, broker, findings, files, checkpoints) for d in log_dirs]
        except Exception as e:  # noqa: BLE001 - a broken archive or unreachable filesystem is a finding
            findings.add(finding("SNAPSHOT_UNREADABLE", f"{type(e).__name__}: {e}", file=snap.spec))
        broker_id = snap.broker_id if snap.broker_id is not None else broker.node_id
        cluster = snap.cluster or broker.cluster_id
        context = {"snapshot_id": snap.snapshot_id, "snapshot_time": snap.snapshot_time, "cluster": cluster,
                   "broker_id": broker_id}
        report = ScanReport(broker, [], findings.findings(), files, checkpoints)
        _write_parts(report, staging, f"driver-{snap.snapshot_id}", context, filesystem)
        for p in plans:
            for pd_, pctx in p.partitions:
                tasks.append({
                    "snapshot_id": snap.snapshot_id, "spec": snap.spec, "log_dir": _relative(root, p.log_dir.path),
                    "dir_name": pd_.dir_name, "broker_id": broker_id, "cluster": cluster,
                    "snapshot_time": snap.snapshot_time, "context": json.dumps(asdict(pctx)),
                })
        brokers.append({**context, "spec": snap.spec, "log_dirs": json.dumps(broker.log_dirs),
                        "meta_version": broker.meta_version, "directory_ids": json.dumps(broker.directory_ids),
                        "clean_shutdown": json.dumps(broker.clean_shutdown), "archive_members_ignored": untrusted})
    return pd.DataFrame(tasks, columns=TASK_COLUMNS), brokers


# ----------------------------------------------------------------------------- executors
_ROOTS: dict[str, Any] = {}


def _root(spec: str):
    # one archive index / filesystem handle per executor process and snapshot
    if spec not in _ROOTS:
        _ROOTS[spec] = resolve(spec)
    return _ROOTS[spec]


def scan_tasks(staging: str, kafka_version: str):
    """The mapInPandas function: scan each task's partition dir and write its table parts."""

    def run(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        filesystem, staging_path = split_uri(staging)
        for frame in frames:
            out = []
            for t in frame.itertuples(index=False):
                bid = None if pd.isna(t.broker_id) else int(t.broker_id)
                context = {"snapshot_id": t.snapshot_id, "snapshot_time": t.snapshot_time, "cluster": t.cluster,
                           "broker_id": bid}
                part = f"{t.snapshot_id}--{t.dir_name}"
                broker = BrokerIdentity(node_id=bid, cluster_id=t.cluster)
                try:
                    root = _root(t.spec)
                    ld = root / t.log_dir if t.log_dir else root
                    pdir = open_partition(ld / t.dir_name, parse_partition_dir_name(t.dir_name), [])
                    _mkdirs(filesystem, f"{staging_path}/batches")
                    writer = BatchesWriter(f"{staging_path}/batches/{part}.parquet", context, filesystem)
                    scan = scan_partition(pdir, PartitionContext(**json.loads(t.context)),
                                          kafka_version=kafka_version, batch_sink=writer)
                    writer.close()
                    _write_parts(ScanReport(broker, [scan], [], scan.files), staging_path, part, context, filesystem)
                    out.append((t.snapshot_id, t.dir_name, "ok", None, scan.batch_count, scan.bytes))
                except Exception as e:  # noqa: BLE001 - never lose the task: the failure becomes a finding row
                    err = f"{type(e).__name__}: {e}"
                    f = finding("SCAN_FAILED", f"internal error scanning this partition: {err}",
                                file=f"{t.spec}/{t.log_dir}/{t.dir_name}", traceback=traceback.format_exc()[-2000:])
                    _write_parts(ScanReport(broker, [], [f], []), staging_path, part, context, filesystem)
                    out.append((t.snapshot_id, t.dir_name, "failed", err, 0, 0))
            yield pd.DataFrame(out, columns=["snapshot_id", "dir_name", "status", "error", "batches", "bytes"])

    return run


def replay_group(batches: pd.DataFrame, partitions: pd.DataFrame, kafka_version: str = "latest"
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Verdict and divergence rows for one (cluster, topic, partition) group."""
    from ..replay.engine import replay_partition

    first = partitions.iloc[0]
    cluster, topic, partition = first["cluster"], first["topic"], int(first["partition"])
    replicas = replicas_from_frames(batches, partitions)
    snapshots = {int(r.broker_id): r.snapshot_id for r in partitions.itertuples(index=False)}
    rp = replay_partition(topic, partition, replicas, kafka_version=kafka_version)
    return (verdicts_table(verdict_rows(rp, cluster, snapshots)).to_pandas(),
            divergence_table(divergence_rows(rp, cluster)).to_pandas())


def replay_verdicts(kafka_version: str):
    def fn(batches: pd.DataFrame, partitions: pd.DataFrame) -> pd.DataFrame:
        if partitions.empty:
            return SCHEMAS["verdicts"].empty_table().to_pandas()
        return replay_group(batches, partitions, kafka_version)[0]

    return fn


def replay_divergence(batches: pd.DataFrame, partitions: pd.DataFrame) -> pd.DataFrame:
    if partitions.empty:
        return SCHEMAS["divergence"].empty_table().to_pandas()
    return replay_group(batches, partitions)[1]


def _spark_schema(arrow_schema) -> str:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema)


# ----------------------------------------------------------------------------- the job
def run(spark, snapshots: list[Snapshot], out: str, *, kafka_version: str = "latest", overwrite: bool = False,
        tasks_per_partition: int = 4) -> dict[str, Any]:
    """Run the whole pipeline; returns a summary dict (counts, failed tasks)."""
    check_output(out, snapshots, overwrite)
    filesystem, out_path = split_uri(out)
    staging = posixpath.join(out.rstrip("/"), f".staging-{uuid.uuid4().hex[:12]}")
    staging_fs, staging_path = split_uri(staging)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        tasks, brokers = plan(snapshots, staging_path, staging_fs)
        timings["plan_s"] = time.perf_counter() - t0
        n = max(1, min(len(tasks), spark.sparkContext.defaultParallelism * tasks_per_partition))
        statuses = []
        if len(tasks):
            rows = [tuple(None if pd.isna(v) else (int(v) if c == "broker_id" else v) for c, v in zip(TASK_COLUMNS, r))
                    for r in tasks.itertuples(index=False)]
            tdf = spark.createDataFrame(rows, schema="snapshot_id string, spec string, log_dir string, "
                                                     "dir_name string, broker_id long, cluster string, "
                                                     "snapshot_time string, context string")
            t1 = time.perf_counter()
            statuses = (tdf.repartition(n).mapInPandas(scan_tasks(staging, kafka_version), schema=STATUS_SCHEMA)
                        .collect())
            timings["scan_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        spark.createDataFrame(brokers, schema="snapshot_id string, snapshot_time string, cluster string, "
                                              "broker_id long, spec string, log_dirs string, meta_version long, "
                                              "directory_ids string, clean_shutdown string, "
                                              "archive_members_ignored long") \
            .write.mode("overwrite").parquet(f"{staging}/brokers")
        batches = spark.read.schema(_spark_schema(SCHEMAS["batches"])).parquet(f"{staging}/batches")
        partitions = spark.read.schema(_spark_schema(SCHEMAS["partitions"])).parquet(f"{staging}/partitions")
        partitions = partitions.where("suffix IS NULL AND topic <> '__cluster_metadata'")
        bcols = ["cluster", "topic", "partition", "broker_id", "snapshot_id", "base_offset", "last_offset",
                 "partition_leader_epoch", "crc", "crc_valid", "records_count", "size_in_bytes", "producer_id",
                 "magic", "position"]
        pcols = ["cluster", "topic", "partition", "broker_id", "snapshot_id", "snapshot_time", "high_watermark",
                 "epoch_cache_written", "log_start_offset", "cleaner_offset", "suffix"]
        grouped_b = batches.select(*bcols).groupBy(*KEYS)
        grouped_p = partitions.select(*pcols).groupBy(*KEYS)
        verdicts = grouped_b.cogroup(grouped_p).applyInPandas(replay_verdicts(kafka_version),
                                                              schema=_spark_schema(SCHEMAS["verdicts"]))
        verdicts.write.mode("overwrite").parquet(f"{staging}/verdicts")
        divergence = batches.select(*bcols).groupBy(*KEYS).cogroup(partitions.select(*pcols).groupBy(*KEYS))
        divergence.applyInPandas(replay_divergence, schema=_spark_schema(SCHEMAS["divergence"])) \
            .write.mode("overwrite").parquet(f"{staging}/divergence")
        written = spark.read.parquet(f"{staging}/verdicts")
        summary = written.groupBy("cluster", "topic", "broker_id", "verdict").agg(
            {"records": "sum", "bytes": "sum", "partition": "count"}) \
            .withColumnRenamed("sum(records)", "records").withColumnRenamed("sum(bytes)", "bytes") \
            .withColumnRenamed("count(partition)", "partitions")
        summary.write.mode("overwrite").parquet(f"{staging}/summary")
        timings["replay_s"] = time.perf_counter() - t2
        # publish: replace the previous tables, then move the staged ones into place
        for name in _listdir(filesystem, out_path):
            if not name.startswith(".staging-"):
                _rmtree(filesystem, posixpath.join(out_path, name))
        for name in TABLES:
            src = posixpath.join(staging_path, name)
            if _exists(staging_fs, src):
                _move(filesystem, src, posixpath.join(out_path, name))
    finally:
        _rmtree(staging_fs, staging_path)
    failed = [s for s in statuses if s["status"] != "ok"]
    return {
        "snapshots": len(snapshots),
        "tasks": len(statuses),
        "failed_tasks": [dict(s.asDict()) for s in failed],
        "batches": sum(s["batches"] for s in statuses),
        "bytes": sum(s["bytes"] for s in statuses),
        "out": out,
        "timings": timings,
    }


def session(master: str | None = "local[*]", conf: dict[str, str] | None = None, app: str = "kforensics"):
    """A SparkSession (embedded ``local[*]`` unless told otherwise; ``None`` leaves the master to
    spark-submit); executors use this Python."""
    import sys

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
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    return b.getOrCreate()
