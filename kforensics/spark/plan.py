"""The driver's plan, before Spark starts: every snapshot's root files read, its partition dirs the scan tasks.

Everything that can be refused is refused before a JVM starts, with the
sentences ``scan`` and ``replay`` give: the output (:mod:`.output`), the
snapshots (:func:`kforensics.spark.inputs.locate`: missing, no log dir, the
log dirs of several brokers, one broker twice), and here a ``--metadata``
input of no known cluster.  The driver reads each snapshot's listing and
root files with :func:`kforensics.scan.broker.plan_log_dir`, as ``scan``
does, and builds one KRaft timeline per cluster, as ``replay`` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import pandas as pd
import pyarrow as pa

from ..errors import InputError
from ..findings import Finding, FindingLog, finding
from ..formats.remote_log_metadata import TOPIC as REMOTE_LOG_METADATA_TOPIC
from ..formats.transaction_log import TOPIC as TRANSACTION_STATE_TOPIC
from ..kraft.controller_choice import marker_epochs
from ..log.log_dir import LogDir
from ..log.partition import PartitionLog
from ..log.sources import ArrowPath, TarArchive, TarPath
from ..scan.broker import LogDirPlan, finding_key, plan_log_dir
from ..scan.model import BrokerIdentity, PartitionContext, ScanReport
from ..tables.report_tables import REPORT_TABLES
from ..tables.schemas import fit
from . import table_files
from .files import Context, FileSystem, cluster_context
from .inputs import Located, Snapshot, locate
from .names import relative, snapshot_part, task_part, to_hex
from .output import MetadataInputs
from .schemas import TASK_COLUMNS, GroupKey

if TYPE_CHECKING:
    from ..kraft.timeline import Timeline
    from ..tiered.evidence import TieredEvidence

#: where evidence is read from: a local path, an archive member, a file of a pyarrow filesystem (as
#: :class:`kforensics.spark.inputs.Located` holds it)
EvidencePath = Path | TarPath | ArrowPath


class MetadataInputError(InputError):
    """A ``--metadata`` input that does not exist or whose cluster is not known."""


# ----------------------------------------------------------------------------- the plan
class SnapshotInfo(TypedDict, total=False):
    """What executors need of a snapshot (a task of a snapshot the plan does not name gets none of it)."""

    spec: str  # where it is, as given
    log_dirs: list[str]  # its log dirs, relative to its root, hex-encoded (names as they are on disk)
    transaction_state: bool  # whether it holds ``__transaction_state``
    checks: bool  # whether the broker checks read its partition rows (see broker_checks)
    tiered: TieredEvidence  # the topics its metadata log tiers and its remote metadata (see .tiered); else absent


@dataclass
class Plan:
    """What the driver read: the scan tasks, the brokers' rows, and the KRaft metadata logs found."""

    tasks: pd.DataFrame
    brokers: list[dict[str, object]]
    #: per snapshot id: its context (snapshot id and time, cluster, broker id)
    contexts: dict[str, Context] = field(default_factory=dict)
    #: per snapshot id: its own metadata-log partitions (``scan`` checks the broker's replicas against them)
    snapshot_metadata: dict[str, list[PartitionLog]] = field(default_factory=dict)
    #: per cluster: the log dirs holding a metadata log (the controller's record ``replay`` reads)
    cluster_metadata: dict[str | None, list[LogDir]] = field(default_factory=dict)
    #: per snapshot id: what executors need (spec, its log dirs, whether it holds ``__transaction_state``)
    snapshots: dict[str, SnapshotInfo] = field(default_factory=dict)
    #: per snapshot id: what the driver reported about it (:func:`kforensics.scan.broker.finding_key`)
    reported: dict[str, set[tuple]] = field(default_factory=dict)
    #: per snapshot id: the findings the driver found about it (archive, log dirs, root files)
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    #: per snapshot id: the broker epochs its clean-shutdown markers name (the controller's choice reads them)
    shutdown_epochs: dict[str, frozenset[int]] = field(default_factory=dict)
    #: the snapshots holding a ``__remote_log_metadata`` partition dir (tiered storage's own topic)
    remote_metadata: set[str] = field(default_factory=set)
    #: per snapshot id: the plans of its log dirs (their partition dirs by name, not yet listed)
    log_dirs: dict[str, list[LogDirPlan]] = field(default_factory=dict)
    #: what is left of the plan once nothing it read can be refused: each snapshot's task rows and root files'
    #: tables (:func:`finish`; a job starts its JVM meanwhile)
    pending: list[Callable[[], list[dict[str, object]]]] = field(default_factory=list)


