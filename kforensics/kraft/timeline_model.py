"""The election timeline as data: each partition's registrations in metadata-log order, and what was read.

Built by :func:`kforensics.kraft.timeline.build_timeline` (the replay of the metadata log and its snapshots);
its fields and constants are re-exported there.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding, FindingLog
from .cluster_state import ClusterState
from .quorum import QuorumView

NO_LEADER = -1
#: Records of one open metadata transaction held until it ends; past this the rest are replayed as they come
#: (memory is bounded by this, not by what a hostile log puts inside one transaction)
MAX_TXN_RECORDS = 100_000
NO_LEADER_CHANGE = -2
RECOVERED, RECOVERING = 0, 1
LEADER_RECOVERY_STATES = {RECOVERED: "RECOVERED", RECOVERING: "RECOVERING"}


@dataclass
class TimelineEntry:
    """A partition's registration after one metadata record (or as a snapshot shows it)."""

    offset: int  # metadata log offset; for a snapshot, the last offset it covers (end offset - 1)
    timestamp: int  # batch timestamp (ms); for a snapshot, its last contained log timestamp
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: list[int]
    replicas: list[int]
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    leader_recovery_state: int = RECOVERED
    unclean: bool = False
    leader_changed: bool = False  # this entry grants a leader epoch (PartitionRecord, or Leader present)
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)
    topic_id: str | None = None
    record: str = "PartitionRecord"  # PartitionRecord, PartitionChangeRecord, ClearElrRecord or "snapshot"
    source: str = "log"  # "log" or "snapshot"
    file: str | None = None
    committed: bool | None = None  # below the committed bound (snapshot entries: True); None: not known

    def same_registration(self, other: TimelineEntry) -> bool:
        """Whether two entries describe the same partition state (epochs, leader, replica sets)."""
        return all(getattr(self, k) == getattr(other, k) for k in STATE_FIELDS)


STATE_FIELDS = ("leader", "leader_epoch", "partition_epoch", "isr", "replicas", "elr", "last_known_elr",
                 "leader_recovery_state", "adding_replicas", "removing_replicas")


@dataclass
class Timeline:
    """Per (topic, partition): the registrations in order; plus what was read and what was wrong."""

    partitions: dict[tuple[str, int], list[TimelineEntry]] = field(default_factory=dict)
    topic_names: dict[str, str] = field(default_factory=dict)  # topic id -> name (every topic seen)
    removed_topics: dict[str, dict[str, Any]] = field(default_factory=dict)  # topic id -> {name, offset}
    findings: list[Finding] = field(default_factory=list)  # set when the build ends
    log: FindingLog = field(default_factory=FindingLog, repr=False)  # collects findings while building
    records: int = 0  # metadata records replayed (log and snapshots)
    record_types: Counter = field(default_factory=Counter)
    sources: list[str] = field(default_factory=list)  # files read
    snapshots_loaded: list[str] = field(default_factory=list)  # snapshots used as a starting state
    snapshots_checked: list[str] = field(default_factory=list)  # snapshots compared with the replayed log
    log_start: int | None = None
    log_end: int | None = None  # next offset after the last log record read
    complete: bool = False  # the history starts at offset 0 or at a snapshot, and no witness shows its tail lost
    trusted_end: int | None = None  # the offset up to which the copies and snapshots given hold the metadata
    missing: list[str] = field(default_factory=list)  # witnesses of metadata beyond ``trusted_end`` (lost tail)
    quorum: QuorumView | None = None  # the copies as Raft resolves them
    #: brokers, features and configs as of the last record replayed (the resolved log and snapshots, as the
    #: registrations: a deposed tail or an aborted metadata transaction changes neither)
    cluster: ClusterState = field(default_factory=ClusterState)

    # ------------------------------------------------------------------ queries
    @property
    def tail_missing(self) -> bool:
        """Whether a witness on disk shows metadata past what the copies given hold: grants after
        :attr:`trusted_end` may exist that the timeline cannot show."""
        return bool(self.missing)

    @property
    def committed_end(self) -> int | None:
        """Offsets below are committed (a lower bound; None when nothing shows it)."""
        return self.quorum.committed_end if self.quorum is not None and self.quorum.committed_by != "unknown" \
            else None

    def entries(self, topic: str, partition: int, topic_id: str | None = None) -> list[TimelineEntry]:
        """The entries of one incarnation of a partition: ``topic_id``'s, else the latest one's."""
        es = self.partitions.get((topic, partition), [])
        if not es:
            return []
        tid = topic_id if topic_id is not None else es[-1].topic_id
        return [e for e in es if e.topic_id == tid]

    def granted_epochs(self, topic: str, partition: int, topic_id: str | None = None) -> dict[int, int]:
        """leader epoch -> leader, for the epochs whose grant the timeline shows (no-leader grants included as −1)."""
        return {e.leader_epoch: e.leader for e in self.entries(topic, partition, topic_id)}

    def was_granted(self, topic: str, partition: int, epoch: int, topic_id: str | None = None) -> bool:
        """Whether the controller granted ``epoch`` to a leader: an entry shows it (leader ≥ 0), or it lies in a
        gap that a snapshot closes (the epochs the snapshot skipped over, leaders unknown).  Epochs before the
        first entry are history the timeline does not hold: False."""
        es = self.entries(topic, partition, topic_id)
        prevs: list[TimelineEntry | None] = [None, *es]
        for a, b in zip(prevs, es):
            if b.leader_epoch == epoch and (b.leader_changed or a is None):
                return b.leader >= 0
            if a is not None and b.source == "snapshot" and a.leader_epoch < epoch < b.leader_epoch:
                return True
        return False

    def __json__(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "record_types": dict(sorted(self.record_types.items())),
            "sources": self.sources,
            "snapshots_loaded": self.snapshots_loaded,
            "snapshots_checked": self.snapshots_checked,
            "log_start": self.log_start,
            "log_end": self.log_end,
            "complete": self.complete,
            "trusted_end": self.trusted_end,
            "tail_missing": self.tail_missing,
            "missing": self.missing,
            "committed_end": self.committed_end,
            "quorum": self.quorum,
            "topic_names": self.topic_names,
            "removed_topics": self.removed_topics,
            "partitions": [{"topic": t, "partition": p, "topic_id": es[-1].topic_id if es else None,
                            "entries": es}
                           for (t, p), es in sorted(self.partitions.items())],
            "findings": self.findings,
        }

