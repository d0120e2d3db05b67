"""The Spark job: plan on the driver, scan partition dirs on executors, replay per partition group.

Spark only distributes: the driver plans (lists snapshots, reads each log
dir's root files) with :func:`kforensics.scan.broker.plan_log_dir` and
builds one KRaft timeline per cluster from the metadata logs among the
snapshots (and ``metadata`` inputs), as ``kforensics replay`` does;
executors scan partition dirs with
:func:`kforensics.scan.partition.scan_partition` (transactions checked
against the snapshot's own ``__transaction_state``, as ``scan`` checks them)
and write the same tables as ``kforensics scan --out`` (batch headers
streamed to Parquet), and read each ``__consumer_offsets`` copy's committed
offsets (:func:`kforensics.consumers.committed_offsets.read_copy`); the
broker-level checks ``scan`` runs over a whole broker run on the driver over
the partitions table; the driver merges the committed offsets per cluster;
and each (cluster, topic, partition) group is replayed by
:func:`kforensics.replay.group.replay_group` with its cluster's timeline, the
same function ``kforensics replay`` calls, followed by the same consumer
impact (:func:`kforensics.consumers.impact.partition_impact`) and
transactions after the replay
(:func:`kforensics.consumers.read_committed.partition_after_replay`).

Output (``--out``): :data:`TABLES`.  Every table is written by pyarrow, part
by part, with ``kforensics.schema_version`` in its metadata, under a staging
directory that is moved into place at the end, so an output directory never
holds a mix of two runs.  A task that fails becomes a ``SCAN_FAILED``
finding and a partition group whose replay fails a ``REPLAY_FAILED`` one;
the job goes on, and the summary it returns counts them.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import posixpath
import re
import time
import traceback
import uuid
from dataclasses import asdict, dataclass, field
from types import SimpleNamespace
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
from ..tables.replay_tables import (PARTITION_COLUMNS, divergence_rows, divergence_table,
                                    findings_rows_table, partition_path, replica_rows,
                                    replicas_from_frames, verdict_rows, verdicts_table)
from ..tables.scan_tables import REPORT_ROWS, REPORT_TABLES, write_table
from ..tables.schemas import CONTEXT, SCHEMAS, fit, fit_rows, table as table_of
from .batch_files import DirBatches, TaskBatches
from .inputs import Snapshot
from .window import (INLINE_ROWS, WINDOW_COLUMNS, Sketch, SketchSink, group_replicas,
                     replica_of_tables)

#: the ``__consumer_offsets`` and ``__transaction_state`` topics (their copies are read for the impact analyses)
CONSUMER_OFFSETS, TRANSACTION_STATE = "__consumer_offsets", "__transaction_state"
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
TASK_COLUMNS = ["snapshot_id", "log_dir", "dir_name", "raw", "broker_id", "cluster", "snapshot_time", "context",
                "part"]
TASK_SCHEMA = ("snapshot_id string, log_dir string, dir_name string, raw string, broker_id int, cluster string, "
               "snapshot_time string, context string, part string")
STATUS_COLUMNS = ["snapshot_id", "dir_name", "status", "error", "batches", "bytes", "payload", "cluster", "topic",
                  "partition", "sketch", "findings", "check"]
STATUS_SCHEMA = ("snapshot_id string, dir_name string, status string, error string, batches long, bytes long, "
                 "payload binary, cluster string, topic string, partition int, sketch binary, findings string, "
                 "check binary")
#: the status columns the driver collects (the replica sketches go from executor to executor)
COLLECTED = STATUS_COLUMNS[:10] + ["findings", "check"]
GROUP_COLUMNS = ["cluster", "topic", "partition", "status", "error", "verdicts", "affected", "findings", "summary"]
GROUP_SCHEMA = ("cluster string, topic string, partition int, status string, error string, verdicts long, "
                "affected boolean, findings string, summary string")
KEYS = ["cluster", "topic", "partition"]
#: where the batch rows go when the ``batches`` table is not wanted (the replay still reads them; never published)
WORK_BATCHES = ".work-batches"
#: tables a run writes unless told otherwise (``--tables``)
DEFAULT_TABLES = None
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def parse_tables(tables: Any) -> tuple[str, ...]:
    """The tables to write: all (None), or the names given (a list, or one comma-separated string); an unknown
    name is a ``ValueError`` naming the known ones."""
    if tables is None:
        return TABLES
    names = [n.strip() for n in (tables.split(",") if isinstance(tables, str) else
                                 [x for t in tables for x in str(t).split(",")]) if n.strip()]
    unknown = [n for n in names if n not in TABLES]
    if unknown or not names:
        raise ValueError(f"unknown table(s) {', '.join(unknown) or '(none given)'}; the tables are "
                         f"{', '.join(TABLES)}")
    return tuple(n for n in TABLES if n in names)


def hive_value(v: Any) -> str:
    """A partition value as a hive-style directory name holds it (percent-encoded; null as Spark writes it)."""
    from urllib.parse import quote

    return HIVE_NULL if v is None else quote(str(v).encode("utf-8", "surrogatepass"), safe="")


def hive_dir(name: str, cluster: Any, topic: Any = None) -> str:
    """``name/cluster=C/topic=T`` (``name/cluster=C`` for a table without topics)."""
    d = f"{name}/cluster={hive_value(cluster)}"
    return d if "topic" not in TABLE_SCHEMAS[name].names else f"{d}/topic={hive_value(topic)}"


class OutputExists(Exception):
    """An output that holds something already (refused without ``--overwrite``), or that is not a directory."""


class MetadataInputError(ValueError):
    """A ``--metadata`` input that does not exist or whose cluster is not known (a usage error)."""


# ----------------------------------------------------------------------------- names
def _hex(text: str) -> str:
    """A name as it is on disk (undecodable bytes held as surrogates), losslessly as hex (Spark strings are UTF-8)."""
    return text.encode("utf-8", "surrogateescape" if _escaped(text) else "surrogatepass").hex()


def _unhex(h: str) -> str:
    return bytes.fromhex(h).decode("utf-8", "surrogateescape")


def _escaped(text: str) -> bool:
    return any(0xDC80 <= ord(c) <= 0xDCFF for c in text) and not any(
        0xD800 <= ord(c) <= 0xDFFF and not 0xDC80 <= ord(c) <= 0xDCFF for c in text)


def _safe(text: str, limit: int = 100) -> str:
    """A file-name-safe form of ``text`` (distinct texts stay distinct: a changed one carries a hash)."""
    s = re.sub(r"[^A-Za-z0-9._=-]", "_", text)
    if s == text and len(s) <= limit:
        return s
    return f"{s[:limit]}~{hashlib.sha1(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


def task_part(snapshot_id: str, dir_name: str) -> str:
    """The part name of one partition dir's table files (never hidden: readers skip names starting . or _)."""
    return f"s-{_safe(snapshot_id)}--{_safe(dir_name)}"


def _group_part(cluster: Any, topic: str, partition: Any) -> str:
    key = json.dumps([cluster, topic, partition], default=str)
    return "g-" + hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def _none(v: Any) -> Any:
    """``v``, or None for a missing value (None, NaN, NA); numpy scalars become Python values."""
    if v is None or isinstance(v, (str, bytes, dict, list, tuple)) or hasattr(v, "__len__"):
        return v
    if pd.isna(v):
        return None
    return v.item() if hasattr(v, "item") else v


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

        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
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


def evidence_inputs(snapshots: list[Snapshot], metadata: list[Any] | dict[str | None, list[Any]] | None = None,
                    manifest: str | None = None) -> list[str]:
    """Every input location: the snapshots, the metadata logs and the manifest."""
    extra = [p for ps in metadata.values() for p in ps] if isinstance(metadata, dict) else [
        m[1] if isinstance(m, tuple) else m for m in (metadata or [])]
    return [s.spec for s in snapshots] + [str(p) for p in extra] + ([manifest] if manifest else [])


def check_output(out: str, snapshots: list[Snapshot], overwrite: bool,
                 metadata: list[Any] | dict[str | None, list[Any]] | None = None, manifest: str | None = None
                 ) -> None:
    """Refuse an output inside, onto or above any input (snapshots, metadata logs, the manifest), an existing one
    without ``overwrite``, and one holding anything but the tables of an earlier run (``overwrite`` replaces
    those tables only).

    Call it before Spark starts: it reads nothing but the output's listing and creates nothing.
    """
    refuse_output_in_evidence(out, evidence_inputs(snapshots, metadata, manifest))
    filesystem, out_path = split_uri(out)
    if filesystem is None and os.path.lexists(out_path) and not os.path.isdir(out_path):
        raise OutputExists(f"{out} exists and is not a directory")
    existing = [n for n in _listdir(filesystem, out_path) if not n.startswith(".")]
    if existing and not overwrite:
        raise OutputExists(f"{out} already holds {', '.join(existing[:5])}; use --overwrite to replace it")
    foreign = [n for n in existing if n not in TABLES]
    if foreign:
        raise OutputExists(f"{out} holds {', '.join(foreign[:5])}, which are not tables of a kforensics run; "
                           "--overwrite replaces only those: choose a new or empty directory")


