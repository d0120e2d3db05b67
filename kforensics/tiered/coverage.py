"""A tiered partition as the scan sees it: log start, local log start and remote coverage, with their findings.

A partition is tiered when its topic's ``remote.storage.enable`` is true in
the metadata log's ConfigRecords, or when ``__remote_log_metadata`` in the
evidence names remote segments of it.  For such a log Kafka keeps the
checkpointed log start (``LogLoader``: ``logStartOffsetCheckpoint`` when
remote storage is enabled, not ``max(checkpoint, first segment)``; 3.9.0
≈ L177) and truncates the leader-epoch cache only from it, so the local log
starts (``localLogStartOffset``, the first local segment) above a log start
whose prefix lives in remote storage: no loss, and the epochs of that
prefix are in the checkpoint but in no local batch.  ``LogManager`` writes
the log-start checkpoint of every remote-enabled log (3.9.0 ≈ L871).

Findings: offsets between the log start and the local log start that no
copied remote segment holds (``REMOTE_LOCAL_GAP``: a remote read there finds
no segment), and segments the metadata leaves being copied or deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..epoch.cache import LeaderEpochCache
from ..epoch.diff import diff_caches
from ..findings import Finding, finding
from ..offset_ranges import uncovered, union
from .remote_segments import COPY_STARTED, DELETE_STARTED, RemoteLogMetadata, RemotePartition

REMOTE_STORAGE_ENABLE = "remote.storage.enable"
#: the checkpoint differences a remote prefix explains (its epochs are in no local batch)
EXPLAINED = ("EPOCH_MISSING_FROM_LOG", "EPOCH_START_DIFFERS")


@dataclass
class TieredFacts:
    """One tiered partition replica: where its log starts, locally and in remote storage."""

    log_start_offset: int  # Kafka's: the checkpointed log start of a remote-enabled log
    log_start_basis: str
    local_log_start_offset: int | None  # the first local segment (None: no local segment)
    remote_ranges: list[tuple[int, int]] = field(default_factory=list)  # copied segments, merged
    remote_segments: int = 0  # live segments in the metadata
    copying: int = 0
    deleting: int = 0
    gaps: list[tuple[int, int]] = field(default_factory=list)
    recognised_by: list[str] = field(default_factory=list)
    metadata_read: bool = False  # __remote_log_metadata of this partition was in the evidence
    partition_deleted: str | None = None

    def __json__(self) -> dict[str, Any]:
        return self.as_dict()

    def as_dict(self) -> dict[str, Any]:
        return {"log_start_offset": self.log_start_offset, "log_start_basis": self.log_start_basis,
                "local_log_start_offset": self.local_log_start_offset,
                "remote_ranges": [list(r) for r in self.remote_ranges], "remote_segments": self.remote_segments,
                "copying": self.copying, "deleting": self.deleting, "gaps": [list(g) for g in self.gaps],
                "recognised_by": self.recognised_by, "remote_metadata_read": self.metadata_read,
                "partition_deleted": self.partition_deleted}


def tiered_topics(cluster: Any) -> dict[str, str]:
    """Topics whose ``remote.storage.enable`` is true in the metadata log's configs -> where it is set."""
    out: dict[str, str] = {}
    if cluster is None:
        return out
    for (kind, name), configs in cluster.configs.items():
        if kind == 2 and str(configs.get(REMOTE_STORAGE_ENABLE, "")).lower() == "true":  # ConfigResource TOPIC
            out[name] = f"topic config {REMOTE_STORAGE_ENABLE}=true of {name} (metadata log)"
    return out


