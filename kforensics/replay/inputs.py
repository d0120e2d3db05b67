"""Replicas for replay, from brokers' log dirs: scan each, keep the replay columns, group partitions across brokers."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..epoch.versions import LATEST, KafkaVersion
from ..log.batch_table import COL, BatchTable
from ..log.partition import PartitionLog
from ..log.segment import LogSegment
from ..scan.broker import InputError, resolve_log_dirs, scan_log_dirs
from ..scan.model import PartitionScan, ScanReport
from ..tiered.evidence import scan_view
from .broker_workers import broker_loads
from .not_replayed import LeftOut, left_out
from .replica import COLUMNS, BatchLog, Replica, unknown_broker_id
from .summary import ReplicaSummary, SummaryBuilder, needs_summaries
from .verdicts import RecordDigest

_CRC, _CRC_COMPUTED = COL["crc"], COL["crc_computed"]


class ReplicaCollector:
    """A scan batch sink that keeps, per partition dir, the columns replay needs (never the whole table)."""

    def __init__(self, every_summary: bool = False) -> None:
        self.every_summary = every_summary
        self.parts: dict[str, list[np.ndarray]] = defaultdict(list)
        self.segments: dict[str, list[Any]] = defaultdict(list)
        # by partition dir, once its replica is built; None: a replica within the first digest range, whose group
        # is replayed from offset 0 whatever the summaries say (see :func:`~.summary.needs_summaries`)
        self.summaries: dict[str, ReplicaSummary | None] = {}

    def __call__(self, pd: PartitionLog, seg: LogSegment, t: BatchTable) -> None:
        key = str(pd.path)
        segs = self.segments[key]
        if not segs or segs[-1] is not seg.log:
            segs.append(seg.log)
        self.parts[key].append(replay_columns(t, len(segs) - 1))

    def replica(self, broker_id: int, p: PartitionScan, cluster_id: str | None = None) -> Replica:
        parts = self.parts.pop(p.path, [])
        data = (parts[0] if len(parts) == 1 else np.concatenate(parts)) if parts else BatchLog.empty().data
        r = Replica(broker_id, BatchLog(data), log_start=p.log_start_offset or 0, high_watermark=p.high_watermark,
                    epoch_checkpoint=p.epoch_cache_written, cleaner_offset=p.cleaner_offset, source=p.path,
                    segments=self.segments.pop(p.path, []), recovery=p.recovery,
                    clean_shutdown=p.recovery.clean_shutdown, cluster_id=cluster_id, topic_id=p.topic_id)
        summary = None
        if self.every_summary or needs_summaries(r):
            # the replica's summary, fed the scan's chunks in order as Spark's executors feed theirs
            builder = SummaryBuilder()
            for rows in parts:
                builder.feed(rows)
            summary = builder.finish(r)
        self.summaries[p.path] = summary
        return r


def replay_columns(t: BatchTable, segment: int) -> np.ndarray:
    """The replay's columns of a chunk of batch headers."""
    n = len(t)
    if not n:
        return np.empty((0, len(COLUMNS)), dtype=np.int64)
    data = t.data
    # one gather of the header columns, column-major as BatchLog keeps it (no second copy when the replica is made
    # of one chunk); a column at a time cost twice as much on a small partition's few batches
    out = np.asfortranarray(data[:, _TAKE])
    base = out[:, _BASE]
    if bool((base < 0).any()):
        np.copyto(base, t.first_offsets())
    np.equal(data[:, _CRC], data[:, _CRC_COMPUTED], out=out[:, _CRC_VALID], casting="unsafe")
    out[:, _SEGMENT] = segment
    return out


#: the batch-table column each replay column is taken from (crc_valid and segment are made: any column will do)
_TAKE = np.array([COL.get(name, 0) for name in COLUMNS])
_BASE, _CRC_VALID, _SEGMENT = (COLUMNS.index(c) for c in ("base_offset", "crc_valid", "segment"))