# ----------------------------------------------------------------------------- driver planning
def _relative(root, path) -> str:
    s, r = str(path), str(root)
    return s[len(r):].lstrip("/") if s.startswith(r) else s


def _report_tables(report: ScanReport, context: dict) -> dict[str, pa.Table]:
    """The report tables ``scan --out`` writes (all but ``batches``) of one report."""
    return {name: make(report, context) for name, make in REPORT_TABLES.items()}


def _report_rows(report: ScanReport, context: dict) -> dict[str, list[dict]]:
    """The rows of :func:`_report_tables`, each fitted to its table's schema (rows, not tables: a task gathers the
    rows of all its dirs and builds each table once)."""
    return {name: fit_rows(name, make(report, context)) for name, make in REPORT_ROWS.items()}


def _write_parts(report: ScanReport, staging: str, part: str, context: dict, filesystem=None) -> dict[str, pa.Table]:
    out = _report_tables(report, context)
    for name, t in out.items():
        _write(name, t, staging, part, filesystem)
    return out


def sketch_row(fitted: dict) -> dict:
    """The :data:`PARTITION_COLUMNS` of a ``partitions`` row fitted to its schema (see
    :func:`kforensics.tables.schemas.fit_rows`): what the table would give back for them."""
    return {c: fitted[c] for c in PARTITION_COLUMNS}


def make_sketch(partition: dict, sink: SketchSink, scan: Any, batches: str | None, filesystem=None) -> Sketch:
    """What the replay stage needs of a scanned replica: its partition row (fitted, as in the ``partitions``
    table) and summary, and the replica itself when it is small (else where its batch rows are)."""
    import pyarrow.parquet as pq

    row = sketch_row(partition)
    sketch = Sketch(row, sink.summary(scan), rows=sink.rows, batches=batches if sink.rows else None)
    if sink.rows <= INLINE_ROWS:
        # the rows the sink kept as they streamed by (the file is not read back)
        sketch.replica = sink.replica(row)
        if sketch.replica is None:
            sketch.replica = replica_of_tables(
                [pq.read_table(batches, columns=WINDOW_COLUMNS, filesystem=filesystem)] if sink.rows else [], row)
    return sketch


def _write(name: str, t: pa.Table, staging: str, part: str, filesystem=None) -> None:
    """Write a table's rows under ``staging/name/cluster=C[/topic=T]/part.parquet``, one file per cluster and
    topic (the published layout: every file whole, rows keeping their ``cluster`` and ``topic`` columns; rows of
    one cluster and topic in their order)."""
    if not len(t):
        return
    schema = TABLE_SCHEMAS[name]
    keys = ["cluster"] + (["topic"] if "topic" in schema.names else [])
    cols = [t.column(k).to_pylist() for k in keys]
    combos = list(zip(*cols))
    first = combos[0]
    if all(c == first for c in combos):
        runs = [(first, t)]
    else:
        t = t.append_column("_i", pa.array(range(len(t)), pa.int64())).sort_by(
            [(k, "ascending") for k in keys] + [("_i", "ascending")])
        t = t.drop_columns(["_i"])
        cols = [t.column(k).to_pylist() for k in keys]
        runs, start = [], 0
        for i in range(1, len(t) + 1):
            if i == len(t) or any(c[i] != c[start] for c in cols):
                runs.append((tuple(c[start] for c in cols), t.slice(start, i - start)))
                start = i
    for key, rows in runs:
        d = f"{staging.rstrip('/')}/{hive_dir(name, *key)}"
        _mkdirs(filesystem, d)
        write_table(rows, f"{d}/{part}.parquet", filesystem)


def _write_findings(findings: list, staging: str, part: str, context: dict, filesystem=None) -> None:
    if findings:
        _write("findings", findings_rows_table(findings, context), staging, part, filesystem)


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
    #: per snapshot id: what executors need (spec, its log dirs, whether it holds ``__transaction_state``)
    snapshots: dict[str, dict] = field(default_factory=dict)
    #: per snapshot id: what the driver reported about it (keys of :func:`kforensics.scan.broker._key`)
    reported: dict[str, set] = field(default_factory=dict)
    #: per snapshot id: the findings the driver found about it (archive, log dirs, root files)
    findings: dict[str, list] = field(default_factory=dict)


def plan(snapshots: list[Snapshot], staging: str, filesystem=None) -> Plan:
    """Read every snapshot's listing and root files on the driver; the partition dirs become tasks."""
    from ..scan.broker import _key

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
            archive = getattr(root, "archive", None)
            untrusted = getattr(archive, "untrusted_count", 0)
            log_dirs = find_log_dirs(root)
            if not log_dirs:
                findings.add(finding("NO_LOG_DIR", "no broker log dir found in this snapshot", file=snap.spec))
                if archive is not None and not archive.reported:
                    # what the archive lost (a truncated archive may hold nothing whole): as plan_log_dir says it
                    archive.reported = True
                    findings.extend(archive.findings())
            plans = [plan_log_dir(d, broker, findings, files, checkpoints) for d in log_dirs]
            # members found damaged while the driver read them (root files), as scan_log_dirs reports them at the
            # end; those under a partition dir are the executor's that scans it
            known = {_key(f) for f in findings}
            under = [tuple(getattr(pd_.path, "parts", ())) for p in plans for pd_, _ in p.partitions]
            findings.extend(f for f in archive_damage(archive, None, under) if _key(f) not in known)
        except Exception as e:  # noqa: BLE001 - a broken archive or unreachable filesystem is a finding
            findings.add(finding("SNAPSHOT_UNREADABLE", f"{type(e).__name__}: {e}", file=snap.spec))
        broker_id = snap.broker_id if snap.broker_id is not None else broker.node_id
        broker_id = fit(broker_id, pa.int32())
        cluster = snap.cluster or broker.cluster_id
        context = {"snapshot_id": snap.snapshot_id, "snapshot_time": snap.snapshot_time, "cluster": cluster,
                   "broker_id": broker_id}
        out.contexts[snap.snapshot_id] = context
        report = ScanReport(broker, [], findings.findings(), files, checkpoints)
        out.findings[snap.snapshot_id] = report.findings
        out.reported[snap.snapshot_id] = {_key(f) for f in report.findings}
        _write_parts(report, staging, f"d-{_safe(snap.snapshot_id)}", context, filesystem)
        has_txn_state = False
        for p in plans:
            metadata_logs = [pd_ for pd_, _ in p.partitions if pd_.is_metadata_log and pd_.name.suffix is None]
            if metadata_logs:
                out.snapshot_metadata.setdefault(snap.snapshot_id, []).extend(metadata_logs)
                out.cluster_metadata.setdefault(cluster, []).append(p.log_dir)
            log_dir = _relative(root, p.log_dir.path)
            for pd_, pctx in p.partitions:
                has_txn_state |= pd_.topic == TRANSACTION_STATE and pd_.name.suffix is None
                tasks.append({
                    "snapshot_id": snap.snapshot_id, "log_dir": fit(log_dir, pa.string()),
                    "dir_name": fit(pd_.dir_name, pa.string()), "raw": json.dumps([_hex(log_dir), _hex(pd_.dir_name)]),
                    "broker_id": broker_id, "cluster": cluster, "snapshot_time": snap.snapshot_time,
                    "context": json.dumps(asdict(pctx)), "part": task_part(snap.snapshot_id, pd_.dir_name),
                })
        suffixed = any(pd_.name.suffix in ("delete", "stray") for p in plans for pd_, _ in p.partitions)
        out.snapshots[snap.snapshot_id] = {
            "spec": snap.spec, "log_dirs": [_hex(_relative(root, p.log_dir.path)) for p in plans],
            "transaction_state": has_txn_state,
            # whether the broker checks read this snapshot's partition rows (see broker_checks)
            "checks": suffixed or snap.snapshot_id in out.snapshot_metadata}
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
                            staging, f"t-{i}", context, filesystem)
            continue
        timelines[cluster] = tl
        _write_findings(tl.findings, staging, f"t-{i}", context, filesystem)
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
        cache = _none(r.epoch_cache_written)
        cache = None if cache is None else [tuple(e) for e in json.loads(cache)]
        seen = [] if _none(r.epochs_seen) is None else [int(e) for e in r.epochs_seen if _none(e) is not None]
        partition = _none(r.partition)
        out.append(PartitionRow(r.log_dir, r.dir_name, r.topic, -1 if partition is None else int(partition),
                                _none(r.suffix), _none(r.topic_id), cache, seen))
    return out


