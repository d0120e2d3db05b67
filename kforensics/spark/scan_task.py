"""The scan stage, on the executors: each task scans partition dirs as ``kforensics scan`` scans them.

Each partition dir is scanned by :func:`kforensics.scan.partition.scan_partition`
(transactions checked against the snapshot's own ``__transaction_state``, as
``scan`` checks them); its batch rows stream to Parquet while the replica's
summary is computed (:class:`~kforensics.spark.window.SketchSink`); its other
table rows are gathered and written once per table when the task ends.  A
``__consumer_offsets`` copy's committed offsets are read
(:func:`kforensics.consumers.committed_offsets.read_copy`) and travel back in
the task's status row.  A dir that cannot be scanned becomes a
``SCAN_FAILED`` finding; the task goes on.
"""

from __future__ import annotations

import json
import pickle
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from ..collector import tune as tune_collector
from ..epoch.versions import KafkaVersion
from ..errors import InternalError
from ..findings import Finding, finding
from ..formats.group_coordinator import TOPIC as CONSUMER_OFFSETS_TOPIC
from ..formats.transaction_log import TOPIC as TRANSACTION_STATE_TOPIC
from ..log.file_kinds import METADATA_TOPIC, parse_partition_dir_name
from ..log.listing import unlisted_dir
from ..log.partition import PartitionLog, open_partition
from ..log.sources import resolve, split_uri
from ..replay.not_replayed import left_out
from ..scan.model import BrokerIdentity, PartitionContext, PartitionScan, ScanReport, unseen_findings
from ..scan.partition import CoordinatorSource
from ..tables.replay_tables import PARTITION_COLUMNS
from ..tables.report_tables import Run, report_runs, run_rows, runs_table
from ..tables.scan_tables import write_table
from ..tables.schemas import fit, fit_rows, fit_values
from ..tiered.evidence import scan_view, tier_scan
from . import files, table_files
from .batch_files import DirBatches, TaskBatches
from .broker_checks import finding_keys
from .files import Context, FileSystem
from .names import from_hex, optional_int, present, spark_task_part
from .plan import EvidencePath, SnapshotInfo, archive_damage
from .schemas import CHECK_COLUMNS, NAMED_TABLES, PENDING, STATUS_COLUMNS, TaskRow, hive_dir
from .window import WINDOW_COLUMNS, Sketch, SketchSink, replica_of_tables

if TYPE_CHECKING:
    from pyspark import Broadcast

    from ..scan.small_partitions import WalkedPartition

#: rows of one table a task holds as dicts before they become an Arrow table (memory stays bounded)
GATHER_ROWS = 4096

_ROOTS: dict[str, EvidencePath] = {}
#: the snapshots' coordinator views read in this executor process
_COORDINATORS: dict[tuple[str, str], CoordinatorSource] = {}


def root_of(spec: str) -> EvidencePath:
    """The snapshot's root, resolved once per executor process (one archive index or filesystem handle)."""
    if spec not in _ROOTS:
        _ROOTS[spec] = resolve(spec)
    return _ROOTS[spec]


def open_dir(spec: str, log_dir: str, dir_name: str) -> PartitionLog:
    """A partition dir of a snapshot (names as they are on disk)."""
    root = root_of(spec)
    ld = root / log_dir if log_dir else root
    name = parse_partition_dir_name(dir_name)
    if name is None:  # the plan made tasks of partition dirs only
        raise InternalError(f"{dir_name}: a task of a directory that is no partition's")
    return open_partition(ld / dir_name, name, [])


def snapshot_coordinator(snapshot_id: str, info: SnapshotInfo) -> CoordinatorSource | None:
    """The transaction coordinator's view of the snapshot's own ``__transaction_state`` (read on first use, once per
    executor process), as ``scan`` checks a broker's transactions; None when the snapshot holds none."""
    if not info.get("transaction_state"):
        return None
    key = (snapshot_id, info["spec"])
    if key not in _COORDINATORS:
        root = root_of(str(info["spec"]))
        dirs = [root / from_hex(d) if d else root for d in info.get("log_dirs", [])]
        _COORDINATORS[key] = CoordinatorSource({None: dirs})
    return _COORDINATORS[key]


def report_rows(report: ScanReport, context: Context) -> dict[str, list[Run]]:
    """The rows of the report tables ``scan --out`` writes (all but ``batches``), as runs of tuples
    (:func:`~kforensics.tables.report_tables.report_runs`): each table fits its rows when it is built, once per
    task (fitting a dir's rows at a time cost more than scanning a small dir)."""
    return report_runs(report, context)