def plan(snapshots: list[Snapshot] | list[Located], staging: str, filesystem: FileSystem = None, *,
         defer: bool = False) -> Plan:
    """Read every snapshot's listing and root files on the driver (writing the root files' tables under
    ``staging``); the partition dirs become tasks.  Snapshots not yet :func:`locate`-d are located first (and
    refused as there).  ``defer``: the task rows and the root files' tables are left to :func:`finish` (nothing
    they hold can be refused: the job builds them while its JVM starts)."""
    located = [s for s in snapshots if isinstance(s, Located)]
    if len(located) != len(snapshots):
        located = locate([s for s in snapshots if isinstance(s, Snapshot)])
    out = Plan(pd.DataFrame(columns=TASK_COLUMNS), [])
    for loc in located:
        out.pending.append(_plan_snapshot(loc, out, staging, filesystem))
    return out if defer else finish(out)


def replica_brokers(out: Plan) -> dict[GroupKey, set[int | None]]:
    """Per partition group (cluster, topic, partition): the brokers whose snapshots hold a replica of it (a
    partition dir without a suffix), from the dirs' names."""
    held: dict[GroupKey, set[int | None]] = {}
    for snapshot_id, plans in out.log_dirs.items():
        context = out.contexts[snapshot_id]
        for p in plans:
            for pd_, _ in p.partitions:
                if pd_.name.suffix is None:
                    held.setdefault((context["cluster"], pd_.topic, pd_.partition), set()).add(context["broker_id"])
    return held


def finish(out: Plan) -> Plan:
    """What :func:`plan` left: each snapshot's task rows (``out.tasks``), its root files' tables written."""
    tasks: list[dict[str, object]] = []
    for rest in out.pending:
        tasks += rest()
    out.pending = []
    out.log_dirs = {}  # the tasks hold what is read of them now
    out.tasks = pd.DataFrame(tasks, columns=TASK_COLUMNS)
    return out


def _read_root_files(loc: Located, broker: BrokerIdentity, findings: FindingLog, report: ScanReport
                     ) -> list[LogDirPlan]:
    """``plan_log_dir`` of each of the snapshot's log dirs, and the archive's damage found on the way."""
    try:
        # the partition dirs are listed by the tasks that scan them (each reports its own if it cannot be): the
        # driver listing 30 000 of them only to find those would list every one twice
        plans = [plan_log_dir(d, broker, findings, report.files, report.checkpoints, list_partitions=False)
                 for d in loc.log_dirs]
        # members found damaged while the driver read them (root files), as scan_log_dirs reports them at the
        # end; those under a partition dir are the executor's that scans it
        known = {finding_key(f) for f in findings}
        under = [tuple(getattr(pd_.path, "parts", ())) for p in plans for pd_, _ in p.partitions]
        archive = getattr(loc.root, "archive", None)
        findings.extend(f for f in archive_damage(archive, None, under) if finding_key(f) not in known)
        return plans
    except Exception as e:  # noqa: BLE001 - an archive or remote filesystem that fails while read: a finding
        findings.add(finding("SNAPSHOT_UNREADABLE", f"{type(e).__name__}: {e}", file=loc.snapshot.spec))
        return []


