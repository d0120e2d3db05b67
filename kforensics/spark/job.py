"""The Spark job: plan on the driver, scan partition dirs on executors, replay per partition group.

Spark only distributes: the driver plans (lists snapshots, reads each log
dir's root files) with :func:`kforensics.scan.broker.plan_log_dir` and
builds one KRaft timeline per cluster from the metadata logs among the
snapshots (and ``metadata`` inputs), as ``kforensics replay`` does;
executors scan partition dirs with
:func:`kforensics.scan.partition.scan_partition` and write the same tables
as ``kforensics scan --out`` (batch headers streamed to Parquet); the
broker-level checks ``scan`` runs over a whole broker run on the driver over
the partitions table; and each (cluster, topic, partition) group is
replayed by :func:`kforensics.replay.group.replay_group` with its cluster's
timeline, the same function ``kforensics replay`` calls.  Output
(``--out``): ``brokers``, ``partitions``, ``segments``, ``batches``,
``epochs``, ``findings`` (scan, timeline and replay findings), ``files``,
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
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

import pandas as pd
import pyarrow as pa

from ..findings import FindingLog, finding
from ..log.file_kinds import METADATA_TOPIC, parse_partition_dir_name
from ..log.log_dir import find_log_dirs
from ..log.partition import PartitionLog, open_partition
from ..log.sources import resolve, split_uri
from ..outputs import refuse_output_in_evidence
from ..scan.broker import plan_log_dir
from ..scan.model import BrokerIdentity, PartitionContext, ScanReport
from ..scan.partition import scan_partition
from ..tables.replay_tables import (BATCH_COLUMNS, PARTITION_COLUMNS, divergence_rows, divergence_table,
                                    findings_rows_table, partition_path, replay_findings_table,
                                    replicas_from_frames, verdict_rows, verdicts_table)
from ..tables.scan_tables import REPORT_TABLES, BatchesWriter, write_table
from ..tables.schemas import SCHEMAS, fit
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


def check_output(out: str, snapshots: list[Snapshot], overwrite: bool,
                 metadata: list[Any] | dict[str | None, list[Any]] | None = None) -> None:
    """Refuse an output inside, onto or above any input (snapshots and metadata logs), and an existing one
    without ``overwrite``.

    Called before Spark starts: nothing has been created yet.
    """
    extra = [p for ps in metadata.values() for p in ps] if isinstance(metadata, dict) else [
        m[1] if isinstance(m, tuple) else m for m in (metadata or [])]
    refuse_output_in_evidence(out, [s.spec for s in snapshots] + [str(p) for p in extra])
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


def _write_findings(findings: list, staging: str, part: str, context: dict, filesystem=None) -> None:
    if findings:
        d = f"{staging.rstrip('/')}/findings"
        _mkdirs(filesystem, d)
        write_table(findings_rows_table(findings, context), f"{d}/{part}.parquet", filesystem)


@dataclass
class Plan:
    """What the driver read: the scan tasks, the brokers' rows, and the KRaft metadata logs found."""

    tasks: pd.DataFrame
    brokers: list[dict]
    #: per snapshot id: its context (snapshot id and time, cluster, broker id)
    contexts: dict[str, dict] = field(default_factory=dict)
    #: per snapshot id: its own metadata-log partitions (``scan`` checks the broker's replicas against them)
    snapshot_metadata: dict[str, list[PartitionLog]] = field(default_factory=dict)
    #: per cluster: the log dirs holding a metadata log (the controller's record ``replay`` reads)
    cluster_metadata: dict[str | None, list[Any]] = field(default_factory=dict)