@dataclass
class LoadedBrokers:
    """Every broker's scan and the replicas of each partition, grouped across brokers."""

    groups: dict[tuple[str, int], list[Replica]] = field(default_factory=dict)
    # per group, in order (None: a replica the group's window does not need summarised, see ReplicaCollector)
    summaries: dict[tuple[str, int], list[ReplicaSummary | None]] = field(default_factory=dict)
    reports: list[ScanReport] = field(default_factory=list)
    broker_ids: list[int] = field(default_factory=list)
    log_dirs: list[list[Any]] = field(default_factory=list)  # per broker, its log dirs as path objects
    left_out: list[LeftOut] = field(default_factory=list)  # partition dirs that are no replica to replay
    # per broker, every partition dir its scan read: the scan's PartitionScan, or with ``slim`` its ScanKept (the
    # report in ``reports`` then keeps only the broker's identity and findings)
    scans: list[list[Any]] = field(default_factory=list)


def load_replicas(brokers: dict[int, list[Any]] | list[Any], *, kafka_version: KafkaVersion = LATEST,
                  every_summary: bool = False, slim: bool = False, jobs: int | None = 1) -> LoadedBrokers:
    """Scan each broker's log dir(s) and group the replicas of each partition.

    ``brokers`` maps broker id to its log dirs, or is a list of log dirs whose
    broker ids come from meta.properties (when absent: -1, -2, ... in order, :func:`unknown_broker_id`).
    A log dir may be a directory holding one broker's log dirs, or an archive
    of them (``.tar``/``.tgz``, read in place).  ``every_summary``: summarise every replica as the scan reads it
    (by default only those whose group the replay can window above offset 0, :func:`~.summary.needs_summaries`).
    ``slim``: once a broker's replicas are made, only what the replay reads later is kept of its partition dirs'
    scans (``scans``: :func:`scan_kept` of each), and none of its files and checkpoint entries: a fleet's scans
    are most of what a load holds.  ``jobs``: at most this many brokers loaded by worker processes at once, beside
    this process's (:mod:`.broker_workers`; None: one per core; 1: no worker); the result is the same whatever it
    is.
    """
    out = LoadedBrokers()
    groups: dict[tuple[str, int], list[Replica]] = defaultdict(list)
    items = brokers.items() if isinstance(brokers, dict) else [(None, [d]) for d in brokers]
    unknown = 0
    tasks = []
    for bid, dirs in items:
        resolved = resolve_log_dirs(list(dirs))
        out.log_dirs.append(resolved)
        tasks.append(BrokerTask(bid, resolved, kafka_version, every_summary, slim))
    for resolved, load in zip(out.log_dirs, broker_loads(tasks, out.log_dirs, jobs, load_broker)):
        out.reports.append(load.report)
        broker_id = load.broker_id
        if broker_id is None:
            unknown += 1
            broker_id = unknown_broker_id(unknown)
            load = load.as_broker(broker_id)
        if broker_id in out.broker_ids:
            raise same_broker(broker_id, _dirs(out.log_dirs[out.broker_ids.index(broker_id)]), _dirs(resolved))
        out.broker_ids.append(broker_id)
        out.left_out += load.left_out  # said in the report (PARTITION_NOT_REPLAYED), not dropped silently
        for key, replica, summary in load.replicas:
            groups[key].append(replica)
            out.summaries.setdefault(key, []).append(summary)
        out.scans.append(load.scans)
    clusters = {r.broker.cluster_id for r in out.reports if r.broker.cluster_id is not None}
    if len(clusters) > 1:
        which = "; ".join(f"broker {b}: {r.broker.cluster_id}" for b, r in zip(out.broker_ids, out.reports))
        raise InputError(f"these brokers belong to different clusters ({which}): replicas of one partition live "
                         "in one cluster; replay each cluster on its own")
    out.groups = dict(groups)
    return out


@dataclass
class BrokerTask:
    """What loading one broker takes: its id (None: from its meta.properties), its resolved log dirs, the load's
    options."""

    broker_id: int | None
    log_dirs: list[Any]
    kafka_version: KafkaVersion
    every_summary: bool
    slim: bool


@dataclass
class BrokerLoad:
    """One broker's share of a load: its scan's report, its replicas in scan order (each with its group and its
    summary), its partition dirs left out and what is kept of its scans.  ``broker_id`` None: nothing names the
    broker (the loader numbers it, :meth:`as_broker`)."""

    broker_id: int | None
    report: ScanReport
    replicas: list[tuple[tuple[str, int], Replica, ReplicaSummary | None]]
    left_out: list[LeftOut]
    scans: list[Any]

    def as_broker(self, broker_id: int) -> BrokerLoad:
        """This load as broker ``broker_id``'s: every replica, summary and partition dir left out says so."""
        return BrokerLoad(broker_id, self.report,
                          [(k, r.as_broker(broker_id), None if s is None else replace(s, broker_id=broker_id))
                           for k, r, s in self.replicas],
                          [replace(o, broker_id=broker_id) for o in self.left_out], self.scans)