def _plan_snapshot(loc: Located, out: Plan, staging: str, filesystem: FileSystem
                   ) -> Callable[[], list[dict[str, object]]]:
    """Plan one snapshot into ``out``; what makes its tasks (and writes its root files' tables)."""
    snap = loc.snapshot
    broker, findings = BrokerIdentity(), FindingLog()
    report = ScanReport(broker, [], [], [], [])
    plans = _read_root_files(loc, broker, findings, report)
    context: Context = {"snapshot_id": snap.snapshot_id, "snapshot_time": snap.snapshot_time,
                        "cluster": snap.cluster or broker.cluster_id,
                        "broker_id": fit(snap.broker_id if snap.broker_id is not None else broker.node_id,
                                         pa.int32())}
    out.contexts[snap.snapshot_id] = context
    out.log_dirs[snap.snapshot_id] = plans
    report.findings = findings.findings()
    out.findings[snap.snapshot_id] = report.findings
    out.reported[snap.snapshot_id] = {finding_key(f) for f in report.findings}
    has_txn_state = _special_dirs(snap.snapshot_id, plans, context, out)
    out.shutdown_epochs[snap.snapshot_id] = marker_epochs(p.log_dir for p in plans)
    suffixed = any(pd_.name.suffix in ("delete", "stray") for p in plans for pd_, _ in p.partitions)
    out.snapshots[snap.snapshot_id] = {
        "spec": snap.spec, "log_dirs": [to_hex(relative(loc.root, p.log_dir.path)) for p in plans],
        "transaction_state": has_txn_state,
        "checks": suffixed or snap.snapshot_id in out.snapshot_metadata}
    archive = getattr(loc.root, "archive", None)
    out.brokers.append({**context, "spec": snap.spec, "log_dirs": json.dumps(broker.log_dirs),
                        "meta_version": broker.meta_version, "directory_ids": json.dumps(broker.directory_ids),
                        "clean_shutdown": json.dumps(broker.clean_shutdown),
                        "archive_members_ignored": getattr(archive, "untrusted_count", 0)})

    def rest() -> list[dict[str, object]]:
        for name, make in REPORT_TABLES.items():
            table_files.write(name, make(report, context), staging, snapshot_part(snap.snapshot_id), filesystem)
        return _tasks(loc, plans, context)

    return rest


#: the fields of a partition's context a task carries (plain values: ``asdict``'s deep copy is not needed)
_CONTEXT_FIELDS = tuple(f.name for f in fields(PartitionContext))


def _special_dirs(snapshot_id: str, plans: list[LogDirPlan], context: Context, out: Plan) -> bool:
    """The snapshot's metadata logs and ``__remote_log_metadata`` dirs noted in ``out``; whether it holds
    ``__transaction_state``."""
    has_txn_state = False
    for p in plans:
        metadata_logs = [pd_ for pd_, _ in p.partitions if pd_.is_metadata_log and pd_.name.suffix is None]
        if metadata_logs:
            out.snapshot_metadata.setdefault(snapshot_id, []).extend(metadata_logs)
            out.cluster_metadata.setdefault(context["cluster"], []).append(p.log_dir)
        for pd_, _ in p.partitions:
            if pd_.name.suffix is None and pd_.topic == TRANSACTION_STATE_TOPIC:
                has_txn_state = True
            elif pd_.name.suffix is None and pd_.topic == REMOTE_LOG_METADATA_TOPIC:
                out.remote_metadata.add(snapshot_id)
    return has_txn_state


def _tasks(loc: Located, plans: list[LogDirPlan], context: Context) -> list[dict[str, object]]:
    """The snapshot's partition dirs as scan tasks."""
    snap = loc.snapshot
    tasks = []
    for p in plans:
        log_dir = relative(loc.root, p.log_dir.path)
        shown, hex_dir = fit(log_dir, pa.string()), to_hex(log_dir)
        for pd_, pctx in p.partitions:
            tasks.append({
                "snapshot_id": snap.snapshot_id, "log_dir": shown, "dir_name": fit(pd_.dir_name, pa.string()),
                "raw": json.dumps([hex_dir, to_hex(pd_.dir_name)]),
                "broker_id": context["broker_id"], "cluster": context["cluster"],
                "snapshot_time": snap.snapshot_time,
                "context": json.dumps({f: getattr(pctx, f) for f in _CONTEXT_FIELDS}),
                "part": task_part(snap.snapshot_id, pd_.dir_name),
                "topic": fit(pd_.topic, pa.string()), "partition": fit(pd_.partition, pa.int32()),
            })
    return tasks