def plan(snapshots: list[Snapshot], staging: str, filesystem=None) -> Plan:
    """Read every snapshot's listing and root files on the driver; the partition dirs become tasks."""
    tasks: list[dict] = []
    out = Plan(pd.DataFrame(columns=TASK_COLUMNS), [])
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
        out.contexts[snap.snapshot_id] = context
        report = ScanReport(broker, [], findings.findings(), files, checkpoints)
        _write_parts(report, staging, f"driver-{snap.snapshot_id}", context, filesystem)
        for p in plans:
            metadata_logs = [pd_ for pd_, _ in p.partitions if pd_.is_metadata_log and pd_.name.suffix is None]
            if metadata_logs:
                out.snapshot_metadata.setdefault(snap.snapshot_id, []).extend(metadata_logs)
                out.cluster_metadata.setdefault(cluster, []).append(p.log_dir)
            for pd_, pctx in p.partitions:
                tasks.append({
                    "snapshot_id": snap.snapshot_id, "spec": snap.spec, "log_dir": _relative(root, p.log_dir.path),
                    "dir_name": pd_.dir_name, "broker_id": broker_id, "cluster": cluster,
                    "snapshot_time": snap.snapshot_time, "context": json.dumps(asdict(pctx)),
                })
        out.brokers.append({**context, "spec": snap.spec, "log_dirs": json.dumps(broker.log_dirs),
                            "meta_version": broker.meta_version, "directory_ids": json.dumps(broker.directory_ids),
                            "clean_shutdown": json.dumps(broker.clean_shutdown),
                            "archive_members_ignored": untrusted})
    out.tasks = pd.DataFrame(tasks, columns=TASK_COLUMNS)
    return out


def metadata_by_cluster(metadata: list[Any] | dict[str | None, list[Any]] | None,
                        clusters: set[str | None]) -> dict[str | None, list[Any]]:
    """Explicit metadata inputs (``--metadata``) by cluster.

    Each input is a path, or a ``(cluster, path)`` pair that says its
    cluster (a dict of paths by cluster says it for all of them).  A plain
    path belongs to the cluster its log dir's meta.properties names, else to
    the snapshots' cluster when they are all of one; otherwise ``ValueError``
    (say ``CLUSTER=PATH``).  A path that does not exist raises
    ``FileNotFoundError``, before Spark runs anything.
    """
    from ..log.metadata_log import find_metadata_sources

    items = [(c, p) for c, ps in metadata.items() for p in ps] if isinstance(metadata, dict) else [
        m if isinstance(m, tuple) else (_UNSAID, m) for m in (metadata or [])]
    out: dict[str | None, list[Any]] = {}
    for cluster, path in items:
        named = {c for c in find_metadata_sources([path]).cluster_ids.values() if c is not None}
        if cluster is _UNSAID:
            if len(named) == 1:
                cluster = named.pop()
            elif len(clusters) == 1:
                cluster = next(iter(clusters))
            else:
                raise ValueError(f"metadata {path}: its cluster is not known (no meta.properties beside it) and the "
                                 f"snapshots are of {len(clusters)} clusters "
                                 f"({', '.join(sorted(map(str, clusters)))}); give CLUSTER=PATH")
        out.setdefault(cluster, []).append(path)
    return out


_UNSAID = object()


def build_timelines(plan_: Plan, metadata: dict[str | None, list[Any]], staging: str, filesystem=None
                    ) -> dict[str | None, Any]:
    """One KRaft timeline per cluster, from its snapshots' metadata logs and the explicit inputs, as ``replay``
    builds it; its findings go to the findings table with the cluster as context."""
    from ..kraft.timeline import build_timeline

    timelines: dict[str | None, Any] = {}
    clusters = sorted(set(plan_.cluster_metadata) | set(metadata), key=lambda c: (c is not None, str(c)))
    for i, cluster in enumerate(clusters):
        # as replay_all: the explicit inputs first, then the log dirs holding a metadata log
        inputs = list(metadata.get(cluster, [])) + list(plan_.cluster_metadata.get(cluster, []))
        context = {"snapshot_id": None, "snapshot_time": None, "cluster": cluster, "broker_id": None}
        try:
            tl = build_timeline(inputs)
        except Exception as e:  # noqa: BLE001 - an unreadable archive member: the cluster replays without it
            _write_findings([finding("SNAPSHOT_UNREADABLE", f"the metadata log could not be read: "
                                     f"{type(e).__name__}: {e}", file=", ".join(str(getattr(x, "path", x))
                                                                                  for x in inputs))],
                            staging, f"timeline-{i}", context, filesystem)
            continue
        timelines[cluster] = tl
        _write_findings(tl.findings, staging, f"timeline-{i}", context, filesystem)
    return timelines


