"""``scan``: one broker's log dir(s) as forensic evidence.

Builds the log-dir model, reads the root files (meta.properties, the four
offset checkpoints, the clean-shutdown marker), scans every partition and
cross-checks the checkpoints against the partition dirs, and, when the log
dir holds the KRaft metadata log, every replica's epochs against the
controller's grants.  The Spark driver plans with :func:`plan_log_dir` and
its executors scan with the same :func:`~kforensics.scan.partition.scan_partition`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import errors
from ..checks.files import check_listing
from ..epoch.versions import LATEST, KafkaVersion
from ..findings import Finding, FindingLog, finding
from ..log.file_kinds import METADATA_TOPIC, OFFSET_CHECKPOINTS
from ..log.listing import unlisted_dir
from ..log.log_dir import LogDir, open_log_dir, read_meta_properties
from ..log.partition import PartitionLog
from ..log.side_files import FileRecord
from ..log.small_segments import SMALL_ROUND
from ..log.sources import LISTED
from .model import BrokerIdentity, CheckpointEntry, PartitionContext, PartitionScan, ScanReport
from .partition import scan_partition
from .small_partitions import WalkedPartition, scan_plain

SCHEMA_VERSION = 2
#: whether scans take plain small partition dirs together by default (the tests compare both ways)
BATCHED = True


# the paths given are not what a scan takes (no log dir, several brokers): a usage error, not damage
InputError = errors.InputError


@dataclass
class RootContext:
    """What a log dir's root files say about its partitions."""

    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    recovery_points: dict[tuple[str, int], int] = field(default_factory=dict)
    log_start_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    cleaner_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    clean_shutdown: bool = False
    present: set[str] = field(default_factory=set)  # checkpoint kinds that were read
    bare: bool = False

    def for_partition(self, pd: PartitionLog) -> PartitionContext:
        ctx = PartitionContext(clean_shutdown=self.clean_shutdown,
                               hw_checkpoint_present="replication_offset_checkpoint" in self.present,
                               recovery_checkpoint_present="recovery_point_offset_checkpoint" in self.present,
                               bare=self.bare)
        if pd.name.suffix in (None, "future"):
            key = (pd.topic, pd.partition)
            ctx.high_watermark = self.high_watermarks.get(key)
            ctx.recovery_point = self.recovery_points.get(key)
            ctx.log_start_offset = self.log_start_offsets.get(key)
            ctx.cleaner_offset = self.cleaner_offsets.get(key)
        return ctx


@dataclass
class LogDirPlan:
    """A log dir's model, root context and the partitions to scan with their context (no segment read yet)."""

    log_dir: LogDir
    partitions: list[tuple[PartitionLog, PartitionContext]]
    context: RootContext


_TABLES = dict(zip(OFFSET_CHECKPOINTS, ("high_watermarks", "recovery_points", "log_start_offsets",
                                        "cleaner_offsets")))


def plan_log_dir(path: Any, broker: BrokerIdentity, findings: FindingLog, files: list[FileRecord],
                 checkpoints: list[CheckpointEntry] | None = None, list_partitions: bool = True) -> LogDirPlan:
    """Read a log dir's listing and root files (identity, checkpoints); report the log-dir level findings.
    ``list_partitions``: each partition dir is listed now, and one that cannot be listed reported here (False: by
    whoever lists it, with :func:`unlisted_dir`; the Spark driver leaves that to the task scanning the dir)."""
    ld = open_log_dir(path)
    broker.log_dirs.append(str(ld.path))
    archive = getattr(ld.path, "archive", None)
    if archive is not None and not archive.reported:
        # once per archive (it may hold several log dirs): what it lost, its duplicate and ignored members
        archive.reported = True
        files += _archive_copies(archive)
        findings.extend(archive.findings())
    for p, err in (ld.unreadable if list_partitions else ld.unlisted):
        findings.add(unlisted_dir(p, err))
    ctx = _root_context(ld, broker, findings, files, checkpoints)
    boot = ld.root_files.get("bootstrap_snapshot")
    if boot is not None:
        # the records a KRaft cluster was formatted with: read whole like every KRaft snapshot
        from ..log.metadata_log import read_metadata_file

        read = read_metadata_file(boot)
        findings.extend(read.findings)
        files += [read.record] if read.record else []
    findings.extend(check_listing(leftovers=ld.leftovers, unknown=ld.unknown, not_regular=ld.not_regular,
                                  where="log dir"))
    plan = LogDirPlan(ld, [], ctx)
    present = set()
    for pd in ld.partitions:
        if pd.name.suffix is None:
            present.add((pd.topic, pd.partition))
        plan.partitions.append((pd, ctx.for_partition(pd)))
    for kind in ("replication_offset_checkpoint", "recovery_point_offset_checkpoint"):
        table = getattr(ctx, _TABLES[kind])
        for key in sorted(set(table) - present):
            if key[0] == METADATA_TOPIC:
                continue
            findings.add(finding("CHECKPOINT_ENTRY_WITHOUT_PARTITION", f"{kind.replace('_', '-')} names "
                                 f"{key[0]}-{key[1]}, which has no directory here",
                                 file=ld.root_files.get(kind, ld.path), topic=key[0], partition=key[1],
                                 offset=table[key]))
    return plan