def _finding_keys(rows: Any) -> set:
    """The :func:`kforensics.scan.broker._key` of each row of a findings table (rows with its columns as
    attributes: a frame's ``itertuples()``, or namespaces)."""
    from ..scan.broker import _key

    def frozen(v: Any) -> Any:
        return tuple(frozen(x) for x in v) if isinstance(v, list) else v

    keys = set()
    for r in rows:
        facts = json.loads(r.facts) if isinstance(r.facts, str) else {}
        facts = {k: frozen(v) for k, v in facts.items()} if isinstance(facts, dict) else {}
        keys.add(_key(SimpleNamespace(code=r.code, file=_none(r.file), facts=facts,
                                      position=None if _none(r.position) is None else int(r.position),
                                      line=None if _none(r.line) is None else int(r.line))))
    return keys


def broker_checks(plan_: Plan, staging: str, filesystem=None, statuses: list | None = None) -> int:
    """What ``scan`` checks over a whole broker, per snapshot, with the same functions: topic names of
    ``-delete``/``-stray`` dirs from the topic ids of live dirs (the scan tables then say the corrected name),
    and the replicas' epochs against the snapshot's own metadata log, whose timeline findings are reported
    where the scan of the snapshot has not reported them already (as :func:`~kforensics.scan.broker.scan_log_dirs`
    does).  Runs on the driver over the partitions rows the scan tasks returned (``statuses``: their ``check``
    column) of the snapshots that need it (small: one row per partition dir); then lays out the scan tables of
    ``-delete``/``-stray`` dirs (:data:`PENDING`) by their corrected topic.  Returns the number of names
    corrected."""
    from ..kraft.timeline import build_timeline
    from ..scan.broker import _key, check_against_timeline, name_truncated_topics

    _, staging_path = split_uri(staging)
    wanted = {sid for sid, info in plan_.snapshots.items() if info.get("checks")}
    order = {(t.snapshot_id, t.dir_name): i for i, t in enumerate(plan_.tasks.itertuples(index=False))}
    checked: dict[str, list[tuple[int, list, set]]] = {}
    for st in statuses or []:
        if st.get("check") is not None:
            rows, keys = pickle.loads(st["check"])
            checked.setdefault(st["snapshot_id"], []).append((order.get((st["snapshot_id"], st["dir_name"]), 0),
                                                              rows, keys))
    renamed: dict[str, str] = {}
    for sid in sorted(wanted):
        items = sorted(checked.get(sid, []), key=lambda x: x[0])  # in the plan's order, as scan reads them
        frame = pd.DataFrame([r for _, rows, _ in items for r in rows], columns=CHECK_COLUMNS)
        context = plan_.contexts[sid]
        rows = _rows(frame)
        part_of = {fit(_unhex(json.loads(t.raw)[1]), pa.string()): t.part for t in plan_.tasks.itertuples(index=False)
                   if t.snapshot_id == sid}
        before = {r.dir_name: r.topic for r in rows}
        findings = FindingLog()
        name_truncated_topics(rows, findings)
        timeline = None
        if sid in plan_.snapshot_metadata:
            timeline = build_timeline(plan_.snapshot_metadata[sid])
            check_against_timeline(rows, BrokerIdentity(node_id=context["broker_id"], cluster_id=context["cluster"]),
                                   findings, timeline)
        new = findings.findings() + [f for r in rows for f in r.findings]
        if timeline is not None:
            # the timeline reads the metadata segments and snapshots the scan has read: each finding once
            seen = set(plan_.reported.get(sid, set())) | {_key(f) for f in new}
            for _, _, keys in items:
                seen |= keys
            new += [f for f in timeline.findings if _key(f) not in seen]
        _write_findings(new, staging_path, f"c-{_safe(sid)}", context, filesystem)
        for r in rows:
            if r.topic != before[r.dir_name]:
                renamed[part_of[r.dir_name]] = r.topic
    place_pending(staging_path, renamed, filesystem)
    return len(renamed)


def place_pending(staging: str, renamed: dict[str, str], filesystem=None) -> None:
    """The scan tables kept apart (:data:`PENDING`), their topic corrected where ``renamed`` (part -> topic)
    says, laid out by cluster and topic."""
    import pyarrow.parquet as pq

    for name in NAMED_TABLES:
        d = f"{staging.rstrip('/')}/{PENDING}/{name}"
        for f in _listdir(filesystem, d):
            if not f.endswith(".parquet"):
                continue
            part = f[:-len(".parquet")]
            t = pq.read_table(f"{d}/{f}", filesystem=filesystem)
            if part in renamed:
                i = t.schema.get_field_index("topic")
                t = t.set_column(i, t.schema.field(i), pa.array([renamed[part]] * len(t), pa.string()))
            _write(name, t, staging, part, filesystem)
    _rmtree(filesystem, f"{staging.rstrip('/')}/{PENDING}")


def _member(name: str) -> str:
    return "/".join(p for p in name.split("/") if p not in (".", ""))


def archive_damage(archive: Any, under: tuple[str, ...] | None, outside: list[tuple[str, ...]] = ()) -> list:
    """The archive's findings about members whose data turned out damaged when they were read
    (:meth:`~kforensics.log.sources.TarArchive.findings`): those under the directory ``under`` (a partition dir
    an executor scanned), or with ``under`` None those under none of ``outside`` (read by the driver: root
    files)."""
    if archive is None:
        return []
    out = []
    for f in archive.findings():
        if f.code != "ARCHIVE_DAMAGED" or f.position is None or "member" not in f.facts:
            continue
        member = _member(str(f.facts["member"]))
        if under is not None:
            if member.startswith("/".join(under) + "/"):
                out.append(f)
        elif not any(member.startswith("/".join(d) + "/") for d in outside):
            out.append(f)
    return out


# ----------------------------------------------------------------------------- executors
_ROOTS: dict[str, Any] = {}
_COORDINATORS: dict[Any, Any] = {}


def _root(spec: str):
    # one archive index / filesystem handle per executor process and snapshot
    if spec not in _ROOTS:
        _ROOTS[spec] = resolve(spec)
    return _ROOTS[spec]


def _snapshot_coordinator(snapshot_id: str, info: dict) -> Any:
    """The transaction coordinator's view of the snapshot's own ``__transaction_state`` (read on first use, once per
    executor process), as ``scan`` checks a broker's transactions; None when the snapshot holds none."""
    from ..scan.partition import CoordinatorSource

    if not info.get("transaction_state"):
        return None
    key = (snapshot_id, info["spec"])
    if key not in _COORDINATORS:
        root = _root(info["spec"])
        dirs = [root / _unhex(d) if d else root for d in info.get("log_dirs", [])]
        _COORDINATORS[key] = CoordinatorSource({None: dirs})
    return _COORDINATORS[key]


def _add_findings(have: list, extra: list) -> list:
    """``extra`` findings not already in ``have`` (a second reader of the same files: each reported once)."""
    seen = {(f.code, f.file, f.position) for f in have}
    out = []
    for f in extra:
        if (f.code, f.file, f.position) not in seen:
            seen.add((f.code, f.file, f.position))
            out.append(f)
    return out


#: rows of one table a task holds as dicts before they become an Arrow table (memory stays bounded)
GATHER_ROWS = 4096


class Gathered:
    """One Spark task's report rows, gathered and written once per table (a file per cluster and topic:
    :func:`_write`) when the task ends; the ``batches`` rows go to their own files meanwhile.  Building a table
    per partition dir would cost more than scanning a small one."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict]] = {}
        self.tables: dict[str, list[pa.Table]] = {}

    def add(self, rows: dict[str, list[dict]]) -> None:
        for name, rs in rows.items():
            if rs:
                held = self.rows.setdefault(name, [])
                held += rs
                if len(held) >= GATHER_ROWS:
                    self.tables.setdefault(name, []).append(table_of(name, held, fitted=True))
                    self.rows[name] = []

    def write(self, staging_path: str, part: str, filesystem=None) -> None:
        for name, rs in self.rows.items():
            if rs:
                self.tables.setdefault(name, []).append(table_of(name, rs, fitted=True))
        for name, ts in self.tables.items():
            _write(name, pa.concat_tables(ts) if len(ts) > 1 else ts[0], staging_path, part, filesystem)
        self.rows, self.tables = {}, {}


#: where the scan tables of ``-delete`` and ``-stray`` dirs wait for the broker checks (their topic names may be
#: corrected: :func:`broker_checks`) before they are laid out by topic
PENDING = ".pending"


def _severities(rows: list[dict]) -> str | None:
    """A findings table's rows per severity, as JSON (what the summary counts)."""
    if not rows:
        return None
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r["severity"])] = counts.get(str(r["severity"]), 0) + 1
    return json.dumps(counts)