# ----------------------------------------------------------------------------- broker-level checks
@dataclass
class PartitionRow:
    """A ``partitions`` table row as :func:`kforensics.scan.broker.name_truncated_topics` and
    :func:`~kforensics.scan.broker.check_against_timeline` read it (the attributes of a ``PartitionScan``)."""

    log_dir: str
    dir_name: str
    topic: str
    partition: int
    suffix: str | None
    topic_id: str | None
    epoch_cache_written: list[tuple[int, int]] | None
    epochs_seen: list[int]
    findings: list = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{self.log_dir.rstrip('/')}/{self.dir_name}"


CHECK_COLUMNS = ["snapshot_id", "log_dir", "dir_name", "topic", "partition", "suffix", "topic_id",
                 "epoch_cache_written", "epochs_seen"]
#: the scan tables whose rows carry the topic name ``scan`` corrects (``batches`` are written as they are read)
NAMED_TABLES = ("partitions", "segments", "epochs")


def _rows(frame: pd.DataFrame) -> list[PartitionRow]:
    out = []
    for r in frame.itertuples(index=False):
        cache = None if r.epoch_cache_written is None or (not isinstance(r.epoch_cache_written, str)
                                                          and pd.isna(r.epoch_cache_written)) else [
            tuple(e) for e in json.loads(r.epoch_cache_written)]
        seen = [] if r.epochs_seen is None or isinstance(r.epochs_seen, float) else [int(e) for e in r.epochs_seen]
        out.append(PartitionRow(r.log_dir, r.dir_name, r.topic, int(r.partition),
                                None if pd.isna(r.suffix) else r.suffix, None if pd.isna(r.topic_id) else r.topic_id,
                                cache, seen))
    return out


def broker_checks(plan_: Plan, staging: str, filesystem=None) -> int:
    """What ``scan`` checks over a whole broker, per snapshot, with the same functions: topic names of
    ``-delete``/``-stray`` dirs from the topic ids of live dirs (the scan tables then say the corrected name),
    and the replicas' epochs against the snapshot's own metadata log.  Runs on the driver over the partitions
    rows of the snapshots that need it (small: one row per partition dir).  Returns the number of names
    corrected."""
    import pyarrow.parquet as pq

    from ..scan.broker import check_against_timeline, name_truncated_topics

    suffixes = {(t.snapshot_id, getattr(parse_partition_dir_name(t.dir_name), "suffix", None))
                for t in plan_.tasks.itertuples(index=False)}
    wanted = {sid for sid, suffix in suffixes if suffix in ("delete", "stray")} | set(plan_.snapshot_metadata)
    if not wanted:
        return 0
    # the partitions rows of these snapshots only: one part per scanned dir, named after it
    _, staging_path = split_uri(staging)
    raw = {}
    parts = []
    for t in plan_.tasks.itertuples(index=False):
        if t.snapshot_id in wanted:
            raw[(t.snapshot_id, fit(t.dir_name, pa.string()))] = t.dir_name
            path = f"{staging_path.rstrip('/')}/partitions/{t.snapshot_id}--{t.dir_name}.parquet"
            if _exists(filesystem, path):
                parts.append(pq.read_table(path, columns=CHECK_COLUMNS, filesystem=filesystem))
    frame = pa.concat_tables(parts).to_pandas() if parts else pd.DataFrame(columns=CHECK_COLUMNS)
    corrected = 0
    for sid, group in frame.groupby("snapshot_id", sort=True):
        context = plan_.contexts[sid]
        rows = _rows(group)
        before = {r.dir_name: r.topic for r in rows}
        findings = FindingLog()
        name_truncated_topics(rows, findings)
        if sid in plan_.snapshot_metadata:
            check_against_timeline(rows, BrokerIdentity(node_id=context["broker_id"], cluster_id=context["cluster"]),
                                   findings, plan_.snapshot_metadata[sid])
        _write_findings(findings.findings() + [f for r in rows for f in r.findings], staging_path,
                        f"checks-{sid}", context, filesystem)
        for r in rows:
            if r.topic != before[r.dir_name]:
                _rename_topic(staging_path, f"{sid}--{raw.get((sid, r.dir_name), r.dir_name)}", r.topic, filesystem)
                corrected += 1
    return corrected


def _rename_topic(staging: str, part: str, topic: str, filesystem=None) -> None:
    import pyarrow.parquet as pq

    for name in NAMED_TABLES:
        path = f"{staging.rstrip('/')}/{name}/{part}.parquet"
        if not _exists(filesystem, path):
            continue
        t = pq.read_table(path, filesystem=filesystem)
        i = t.schema.get_field_index("topic")
        t = t.set_column(i, t.schema.field(i), pa.array([topic] * len(t), pa.string()))
        write_table(t, path, filesystem)


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