def _root_context(ld: LogDir, broker: BrokerIdentity, findings: FindingLog, files: list[FileRecord],
                  checkpoints: list[CheckpointEntry] | None) -> RootContext:
    ctx = RootContext()
    # root files named as Kafka names them that are FIFOs, devices or links to nothing: never read, and not absent
    special = {getattr(p, "name", None) for p, _ in ld.not_regular}
    mp = ld.read_root("meta_properties")
    if mp is None:
        why = ("meta.properties is not a regular file (not read): broker identity unknown" if "meta.properties"
               in special else "no meta.properties: broker identity unknown (pre-0.10 broker, or not a whole log dir)")
        findings.add(finding("NO_META_PROPERTIES", why, file=ld.path))
    else:
        findings.extend(mp.findings)
        files += [mp.record] if mp.record else []
        m = mp.value
        if m is not None:
            if broker.node_id is not None and m.node_id is not None and broker.node_id != m.node_id:
                findings.add(finding("BROKER_ID_CONFLICT", f"log dirs disagree on the broker id ({broker.node_id} vs "
                                                           f"{m.node_id})", file=mp.path))
            if broker.cluster_id is not None and m.cluster_id is not None and broker.cluster_id != m.cluster_id:
                findings.add(finding("CLUSTER_ID_CONFLICT", f"log dirs disagree on the cluster id "
                                                            f"({broker.cluster_id} vs {m.cluster_id})", file=mp.path))
            broker.node_id = m.node_id if broker.node_id is None else broker.node_id
            broker.cluster_id = broker.cluster_id or m.cluster_id
            broker.meta_version = m.version
            if m.directory_id:
                broker.directory_ids.append(m.directory_id)
    missing = []
    for kind in OFFSET_CHECKPOINTS:
        sf = ld.read_root(kind)
        if sf is None:
            missing.append(kind.replace("_", "-"))
            continue
        findings.extend(sf.findings)
        files += [sf.record] if sf.record else []
        if sf.value is None:
            continue
        ctx.present.add(kind)
        setattr(ctx, _TABLES[kind], sf.value.offsets())
        if checkpoints is not None:
            checkpoints += [CheckpointEntry(kind, sf.path, e.topic, e.partition, e.offset) for e in sf.value.entries]
    ctx.bare = ld.is_bare
    if missing:
        # once per log dir, not once per partition
        shown = ", ".join(m + (" (not a regular file)" if m in special else "") for m in missing)
        findings.add(finding("CHECKPOINTS_ABSENT", f"absent: {shown}; high watermarks / recovery points "
                                                   "unknown", file=ld.path, absent=missing))
    cs = ld.read_root("clean_shutdown")
    if cs is not None:
        findings.extend(cs.findings)
        files += [cs.record] if cs.record else []
        ctx.clean_shutdown = True
    broker.clean_shutdown[str(ld.path)] = ctx.clean_shutdown
    return ctx


