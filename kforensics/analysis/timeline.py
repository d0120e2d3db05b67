"""The election timeline of every partition, replayed from a KRaft metadata log and its snapshots.

The controller records each leader change as a PartitionChangeRecord; the
leader epoch is not in the record but follows from it: PartitionRecord sets
leader and partition epoch, every PartitionChangeRecord adds one to the
partition epoch, and one to the leader epoch when its Leader field is present
(even when it names the same leader).  An election is marked unclean when the
new leader was not in the previous ISR, or when the leader recovery state
becomes RECOVERING (1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import Finding, FormatError, Severity
from ..formats.metadata_records import decode_metadata_record
from ..log.file_kinds import classify_name
from ..log.records import decode_entry
from ..log.segment_reader import SegmentReader

LEADER_UNCHANGED = -2


@dataclass
class TimelineEntry:
    offset: int  # metadata log offset (or snapshot offset)
    timestamp: int
    source: str  # "snapshot" or "log"
    record: str  # PartitionRecord / PartitionChangeRecord
    leader: int
    leader_epoch: int
    partition_epoch: int
    isr: list[int]
    replicas: list[int]
    elr: list[int] | None = None
    last_known_elr: list[int] | None = None
    leader_recovery_state: int = 0
    unclean: bool = False
    leader_changed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Timeline:
    partitions: dict[tuple[str, int], list[TimelineEntry]] = field(default_factory=dict)
    topic_names: dict[str, str] = field(default_factory=dict)  # topic id -> name
    findings: list[Finding] = field(default_factory=list)
    records: int = 0

    def granted_epochs(self, topic: str, partition: int) -> dict[int, int]:
        """leader epoch -> leader, as the controller granted them (first seen onwards)."""
        return {e.leader_epoch: e.leader for e in self.partitions.get((topic, partition), []) if e.leader >= 0}

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "topic_names": self.topic_names,
            "partitions": [{"topic": t, "partition": p, "entries": [e.to_dict() for e in es]}
                           for (t, p), es in sorted(self.partitions.items())],
            "findings": [f.to_dict() for f in self.findings],
        }


_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def metadata_files(paths: list[str | Path]) -> tuple[list[Path], list[Path]]:
    """(snapshots, log segments) under the given files/dirs, in order."""
    snaps, logs = [], []
    for p in map(Path, paths):
        items = sorted(p.rglob("*")) if p.is_dir() else [p]
        for f in items:
            if not f.is_file():
                continue
            kind = classify_name(f).kind
            if kind in ("kraft_snapshot", "bootstrap_snapshot") and not classify_name(f).leftover:
                snaps.append(f)
            elif kind == "log" and f.parent.name.startswith("__cluster_metadata"):
                logs.append(f)
    return snaps, logs


def _records(path: Path, findings: list[Finding]):
    reader = SegmentReader(path)
    for b in reader.batches():
        res = decode_entry(b, with_data=True)
        if res.error is not None:
            findings.append(res.error.to_finding(Severity.HIGH, str(path), b.position))
        for r in res.records:
            if r["control"] is not None or r.get("value") is None:
                continue
            try:
                yield r["offset"], r["timestamp"], decode_metadata_record(r["value"])
            except FormatError as e:
                findings.append(Finding(e.code, Severity.MEDIUM, e.message, file=str(path), position=b.position,
                                        facts={"offset": r["offset"], **e.facts}))
    findings.extend(reader.summary.findings)


def build_timeline(paths: list[str | Path]) -> Timeline:
    """Replay the latest snapshot, then the log records after it, into per-partition timelines."""
    tl = Timeline()
    snaps, logs = metadata_files(paths)
    state: dict[tuple[str, int], TimelineEntry] = {}
    ids: dict[str, str] = {}
    start = -1
    kraft = [s for s in snaps if _SNAPSHOT.match(s.name)]
    chosen = max(kraft, key=lambda s: int(_SNAPSHOT.match(s.name).group(1)), default=None)
    sources = []
    if chosen is not None:
        start = int(_SNAPSHOT.match(chosen.name).group(1))  # exclusive end offset of the snapshot
        sources.append(("snapshot", chosen))
    elif snaps:
        sources += [("snapshot", s) for s in snaps if s.name == "bootstrap.checkpoint"][:1]
    sources += [("log", f) for f in sorted(logs, key=lambda f: (f.parent.as_posix(), f.name))]
    seen_offsets: set[int] = set()
    for source, path in sources:
        for offset, ts, rec in _records(path, tl.findings):
            if source == "log":
                if offset < start or offset in seen_offsets:
                    continue  # covered by the snapshot, or the same log seen through another copy
                seen_offsets.add(offset)
            tl.records += 1
            _apply(tl, state, ids, source, offset, ts, rec)
    tl.topic_names = dict(ids)
    return tl


def _apply(tl: Timeline, state, ids, source, offset, ts, rec) -> None:
    kind, d = rec["type"], rec["data"]
    if kind == "TopicRecord":
        ids[d["TopicId"]] = d["Name"]
    elif kind == "RemoveTopicRecord":
        name = ids.get(d["TopicId"], d["TopicId"])
        for key in [k for k in state if k[0] == name]:
            del state[key]
    elif kind == "PartitionRecord":
        key = (ids.get(d["TopicId"], d["TopicId"]), d["PartitionId"])
        e = TimelineEntry(offset, ts, source, kind, d["Leader"], d["LeaderEpoch"], d["PartitionEpoch"],
                          list(d["Isr"]), list(d["Replicas"]), d.get("EligibleLeaderReplicas"),
                          d.get("LastKnownElr"), d.get("LeaderRecoveryState", 0), False, True)
        state[key] = e
        tl.partitions.setdefault(key, []).append(e)
    elif kind == "PartitionChangeRecord":
        key = (ids.get(d["TopicId"], d["TopicId"]), d["PartitionId"])
        prev = state.get(key)
        if prev is None:
            tl.findings.append(Finding("CHANGE_WITHOUT_PARTITION", Severity.LOW,
                                       f"PartitionChangeRecord at offset {offset} for a partition with no "
                                       "PartitionRecord seen (the snapshot or log start is later)",
                                       facts={"topic": key[0], "partition": key[1], "offset": offset}))
            return
        leader = d.get("Leader", LEADER_UNCHANGED)
        changed = leader != LEADER_UNCHANGED
        new_leader = leader if changed else prev.leader
        lrs = d.get("LeaderRecoveryState", -1)
        lrs = prev.leader_recovery_state if lrs == -1 else lrs
        unclean = changed and new_leader >= 0 and (new_leader not in prev.isr and new_leader != prev.leader
                                                   or (lrs == 1 and prev.leader_recovery_state != 1))
        e = TimelineEntry(offset, ts, source, kind, new_leader,
                          prev.leader_epoch + 1 if changed else prev.leader_epoch, prev.partition_epoch + 1,
                          list(d["Isr"]) if d.get("Isr") is not None else prev.isr,
                          list(d["Replicas"]) if d.get("Replicas") is not None else prev.replicas,
                          d.get("EligibleLeaderReplicas", prev.elr), d.get("LastKnownElr", prev.last_known_elr),
                          lrs, unclean, changed)
        state[key] = e
        tl.partitions[key].append(e)


def check_replica_epochs(tl: Timeline, topic: str, partition: int, broker_id: int | None,
                         checkpoint: list[tuple[int, int]] | None, batch_epochs: list[int], file: str | None = None
                         ) -> list[Finding]:
    """Cross-check a replica's epochs against the controller's grants for its partition."""
    entries = tl.partitions.get((topic, partition))
    if not entries:
        return []
    granted = tl.granted_epochs(topic, partition)
    first_known = min(e.leader_epoch for e in entries)
    out = []
    seen = {e for e, _ in (checkpoint or [])} | set(batch_epochs)
    for epoch in sorted(seen):
        if epoch >= first_known and epoch not in granted:
            out.append(Finding("EPOCH_NOT_GRANTED", Severity.HIGH,
                               f"epoch {epoch} on this replica was never granted by the controller "
                               f"(granted: {sorted(granted)})", file=file,
                               facts={"topic": topic, "partition": partition, "epoch": epoch}))
    if broker_id is not None:
        for e in entries:
            if e.leader_changed and e.leader >= 0 and broker_id in e.isr and e.leader_epoch > max(seen, default=-1):
                if e.leader_epoch < entries[-1].leader_epoch:
                    out.append(Finding("GRANT_NOT_SEEN", Severity.LOW,
                                       f"epoch {e.leader_epoch} (leader {e.leader}) was granted while this broker was in "
                                       "the ISR, but its epochs stop earlier", file=file,
                                       facts={"topic": topic, "partition": partition, "epoch": e.leader_epoch}))
                break
    return out