#: the id a broker's replicas carry until the loader numbers an unnamed broker (never a real one: Kafka's are >= 0,
#: the loader's own -1, -2, ...)
_UNNAMED = -(2 ** 31)


def load_broker(task: BrokerTask) -> BrokerLoad:
    """Scan one broker's log dirs and make its replicas (what :func:`load_replicas` does for each broker, in this
    process or a worker's)."""
    collect = ReplicaCollector(task.every_summary)
    report = scan_log_dirs(task.log_dirs, kafka_version=task.kafka_version, batch_sink=collect)
    named = task.broker_id if task.broker_id is not None else report.broker.node_id
    broker_id = _UNNAMED if named is None else named
    replicas: list[tuple[tuple[str, int], Replica, ReplicaSummary | None]] = []
    left: list[LeftOut] = []
    paths: dict[int, str | None] = {}
    for p in report.partitions:
        skipped = left_out(broker_id, p)
        if skipped is not None:
            left.append(skipped)
            continue
        replica = collect.replica(broker_id, p, report.broker.cluster_id)
        replicas.append(((p.topic, p.partition), replica, collect.summaries.pop(p.path)))
        paths[id(p)] = replica.source
    if task.slim:
        scans: list[Any] = [scan_kept(p, paths.get(id(p))) for p in report.partitions]
        report.partitions, report.files, report.checkpoints = [], [], []
    else:
        scans = report.partitions
    return BrokerLoad(named, report, replicas, left, scans)


class ScanKept:
    """What the replay reads of a partition dir's scan once its replica is made: its dir name (which inputs the
    log dirs hold) and what the tiered-storage hook reads (:func:`~kforensics.tiered.evidence.scan_view`: path,
    tiered facts, the local start as one segment), in a few slots."""

    __slots__ = ("path", "dir_name", "tiered", "_start")

    def __init__(self, scan: PartitionScan, path: str | None = None) -> None:
        view = scan_view(scan)
        self.path: str = view.path
        if path is not None and path == self.path:
            self.path = path  # the replica's own string: one copy
        self.dir_name: str = scan.dir_name
        self.tiered: Any = view.tiered
        self._start = tuple((s.base_offset, s.first_offset, s.path is not None) for s in view.segments)

    @property
    def segments(self) -> list[SimpleNamespace]:
        return [SimpleNamespace(base_offset=b, first_offset=f, path=self.path if named else None)
                for b, f, named in self._start]


def scan_kept(scan: PartitionScan, path: str | None = None) -> ScanKept:
    """The :class:`ScanKept` of a partition dir's scan (``path``: its path string as the replica holds it)."""
    return ScanKept(scan, path)


def same_broker(broker_id: int, first: str, second: str, remedy: str = "name them with --broker ID=DIR"
                ) -> InputError:
    """The refusal of two inputs that are one broker (``replay``'s, and the Spark job's for two snapshots)."""
    return InputError(f"two of the log dirs given are broker {broker_id} ({first} and {second}): give each broker "
                      f"once, or {remedy}")


def _dirs(dirs: list[Any]) -> str:
    return ", ".join(str(getattr(d, "path", d)) for d in dirs)


def batch_digests(replica: Replica, log: BatchLog, limit: int = 1000) -> list[RecordDigest]:
    """Key/value SHA-256 of the records of these batches, read back from the replica's segments (any source)."""
    from ..log.records import EntryRecords
    from ..log.segment_reader import read_entry

    out: list[RecordDigest] = []
    seg_i, pos_i, size_i, pid_i = (COLUMNS.index(c) for c in ("segment", "position", "size_in_bytes", "producer_id"))
    for row in log.data.tolist():
        if len(out) >= limit:
            break
        seg, pos, size = row[seg_i], row[pos_i], row[size_i]
        if seg < 0 or pos < 0:
            continue  # fetched during the replay: its bytes are on another disk
        batch = read_entry(replica.segments[seg], pos, size)
        if batch is None:
            continue
        for r in EntryRecords(batch):
            out.append(RecordDigest(r.offset, r.key_sha256, r.value_sha256, r.value_size, row[pid_i]))
    return out[:limit]