def scan_log_dirs(paths: Iterable[Any], *, kafka_version: KafkaVersion = LATEST,
                  batch_sink: Callable[..., Any] | None = None,
                  progress: Callable[[int], None] | None = None,
                  on_partition: Callable[[str], None] | None = None, batched: bool | None = None) -> ScanReport:
    """Scan the log dirs of one broker (several for JBOD).

    ``batch_sink(partition_scan, segment, table)`` receives every chunk of
    batch headers as it is read (the Parquet writer, the replay).  ``batched``: plain partition dirs of one small
    segment are scanned together (:mod:`.small_partitions`; the same results as one by one, which False forces;
    None: :data:`BATCHED`).
    """
    batched = BATCHED if batched is None else batched
    broker = BrokerIdentity()
    findings = FindingLog()
    files: list[FileRecord] = []
    checkpoints: list[CheckpointEntry] = []
    partitions: list[PartitionScan] = []
    metadata_logs: list[PartitionLog] = []
    where: dict[tuple[str, int], str] = {}
    seen_paths: dict[str, Any] = {}
    log_starts: dict[tuple[str, int], int] = {}  # checkpointed log starts (a tiered log keeps them)
    planned: list[LogDir] = []
    for path in paths:
        key = _identity(path)
        if key in seen_paths:
            findings.add(finding("DUPLICATE_LOG_DIR", f"{path} was given twice (as {seen_paths[key]}); scanned once",
                                 file=path, first=str(seen_paths[key])))
            continue
        seen_paths[key] = path
        plan = plan_log_dir(path, broker, findings, files, checkpoints)
        planned.append(plan.log_dir)
        log_starts.update(plan.context.log_start_offsets)
        for pd, pctx, walked in _in_rounds(plan.partitions, kafka_version, batched):
            if on_partition:
                on_partition(pd.dir_name)
            if pd.name.suffix is None and pd.is_metadata_log:
                metadata_logs.append(pd)
            if pd.name.suffix is None:
                tp = (pd.topic, pd.partition)
                if tp in where:
                    # Kafka refuses to start with one partition in two log dirs
                    findings.add(finding("DUPLICATE_PARTITION", f"{pd.dir_name} is also in {where[tp]}: Kafka "
                                                                "refuses to start with a partition in two log dirs",
                                         file=pd.path, other=where[tp]))
                where.setdefault(tp, str(pd.path))
            if walked is None:
                partitions.append(scan_partition(pd, pctx, kafka_version=kafka_version, batch_sink=batch_sink,
                                                 progress=progress))
                continue
            partitions.append(walked.scan)
            if batch_sink is not None:
                batch_sink(pd, walked.segment, walked.table)
            if progress:
                progress(walked.scan.bytes)
    name_truncated_topics(partitions, findings)
    timeline = None
    if metadata_logs:
        from ..kraft.timeline import build_timeline

        timeline = build_timeline(metadata_logs)
        check_against_timeline(partitions, broker, findings, timeline)
        # the timeline reads the metadata segments and snapshots the scan has read: each finding once
        seen = {finding_key(f) for f in findings} | {finding_key(f) for p in partitions for f in p.findings}
        findings.extend(f for f in timeline.findings if finding_key(f) not in seen)
    # tiered storage: the topic configs the timeline folded (read once), the __remote_log_metadata in these dirs
    if _may_be_tiered(timeline, planned, partitions):
        from ..tiered.evidence import tier_scans

        findings.extend(tier_scans(partitions, list(seen_paths.values()), getattr(timeline, "cluster", None),
                                   log_starts))
    for archive in archives_of(seen_paths.values()):
        # members found damaged while they were read (plan_log_dir reported what the archive's index showed)
        known = {finding_key(f) for f in findings}
        findings.extend(f for f in archive.findings() if finding_key(f) not in known)
    report = ScanReport(broker, partitions, findings.findings(), files, checkpoints, kafka_version.label)
    for p in partitions:
        report.files += p.files
    return report