def tiered_facts(scan: Any, checkpoint_log_start: int | None, remote: RemotePartition | None,
                 recognised_by: list[str], checkpoint_read: bool = True) -> TieredFacts:
    """The facts of one tiered partition replica from its scan (``PartitionScan``), its checkpointed log start
    (None: no entry, which ``LogManager`` reads as 0 and ``LogLoader`` keeps for a remote-enabled log) and the
    remote metadata of its topic partition.  ``checkpoint_read`` False: the checkpoint was not at hand (the log
    start is then taken from the first remote segment)."""
    firsts = [s.first_offset for s in scan.segments if s.first_offset is not None]
    bases = [s.base_offset for s in scan.segments if s.path]
    local = min(bases) if bases else (min(firsts) if firsts else None)
    copied = remote.copied() if remote is not None else []
    ranges = union([(s.start_offset, s.end_offset) for s in copied])
    if checkpoint_log_start is not None:
        start, basis = checkpoint_log_start, "log-start-offset-checkpoint"
    elif checkpoint_read:
        start, basis = 0, "no log-start-offset-checkpoint entry: 0, which LogLoader keeps for a remote-enabled log"
    elif ranges:
        start, basis = ranges[0][0], "first remote segment (the log-start-offset-checkpoint not at hand)"
    else:
        start, basis = local if local is not None else 0, "first local segment (no checkpoint, no remote segment)"
    facts = TieredFacts(start, basis, local, ranges, recognised_by=list(recognised_by),
                        metadata_read=remote is not None)
    if remote is not None:
        live = remote.live_segments()
        facts.remote_segments = len(live)
        facts.copying = sum(s.state == COPY_STARTED for s in live)
        facts.deleting = sum(s.state == DELETE_STARTED for s in live)
        facts.partition_deleted = remote.delete_state
        if local is not None and local > start:
            facts.gaps = uncovered(start, local - 1, ranges)
    return facts


def tiered_findings(scan: Any, facts: TieredFacts, remote: RemotePartition | None) -> list[Finding]:
    """Gaps between remote coverage and the local log, segments being copied or deleted."""
    out: list[Finding] = []
    path = scan.path
    for a, b in facts.gaps:
        out.append(finding("REMOTE_LOCAL_GAP", f"offsets {a} to {b} are above the log start {facts.log_start_offset} "
                           f"and below the local log start {facts.local_log_start_offset} but in no copied remote "
                           "segment: a read there finds no remote segment", file=path, first_offset=a,
                           last_offset=b, log_start_offset=facts.log_start_offset,
                           local_log_start_offset=facts.local_log_start_offset))
    if facts.local_log_start_offset is not None and not facts.metadata_read and \
            facts.local_log_start_offset > facts.log_start_offset:
        out.append(finding("TIERED_METADATA_ABSENT", f"tiered partition whose local log starts at "
                           f"{facts.local_log_start_offset}, above its log start {facts.log_start_offset}, and no "
                           "__remote_log_metadata in the evidence: remote coverage unknown", file=path,
                           log_start_offset=facts.log_start_offset,
                           local_log_start_offset=facts.local_log_start_offset))
    for s in remote.live_segments() if remote is not None else []:
        code = {COPY_STARTED: "REMOTE_SEGMENT_COPYING", DELETE_STARTED: "REMOTE_SEGMENT_DELETING"}.get(s.state)
        if code is not None:
            out.append(finding(code, f"remote segment {s.segment_id} (offsets {s.start_offset} to {s.end_offset}) "
                               f"is in state {s.state} in __remote_log_metadata", file=s.file or path,
                               offset=s.metadata_offset, **s.facts()))
    return out


def explained_epochs(scan: Any, facts: TieredFacts) -> list[Finding]:
    """The scan's findings with the checkpoint differences a remote prefix explains compared again from the local
    log start: the epochs below it are the remote segments'."""
    local = facts.local_log_start_offset
    if local is None or local <= facts.log_start_offset or scan.epoch_cache_written is None or not scan.complete:
        return list(scan.findings)
    written = LeaderEpochCache(scan.epoch_cache_written)
    written.truncate_from_start(local)
    again = [f for f in diff_caches(written, scan.epoch_cache_rebuilt or [], scan.log_end_offset,
                                    log_start_offset=local) if f.code in EXPLAINED]
    kept = [f for f in scan.findings if f.code not in EXPLAINED]
    where = next((f.file for f in scan.findings if f.code in EXPLAINED), None)
    return kept + [f.at(where) if where else f for f in again]


def apply_to_scans(partitions: list[Any], log_starts: dict[tuple[str, int], int], remote: RemoteLogMetadata | None,
                   topics: dict[str, str]) -> None:
    """Set ``tiered`` on every tiered partition scan (``PartitionScan``) and adjust its findings."""
    for p in partitions:
        if p.suffix is not None or p.topic.startswith("__"):
            continue
        rp = remote.of(p.topic, p.partition) if remote is not None else None
        why = [topics[p.topic]] if p.topic in topics else []
        if rp is not None:
            why.append(f"{len(rp.segments)} remote segment(s) in __remote_log_metadata-{rp.metadata_partition}")
        if not why:
            continue
        facts = tiered_facts(p, log_starts.get((p.topic, p.partition)), rp, why)
        p.tiered = facts
        p.findings = explained_epochs(p, facts) + tiered_findings(p, facts, rp)