def finding_rows(rows: dict[str, list[Run]]) -> list[dict]:
    """A dir's ``findings`` rows as the table holds them (their keys and counts are read per dir)."""
    return fit_rows("findings", run_rows(rows["findings"]))


def severities(rows: list[dict]) -> str | None:
    """A findings table's rows per severity, as JSON (what the summary counts)."""
    if not rows:
        return None
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r["severity"])] = counts.get(str(r["severity"]), 0) + 1
    return json.dumps(counts)


def sketch_row(row: dict) -> dict:
    """The :data:`PARTITION_COLUMNS` of a ``partitions`` row (see :func:`report_rows`): what the table would give
    back for them."""
    return fit_values("partitions", row, PARTITION_COLUMNS)


def make_sketch(partition: dict, sink: SketchSink, scan: PartitionScan, batches: str | None,
                filesystem: FileSystem = None) -> Sketch:
    """What the replay stage needs of a scanned replica: its partition row (as the ``partitions`` table holds it)
    and summary, and the replica itself when it is small (else where its batch rows are)."""
    import pyarrow.parquet as pq

    row = sketch_row(partition)
    sketch = Sketch(row, sink.summary(scan), rows=sink.rows, batches=batches if sink.rows else None)
    if sink.rows <= sink.inline_rows:
        # the rows the sink kept as they streamed by (the file is not read back)
        sketch.replica = sink.replica(row)
        if sketch.replica is None:
            sketch.replica = replica_of_tables(
                [pq.read_table(batches, columns=WINDOW_COLUMNS, filesystem=filesystem)] if sink.rows else [], row)
    return sketch


class Gathered:
    """One Spark task's report rows, gathered and written once per table (a file per cluster and topic:
    :func:`kforensics.spark.files.write`) when the task ends; the ``batches`` rows go to their own files
    meanwhile.  Building a table per partition dir would cost more than scanning a small one."""

    def __init__(self) -> None:
        self.runs: dict[str, list[Run]] = {}  # per table, its rows in order (a run per change of columns)
        self.held: dict[str, int] = {}
        self.tables: dict[str, list[pa.Table]] = {}

    def add(self, rows: dict[str, list[Run]]) -> None:
        for name, runs in rows.items():
            held = self.runs.setdefault(name, [])
            for keys, values in runs:
                if not values:
                    continue
                if held and held[-1][0] == keys:
                    held[-1][1].extend(values)
                else:
                    held.append((keys, list(values)))
                self.held[name] = self.held.get(name, 0) + len(values)
            if self.held.get(name, 0) >= GATHER_ROWS:
                self._table(name)

    def _table(self, name: str) -> None:
        self.tables.setdefault(name, []).append(runs_table(name, self.runs.pop(name)))
        self.held[name] = 0

    def write(self, staging_path: str, part: str, filesystem: FileSystem = None) -> None:
        for name in [n for n, runs in self.runs.items() if runs]:
            self._table(name)
        for name, ts in self.tables.items():
            table_files.write(name, pa.concat_tables(ts) if len(ts) > 1 else ts[0], staging_path, part, filesystem)
        self.runs, self.held, self.tables = {}, {}, {}


@dataclass
class TaskOutput:
    """Where a task's rows go: ``staging_path`` on ``filesystem``, the batch rows under ``batches_dir``, the other
    rows gathered for the task's files (``gathered``; written at once without it)."""

    staging_path: str
    filesystem: FileSystem
    batches_dir: str = "batches"
    gathered: Gathered | None = None
    task_batches: TaskBatches | None = None
    made: set[str] = field(default_factory=set)  # the directories made already (a task's dirs share a few)

    def mkdirs(self, path: str) -> None:
        if path not in self.made:
            files.mkdirs(self.filesystem, path)
            self.made.add(path)

    def keep(self, rows: dict[str, list[Run]], part: str, pending: bool = False) -> None:
        """A dir's report rows: gathered for the task's files, or written now; those whose topic the broker checks
        may correct (``pending``) kept apart under :data:`PENDING`."""
        if pending:
            for name in NAMED_TABLES:
                runs = rows.pop(name)
                if any(values for _, values in runs):
                    d = f"{self.staging_path}/{PENDING}/{name}"
                    self.mkdirs(d)
                    write_table(runs_table(name, runs), f"{d}/{part}.parquet", self.filesystem)
        if self.gathered is not None:
            self.gathered.add(rows)
        else:
            for name, runs in rows.items():
                table_files.write(name, runs_table(name, runs), self.staging_path, part, self.filesystem)


def _context(t: TaskRow) -> Context:
    return {"snapshot_id": t.snapshot_id, "snapshot_time": present(t.snapshot_time), "cluster": present(t.cluster),
            "broker_id": optional_int(t.broker_id)}