def _in_rounds(planned: list[tuple[PartitionLog, PartitionContext]], kafka_version: KafkaVersion, batched: bool
               ) -> Iterator[tuple[PartitionLog, PartitionContext, WalkedPartition | None]]:
    """The planned partition dirs in order, each with its scan when it was scanned with others (None: to scan on its
    own); :data:`~kforensics.log.small_segments.SMALL_ROUND` dirs at a time."""
    for lo in range(0, len(planned), SMALL_ROUND):
        part = planned[lo:lo + SMALL_ROUND]
        done = scan_plain(part, kafka_version=kafka_version) if batched else [None] * len(part)
        for (pd, pctx), w in zip(part, done):
            yield pd, pctx, w


#: the remote log metadata topic (``formats.remote_log_metadata.TOPIC``, whose decoders load only where it is)
REMOTE_LOG_METADATA = "__remote_log_metadata"


def _may_be_tiered(timeline: Any, planned: list[LogDir], partitions: list[PartitionScan]) -> bool:
    """Whether the tiered-storage evidence can say anything of these log dirs: the metadata log's topic configs, or
    a ``__remote_log_metadata`` partition among the dirs (each a log dir by its root files: the tiered reader
    lists what was scanned; a bare one it searches below, so it is asked)."""
    if timeline is not None or any(ld.is_bare for ld in planned):
        return True
    return any(p.topic == REMOTE_LOG_METADATA and p.suffix is None for p in partitions)


class FindingFacts(Protocol):
    """What :func:`finding_key` reads of a finding: a :class:`~kforensics.findings.Finding`, or a row of the
    ``findings`` table (the Spark driver's)."""

    @property
    def code(self) -> str: ...
    @property
    def file(self) -> str | None: ...
    @property
    def position(self) -> int | None: ...
    @property
    def line(self) -> int | None: ...
    @property
    def facts(self) -> Mapping[str, object]: ...


class ReplicaDir(Protocol):
    """What the broker-wide checks read of a partition dir: a :class:`PartitionScan`, or a row of the
    ``partitions`` table (the Spark driver's); :func:`name_truncated_topics` corrects ``topic`` and
    :func:`check_against_timeline` adds to ``findings``."""

    topic: str
    findings: list[Finding]

    @property
    def partition(self) -> int: ...
    @property
    def suffix(self) -> str | None: ...
    @property
    def topic_id(self) -> str | None: ...
    @property
    def epoch_cache_written(self) -> list[tuple[int, int]] | None: ...
    @property
    def epochs_seen(self) -> list[int]: ...
    @property
    def path(self) -> str: ...


def finding_key(f: FindingFacts) -> tuple[object, ...]:
    """What makes two findings the same observation (messages may be worded differently by two readers)."""
    return (f.code, f.file, f.position, f.line, f.facts.get("offset"), f.facts.get("finding_code"),
            f.facts.get("member"))


def archives_of(paths: Iterable[Any]) -> list[Any]:
    """The distinct archives the log dirs are in."""
    out: dict[int, Any] = {}
    for p in paths:
        archive = getattr(p, "archive", None)
        if archive is not None:
            out.setdefault(id(archive), archive)
    return list(out.values())


def _archive_copies(archive: Any) -> list[FileRecord]:
    """Custody records of the archive members its tree does not reach by name (duplicates): hashed, never lost."""
    import hashlib

    out = []
    for copy in archive.copies[:LISTED * 10]:
        digest, size = hashlib.sha256(), 0
        with archive.read_copy(copy) as fh:
            while piece := fh.read(1 << 20):
                digest.update(piece)
                size += len(piece)
        out.append(FileRecord(archive.path_of(copy.name), "archive_copy", size, digest.hexdigest()))
    return out


def _identity(path: Any) -> str:
    """What makes two given paths the same log dir (a local dir by its real path)."""
    import os

    if isinstance(path, (str, os.PathLike)):
        return os.path.realpath(path)
    return str(path)