def _keep(rows: dict[str, list[dict]], gathered: Gathered | None, staging_path: str, part: str, filesystem,
          pending: bool = False) -> None:
    """A dir's report rows: gathered for the task's files (``gathered``), or written now; those whose topic the
    broker checks may correct (``pending``) kept apart under :data:`PENDING`."""
    if pending:
        for name in NAMED_TABLES:
            rs = rows.pop(name)
            if rs:
                d = f"{staging_path}/{PENDING}/{name}"
                _mkdirs(filesystem, d)
                write_table(table_of(name, rs, fitted=True), f"{d}/{part}.parquet", filesystem)
    if gathered is not None:
        gathered.add(rows)
    else:
        for name, rs in rows.items():
            _write(name, table_of(name, rs, fitted=True), staging_path, part, filesystem)


def scan_task(t: Any, info: dict, staging_path: str, filesystem, kafka_version: str,
              batches_dir: str = "batches", gathered: Gathered | None = None,
              task_batches: TaskBatches | None = None) -> tuple:
    """Scan one task's partition dir: its batch rows streamed to their file, its other table rows gathered
    (``gathered``; written now without it); its status row (:data:`STATUS_COLUMNS`: with the pickled committed
    offsets of a ``__consumer_offsets`` copy, its findings per severity, and what the broker checks read of it
    when its snapshot needs them)."""
    from ..scan.partition import transaction_coordinator

    bid = _none(t.broker_id)
    bid = None if bid is None else int(bid)
    context = {"snapshot_id": t.snapshot_id, "snapshot_time": _none(t.snapshot_time), "cluster": _none(t.cluster),
               "broker_id": bid}
    broker = BrokerIdentity(node_id=bid, cluster_id=context["cluster"])
    try:
        name_ = parse_partition_dir_name(_unhex(json.loads(t.raw)[1]))
    except Exception:  # noqa: BLE001 - a task that cannot be read fails below, where it becomes a finding
        name_ = None
    batch_dir = f"{staging_path}/{batches_dir}/" + hive_dir("batches", context["cluster"],
                                                           fit(getattr(name_, "topic", None), pa.string()))[8:]
    batches = f"{batch_dir}/{t.part}.parquet"
    own = task_batches is None  # without the task's files (a caller scanning one dir), a file of its own
    task_batches = task_batches if task_batches is not None else TaskBatches(t.part, filesystem)
    writer = None
    try:
        log_dir, dir_name = (_unhex(x) for x in json.loads(t.raw))
        root = _root(info["spec"])
        ld = root / log_dir if log_dir else root
        pdir = open_partition(ld / dir_name, parse_partition_dir_name(dir_name), [])
        _mkdirs(filesystem, batch_dir)
        writer = DirBatches(task_batches, batch_dir, batches, context, filesystem)
        sink = SketchSink(writer)
        with transaction_coordinator(_snapshot_coordinator(t.snapshot_id, info)):
            scan = scan_partition(pdir, PartitionContext(**json.loads(t.context)), kafka_version=kafka_version,
                                  batch_sink=sink)
        batches = writer.close()  # None: its rows are held for the task's file (a small replica, not read back)
        extra, payload = [], None
        if pdir.name.suffix is None and pdir.topic == CONSUMER_OFFSETS:
            from ..consumers.committed_offsets import read_copy

            copy = read_copy(pdir, bid)
            extra += copy.findings
            payload = pickle.dumps(copy)
        elif pdir.name.suffix is None and pdir.topic == TRANSACTION_STATE:
            from ..transactions.coordinator import read_transaction_state

            extra += read_transaction_state([(None, pdir)]).findings  # its records that do not decode
        extra += archive_damage(getattr(root, "archive", None), tuple(getattr(pdir.path, "parts", ())) or None)
        report = ScanReport(broker, [scan], _add_findings(scan.findings, extra), scan.files)
        rows = _report_rows(report, context)
        sketch = None
        if pdir.name.suffix is None and pdir.topic != METADATA_TOPIC:
            sketch = pickle.dumps(make_sketch(rows["partitions"][0], sink, scan, batches, filesystem),
                                  protocol=pickle.HIGHEST_PROTOCOL)
        check = None
        if info.get("checks"):
            picked = [{c: r[c] for c in CHECK_COLUMNS} for r in rows["partitions"]]
            keys = _finding_keys([SimpleNamespace(**r) for r in rows["findings"]])
            check = pickle.dumps((picked, keys), protocol=pickle.HIGHEST_PROTOCOL)
        severities = _severities(rows["findings"])
        _keep(rows, gathered, staging_path, t.part, filesystem, pdir.name.suffix in ("delete", "stray"))
        writer.commit()  # only now: a dir that fails leaves no batch rows without its partition row
        writer = None
        if own:
            task_batches.close()
        return (t.snapshot_id, t.dir_name, "ok", None, scan.batch_count, scan.bytes, payload, context["cluster"],
                fit(pdir.topic, pa.string()), pdir.partition, sketch, severities, check)
    except Exception as e:  # noqa: BLE001 - never lose the task: the failure becomes a finding row
        if writer is not None and writer.abandon():
            _rmtree(filesystem, writer.path)  # no batch rows without their partition row
        err = f"{type(e).__name__}: {e}"
        f = finding("SCAN_FAILED", f"internal error scanning this partition: {err}",
                    file="/".join(str(x) for x in (info.get("spec"), t.log_dir, t.dir_name) if x),
                    traceback=traceback.format_exc()[-2000:])
        rows = _report_rows(ScanReport(broker, [], [f], []), context)
        severities = _severities(rows["findings"])
        _keep(rows, gathered, staging_path, t.part, filesystem)
        return (t.snapshot_id, t.dir_name, "failed", err, 0, 0, None, context["cluster"], None, None, None,
                severities, None)