def _union_schema() -> pa.Schema:
    fields: dict[str, pa.Field] = {"kind": pa.field("kind", pa.string())}
    for name in ("verdicts", "divergence", "findings"):
        for f in SCHEMAS[name]:
            if f.name in fields:
                assert fields[f.name].type == f.type, f"{name}.{f.name}: {f.type} vs {fields[f.name].type}"
            else:
                fields[f.name] = f
    return pa.schema(list(fields.values()))


#: what the replay of a partition group returns: verdict, divergence and finding rows in one frame, told apart
#: by ``kind`` (one pass over the groups; the tables are split from it)
REPLAY_SCHEMA = _union_schema()
REPLAY_KINDS = {"verdict": "verdicts", "divergence": "divergence", "finding": "findings"}


def replay_frames(batches: pd.DataFrame, partitions: pd.DataFrame, kafka_version: str = "latest",
                  timeline: Any = None) -> dict[str, pa.Table]:
    """The ``verdicts``, ``divergence`` and ``findings`` rows of one (cluster, topic, partition) group, from
    :func:`kforensics.replay.group.replay_group`: the same replay as ``kforensics replay``."""
    from ..replay.group import replay_group

    first = partitions.iloc[0]
    cluster, topic, partition = first["cluster"], first["topic"], int(first["partition"])
    cluster = None if cluster is None or (not isinstance(cluster, str) and pd.isna(cluster)) else cluster
    replicas = replicas_from_frames(batches, partitions)
    paths = {partition_path(r): r.snapshot_id for r in partitions.itertuples(index=False)}
    snapshots = {rep.broker_id: paths.get(rep.source) for rep in replicas}
    rp = replay_group(topic, partition, replicas, kafka_version=kafka_version, timeline=timeline)
    return {"verdicts": verdicts_table(verdict_rows(rp, cluster, snapshots)),
            "divergence": divergence_table(divergence_rows(rp, cluster)),
            "findings": replay_findings_table(rp, cluster)}


def _union(tables: dict[str, pa.Table]) -> pa.Table:
    parts = []
    for kind, name in REPLAY_KINDS.items():
        t = tables.get(name)
        if t is None or not len(t):
            continue
        cols = [pa.array([kind] * len(t), pa.string()) if f.name == "kind" else
                (t.column(f.name) if f.name in t.schema.names else pa.nulls(len(t), f.type)) for f in REPLAY_SCHEMA]
        parts.append(pa.Table.from_arrays(cols, schema=REPLAY_SCHEMA))
    return pa.concat_tables(parts) if parts else REPLAY_SCHEMA.empty_table()


def replay_groups(kafka_version: str, timelines: Any = None):
    """The cogroup function: each group's replay rows (:data:`REPLAY_SCHEMA`).

    ``timelines`` maps cluster to its KRaft timeline (or is a Spark broadcast of that map).
    """

    def fn(batches: pd.DataFrame, partitions: pd.DataFrame) -> pd.DataFrame:
        if partitions.empty:
            return REPLAY_SCHEMA.empty_table().to_pandas()
        tls = getattr(timelines, "value", timelines) or {}
        cluster = partitions["cluster"].iloc[0]
        tl = tls.get(None if not isinstance(cluster, str) and pd.isna(cluster) else cluster)
        # integers stay integers (not floats beside nulls): offsets above 2**53 keep every digit
        return _union(replay_frames(batches, partitions, kafka_version, tl)).to_pandas(integer_object_nulls=True)

    return fn


def _spark_schema(arrow_schema) -> str:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema)


