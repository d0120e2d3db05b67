"""``scan``: one broker's log dir(s) as forensic evidence.

Builds the log-dir model, reads the root files (meta.properties, the four
offset checkpoints, the clean-shutdown marker), scans every partition and
cross-checks the checkpoints against the partition dirs.  Returns a
:class:`ScanReport` that the CLI renders as text, JSON or Parquet and that
the Spark pipeline produces per snapshot with the same code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..findings import Finding, Severity
from ..serialize import to_jsonable
from ..formats import checkpoint, clean_shutdown, meta_properties
from ..log.log_dir import METADATA_TOPIC, LogDir, open_log_dir
from .partition_scan import FileRecord, PartitionContext, PartitionScan, scan_partition

SCHEMA_VERSION = 1
OFFSET_CHECKPOINTS = (
    "replication_offset_checkpoint",
    "recovery_point_offset_checkpoint",
    "log_start_offset_checkpoint",
    "cleaner_offset_checkpoint",
)


@dataclass
class BrokerIdentity:
    node_id: int | None = None
    cluster_id: str | None = None
    meta_version: int | None = None
    directory_ids: list[str] = field(default_factory=list)
    log_dirs: list[str] = field(default_factory=list)
    clean_shutdown: dict[str, bool] = field(default_factory=dict)
    # every entry of the log dirs' offset checkpoints: {kind, file, topic, partition, offset}
    checkpoints: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "checkpoints"}


@dataclass
class ScanReport:
    """Everything one scan found."""

    broker: BrokerIdentity
    partitions: list[PartitionScan]
    findings: list[Finding]
    files: list[FileRecord]
    kafka_version: str = "latest"

    def all_findings(self) -> list[Finding]:
        out = list(self.findings)
        for p in self.partitions:
            out += p.findings
        return out

    def max_severity(self) -> Severity | None:
        fs = self.all_findings()
        return max((f.severity for f in fs), default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "kforensics", "version": __version__},
            "broker": self.broker.to_dict(),
            "partitions": [p.to_dict() for p in self.partitions],
            "findings": [to_jsonable(f) for f in self.all_findings()],
            "files": [f.__dict__ for f in self.files],
            "checkpoints": self.broker.checkpoints,
        }


def _read_root(path: Path, kind: str, report_findings: list, files: list) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError as e:
        report_findings.append(Finding("UNREADABLE_FILE", Severity.HIGH, f"cannot read: {e}", file=str(path)))
        return None
    files.append(FileRecord(str(path), kind, len(data), hashlib.sha256(data).hexdigest()))
    return data


def scan_log_dirs(
    paths: Iterable[str | Path],
    *,
    kafka_version: str = "latest",
    keep_batches: bool = False,
    progress: Callable[[int], None] | None = None,
    on_partition: Callable[[str], None] | None = None,
) -> ScanReport:
    """Scan the log dirs of one broker (several for JBOD)."""
    broker = BrokerIdentity()
    findings: list[Finding] = []
    files: list[FileRecord] = []
    partitions: list[PartitionScan] = []
    for path in paths:
        plan = plan_log_dir(path, broker, findings, files)
        for pd, pctx in plan.partitions:
            if on_partition:
                on_partition(pd.path.name)
            partitions.append(scan_partition(pd, pctx, kafka_version=kafka_version, keep_batches=keep_batches,
                                             progress=progress))
    _name_truncated_topics(partitions, findings)
    _check_against_timeline(partitions, broker, findings)
    report = ScanReport(broker, partitions, findings, files, kafka_version)
    for p in partitions:
        report.files += p.files
    return report


@dataclass
class LogDirPlan:
    """A log dir's model, root context and the partitions to scan with their context."""

    log_dir: LogDir
    partitions: list[tuple[Any, PartitionContext]]


def plan_log_dir(path, broker: BrokerIdentity, findings: list[Finding], files: list[FileRecord]) -> LogDirPlan:
    """Read a log dir's listing and root files (identity, checkpoints); report the log-dir level findings.

    Cheap (no segment is read): the Spark driver plans with it and ships each
    partition with its context to the executors.
    """
    ld = open_log_dir(path)
    broker.log_dirs.append(str(ld.path))
    for p, err in ld.unreadable:
        findings.append(Finding("UNREADABLE_DIR", Severity.HIGH, f"cannot list: {err}", file=str(p)))
    ctx = _root_context(ld, broker, findings, files)
    for p, kind in ld.leftovers:
        findings.append(Finding("LEFTOVER_FILE", Severity.LOW, f"{kind.leftover} file left by an interrupted write",
                                file=str(p), facts={"leftover": kind.leftover}))
    for p in ld.unknown:
        findings.append(Finding("UNKNOWN_FILE", Severity.LOW, "not a file or directory Kafka keeps in a log dir",
                                file=str(p)))
    seen = set()
    plan = LogDirPlan(ld, [])
    for pd in ld.partitions:
        key = (pd.topic, pd.partition)
        if pd.name.suffix is None:
            seen.add(key)
        pctx = PartitionContext(clean_shutdown=ctx["clean"], hw_checkpoint_present=ctx["hw_present"], bare=ctx["bare"])
        if pd.name.suffix in (None, "future"):
            pctx.high_watermark = ctx["hw"].get(key)
            pctx.recovery_point = ctx["rp"].get(key)
            pctx.log_start_offset = ctx["lso"].get(key)
            pctx.cleaner_offset = ctx["clean_off"].get(key)
        plan.partitions.append((pd, pctx))
    for kind, table in (("replication_offset_checkpoint", ctx["hw"]), ("recovery_point_offset_checkpoint", ctx["rp"])):
        for key in sorted(set(table) - seen):
            if key[0] == METADATA_TOPIC:
                continue
            findings.append(Finding("CHECKPOINT_ENTRY_WITHOUT_PARTITION", Severity.LOW,
                                    f"{kind.replace('_', '-')} names {key[0]}-{key[1]}, which has no directory here",
                                    file=str(ld.root_files.get(kind, ld.path)),
                                    facts={"topic": key[0], "partition": key[1], "offset": table[key]}))
    return plan