def scan_tasks(staging: str, kafka_version: str, snapshots: Any = None, batches_dir: str = "batches"):
    """The mapInPandas function: scan each task's partition dir (batch rows streamed to a file per dir); the
    task's other table rows are written at its end, one file per table, cluster and topic.

    ``snapshots``: per snapshot id what :attr:`Plan.snapshots` says (or a Spark broadcast of it).
    """

    def run(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        filesystem, staging_path = split_uri(staging)
        info = getattr(snapshots, "value", snapshots) or {}
        gathered = Gathered()
        part = _task_part("s")
        task_batches = TaskBatches(part, filesystem)
        out = []
        for frame in frames:
            out += [scan_task(t, info.get(t.snapshot_id, {}), staging_path, filesystem, kafka_version, batches_dir,
                              gathered, task_batches) for t in frame.itertuples(index=False)]
        task_batches.close()
        gathered.write(staging_path, part, filesystem)
        yield pd.DataFrame(out, columns=STATUS_COLUMNS)

    return run


# ----------------------------------------------------------------------------- committed offsets
def _latest_per_broker(items: list[dict]) -> list[dict]:
    """Per (cluster, partition dir, broker) the copy of the latest snapshot, as the replay takes a broker's latest
    snapshot (:func:`kforensics.tables.replay_tables.replica_rows`); copies of no known broker all count."""
    best: dict[tuple, dict] = {}
    out = []
    for it in items:
        if it["broker_id"] is None:
            out.append(it)
            continue
        key = (it["cluster"], it["dir_name"], it["broker_id"])
        rank = (it["snapshot_time"] is not None, it["snapshot_time"] or "", it["snapshot_id"])
        if key not in best or rank > best[key]["rank"]:
            best[key] = {**it, "rank": rank}
    return out + list(best.values())


@dataclass
class ClusterCommits:
    """A cluster's committed offsets (each broker's latest copy of each ``__consumer_offsets`` partition, merged)
    by (topic, partition), and the findings of reading them."""

    commits: dict[tuple[str, int], list[Any]] = field(default_factory=dict)
    findings: list = field(default_factory=list)


def committed_offsets(plan_: Plan, statuses: list[Any], staging: str, filesystem=None
                      ) -> dict[str | None, ClusterCommits]:
    """Merge the ``__consumer_offsets`` copies the executors read: per snapshot the ``committed_offsets`` table
    (what ``scan --out`` writes for the broker), per cluster (each broker's latest snapshot) the commits by
    (topic, partition) the replay's consumer impact reads."""
    from ..consumers.committed_offsets import merge_copies
    from ..tables.impact_tables import committed_offsets_table

    copies = []
    for s in statuses:
        if s["payload"] is not None:
            ctx = plan_.contexts[s["snapshot_id"]]
            name = parse_partition_dir_name(s["dir_name"])
            copies.append({"snapshot_id": s["snapshot_id"], "dir_name": s["dir_name"], "payload": s["payload"],
                           "cluster": ctx["cluster"], "broker_id": ctx["broker_id"],
                           "snapshot_time": ctx["snapshot_time"], "partition": name.partition if name else -1})
    # in the order coordinator_copies gives them to the CLI (by partition, then broker): among copies that hold a
    # commit at the same log offset, the first is the one named
    copies.sort(key=lambda c: (c["partition"], -1 if c["broker_id"] is None else c["broker_id"], c["snapshot_id"]))
    by_snapshot: dict[str, list[bytes]] = {}
    for c in copies:
        by_snapshot.setdefault(c["snapshot_id"], []).append(c["payload"])
    for sid, payloads in sorted(by_snapshot.items()):
        merged = merge_copies(pickle.loads(p) for p in payloads)
        _write("committed_offsets", committed_offsets_table(merged, plan_.contexts[sid]), staging,
               f"d-{_safe(sid)}", filesystem)
    by_cluster: dict[str | None, list[bytes]] = {}
    for c in sorted(_latest_per_broker(copies), key=lambda c: (c["partition"], -1 if c["broker_id"] is None
                                                               else c["broker_id"], c["snapshot_id"])):
        by_cluster.setdefault(c["cluster"], []).append(c["payload"])
    out: dict[str | None, ClusterCommits] = {}
    for cluster, payloads in by_cluster.items():
        merged = merge_copies(pickle.loads(p) for p in payloads)
        cc = out[cluster] = ClusterCommits(findings=merged.findings)
        for co in merged.offsets:
            cc.commits.setdefault((co.topic, co.partition), []).append(co)
    return out


def commit_findings(commits: dict[str | None, ClusterCommits], groups: list[Any], staging: str, filesystem=None
                    ) -> None:
    """The findings of reading a cluster's committed offsets, as the cluster's when its replay loses or forks
    records somewhere (``kforensics replay`` reads ``__consumer_offsets`` only then:
    :func:`kforensics.consumers.replay_impact.replay_impact`)."""
    affected = {g["cluster"] for g in groups if g["affected"]}
    for i, cluster in enumerate(sorted(commits, key=lambda c: (c is not None, str(c)))):
        if cluster in affected:
            _write_findings(commits[cluster].findings, staging, f"o-{i}", {
                "snapshot_id": None, "snapshot_time": None, "cluster": cluster, "broker_id": None}, filesystem)


def transaction_state_copies(plan_: Plan) -> dict[str | None, list[tuple]]:
    """Per cluster the ``__transaction_state`` copies (each broker's latest snapshot) the replay's coordinator
    view reads, as ``(broker id, snapshot spec, log dir, dir name)`` (names as hex)."""
    items = []
    for t in plan_.tasks.itertuples(index=False):
        log_dir, dir_name = (_unhex(x) for x in json.loads(t.raw))
        name = parse_partition_dir_name(dir_name)
        if name is not None and name.topic == TRANSACTION_STATE and name.suffix is None:
            ctx = plan_.contexts[t.snapshot_id]
            spec = plan_.snapshots[t.snapshot_id]["spec"]
            items.append({"cluster": ctx["cluster"], "dir_name": dir_name, "broker_id": ctx["broker_id"],
                          "snapshot_time": ctx["snapshot_time"], "snapshot_id": t.snapshot_id,
                          "partition": name.partition, "copy": (ctx["broker_id"], spec, _hex(log_dir), _hex(dir_name))})
    out: dict[str | None, list[tuple]] = {}
    for it in sorted(_latest_per_broker(items), key=lambda x: (x["partition"], -1 if x["broker_id"] is None
                                                               else x["broker_id"])):
        out.setdefault(it["cluster"], []).append(it["copy"])
    return out


# ----------------------------------------------------------------------------- replay
def raw_names(plan_: Plan) -> dict[tuple[str, str], tuple[str, str]]:
    """(snapshot id, dir name as the tables hold it) -> (log dir, dir name) as hex, for the names that are not
    valid UTF-8 on disk (the tables hold them escaped)."""
    out = {}
    for t in plan_.tasks.itertuples(index=False):
        log_dir, dir_name = json.loads(t.raw)
        if fit(_unhex(dir_name), pa.string()) != _unhex(dir_name) or fit(_unhex(log_dir), pa.string()) != \
                _unhex(log_dir):
            out[(t.snapshot_id, t.dir_name)] = (log_dir, dir_name)
    return out


def _open(spec: str, log_dir: str, dir_name: str) -> PartitionLog:
    root = _root(spec)
    ld = root / log_dir if log_dir else root
    return open_partition(ld / dir_name, parse_partition_dir_name(dir_name), [])


def _cluster_coordinator(cluster: Any, copies: list[tuple] | None) -> Any:
    """The transaction coordinator's view of a cluster (its brokers' ``__transaction_state``), read on first use,
    once per executor process, as ``kforensics replay`` reads it; None without any."""
    from ..transactions.coordinator import read_transaction_state

    if not copies:
        return None
    key = ("cluster", cluster, tuple(copies))
    if key not in _COORDINATORS:
        _COORDINATORS[key] = read_transaction_state(
            [(bid, _open(spec, _unhex(ld), _unhex(d))) for bid, spec, ld, d in copies])
    return _COORDINATORS[key]


def replay_frames(batches: pd.DataFrame, partitions: pd.DataFrame, kafka_version: str = "latest",
                  timeline: Any = None, *, commits: list[Any] | None = None, specs: dict[str, str] | None = None,
                  coordinator: Any = None, raw_names: dict[tuple[str, str], tuple[str, str]] | None = None,
                  events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ``verdicts``, ``divergence``, ``findings``, ``consumer_impact`` and ``transactions`` tables of one
    (cluster, topic, partition) group from all its ``batches`` and ``partitions`` rows (see :func:`replay_rows`),
    and ``affected``."""
    first = partitions.iloc[0]
    cluster, topic, partition = _none(first["cluster"]), first["topic"], int(first["partition"])
    replicas = replicas_from_frames(batches, partitions)
    rows = [r._asdict() for r in replica_rows(partitions).itertuples(index=False)]
    out = replay_rows(cluster, topic, partition, rows, replicas, kafka_version, timeline, commits=commits,
                      specs=specs, coordinator=coordinator, raw_names=raw_names, events=events)
    return {"verdicts": verdicts_table(out["verdicts"]), "divergence": divergence_table(out["divergence"]),
            "findings": pa.concat_tables([findings_rows_table(fs, ctx) for ctx, fs in out["findings"]])
            if out["findings"] else findings_rows_table([], {"cluster": cluster}),
            "consumer_impact": out["consumer_impact"] if out["consumer_impact"] is not None else table_of(
                "consumer_impact", []),
            "transactions": out["transactions"] if out["transactions"] is not None else table_of("transactions", []),
            "affected": out["affected"]}


def replay_rows(cluster: Any, topic: str, partition: int, rows: list[dict], replicas: list[Any] | None,
                kafka_version: str = "latest", timeline: Any = None, *, commits: list[Any] | None = None,
                specs: dict[str, str] | None = None, coordinator: Any = None,
                raw_names: dict[tuple[str, str], tuple[str, str]] | None = None,
                events: list[dict[str, Any]] | None = None, window: tuple[list, Any] | None = None
                ) -> dict[str, Any]:
    """One (cluster, topic, partition) group replayed: :func:`kforensics.replay.group.replay_group`, the same
    replay as ``kforensics replay``, then what it does to consumer groups (``commits``: their committed offsets of
    this partition) and transactions (the replicas' partition dirs reopened from ``specs``, snapshot id -> spec,
    where the replay loses records; ``coordinator``: the cluster's ``__transaction_state`` view, or a callable
    giving it; ``raw_names``: (snapshot id, dir name as in the tables) -> (log dir, dir name) as hex, where the
    names on disk are not valid UTF-8; ``events``: what happens next, as ``kforensics replay --scenario`` takes a
    scenario's events), as ``kforensics replay`` reports them.

    ``rows``: the partition rows of the replicas, in replica order; ``replicas``: the replicas whole, or None with
    ``window`` = (their summaries, ``load(floor)``: the replicas windowed at ``floor``), which replays from the
    window the summaries give and loads lower when the replay reaches lower, as ``replay_group`` does with the
    replicas whole.  Returns the ``verdicts`` and ``divergence`` rows, the findings as (context, findings) pairs,
    the ``consumer_impact`` and ``transactions`` tables, and ``affected``: whether the replay loses or forks
    records (only then are groups and transactions affected)."""
    from ..consumers.impact import IMPACT_CODES, impact_findings, partition_impact
    from ..consumers.read_committed import partition_after_replay
    from ..epoch.versions import parse_kafka_version
    from ..replay.group import replay_group
    from ..replay.summary import CHUNK_OFFSETS, floor_below, window_floor
    from ..tables.impact_tables import consumer_impact_table, reopened_rows, table

    reload = None
    if replicas is None:
        summaries, load = window
        size = summaries[0].chunk_offsets if summaries else CHUNK_OFFSETS
        replicas = load(window_floor(summaries, parse_kafka_version(kafka_version)))

        def reload(offset: int) -> list[Any]:  # as replay_group widens a window of whole replicas
            return load(floor_below(offset, size))

    paths = {partition_path(SimpleNamespace(**r)): r["snapshot_id"] for r in rows}
    snapshots = {rep.broker_id: paths.get(rep.source) for rep in replicas}
    rp = replay_group(topic, partition, replicas, kafka_version=kafka_version, timeline=timeline, events=events,
                      reload=reload)
    # only a replay that loses or forks records can affect a group or a transaction (as replay_impact has it)
    affected = any(v.code in IMPACT_CODES for r in rp.replicas for v in r.verdicts)
    impacts = partition_impact(rp, commits, validates=True) if commits and affected else []
    extra = impact_findings(impacts)
    reopened: list[dict] = []
    if specs is not None and affected:
        logs = {}
        for rep, row in zip(replicas, rows):
            spec = specs.get(row["snapshot_id"])
            if spec is not None:
                raw = (raw_names or {}).get((row["snapshot_id"], row["dir_name"]))
                log_dir, dir_name = (_unhex(raw[0]), _unhex(raw[1])) if raw else (
                    _relative(_root(spec), row["log_dir"]), row["dir_name"])
                logs[(rep.broker_id, topic, partition)] = _open(spec, log_dir, dir_name)
        after = partition_after_replay(rp, logs, coordinator=coordinator() if callable(coordinator) else coordinator)
        extra += (after.leader_transactions.findings if after.leader_transactions is not None else []) + after.findings
        reopened = reopened_rows(after, {"cluster": cluster})
    rp.findings = list(rp.findings) + extra
    return {"verdicts": verdict_rows(rp, cluster, snapshots), "divergence": divergence_rows(rp, cluster),
            "findings": replay_findings(rp, cluster),
            "consumer_impact": consumer_impact_table(impacts, cluster) if impacts else None,
            "transactions": table("transactions", reopened) if reopened else None, "affected": affected}


def replay_findings(rp: Any, cluster: Any) -> list[tuple[dict, list]]:
    """A replay's findings by the broker each is about, as (context, findings) (see
    :func:`kforensics.tables.replay_tables.replay_findings_table`)."""
    by_broker: dict[Any, list] = {}
    for f in rp.findings:
        bid = f.facts.get("broker_id")
        by_broker.setdefault(bid if isinstance(bid, int) and not isinstance(bid, bool) else None, []).append(f)
    return [({"snapshot_id": None, "snapshot_time": None, "cluster": cluster, "broker_id": bid}, fs)
            for bid, fs in by_broker.items()]


def replay_groups(kafka_version: str, shared: Any = None, staging: str | None = None):
    """The cogroup function: replay each group and write its table parts under ``staging``; one status row per
    group (:data:`GROUP_SCHEMA`).  A group whose replay fails becomes a ``REPLAY_FAILED`` finding; the others go on.

    ``shared`` (or a Spark broadcast of it): ``timelines`` (cluster -> KRaft timeline), ``commits`` (cluster ->
    (topic, partition) -> committed offsets), ``transaction_state`` (cluster -> copies, see
    :func:`transaction_state_copies`), ``specs`` (snapshot id -> spec), ``raw_names`` (see :func:`raw_names`) and
    ``events`` ((cluster, topic, partition) -> events).  A bare dict of timelines is taken as ``timelines``.
    """

    def fn(batches: pd.DataFrame, partitions: pd.DataFrame) -> pd.DataFrame:
        if partitions.empty:
            return pd.DataFrame(columns=GROUP_COLUMNS)
        sh = getattr(shared, "value", shared) or {}
        if "timelines" not in sh:
            sh = {"timelines": sh}
        first = partitions.iloc[0]
        cluster, topic, partition = _none(first["cluster"]), first["topic"], _none(first["partition"])
        partition = None if partition is None else int(partition)
        part = _group_part(cluster, topic, partition)
        filesystem, staging_path = split_uri(staging) if staging else (None, None)
        context = {"snapshot_id": None, "snapshot_time": None, "cluster": cluster, "broker_id": None}
        try:
            copies = (sh.get("transaction_state") or {}).get(cluster)
            tables = replay_frames(batches, partitions, kafka_version, (sh.get("timelines") or {}).get(cluster),
                                   commits=(sh.get("commits") or {}).get(cluster, {}).get((topic, partition)),
                                   specs=sh.get("specs"), raw_names=sh.get("raw_names"),
                                   events=(sh.get("events") or {}).get((cluster, topic, partition)),
                                   coordinator=lambda: _cluster_coordinator(cluster, copies))
            affected = tables.pop("affected")
            if staging_path is not None:
                for name, t in tables.items():
                    _write(name, t, staging_path, part, filesystem)
            return pd.DataFrame([(cluster, topic, partition, "ok", None, len(tables["verdicts"]), affected,
                                  _severities(tables["findings"].to_pylist()),
                                  _verdict_summary(tables["verdicts"].to_pylist()))], columns=GROUP_COLUMNS)
        except Exception as e:  # noqa: BLE001 - one group's failure is a finding; the other groups go on
            err = f"{type(e).__name__}: {e}"
            f = finding("REPLAY_FAILED", f"internal error replaying {topic}-{partition}: {err}", topic=topic,
                        partition=partition, brokers=sorted({int(b) for b in partitions["broker_id"].dropna()}),
                        traceback=traceback.format_exc()[-2000:])
            if staging_path is not None:
                _write("findings", findings_rows_table([f], context), staging_path, part, filesystem)
            return pd.DataFrame([(cluster, topic, partition, "failed", err, 0, False,
                                  _finding_severities([(context, [f])]), None)], columns=GROUP_COLUMNS)

    return fn


REPLAY_INPUT = ["cluster", "topic", "partition", "sketch"]
#: rows of replay output gathered before a task writes them
FLUSH_ROWS = 200_000


class _Outputs:
    """The replay stage's rows of one task, written a file per table when enough have gathered (never a file per
    group)."""

    def __init__(self, staging_path: str | None, filesystem: Any, part: str):
        self.staging_path, self.filesystem, self.part = staging_path, filesystem, part
        self.rows: dict[str, list] = {"verdicts": [], "divergence": []}
        self.findings: list[tuple[dict, list]] = []
        self.tables: dict[str, list[pa.Table]] = {"consumer_impact": [], "transactions": []}
        self.held = 0
        self.flushes = 0

    def add(self, out: dict[str, Any]) -> None:
        for name in self.rows:
            self.rows[name] += out[name]
            self.held += len(out[name])
        self.findings += out["findings"]
        self.held += sum(len(fs) for _, fs in out["findings"])
        for name in self.tables:
            if out.get(name) is not None and len(out[name]):
                self.tables[name].append(out[name])
        if self.held >= FLUSH_ROWS:
            self.flush()

    def failed(self, f: Any, context: dict) -> None:
        self.findings.append((context, [f]))
        self.held += 1

    def flush(self) -> None:
        if self.staging_path is None:
            return
        part = f"{self.part}-{self.flushes}"
        tables = {"verdicts": verdicts_table(self.rows["verdicts"]),
                  "divergence": divergence_table(self.rows["divergence"])}
        if self.findings:
            tables["findings"] = _findings_table(self.findings)
        for name, ts in self.tables.items():
            if ts:
                tables[name] = pa.concat_tables(ts)
        for name, t in tables.items():
            _write(name, t, self.staging_path, part, self.filesystem)
        self.rows = {k: [] for k in self.rows}
        self.findings = []
        self.tables = {k: [] for k in self.tables}
        self.held = 0
        self.flushes += 1


def _finding_severities(items: list[tuple[dict, list]]) -> str | None:
    """Findings of (context, findings) pairs per severity, as JSON (what the summary counts)."""
    counts: dict[str, int] = {}
    for _, fs in items:
        for f in fs:
            counts[str(f.severity)] = counts.get(str(f.severity), 0) + 1
    return json.dumps(counts) if counts else None


def _verdict_summary(rows: list[dict]) -> str | None:
    """A group's verdict rows reduced to the ``summary`` table's keys and sums: [topic, broker id, verdict,
    records, bytes] per row, as JSON."""
    return json.dumps([[r["topic"], r["broker_id"], r["verdict"], r["records"], r["bytes"]] for r in rows]) \
        if rows else None


def _findings_table(items: list[tuple[dict, list]]) -> pa.Table:
    """Findings of several contexts as one ``findings`` table (contexts in order; consecutive ones merged)."""
    runs: list[tuple[dict, list]] = []
    for ctx, fs in items:
        if runs and runs[-1][0] == ctx:
            runs[-1][1].extend(fs)
        else:
            runs.append((ctx, list(fs)))
    return pa.concat_tables([findings_rows_table(fs, ctx) for ctx, fs in runs])


def _task_part(prefix: str) -> str:
    """A part name for this Spark task's files: the same for a retried attempt (it replaces the failed one's)."""
    try:
        from pyspark import TaskContext

        tc = TaskContext.get()
    except ImportError:  # pragma: no cover - the function called outside Spark
        tc = None
    return f"{prefix}-{tc.partitionId():05d}" if tc is not None else f"{prefix}-{uuid.uuid4().hex[:12]}"


def replay_partitions(kafka_version: str, shared: Any = None, staging: str | None = None):
    """The replay stage's mapInPandas function over replica sketches (:data:`REPLAY_INPUT`, rows of one group
    together: repartitioned and sorted by group): each group replayed from the window its replicas' summaries
    give, its batch rows read from the replicas' ``batches`` files (:mod:`.window`), with the same functions as
    :func:`replay_groups`; the task's rows written a few files per table; one status row per group
    (:data:`GROUP_SCHEMA`).  A group whose replay fails becomes a ``REPLAY_FAILED`` finding; the others go on."""

    def fn(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        sh = getattr(shared, "value", shared) or {}
        filesystem, staging_path = split_uri(staging) if staging else (None, None)
        outputs = _Outputs(staging_path, filesystem, _task_part("r"))
        status: list[tuple] = []
        key, held = None, []

        def group(key: tuple, sketches: list[bytes]) -> None:
            cluster, topic, partition = key
            context = {"snapshot_id": None, "snapshot_time": None, "cluster": cluster, "broker_id": None}
            items = [pickle.loads(b) for b in sketches]
            try:
                rows, summaries, load = group_replicas(items, filesystem)
                if not rows:
                    return
                copies = (sh.get("transaction_state") or {}).get(cluster)
                out = replay_rows(cluster, topic, partition, rows, None, kafka_version,
                                  (sh.get("timelines") or {}).get(cluster),
                                  commits=(sh.get("commits") or {}).get(cluster, {}).get((topic, partition)),
                                  specs=sh.get("specs"), raw_names=sh.get("raw_names"),
                                  events=(sh.get("events") or {}).get((cluster, topic, partition)),
                                  coordinator=lambda: _cluster_coordinator(cluster, copies), window=(summaries, load))
                outputs.add(out)
                status.append((cluster, topic, partition, "ok", None, len(out["verdicts"]), out["affected"],
                               _finding_severities(out["findings"]), _verdict_summary(out["verdicts"])))
            except Exception as e:  # noqa: BLE001 - one group's failure is a finding; the other groups go on
                err = f"{type(e).__name__}: {e}"
                brokers = sorted({int(it.row["broker_id"]) for it in items if it.row.get("broker_id") is not None})
                failed = finding("REPLAY_FAILED", f"internal error replaying {topic}-{partition}: {err}",
                                 topic=topic, partition=partition, brokers=brokers,
                                 traceback=traceback.format_exc()[-2000:])
                outputs.failed(failed, context)
                status.append((cluster, topic, partition, "failed", err, 0, False, _finding_severities([(context, [failed])]), None))

        for frame in frames:
            for c, t, p, b in zip(frame["cluster"], frame["topic"], frame["partition"], frame["sketch"]):
                k = (_none(c), t, None if _none(p) is None else int(p))
                if k != key and held:
                    group(key, held)
                    held = []
                key = k
                held.append(b)
        if held:
            group(key, held)
        outputs.flush()
        yield pd.DataFrame(status, columns=GROUP_COLUMNS)

    return fn


def _spark_schema(arrow_schema) -> str:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema)


# ----------------------------------------------------------------------------- the job
def _table_rows(name: str, rows: list[dict]) -> pa.Table:
    schema = TABLE_SCHEMAS[name]

    def value(v: Any, typ: pa.DataType) -> Any:
        v = _none(v)
        # integers that pandas held as floats beside nulls (counts: exact below 2**53)
        return int(v) if isinstance(v, float) and pa.types.is_integer(typ) and v.is_integer() else v

    return pa.Table.from_pylist([{f.name: fit(value(r.get(f.name), f.type), f.type) for f in schema} for r in rows],
                                schema=schema)


#: groups per replay task below which fewer tasks are started (each task costs Spark a few tenths of a second)
GROUPS_PER_TASK = 64


def replay_tasks(statuses: list[dict], parallelism: int, tasks_per_partition: int) -> int:
    """How many tasks the replay stage runs: ``tasks_per_partition`` per core for many groups (they balance
    groups of unequal cost), fewer when there are few groups to share out, never fewer than the cores."""
    groups = len({(s.get("cluster"), s.get("topic"), s.get("partition")) for s in statuses
                  if s.get("status") == "ok" and s.get("topic") is not None})
    wanted = -(-groups // GROUPS_PER_TASK)
    return max(1, min(groups or 1, max(parallelism, min(parallelism * tasks_per_partition, wanted))))


def run(spark, snapshots: list[Snapshot], out: str, *, kafka_version: str = "latest", overwrite: bool = False,
        tasks_per_partition: int = 4, metadata: list[Any] | dict[str | None, list[Any]] | None = None,
        manifest: str | None = None, events: dict[tuple[str | None, str, int], list[dict]] | None = None,
        tables: Any = None) -> dict[str, Any]:
    """Run the whole pipeline; returns a summary dict (counts per cluster, findings by severity, verdicts by
    code, failed tasks and groups: see :func:`summarize`).

    ``metadata``: KRaft metadata logs to take leaders and epochs from, besides
    those found among the snapshots (``kforensics replay --metadata``): paths,
    ``(cluster, path)`` pairs, or a dict of paths by cluster (see
    :func:`metadata_by_cluster`).  ``events``: per (cluster, topic, partition)
    what happens next, replayed as ``kforensics replay --scenario`` replays a
    scenario's events (a hypothesis, not evidence).  ``spark``: a SparkSession,
    or a callable that starts one (called after the output is checked and the
    snapshots planned).
    """
    wanted = parse_tables(tables)
    check_output(out, snapshots, overwrite, metadata, manifest)
    filesystem, out_path = split_uri(out)
    persisted: list = []
    staging = posixpath.join(out.rstrip("/"), f".staging-{uuid.uuid4().hex[:12]}")
    staging_fs, staging_path = split_uri(staging)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    statuses: list = []
    groups: list = []
    broadcasts: list = []
    corrected = 0
    created = not _exists(filesystem, out_path)
    try:
        planned = plan(snapshots, staging_path, staging_fs)
        tasks = planned.tasks
        try:
            explicit = metadata_by_cluster(metadata, {c["cluster"] for c in planned.contexts.values()})
        except (ValueError, FileNotFoundError) as e:
            raise MetadataInputError(str(e)) from e
        timelines = build_timelines(planned, explicit, staging_path, staging_fs)
        timings["plan_s"] = time.perf_counter() - t0
        if callable(spark) and not hasattr(spark, "sparkContext"):
            spark = spark()
        sc = spark.sparkContext
        n = max(1, min(len(tasks), sc.defaultParallelism * tasks_per_partition))
        if len(tasks):
            rows = [tuple(_none(v) if c != "broker_id" or _none(v) is None else int(v) for c, v in zip(TASK_COLUMNS, r))
                    for r in tasks.itertuples(index=False)]
            tdf = spark.createDataFrame(rows, schema=TASK_SCHEMA)
            snapinfo = sc.broadcast(planned.snapshots)
            broadcasts.append(snapinfo)
            t1 = time.perf_counter()
            from pyspark import StorageLevel

            scanned = tdf.repartition(n).mapInPandas(
                scan_tasks(staging, kafka_version, snapinfo, "batches" if "batches" in wanted else WORK_BATCHES),
                schema=STATUS_SCHEMA).persist(StorageLevel.MEMORY_AND_DISK)
            persisted.append(scanned)
            statuses = [r.asDict() for r in scanned.select(*COLLECTED).collect()]
            timings["scan_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        if len(tasks):
            corrected = broker_checks(planned, staging, staging_fs, statuses)
        commits = committed_offsets(planned, statuses, staging_path, staging_fs)
        timings["checks_s"] = time.perf_counter() - t2
        t3 = time.perf_counter()
        _write("brokers", _table_rows("brokers", planned.brokers), staging_path, "brokers", staging_fs)
        shared = sc.broadcast({
            "timelines": timelines, "commits": {c: cc.commits for c, cc in commits.items()},
            "specs": {sid: info["spec"] for sid, info in planned.snapshots.items()},
            "transaction_state": transaction_state_copies(planned), "raw_names": raw_names(planned),
            "events": dict(events or {})})
        broadcasts.append(shared)
        if len(tasks):
            # only the replicas' sketches (partition row, summary, a small replica whole) are shuffled; each group
            # reads its window's batch rows from the replicas' files
            sketches = scanned.where("sketch IS NOT NULL").select(*REPLAY_INPUT)
            m = replay_tasks(statuses, sc.defaultParallelism, tasks_per_partition)
            groups = [r.asDict() for r in sketches.repartition(m, *KEYS).sortWithinPartitions(*KEYS).mapInPandas(
                replay_partitions(kafka_version, shared, staging), schema=GROUP_SCHEMA).collect()]
        commit_findings(commits, groups, staging_path, staging_fs)
        timings["replay_s"] = time.perf_counter() - t3
        t4 = time.perf_counter()
        # the counts come from what the tasks returned (and the driver's own few findings files): no table is
        # read back
        summary_rows = verdict_summary(groups)
        if summary_rows:
            _write("summary", _table_rows("summary", summary_rows), staging_path, "summary", staging_fs)
        for name, schema in TABLE_SCHEMAS.items():
            # every table is there, if empty, so that any reader finds its schema
            if not [p for p in _listdir(staging_fs, f"{staging_path}/{name}") if p.startswith("cluster=")]:
                _mkdirs(staging_fs, f"{staging_path}/{name}")
                write_table(schema.empty_table(), f"{staging_path}/{name}/empty.parquet", staging_fs)
        findings = finding_counts(statuses, groups, staging_path, staging_fs)
        verdict_counts: dict[tuple[Any, Any], int] = {}
        for r in summary_rows:
            key = (r["cluster"], r["verdict"])
            verdict_counts[key] = verdict_counts.get(key, 0) + int(r["partitions"])
        timings["summary_s"] = time.perf_counter() - t4
        # publish: the staged tables (laid out by cluster and topic as they were written) replace the previous
        # run's tables (nothing else: check_output refused anything else)
        t5 = time.perf_counter()
        for name in _listdir(filesystem, out_path):
            if name in TABLES:
                _rmtree(filesystem, posixpath.join(out_path, name))
        for name in wanted:
            src = posixpath.join(staging_path, name)
            if _exists(staging_fs, src):
                _move(filesystem, src, posixpath.join(out_path, name))
        timings["publish_s"] = time.perf_counter() - t5
    except BaseException:
        _rmtree(staging_fs, staging_path)
        if created and not _listdir(filesystem, out_path):
            _rmtree(filesystem, out_path)  # nothing is left behind by a run that did not finish
        raise
    finally:
        for b in broadcasts + persisted:
            try:
                b.unpersist()
            except Exception:  # noqa: BLE001 - the session may be gone
                pass
        _rmtree(staging_fs, staging_path)
    return summarize(planned, statuses, groups, findings, verdict_counts, timelines, corrected, out, timings)


def verdict_summary(groups: list[dict]) -> list[dict]:
    """The ``summary`` table's rows from the groups' status rows: per (cluster, topic, broker, verdict) the
    records and bytes summed (None where none is known) and the partitions counted."""
    acc: dict[tuple, dict] = {}
    for g in groups:
        if not g.get("summary"):
            continue
        for topic, broker_id, verdict, records, nbytes in json.loads(g["summary"]):
            key = (g["cluster"], topic, broker_id, verdict)
            e = acc.setdefault(key, {"cluster": g["cluster"], "topic": topic, "broker_id": broker_id,
                                     "verdict": verdict, "records": None, "bytes": None, "partitions": 0})
            if records is not None:
                e["records"] = (e["records"] or 0) + int(records)
            if nbytes is not None:
                e["bytes"] = (e["bytes"] or 0) + int(nbytes)
            e["partitions"] += 1
    return list(acc.values())


#: part-name prefixes of the findings files the driver writes (the executors' counts travel in their status rows)
DRIVER_PARTS = ("d-", "t-", "c-", "o-")


def finding_counts(statuses: list[dict], groups: list[dict], staging: str, filesystem=None
                   ) -> dict[tuple[Any, Any], int]:
    """Findings per (cluster, severity): the scan tasks' and the groups' from their status rows, the driver's from
    its own few files (snapshots' root files, timelines, broker checks, committed offsets)."""
    import pyarrow.parquet as pq

    out: dict[tuple[Any, Any], int] = {}
    for s in list(statuses) + list(groups):
        if s.get("findings"):
            for sev, n in json.loads(s["findings"]).items():
                out[(s["cluster"], sev)] = out.get((s["cluster"], sev), 0) + int(n)
    for path in _files(filesystem, f"{staging.rstrip('/')}/findings"):
        if posixpath.basename(path).startswith(DRIVER_PARTS):
            t = pq.read_table(path, columns=["cluster", "severity"], filesystem=filesystem)
            for c, sev in zip(t.column("cluster").to_pylist(), t.column("severity").to_pylist()):
                out[(c, sev)] = out.get((c, sev), 0) + 1
    return out


def _files(fs, path: str) -> list[str]:
    """Every ``.parquet`` file under ``path``."""
    if fs is None:
        return sorted(os.path.join(d, f) for d, _, fs_ in os.walk(path) for f in fs_ if f.endswith(".parquet"))
    from pyarrow import fs as pafs

    return sorted(i.path for i in fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
                  if i.path.endswith(".parquet"))


SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")


def summarize(planned: Plan, statuses: list, groups: list, findings: dict, verdicts: dict, timelines: dict,
              corrected: int, out: str, timings: dict) -> dict[str, Any]:
    """The job's summary: per cluster snapshots, partitions, batches, findings by severity, verdicts by code and
    failed tasks and groups; the same totals; the failed tasks and groups and unreadable snapshots named."""
    def name(c: Any) -> str | None:
        return None if c is None else str(c)

    clusters: dict[str | None, dict[str, Any]] = {}

    def entry(c: Any) -> dict[str, Any]:
        return clusters.setdefault(name(c), {"cluster": name(c), "snapshots": 0, "partitions": 0, "batches": 0,
                                             "bytes": 0, "failed_tasks": 0, "failed_groups": 0,
                                             "findings": {s: 0 for s in SEVERITY_ORDER}, "verdicts": {}})

    for ctx in planned.contexts.values():
        entry(ctx["cluster"])["snapshots"] += 1
    for t in planned.tasks.itertuples(index=False):
        entry(planned.contexts[t.snapshot_id]["cluster"])["partitions"] += 1
    failed = []
    for s in statuses:
        e = entry(planned.contexts[s["snapshot_id"]]["cluster"])
        e["batches"] += int(s["batches"] or 0)
        e["bytes"] += int(s["bytes"] or 0)
        if s["status"] != "ok":
            e["failed_tasks"] += 1
            failed.append({"snapshot_id": s["snapshot_id"], "dir_name": s["dir_name"], "status": s["status"],
                           "error": s["error"]})
    failed_groups = []
    for g in groups:
        if g["status"] != "ok":
            entry(g["cluster"])["failed_groups"] += 1
            failed_groups.append({"cluster": g["cluster"], "topic": g["topic"], "partition": g["partition"],
                                  "error": g["error"]})
    for (c, sev), n in findings.items():
        entry(c)["findings"][str(sev)] = entry(c)["findings"].get(str(sev), 0) + n
    for (c, code), n in verdicts.items():
        v = entry(c)["verdicts"]
        v[code] = v.get(code, 0) + n
    rows = sorted(clusters.values(), key=lambda e: (e["cluster"] is not None, e["cluster"] or ""))
    for e in rows:
        e["verdicts"] = dict(sorted(e["verdicts"].items(), key=lambda kv: (kv[0] != "OK", kv[0])))
    unreadable = sorted({sid for sid, fs in planned.findings.items()
                         for f in fs if f.code in ("SNAPSHOT_UNREADABLE", "NO_LOG_DIR")})
    total_findings = {s: sum(e["findings"].get(s, 0) for e in rows) for s in SEVERITY_ORDER}
    total_verdicts: dict[str, int] = {}
    for e in rows:
        for code, n in e["verdicts"].items():
            total_verdicts[code] = total_verdicts.get(code, 0) + n
    return {
        "snapshots": len(planned.contexts),
        "tasks": len(statuses),
        "failed_tasks": failed,
        "groups": len(groups),
        "failed_groups": failed_groups,
        "unreadable_snapshots": unreadable,
        "partitions": len(planned.tasks),
        "batches": sum(int(s["batches"] or 0) for s in statuses),
        "bytes": sum(int(s["bytes"] or 0) for s in statuses),
        "findings": total_findings,
        "verdicts": total_verdicts,
        "clusters": rows,
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


class MasterUnreachable(OSError):
    """The Spark master named by ``--master`` does not answer."""


def check_master(master: str | None, timeout: float = 5.0) -> None:
    """Fail fast, before a JVM starts, when a standalone master (``spark://host:port[,host:port]``) accepts no
    connection: raise :class:`MasterUnreachable` with one line saying so.  Other masters are left to Spark."""
    import socket

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