def check_against_timeline(partitions: Sequence[ReplicaDir], broker: BrokerIdentity, findings: FindingLog,
                           metadata: Any) -> None:
    """Check every replica's epochs against the controller's grants in the KRaft metadata log.

    ``partitions`` are :class:`PartitionScan` objects, or rows of the partitions
    table (:class:`ReplicaDir`); each replica's findings are appended to its
    ``findings``.  ``metadata`` is a built :class:`~kforensics.kraft.timeline.Timeline`, or
    what :func:`~kforensics.kraft.timeline.build_timeline` takes (its
    findings are then reported here too).
    """
    from ..kraft.grants import check_replica_epochs
    from ..kraft.timeline import Timeline, build_timeline

    tl = metadata
    if not isinstance(tl, Timeline):
        tl = build_timeline(metadata)
        findings.extend(tl.findings)
    for p in partitions:
        if p.topic == METADATA_TOPIC or p.suffix is not None:
            continue
        p.findings += check_replica_epochs(tl, topic=p.topic, partition=p.partition, topic_id=p.topic_id,
                                           broker_id=broker.node_id, checkpoint=p.epoch_cache_written,
                                           batch_epochs=p.epochs_seen, file=p.path)


def name_truncated_topics(partitions: Sequence[ReplicaDir], findings: FindingLog) -> None:
    """``-delete``/``-stray`` dir names may hold a truncated topic; partition.metadata's topic id names it.

    ``partitions`` are one broker's :class:`PartitionScan` objects, or rows of the partitions table
    (:class:`ReplicaDir`); the corrected name is set on ``topic``.
    """
    names = {p.topic_id: p.topic for p in partitions if p.suffix is None and p.topic_id}
    for p in partitions:
        if p.suffix in ("delete", "stray") and p.topic_id in names and names[p.topic_id] != p.topic:
            findings.add(finding("TOPIC_NAME_FROM_TOPIC_ID", f"directory name gives topic {p.topic!r}; its topic id "
                                                             f"{p.topic_id} is {names[p.topic_id]!r}", file=p.path,
                                 dir_topic=p.topic, topic=names[p.topic_id]))
            p.topic = names[p.topic_id]



def resolve_log_dirs(paths: list[Any]) -> list[Any]:
    """The log dirs to scan for one broker: each path is a log dir, a directory or ``.tar``/``.tgz`` archive
    holding log dirs (searched), or a URI of one.

    Raises :class:`InputError` (a ``ValueError``) when a path holds no log dir, or holds log dirs of
    more than one broker (scan one broker at a time; ``replay`` and ``spark``
    take several).
    """
    from ..log.listing import as_path
    from ..log.log_dir import find_log_dirs, looks_like_log_dir
    from ..log.sources import resolve

    out: list[Any] = []
    for path in paths:
        p = resolve(path) if isinstance(path, str) else as_path(path)
        if looks_like_log_dir(p):
            out.append(p)
            continue
        found = find_log_dirs(p)
        if not found:
            stopped = getattr(getattr(p, "archive", None), "stopped", None)
            why = "" if stopped is None else (f"; the archive cannot be read past {stopped['after'] or 'its start'} "
                                              f"({stopped['error']})")
            raise InputError(f"{path} holds no Kafka log dir (no meta.properties, checkpoint or partition dir){why}")
        owners = {}
        for d in found:
            mp = read_meta_properties(d)
            m = mp.value if mp is not None else None
            owners[str(d)] = (m.cluster_id, m.node_id) if m is not None else (None, None)
        if len(set(owners.values())) > 1:
            listing = "; ".join(f"{d} (broker {o[1]}, cluster {o[0]})" for d, o in sorted(owners.items()))
            raise InputError(f"{path} holds the log dirs of several brokers: {listing}. Scan one broker's dirs at a "
                             "time (replay and spark take several brokers)")
        out += found
    return out


def broker_identity(paths: list[Any]) -> BrokerIdentity:
    """Who the broker is, from its log dirs' meta.properties alone (before a scan streams its tables)."""
    broker = BrokerIdentity()
    for path in paths:
        mp = read_meta_properties(path)
        m = mp.value if mp is not None else None
        if m is not None:
            broker.node_id = m.node_id if broker.node_id is None else broker.node_id
            broker.cluster_id = broker.cluster_id or m.cluster_id
    return broker