def _internal_topic_findings(pdir: PartitionLog, broker_id: int | None) -> tuple[list[Finding], bytes | None]:
    """What a second reader finds in an internal topic's copy (its records that do not decode), and a
    ``__consumer_offsets`` copy's committed offsets (pickled, for the driver)."""
    if pdir.name.suffix is None and pdir.topic == CONSUMER_OFFSETS_TOPIC:
        from ..consumers.committed_offsets import read_copy

        copy = read_copy(pdir, broker_id)
        return list(copy.findings), pickle.dumps(copy)
    if pdir.name.suffix is None and pdir.topic == TRANSACTION_STATE_TOPIC:
        from ..transactions.coordinator import read_transaction_state

        return list(read_transaction_state([(None, pdir)]).findings), None
    return [], None


#: a partition dir opened with the others of its task, its context, and its scan when it was scanned with them
#: (:func:`scan_together`)
Walked = tuple[PartitionLog, PartitionContext, "WalkedPartition | None"]


def scan_together(tasks: list[TaskRow], snapshots: Mapping[str, SnapshotInfo], kafka_version: KafkaVersion
                  ) -> dict[int, Walked]:
    """The task's plain partition dirs of one small segment, scanned together as ``scan`` scans them
    (:func:`kforensics.scan.small_partitions.scan_plain`: the same scan as one by one, at a fraction of the cost);
    by task index, with every other dir opened (listed once: :func:`scan_task` scans it).  A dir that cannot be
    opened is left to :func:`scan_task`, which says what is wrong with it."""
    from ..scan.broker import BATCHED
    from ..scan.small_partitions import scan_plain

    if not BATCHED:
        return {}
    opened: list[tuple[int, PartitionLog, PartitionContext]] = []
    for i, t in enumerate(tasks):
        try:
            log_dir, dir_name = (from_hex(x) for x in json.loads(t.raw))
            pdir = open_dir(str(snapshots.get(t.snapshot_id, {})["spec"]), log_dir, dir_name)
            opened.append((i, pdir, PartitionContext(**json.loads(t.context))))
        except Exception:  # noqa: BLE001 - scanned on its own, where the failure becomes a finding
            continue
    got = scan_plain([(pdir, pctx) for _, pdir, pctx in opened], kafka_version=kafka_version)
    return {i: (pdir, pctx, w) for (i, pdir, pctx), w in zip(opened, got)}


def _scan_dir(t: TaskRow, info: SnapshotInfo, out: TaskOutput, kafka_version: KafkaVersion, batches: DirBatches,
              walked: Walked | None = None) -> tuple:
    """Scan the task's dir (its batches into ``batches``; ``walked``: opened, or scanned, with others already); keep
    its rows; its status row."""
    from ..scan.partition import scan_partition, transaction_coordinator

    context = _context(t)
    sink = SketchSink(batches)
    if walked is not None:
        pdir, pctx, w = walked
    else:
        log_dir, dir_name = (from_hex(x) for x in json.loads(t.raw))
        pdir, pctx, w = open_dir(str(info["spec"]), log_dir, dir_name), PartitionContext(**json.loads(t.context)), None
    if w is not None:
        scan = w.scan
        sink(pdir, w.segment, w.table)
    else:
        with transaction_coordinator(snapshot_coordinator(t.snapshot_id, info)):
            scan = scan_partition(pdir, pctx, kafka_version=kafka_version, batch_sink=sink)
    tiered = info.get("tiered")
    if tiered is not None:  # as scan's broker hook: the topics and remote metadata of the snapshot
        tier_scan(scan, tiered, pctx.log_start_offset)
    held = batches.close()  # None: its rows are held for the task's file (a small replica, not read back)
    extra, payload = _internal_topic_findings(pdir, context["broker_id"])
    extra += [unlisted_dir(p, why) for p, why in pdir.listing_failures]  # the driver's plan did not list it
    extra += archive_damage(getattr(root_of(str(info["spec"])), "archive", None),
                            tuple(getattr(pdir.path, "parts", ())) or None)
    report = ScanReport(BrokerIdentity(node_id=context["broker_id"], cluster_id=context["cluster"]), [scan],
                        unseen_findings(scan.findings, extra), scan.files)
    rows = report_rows(report, context)
    found = finding_rows(rows)
    keys = finding_keys([SimpleNamespace(**r) for r in found])
    partition_rows = run_rows(rows["partitions"])
    sketch = None
    if pdir.name.suffix is None and pdir.topic != METADATA_TOPIC:
        made = make_sketch(partition_rows[0], sink, scan, held, out.filesystem)
        made.reported = frozenset(keys)
        made.tier = scan_view(scan)
        sketch = pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL)
    check = None
    if info.get("checks"):
        picked = [fit_values("partitions", r, CHECK_COLUMNS) for r in partition_rows]
        check = pickle.dumps((picked, keys), protocol=pickle.HIGHEST_PROTOCOL)
    skipped = left_out(-1 if context["broker_id"] is None else context["broker_id"], scan)
    counts = severities(found)
    out.keep(rows, t.part, pdir.name.suffix in ("delete", "stray"))
    return (t.snapshot_id, t.dir_name, "ok", None, scan.batch_count, scan.bytes, payload, context["cluster"],
            fit(pdir.topic, pa.string()), pdir.partition, sketch, counts, check,
            None if skipped is None else pickle.dumps(skipped))