# ----------------------------------------------------------------------------- metadata logs
class _Unsaid:
    """An input whose cluster is not said."""


_UNSAID = _Unsaid()


def metadata_by_cluster(metadata: MetadataInputs, clusters: set[str | None]) -> dict[str | None, list[str]]:
    """Explicit metadata inputs (``--metadata``) by cluster.

    Each input is a path, or a ``(cluster, path)`` pair that says its
    cluster (a dict of paths by cluster says it for all of them).  A plain
    path belongs to the cluster its log dir's meta.properties names, else to
    the snapshots' cluster when they are all of one; otherwise
    :class:`MetadataInputError` (say ``CLUSTER=PATH``), as for a path that
    does not exist: before Spark runs anything.
    """
    from ..log.metadata_log import find_metadata_sources

    items: list[tuple[str | None | _Unsaid, str]] = (
        [(c, p) for c, ps in metadata.items() for p in ps] if isinstance(metadata, dict) else
        [m if isinstance(m, tuple) else (_UNSAID, m) for m in (metadata or [])])
    out: dict[str | None, list[str]] = {}
    for cluster, path in items:
        try:
            named = {c for c in find_metadata_sources([path]).cluster_ids.values() if c is not None}
        except FileNotFoundError as e:
            raise MetadataInputError(f"--metadata: {e}") from None
        if isinstance(cluster, _Unsaid):
            if len(named) == 1:
                cluster = named.pop()
            elif len(clusters) == 1:
                cluster = next(iter(clusters))
            else:
                raise MetadataInputError(
                    f"--metadata: {path}: its cluster is not known (no meta.properties beside it) and the snapshots "
                    f"are of {len(clusters)} clusters ({', '.join(sorted(map(str, clusters)))}); give CLUSTER=PATH")
        out.setdefault(cluster, []).append(path)
    return out


def build_timelines(plan_: Plan, metadata: dict[str | None, list[str]]
                    ) -> tuple[dict[str | None, Timeline], dict[str | None, list[Finding]]]:
    """One KRaft timeline per cluster, from its snapshots' metadata logs and the explicit inputs, as ``replay``
    builds it; and per cluster the findings of building it (written once the scan stage has said what it read:
    each finding once)."""
    from ..kraft.timeline import build_timeline

    timelines: dict[str | None, Timeline] = {}
    findings: dict[str | None, list[Finding]] = {}
    for cluster in sorted(set(plan_.cluster_metadata) | set(metadata), key=lambda c: (c is not None, str(c))):
        # as replay_all: the explicit inputs first, then the log dirs holding a metadata log
        inputs = list(metadata.get(cluster, [])) + list(plan_.cluster_metadata.get(cluster, []))
        try:
            tl = build_timeline(inputs)
        except Exception as e:  # noqa: BLE001 - an unreadable archive member: the cluster replays without it
            where = ", ".join(str(getattr(x, "path", x)) for x in inputs)
            findings[cluster] = [finding("SNAPSHOT_UNREADABLE", f"the metadata log could not be read: "
                                         f"{type(e).__name__}: {e}", file=where)]
            continue
        timelines[cluster] = tl
        findings[cluster] = list(tl.findings)
    return timelines, findings


def write_timeline_findings(findings: dict[str | None, list[Finding]], reported: dict[str | None, set[tuple]],
                            staging: str, filesystem: FileSystem = None) -> None:
    """The timelines' findings, each cluster's but those the scan stage reported already (the same metadata
    segments read by the scan of a snapshot that holds them)."""
    for i, cluster in enumerate(sorted(findings, key=lambda c: (c is not None, str(c)))):
        seen = reported.get(cluster, set())
        table_files.write_findings([f for f in findings[cluster] if finding_key(f) not in seen], staging, f"t-{i}",
                             cluster_context(cluster), filesystem)


# ----------------------------------------------------------------------------- archives
def _member(name: str) -> str:
    return "/".join(p for p in name.split("/") if p not in (".", ""))


def archive_damage(archive: TarArchive | None, under: tuple[str, ...] | None,
                   outside: Sequence[tuple[str, ...]] = ()) -> list[Finding]:
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