def _check_against_timeline(partitions: list[PartitionScan], broker: BrokerIdentity, findings: list[Finding]) -> None:
    """With a KRaft metadata log in the log dir, check every replica's epochs against the controller's grants."""
    meta = [p for p in partitions if p.topic == METADATA_TOPIC and p.suffix is None]
    if not meta:
        return
    from .timeline import build_timeline, check_replica_epochs

    try:
        tl = build_timeline([Path(p.log_dir) / p.dir_name for p in meta])
    except OSError as e:
        findings.append(Finding("UNREADABLE_FILE", Severity.HIGH, f"metadata log: {e}"))
        return
    for p in partitions:
        if p.topic == METADATA_TOPIC or p.suffix is not None:
            continue
        p.findings += check_replica_epochs(tl, p.topic, p.partition, broker.node_id, p.epoch_cache_written,
                                           p.epochs_seen, file=str(Path(p.log_dir) / p.dir_name))


def _name_truncated_topics(partitions: list[PartitionScan], findings: list[Finding]) -> None:
    """``-delete``/``-stray`` dir names may hold a truncated topic; partition.metadata's topic id names it."""
    names = {p.topic_id: p.topic for p in partitions if p.suffix is None and p.topic_id}
    for p in partitions:
        if p.suffix in ("delete", "stray") and p.topic_id in names and names[p.topic_id] != p.topic:
            findings.append(Finding("TOPIC_NAME_FROM_TOPIC_ID", Severity.INFO,
                                    f"directory name gives topic {p.topic!r}; its topic id {p.topic_id} is "
                                    f"{names[p.topic_id]!r}", file=str(Path(p.log_dir) / p.dir_name),
                                    facts={"dir_topic": p.topic, "topic": names[p.topic_id]}))
            p.topic = names[p.topic_id]


def _root_context(ld: LogDir, broker: BrokerIdentity, findings: list, files: list) -> dict[str, Any]:
    ctx: dict[str, Any] = {"hw": {}, "rp": {}, "lso": {}, "clean_off": {}, "clean": False, "hw_present": False}
    mp_path = ld.root_files.get("meta_properties")
    if mp_path is None:
        findings.append(Finding("NO_META_PROPERTIES", Severity.LOW,
                                "no meta.properties: broker identity unknown (pre-0.10 broker, or not a whole log dir)",
                                file=str(ld.path)))
    else:
        data = _read_root(mp_path, "meta_properties", findings, files)
        if data is not None:
            mp = meta_properties.decode(data)
            findings += [f.at(str(mp_path)) for f in mp.findings]
            if broker.node_id is not None and mp.node_id is not None and broker.node_id != mp.node_id:
                findings.append(Finding("BROKER_ID_CONFLICT", Severity.HIGH,
                                        f"log dirs disagree on the broker id ({broker.node_id} vs {mp.node_id})",
                                        file=str(mp_path)))
            broker.node_id = mp.node_id if broker.node_id is None else broker.node_id
            broker.cluster_id = broker.cluster_id or mp.cluster_id
            broker.meta_version = mp.version
            if mp.directory_id:
                broker.directory_ids.append(mp.directory_id)
    missing = []
    for kind, key in zip(OFFSET_CHECKPOINTS, ("hw", "rp", "lso", "clean_off")):
        p = ld.root_files.get(kind)
        if p is None:
            missing.append(kind.replace("_", "-"))
            continue
        data = _read_root(p, kind, findings, files)
        if data is None:
            continue
        cp = checkpoint.decode(data, kind)
        findings += [f.at(str(p)) for f in cp.findings]
        ctx[key] = cp.offsets()
        broker.checkpoints += [{"kind": kind, "file": str(p), **e} for e in cp.entries]
        if kind == "replication_offset_checkpoint":
            ctx["hw_present"] = True
    ctx["bare"] = mp_path is None and len(missing) == len(OFFSET_CHECKPOINTS)
    if missing:
        # once per log dir, not once per partition
        findings.append(Finding("CHECKPOINTS_ABSENT", Severity.LOW,
                                f"absent: {', '.join(missing)}; high watermarks / recovery points unknown",
                                file=str(ld.path), facts={"absent": missing}))
    cs = ld.root_files.get("clean_shutdown")
    if cs is not None:
        data = _read_root(cs, "clean_shutdown", findings, files)
        if data is not None:
            findings += [f.at(str(cs)) for f in clean_shutdown.decode(data).findings]
        ctx["clean"] = True
    broker.clean_shutdown[str(ld.path)] = ctx["clean"]
    if "lock" in ld.root_files:
        files.append(FileRecord(str(ld.root_files["lock"]), "lock", ld.root_files["lock"].stat().st_size, None))
    return ctx