def scan_task(t: TaskRow, info: SnapshotInfo, out: TaskOutput, kafka_version: KafkaVersion,
              walked: Walked | None = None) -> tuple:
    """Scan one task's partition dir: its batch rows streamed to their file, its other table rows kept (see
    :class:`TaskOutput`); its status row (:data:`STATUS_COLUMNS`: with the pickled committed offsets of a
    ``__consumer_offsets`` copy, its findings per severity, and what the broker checks read of it when its
    snapshot needs them)."""
    context = _context(t)
    try:
        name = walked[0].name if walked is not None else parse_partition_dir_name(from_hex(json.loads(t.raw)[1]))
    except Exception:  # noqa: BLE001 - a task that cannot be read fails below, where it becomes a finding
        name = None
    batch_dir = f"{out.staging_path}/{out.batches_dir}/" + hive_dir(
        "batches", context["cluster"], fit(getattr(name, "topic", None), pa.string()))[len("batches/"):]
    own = out.task_batches is None  # without the task's files (a caller scanning one dir), a file of its own
    task_batches = out.task_batches if out.task_batches is not None else TaskBatches(t.part, out.filesystem)
    writer = None
    try:
        out.mkdirs(batch_dir)
        writer = DirBatches(task_batches, batch_dir, f"{batch_dir}/{t.part}.parquet", context, out.filesystem)
        status = _scan_dir(t, info, out, kafka_version, writer, walked)
        writer.commit()  # only now: a dir that fails leaves no batch rows without its partition row
        writer = None
        if own:
            task_batches.close()
        return status
    except Exception as e:  # noqa: BLE001 - never lose the task: the failure becomes a finding row
        if writer is not None and writer.abandon():
            files.rmtree(out.filesystem, writer.path)  # no batch rows without their partition row
        err = f"{type(e).__name__}: {e}"
        f = finding("SCAN_FAILED", f"internal error scanning this partition: {err}",
                    file="/".join(str(x) for x in (info.get("spec"), t.log_dir, t.dir_name) if x),
                    traceback=traceback.format_exc()[-2000:])
        broker = BrokerIdentity(node_id=context["broker_id"], cluster_id=context["cluster"])
        rows = report_rows(ScanReport(broker, [], [f], []), context)
        counts = severities(finding_rows(rows))
        out.keep(rows, t.part)
        return (t.snapshot_id, t.dir_name, "failed", err, 0, 0, None, context["cluster"], None, None, None,
                counts, None, None)


def scan_tasks(staging: str, kafka_version: KafkaVersion,
               snapshots: Mapping[str, SnapshotInfo] | Broadcast[dict[str, SnapshotInfo]] | None = None,
               batches_dir: str = "batches") -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The mapInPandas function: scan each task's partition dir (batch rows streamed to a file per dir); the
    task's other table rows are written at its end, one file per table, cluster and topic.

    ``snapshots``: per snapshot id what :attr:`~kforensics.spark.plan.Plan.snapshots` says (or a Spark broadcast
    of it).
    """

    def run(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        tune_collector()  # a Python worker of this executor: it holds the task's partition results
        filesystem, staging_path = split_uri(staging)
        info = (snapshots if isinstance(snapshots, Mapping) else {} if snapshots is None else snapshots.value)
        part = spark_task_part("s")
        gathered, task_batches = Gathered(), TaskBatches(part, filesystem)
        out = TaskOutput(staging_path, filesystem, batches_dir, gathered, task_batches)
        tasks = [t for frame in frames for t in frame.itertuples(index=False)]
        walked = scan_together(tasks, info, kafka_version)
        statuses = [scan_task(t, info.get(t.snapshot_id, {}), out, kafka_version, walked.pop(i, None))
                    for i, t in enumerate(tasks)]
        task_batches.close()
        gathered.write(staging_path, part, filesystem)
        yield pd.DataFrame(statuses, columns=STATUS_COLUMNS)

    return run
