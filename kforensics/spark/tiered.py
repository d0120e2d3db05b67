"""Tiered storage (KIP-405) in the Spark job: the same hooks as ``scan`` and ``replay``, fed from the driver.

``scan`` marks a broker's tiered partitions with the topics its own metadata
log configures (``remote.storage.enable``) and the ``__remote_log_metadata``
in its own log dirs (:func:`kforensics.tiered.evidence.tier_scans`);
``replay`` joins every replica with the remote metadata of all the brokers
and the topics of the controller's record
(:func:`kforensics.tiered.evidence.tier_replicas`).  The driver reads both
here (the metadata partitions are small: one record per segment event) and
ships them to the executors: per snapshot in its
:class:`~kforensics.spark.plan.SnapshotInfo` (the scan tasks), per cluster in
the replay's :class:`~kforensics.spark.replay.Shared`, each the fold of the
metadata (segments per topic partition), never the records.  The fold's own
findings are written here, once per snapshot as ``scan`` reports them, and
once per cluster for those no snapshot reported, as ``replay`` adds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..findings import Finding
from ..scan.broker import finding_key
from ..tiered.coverage import tiered_topics
from ..tiered.evidence import TieredEvidence
from ..tiered.remote_segments import RemoteLogMetadata, read_remote_log_metadata
from . import table_files
from .files import FileSystem, cluster_context
from .names import from_hex, safe
from .plan import Plan

if TYPE_CHECKING:
    from ..kraft.controller_choice import RestartEvidence
    from ..kraft.timeline import Timeline


@dataclass
class TieredDriver:
    """What the driver read of tiered storage: per cluster the replay's evidence (findings stripped: written
    here), and the findings written, by snapshot and by cluster."""

    clusters: dict[str | None, TieredEvidence] = field(default_factory=dict)
    snapshot_findings: dict[str, list[Finding]] = field(default_factory=dict)
    cluster_findings: dict[str | None, list[Finding]] = field(default_factory=dict)


def _log_dirs(info: Mapping[str, Any]) -> list[Any]:
    from .scan_task import root_of

    root = root_of(str(info["spec"]))
    return [root / from_hex(d) if d else root for d in info.get("log_dirs", [])]


def _compact(remote: RemoteLogMetadata | None) -> RemoteLogMetadata | None:
    """The fold without its findings (written by the driver): what the executors need."""
    return None if remote is None else replace(remote, findings=[])


def _snapshot_topics(plan_: Plan, sid: str, cluster_topics: bool, holds: bool) -> dict[str, str]:
    """The tiered topics of the snapshot's own metadata log (as ``scan`` reads them from the timeline it folds);
    read only when its cluster's record names a tiered topic or the snapshot holds remote metadata."""
    if sid not in plan_.snapshot_metadata or not (cluster_topics or holds):
        return {}
    from ..kraft.timeline import build_timeline

    try:
        return tiered_topics(build_timeline(plan_.snapshot_metadata[sid]).cluster)
    except Exception:  # noqa: BLE001 - the broker checks build it again and report why it cannot be read
        return {}


def read_tiered(plan_: Plan, timelines: Mapping[str | None, Timeline],
                restart: Mapping[str | None, RestartEvidence]) -> TieredDriver:
    """Per snapshot the scan's tiered evidence (set in ``plan_.snapshots[sid]["tiered"]`` when there is any), per
    cluster the replay's; with the fold's findings."""
    out = TieredDriver()
    holding = plan_.remote_metadata
    by_cluster: dict[str | None, dict[int | None, list[Any]]] = {}
    for sid, info in plan_.snapshots.items():
        cluster = plan_.contexts[sid].get("cluster")
        tl = timelines.get(cluster)
        topics = _snapshot_topics(plan_, sid, bool(tiered_topics(getattr(tl, "cluster", None))), sid in holding)
        remote = read_remote_log_metadata({None: _log_dirs(info)}) if sid in holding else None
        if sid in holding:
            bid = plan_.contexts[sid].get("broker_id")
            by_cluster.setdefault(cluster, {}).setdefault(bid if isinstance(bid, int) else None, []).extend(
                _log_dirs(info))
        if topics or remote is not None:
            info["tiered"] = TieredEvidence(topics, _compact(remote))
            out.snapshot_findings[sid] = list(remote.findings) if remote is not None else []
    for cluster in set(by_cluster) | set(restart):
        r = restart.get(cluster)
        topics = tiered_topics(r.cluster if r is not None else None)
        remote = read_remote_log_metadata(by_cluster[cluster]) if cluster in by_cluster else None
        if topics or remote is not None:
            out.clusters[cluster] = TieredEvidence(topics, _compact(remote))
            out.cluster_findings[cluster] = list(remote.findings) if remote is not None else []
    return out


def write_tiered_findings(plan_: Plan, tiered: TieredDriver, staging: str, filesystem: FileSystem = None
                          ) -> None:
    """The remote metadata's findings: each snapshot's (``scan``'s broker findings), then each cluster's that no
    snapshot of it reported (``replay``'s)."""
    said: dict[str | None, set[tuple]] = {}
    for sid, fs in sorted(tiered.snapshot_findings.items()):
        context = plan_.contexts[sid]
        table_files.write_findings(fs, staging, f"tiered-{safe(sid)}", context, filesystem)
        said.setdefault(context.get("cluster"), set()).update(finding_key(f) for f in fs)
    for i, (cluster, fs) in enumerate(sorted(tiered.cluster_findings.items(),
                                             key=lambda x: (x[0] is not None, str(x[0])))):
        seen = said.get(cluster, set())
        table_files.write_findings([f for f in fs if finding_key(f) not in seen], staging, f"tiered-c-{i}",
                                   cluster_context(cluster), filesystem)