# ----------------------------------------------------------------------------- the job
def run(spark, snapshots: list[Snapshot], out: str, *, kafka_version: str = "latest", overwrite: bool = False,
        tasks_per_partition: int = 4, metadata: list[Any] | dict[str | None, list[Any]] | None = None
        ) -> dict[str, Any]:
    """Run the whole pipeline; returns a summary dict (counts, failed tasks).

    ``metadata``: KRaft metadata logs to take leaders and epochs from, besides
    those found among the snapshots (``kforensics replay --metadata``): paths,
    ``(cluster, path)`` pairs, or a dict of paths by cluster (see
    :func:`metadata_by_cluster`).
    """
    check_output(out, snapshots, overwrite, metadata)
    filesystem, out_path = split_uri(out)
    staging = posixpath.join(out.rstrip("/"), f".staging-{uuid.uuid4().hex[:12]}")
    staging_fs, staging_path = split_uri(staging)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    statuses = []
    timelines_bc = None
    corrected = 0
    try:
        planned = plan(snapshots, staging_path, staging_fs)
        tasks = planned.tasks
        explicit = metadata_by_cluster(metadata, {c["cluster"] for c in planned.contexts.values()})
        timelines = build_timelines(planned, explicit, staging_path, staging_fs)
        timings["plan_s"] = time.perf_counter() - t0
        n = max(1, min(len(tasks), spark.sparkContext.defaultParallelism * tasks_per_partition))
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
        if len(tasks):
            corrected = broker_checks(planned, staging, staging_fs)
        timings["checks_s"] = time.perf_counter() - t2
        t3 = time.perf_counter()
        spark.createDataFrame(planned.brokers, schema="snapshot_id string, snapshot_time string, cluster string, "
                                                      "broker_id long, spec string, log_dirs string, "
                                                      "meta_version long, directory_ids string, "
                                                      "clean_shutdown string, archive_members_ignored long") \
            .write.mode("overwrite").parquet(f"{staging}/brokers")
        _mkdirs(staging_fs, f"{staging_path}/batches")
        _mkdirs(staging_fs, f"{staging_path}/partitions")
        batches = spark.read.schema(_spark_schema(SCHEMAS["batches"])).parquet(f"{staging}/batches")
        partitions = spark.read.schema(_spark_schema(SCHEMAS["partitions"])).parquet(f"{staging}/partitions")
        partitions = partitions.where(f"suffix IS NULL AND topic <> '{METADATA_TOPIC}'")
        timelines_bc = spark.sparkContext.broadcast(timelines)
        replay = batches.select(*BATCH_COLUMNS).groupBy(*KEYS).cogroup(
            partitions.select(*PARTITION_COLUMNS).groupBy(*KEYS)).applyInPandas(
            replay_groups(kafka_version, timelines_bc), schema=_spark_schema(REPLAY_SCHEMA))
        replay.write.mode("overwrite").parquet(f"{staging}/_replay")
        replayed = spark.read.schema(_spark_schema(REPLAY_SCHEMA)).parquet(f"{staging}/_replay")
        for kind, name in REPLAY_KINDS.items():
            rows_ = replayed.where(replayed["kind"] == kind).select(*SCHEMAS[name].names)
            rows_.write.mode("append" if name == "findings" else "overwrite").parquet(f"{staging}/{name}")
        written = spark.read.parquet(f"{staging}/verdicts")
        summary = written.groupBy("cluster", "topic", "broker_id", "verdict").agg(
            {"records": "sum", "bytes": "sum", "partition": "count"}) \
            .withColumnRenamed("sum(records)", "records").withColumnRenamed("sum(bytes)", "bytes") \
            .withColumnRenamed("count(partition)", "partitions")
        summary.write.mode("overwrite").parquet(f"{staging}/summary")
        timings["replay_s"] = time.perf_counter() - t3
        # publish: replace the previous tables, then move the staged ones into place
        for name in _listdir(filesystem, out_path):
            if not name.startswith(".staging-"):
                _rmtree(filesystem, posixpath.join(out_path, name))
        for name in TABLES:
            src = posixpath.join(staging_path, name)
            if _exists(staging_fs, src):
                _move(filesystem, src, posixpath.join(out_path, name))
    finally:
        if timelines_bc is not None:
            timelines_bc.unpersist()
        _rmtree(staging_fs, staging_path)
    failed = [s for s in statuses if s["status"] != "ok"]
    return {
        "snapshots": len(snapshots),
        "tasks": len(statuses),
        "failed_tasks": [dict(s.asDict()) for s in failed],
        "batches": sum(s["batches"] for s in statuses),
        "bytes": sum(s["bytes"] for s in statuses),
        "clusters_with_metadata": sorted(str(c) for c in timelines),
        "topic_names_corrected": corrected,
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
