"""What the evidence says of tiered storage: the topics configured for it and the remote log metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from ..findings import Finding
from .coverage import apply_to_scans, tiered_topics
from .remote_segments import RemoteLogMetadata, read_remote_log_metadata


@dataclass
class TieredEvidence:
    """The tiered topics (``remote.storage.enable`` in the metadata log) and the ``__remote_log_metadata`` fold."""

    topics: dict[str, str] = field(default_factory=dict)  # topic -> where remote storage is enabled
    remote: RemoteLogMetadata | None = None

    @property
    def findings(self) -> list[Finding]:
        return list(self.remote.findings) if self.remote is not None else []

    def is_tiered(self, topic: str, partition: int) -> bool:
        return topic in self.topics or (self.remote is not None and self.remote.of(topic, partition) is not None)


def read_tiered_evidence(log_dirs: dict[int | None, list[Any]], metadata: list[Any] | None = None,
                         cluster: Any = None) -> TieredEvidence:
    """Read the remote log metadata in these brokers' log dirs and the tiered topics of the metadata log
    (``cluster``: a ``ClusterState`` already read, else read from ``metadata`` when given)."""
    if cluster is None and metadata:
        from ..kraft.timeline import read_cluster_state

        cluster = read_cluster_state(list(metadata))
    return TieredEvidence(tiered_topics(cluster), read_remote_log_metadata(log_dirs))


def tier_scans(partitions: list[Any], log_dirs: list[Any], cluster: Any,
               log_starts: dict[tuple[str, int], int]) -> list[Finding]:
    """The scan's hook: mark the tiered partitions of one broker's scan (``PartitionScan``) with their facts and
    findings (``cluster``: the metadata log's ``ClusterState`` the scan's timeline folded, None without one);
    returns the findings of the remote log metadata itself."""
    ev = read_tiered_evidence({None: list(log_dirs)}, None, cluster)
    if not ev.topics and ev.remote is None:
        return []
    apply_to_scans(partitions, log_starts, ev.remote, ev.topics)
    return ev.findings


def tier_scan(scan: Any, ev: TieredEvidence, log_start: int | None) -> None:
    """The scan's hook for one partition dir scanned alone (a Spark scan task): :func:`tier_scans` of its broker,
    with the broker's tiered evidence read beforehand (``ev``, its fold's findings reported by the caller) and the
    partition's checkpointed log start (None: no entry)."""
    starts = {} if log_start is None else {(scan.topic, scan.partition): log_start}
    apply_to_scans([scan], starts, ev.remote, ev.topics)


def scan_view(scan: Any) -> SimpleNamespace:
    """What :func:`tier_replicas` reads of a replica's scan, compact (a Spark sketch carries it to the replay):
    its path, its tiered facts, and its local log start as a single segment (:func:`~.coverage.tiered_facts`
    takes the first segment file's base offset, else the first batch's offset)."""
    bases = [s.base_offset for s in scan.segments if s.path]
    firsts = [s.first_offset for s in scan.segments if s.first_offset is not None]
    segs = [SimpleNamespace(base_offset=min(bases), first_offset=None, path=scan.path)] if bases else \
        [SimpleNamespace(base_offset=None, first_offset=min(firsts), path=None)] if firsts else []
    return SimpleNamespace(path=scan.path, tiered=scan.tiered, segments=segs)


def tier_replicas(ev: TieredEvidence, topic: str, partition: int, replicas: list[Any],
                  scans: dict[str, Any]) -> None:
    """The replay's hook: set ``tiered`` (a ``TieredReplica``) on each replica of a tiered partition
    (``scans``: each replica's ``PartitionScan`` by its partition dir, ``Replica.source``)."""
    from .coverage import tiered_facts
    from .tier_state import TieredReplica

    if not ev.is_tiered(topic, partition):
        return
    rp = ev.remote.of(topic, partition) if ev.remote is not None else None
    why = [ev.topics[topic]] if topic in ev.topics else []
    if rp is not None:
        why.append(f"{len(rp.segments)} remote segment(s) in __remote_log_metadata-{rp.metadata_partition}")
    for r in replicas:
        scan = scans.get(r.source or "")
        if scan is None:
            continue
        facts = scan.tiered if scan.tiered is not None else tiered_facts(scan, None, rp, why, checkpoint_read=False)
        r.tiered = TieredReplica(facts, rp)
        # LogLoader keeps a remote-enabled log's checkpointed log start, and truncates the epoch cache only there
        r.log_start = min(r.log_start, facts.log_start_offset)
