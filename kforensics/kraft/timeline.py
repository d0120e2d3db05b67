"""The election timeline of every partition, replayed from a KRaft metadata log and its snapshots.

The controller records each leader change in a PartitionChangeRecord, which
carries no epoch: the epochs follow from replaying the records in log order
(reference §6.2).  A PartitionRecord sets leader, leader epoch and partition
epoch; each PartitionChangeRecord adds one to the partition epoch, and one to
the leader epoch when its Leader field is present (≠ −2), even when it names
the same leader; every other field is replaced only when present.  A
ClearElrRecord empties the ELRs of a topic (of every topic when its name is
empty), which adds one to the partition epoch of each partition it changes.

An election is marked unclean when the new leader was in neither the previous
ISR nor the previous ELR (replicas in the ELR are safe to elect, KIP-966), or
when the leader recovery state becomes RECOVERING (1).

Inputs are log dirs, ``__cluster_metadata-*`` dirs, their segments and
snapshots (``<endOffset>-<epoch>.checkpoint``, ``bootstrap.checkpoint``).
Several copies of the metadata log (one per broker) are merged by offset.
Snapshots and log are replayed in offset order: a snapshot that the log
reaches without a gap is checked against the replayed state; one that follows
a gap (older segments deleted) becomes the new starting state, and the
partitions it shows changed get an entry of their own.  Records after a gap
that a later snapshot covers are left to that snapshot.

Records are streamed: each copy is read one record at a time and the copies are merged by offset as they
are read, and a snapshot is read once for its control records and once more to replay it.  Memory is the
replayed state and one batch's bytes, whatever number of records the files hold or claim.  Inputs that are
not a metadata log are refused (:mod:`kforensics.kraft.metadata_inputs`).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..findings import DecodeError, Finding, FindingLog, finding
from ..formats.metadata_records import decode_metadata_record
from ..formats.record_batch import CONTROL_BIT
from ..log.file_kinds import snapshot_id
from ..log.metadata_log import MetadataEntry, MetadataSources, find_metadata_sources
from ..log.records import EntryRecords
from ..log.segment_reader import SegmentReader
from ..log.sources import NotRegularFile
from .metadata_inputs import loose_segments, refuse_if_no_metadata

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

    def same_registration(self, other: TimelineEntry) -> bool:
        """Whether two entries describe the same partition state (epochs, leader, replica sets)."""
        return all(getattr(self, k) == getattr(other, k) for k in _STATE_FIELDS)


_STATE_FIELDS = ("leader", "leader_epoch", "partition_epoch", "isr", "replicas", "elr", "last_known_elr",
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
    complete: bool = False  # the history starts at offset 0 or at a snapshot

    # ------------------------------------------------------------------ queries
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
        for a, b in zip([None] + es, es):
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
            "topic_names": self.topic_names,
            "removed_topics": self.removed_topics,
            "partitions": [{"topic": t, "partition": p, "topic_id": es[-1].topic_id if es else None,
                            "entries": es}
                           for (t, p), es in sorted(self.partitions.items())],
            "findings": self.findings,
        }


# --------------------------------------------------------------------------- inputs
_Rec = MetadataEntry


def _records(path: Any, tl: Timeline, controls: dict[str, Any], *, data: bool = True,
             report: bool = True) -> Iterator[_Rec]:
    """The records of one metadata segment or snapshot in file order, one at a time: control records as offset
    placeholders (``controls`` receives the first of each type), data records with their value.

    Nothing is kept: a batch claiming millions of records costs its decompressed bytes and one record at a
    time.  ``data=False`` reads the control batches only (a snapshot's header and footer); ``report=False``
    reports nothing (a second read of a file already reported).
    """
    log = tl.log if report else FindingLog()
    reader = SegmentReader(path)
    label = reader.label
    if report:
        tl.sources.append(str(path))
    try:
        for b in reader.batches():
            if not b.is_valid:
                continue  # the reader reports the CRC mismatch; its content cannot be trusted
            control = bool(b.attributes & CONTROL_BIT)
            if not data and not control:
                continue
            recs = EntryRecords(b, with_data=True, file=label)
            for r in recs:
                if r.control is not None or control:
                    c = r.control or {}
                    controls.setdefault(c.get("type", "UNKNOWN"), c)
                    yield _Rec(r.offset, b.max_timestamp, b.partition_leader_epoch, None, label, b.position, c)
                elif r.value is None:
                    log.add(finding("NULL_METADATA_RECORD", f"metadata record at offset {r.offset} has a null value",
                                    file=label, position=b.position, offset=r.offset))
                else:
                    yield _Rec(r.offset, b.max_timestamp, b.partition_leader_epoch, bytes(r.value), label,
                               b.position)
            log.extend(recs.findings)
    except OSError as e:
        if isinstance(e, NotRegularFile):
            log.add(finding("NOT_A_REGULAR_FILE", f"{e.strerror}: not opened", file=label))
        else:
            log.add(finding("UNREADABLE_FILE", f"cannot read: {e.strerror or e}", file=label))
        return
    log.extend(reader.summary.findings)


def _one_cluster(src: MetadataSources, tl: Timeline) -> None:
    """Keep the files of one cluster (the one with most metadata dirs) when log dirs of several were given."""
    dirs = set(src.logs) | {str(p.parent) for p in src.snapshots}
    clusters: dict[str, list[str]] = {}
    for d in sorted(dirs):
        cid = src.cluster_ids.get(d)
        if cid is not None:
            clusters.setdefault(cid, []).append(d)
    if len(clusters) <= 1:
        return
    chosen = sorted(clusters, key=lambda c: (-len(clusters[c]), c))[0]
    others = {d for c, ds in clusters.items() if c != chosen for d in ds}
    src.logs = {d: segs for d, segs in src.logs.items() if d not in others}
    src.snapshots = [p for p in src.snapshots if str(p.parent) not in others]
    tl.log.add(finding("METADATA_CLUSTERS_DIFFER", f"metadata logs of {len(clusters)} clusters were given; only cluster {chosen}'s "
                               "are replayed", **{"clusters": dict(sorted(clusters.items())), "chosen": chosen}))


def _merge_logs(src: MetadataSources, tl: Timeline) -> Iterator[_Rec]:
    """One record per offset from every copy of the metadata log, in offset order, as they are read; on a
    conflict the higher Raft epoch wins.  Each copy is a stream (its segments in offset order), merged with the
    others by offset: no copy is held."""

    def copy(d: str) -> Iterator[_Rec]:
        for seg in src.logs[d]:
            yield from _records(seg, tl, {})

    diverged: Counter = Counter()
    kept: _Rec | None = None
    for r in heapq.merge(*(copy(d) for d in src.logs), key=lambda r: r.offset):
        if kept is not None and r.offset == kept.offset:
            if kept.value != r.value:
                diverged[(kept.file, r.file)] += 1
                if r.raft_epoch > kept.raft_epoch:
                    kept = r  # Raft keeps the entry of the newer epoch
            continue
        if kept is not None:
            yield kept
        kept = r
    if kept is not None:
        yield kept
    for (a, b), n in sorted(diverged.items()):
        tl.log.add(finding("METADATA_REPLICAS_DIVERGE", f"{n} offset(s) hold different records in {a} and {b}; the higher Raft epoch's "
                                   "record is replayed", file=b, **{"other": a, "offsets": n}))


# --------------------------------------------------------------------------- replay
class _State:
    """The controller's view being replayed: topic names and partition registrations."""

    def __init__(self, tl: Timeline, emit: bool):
        self.tl = tl
        self.emit = emit  # False while building a snapshot's state for comparison
        self.names: dict[str, str] = {}  # live topic id -> name
        self.parts: dict[tuple[str, int], TimelineEntry] = {}  # (topic id, partition) -> registration
        self.txn: list[tuple[_Rec, dict]] | None = None  # records of an open metadata transaction
        self.txn_overflow = False  # the open transaction outgrew MAX_TXN_RECORDS: its records are being replayed

    def name(self, tid: str) -> str:
        return self.names.get(tid) or self.tl.topic_names.get(tid) or tid

    def _add(self, tid: str, partition: int, e: TimelineEntry) -> None:
        self.parts[(tid, partition)] = e
        if self.emit:
            self.tl.partitions.setdefault((self.name(tid), partition), []).append(e)

    def _finding(self, code: str, msg: str, rec: _Rec, **facts) -> None:
        if self.emit:
            self.tl.log.add(finding(code, msg, file=rec.file, position=rec.position, offset=rec.offset, **facts))

    def record(self, rec: _Rec, d: dict[str, Any], source: str) -> None:
        """Apply one decoded record, buffering those inside a metadata transaction until it ends."""
        kind = d["type"]
        if kind == "BeginTransactionRecord":
            if self.txn is not None or self.txn_overflow:
                self._finding("METADATA_TRANSACTION_NESTED", "BeginTransactionRecord inside an open metadata transaction", rec)
                self._flush()
            self.txn = []
            self.txn_overflow = False
        elif kind == "EndTransactionRecord":
            self._flush()
            self.txn_overflow = False
        elif kind == "AbortTransactionRecord":
            n = len(self.txn or [])
            self.txn = None
            self._finding("METADATA_TRANSACTION_ABORTED", f"metadata transaction aborted; its {n} record(s) are not replayed"
                          + (" (those before them were, the transaction being too large to hold)" if self.txn_overflow
                             else ""), rec, reason=d["data"].get("reason"), records=n,
                          replayed_before_abort=self.txn_overflow)
            self.txn_overflow = False
        elif self.txn is not None:
            self.txn.append((rec, d))
            if len(self.txn) >= MAX_TXN_RECORDS:
                self._finding("METADATA_TRANSACTION_TOO_LARGE", f"a metadata transaction holds more than "
                              f"{MAX_TXN_RECORDS} records: they and the rest of it are replayed as they are read",
                              rec, limit=MAX_TXN_RECORDS)
                self._flush()
                self.txn_overflow = True
        else:
            self.apply(rec, d, source)

    def _flush(self) -> None:
        pending, self.txn = self.txn or [], None
        for rec, d in pending:
            self.apply(rec, d, "log")

    def apply(self, rec: _Rec, d: dict[str, Any], source: str) -> None:
        kind, data = d["type"], d["data"]
        if kind == "TopicRecord":
            self.names[data["topicId"]] = data["name"]
            self.tl.topic_names[data["topicId"]] = data["name"]
        elif kind == "RemoveTopicRecord":
            tid = data["topicId"]
            for key in [k for k in self.parts if k[0] == tid]:
                del self.parts[key]
            if self.emit:
                self.tl.removed_topics[tid] = {"name": self.name(tid), "offset": rec.offset,
                                               "timestamp": rec.timestamp}
            self.names.pop(tid, None)
        elif kind == "PartitionRecord":
            self._partition(rec, data, source)
        elif kind == "PartitionChangeRecord":
            self._change(rec, data, source)
        elif kind == "ClearElrRecord":
            self._clear_elr(rec, data, source)

    def _partition(self, rec: _Rec, d: dict, source: str) -> None:
        tid, p = d["topicId"], d["partitionId"]
        if tid not in self.names and tid not in self.tl.topic_names:
            self._finding("TOPIC_ID_UNNAMED", f"PartitionRecord for topic id {tid}, which no TopicRecord names", rec, topic_id=tid)
        prev = self.parts.get((tid, p))
        lrs = d.get("leaderRecoveryState", RECOVERED)
        e = TimelineEntry(
            offset=rec.offset, timestamp=rec.timestamp, leader=d["leader"], leader_epoch=d["leaderEpoch"],
            partition_epoch=d["partitionEpoch"], isr=list(d["isr"]), replicas=list(d["replicas"]),
            elr=list(d.get("eligibleLeaderReplicas") or []), last_known_elr=list(d.get("lastKnownElr") or []),
            leader_recovery_state=lrs, leader_changed=True,
            adding_replicas=list(d["addingReplicas"]), removing_replicas=list(d["removingReplicas"]),
            topic_id=tid, record="PartitionRecord", source=source, file=rec.file)
        e.unclean = _unclean(prev, e) if prev is not None else lrs == RECOVERING
        self._add(tid, p, e)

    def _change(self, rec: _Rec, d: dict, source: str) -> None:
        tid, p = d["topicId"], d["partitionId"]
        prev = self.parts.get((tid, p))
        if prev is None:
            self._finding("CHANGE_WITHOUT_PARTITION", f"PartitionChangeRecord at offset {rec.offset} for {self.name(tid)}-{p}, which no "
                          "PartitionRecord or snapshot before it registers", rec, topic=self.name(tid), partition=p)
            return
        leader = d.get("leader", NO_LEADER_CHANGE)
        changed = leader != NO_LEADER_CHANGE
        lrs = d.get("leaderRecoveryState", -1)

        def pick(key: str, old: list[int]) -> list[int]:
            v = d.get(key)
            return old if v is None else list(v)  # absent or null: unchanged

        e = TimelineEntry(
            offset=rec.offset, timestamp=rec.timestamp, leader=leader if changed else prev.leader,
            leader_epoch=prev.leader_epoch + 1 if changed else prev.leader_epoch,
            partition_epoch=prev.partition_epoch + 1,
            isr=pick("isr", prev.isr), replicas=pick("replicas", prev.replicas),
            elr=pick("eligibleLeaderReplicas", prev.elr), last_known_elr=pick("lastKnownElr", prev.last_known_elr),
            leader_recovery_state=prev.leader_recovery_state if lrs == -1 else lrs, leader_changed=changed,
            adding_replicas=pick("addingReplicas", prev.adding_replicas),
            removing_replicas=pick("removingReplicas", prev.removing_replicas),
            topic_id=tid, record="PartitionChangeRecord", source=source, file=rec.file)
        e.unclean = _unclean(prev, e)
        self._add(tid, p, e)

    def _clear_elr(self, rec: _Rec, d: dict, source: str) -> None:
        name = d["topicName"]
        tids = set(self.names) if name == "" else {t for t, n in self.names.items() if n == name}
        if not tids:
            self._finding("CLEAR_ELR_UNKNOWN_TOPIC", f"ClearElrRecord names no live topic ({name!r})",
                          rec, topic=name)
        for (tid, p), prev in sorted(self.parts.items()):
            if tid in tids and (prev.elr or prev.last_known_elr):
                # the controller merges an empty ELR change: one partition epoch more, same leader epoch
                self._add(tid, p, replace(prev, offset=rec.offset, timestamp=rec.timestamp, elr=[], last_known_elr=[],
                                          partition_epoch=prev.partition_epoch + 1, leader_changed=False,
                                          unclean=False, record="ClearElrRecord", source=source, file=rec.file))


def _unclean(prev: TimelineEntry, new: TimelineEntry) -> bool:
    if new.leader_recovery_state == RECOVERING and prev.leader_recovery_state != RECOVERING:
        return True
    return new.leader_changed and new.leader >= 0 and new.leader not in prev.isr and new.leader not in prev.elr


def _decode(rec: _Rec, tl: Timeline, emit: bool = True) -> dict | None:
    try:
        d = decode_metadata_record(rec.value)
    except DecodeError as e:
        if emit:
            tl.log.add(finding(e.code, f"offset {rec.offset}: {e.message}", file=rec.file, position=rec.position,
                               **{**e.finding.facts, "offset": rec.offset}))
        return None
    tl.records += 1
    tl.record_types[d["type"]] += 1
    return d


def _load_snapshot(path: Any, tl: Timeline) -> tuple[_State, int, int] | None:
    """The state a snapshot holds, its end offset and its timestamp (None when it is unusable).

    Its control batches are read first (header and footer decide whether it is used at all), then its
    records are replayed as they are read."""
    controls: dict[str, Any] = {}
    for _ in _records(path, tl, controls, data=False, report=False):
        pass
    if "SNAPSHOT_FOOTER" not in controls or "SNAPSHOT_HEADER" not in controls:
        for _ in _records(path, tl, {}):
            pass  # not replayed, but what is wrong with the file is still reported
        missing = [c for c in ("SNAPSHOT_HEADER", "SNAPSHOT_FOOTER") if c not in controls]
        tl.log.add(finding("SNAPSHOT_INCOMPLETE", f"snapshot without {' and '.join(missing)}: not used", file=str(path),
                                   **{"missing": missing}))
        return None
    header = controls["SNAPSHOT_HEADER"]
    ts = header.get("lastContainedLogTimestamp", -1)
    end = (snapshot_id(path.name) or (0, 0))[0]
    st = _State(tl, emit=False)
    for r in _records(path, tl, {}):
        if r.value is None:
            continue
        d = _decode(r, tl)
        if d is not None:
            st.record(r, d, "snapshot")
    return st, end, ts


def _adopt(tl: Timeline, state: _State, snap: _State, path: Any, end: int, ts: int) -> _State:
    """Make a snapshot (which follows a gap) the current state; partitions it shows changed get an entry."""
    snap.emit = True
    for tid, name in snap.names.items():
        tl.topic_names[tid] = name
    for tid in set(state.names) - set(snap.names):
        tl.removed_topics.setdefault(tid, {"name": state.names[tid], "offset": None, "timestamp": None,
                                           "before_snapshot": str(path)})
    for (tid, p), reg in sorted(snap.parts.items()):
        prev = state.parts.get((tid, p))
        if prev is not None and prev.same_registration(reg):
            snap.parts[(tid, p)] = prev
            continue
        e = replace(reg, offset=end - 1, timestamp=ts, record="snapshot", source="snapshot", file=str(path),
                    leader_changed=prev is None or reg.leader_epoch != prev.leader_epoch, unclean=False)
        if prev is not None:
            # only one election in the gap is certain when the epoch moved by exactly one
            one = e.leader_epoch == prev.leader_epoch + 1
            e.unclean = (e.leader_recovery_state == RECOVERING and prev.leader_recovery_state != RECOVERING) or (
                one and e.leader >= 0 and e.leader not in prev.isr and e.leader not in prev.elr)
        snap.parts[(tid, p)] = e
        tl.partitions.setdefault((snap.name(tid), p), []).append(e)
    tl.snapshots_loaded.append(str(path))
    return snap


def _check_snapshot(tl: Timeline, state: _State, snap: _State, path: Any) -> None:
    """A snapshot the log reaches without a gap must hold the replayed state."""
    tl.snapshots_checked.append(str(path))
    diffs = []
    for key in sorted(set(state.parts) | set(snap.parts)):
        a, b = state.parts.get(key), snap.parts.get(key)
        if a is None or b is None or not a.same_registration(b):
            diffs.append({"topic": state.name(key[0]), "partition": key[1],
                          "replayed": None if a is None else {k: getattr(a, k) for k in _STATE_FIELDS},
                          "snapshot": None if b is None else {k: getattr(b, k) for k in _STATE_FIELDS}})
    if set(state.names.items()) != set(snap.names.items()):
        diffs.append({"topics_replayed": len(state.names), "topics_snapshot": len(snap.names)})
    if diffs:
        tl.log.add(finding("SNAPSHOT_DISAGREES_WITH_LOG", f"{len(diffs)} difference(s) between the snapshot and the log replayed up to "
                                   "its end offset", file=str(path), **{"differences": diffs[:10]}))


def build_timeline(inputs: Any) -> Timeline:
    """Replay the metadata log copies and snapshots in ``inputs`` into per-partition timelines.

    ``inputs`` is what :func:`~kforensics.log.metadata_log.find_metadata_sources` takes (paths on any source,
    log-dir or partition objects; one or a list), or a :class:`~kforensics.log.metadata_log.MetadataSources`.  Raises
    ``FileNotFoundError`` for a path that does not exist; everything wrong
    inside the files becomes a finding; inputs that are not a metadata log raise ``InputError``.
    """
    items = [] if isinstance(inputs, MetadataSources) else list(inputs) if isinstance(inputs, (list, tuple)) \
        else [inputs]
    loose = loose_segments(items)  # refuses another topic's segment
    src = inputs if isinstance(inputs, MetadataSources) else find_metadata_sources(items)
    tl = Timeline()
    tl.log.extend(src.findings)
    _one_cluster(src, tl)
    snapshots = list(src.snapshots)
    merged = _merge_logs(src, tl)
    first = next(merged, None)
    if first is None and not snapshots and src.bootstraps:
        # a bootstrap file holds the records a new cluster starts from, at offsets 0..
        log: Iterable[_Rec] = _records(src.bootstraps[0], tl, {})
    else:
        log = itertools.chain([first], merged) if first is not None else ()
    replay = _LogReplay(tl, snapshots)
    for rec in log:
        replay.apply(rec)
    replay.finish()
    tl.findings = tl.log.findings()
    refuse_if_no_metadata(loose, len(items), tl.records)
    return tl


class _LogReplay:
    """The replay of one merged metadata log, with the snapshots taken over where the log cannot be placed."""

    def __init__(self, tl: Timeline, snapshots: list[Any]):
        self.tl = tl
        self.snapshots = snapshots
        self.si = 0  # the next snapshot not yet reached
        self.state = _State(tl, emit=True)
        self.pos: int | None = None  # next offset the replay expects
        self.skipped: list[int] = []  # the first and the last offset skipped since the last flush (not every one)

    def snapshot(self, path: Any) -> None:
        """Check the replay against a snapshot it reached, or take the snapshot's state over."""
        loaded = _load_snapshot(path, self.tl)
        if loaded is None:
            return
        snap, end, ts = loaded
        if self.pos == end:
            _check_snapshot(self.tl, self.state, snap, path)
        else:
            self.state = _adopt(self.tl, self.state, snap, path, end, ts)
            self.pos = end
            self.tl.complete = True

    def flush_skipped(self) -> None:
        if self.skipped:
            first, last = self.skipped[0], self.skipped[-1]
            self.tl.log.add(finding("METADATA_RECORDS_SUPERSEDED", f"log offsets {first}-{last} have no known state "
                                    "to apply to (they precede the first snapshot or follow a gap); the next "
                                    "snapshot's state covers them", **{"first": first, "last": last}))
            self.skipped.clear()

    def skip(self, offset: int) -> None:
        if self.skipped:
            self.skipped[1:] = [offset]
        else:
            self.skipped.append(offset)

    def _placed(self, rec: _Rec) -> bool:
        """Whether ``rec`` applies to the state replayed so far (else it is skipped or already covered)."""
        tl = self.tl
        if self.pos is None and rec.offset > 0 and any(_end_offset(s) > rec.offset for s in self.snapshots[self.si:]):
            self.skip(rec.offset)  # snapshot first: the log before it cannot be placed on any state
            return False
        if self.pos is None:
            tl.complete = rec.offset == 0
            if rec.offset > 0:
                tl.log.add(finding("METADATA_HISTORY_INCOMPLETE", f"the metadata log starts at offset {rec.offset} "
                                   "with no snapshot before it: partitions created earlier are unknown until a "
                                   "change names them", file=rec.file, **{"offset": rec.offset}))
            self.pos = rec.offset
        if rec.offset < self.pos:
            return False  # a snapshot already covers it
        if rec.offset > self.pos:
            if any(_end_offset(s) > rec.offset for s in self.snapshots[self.si:]):
                self.skip(rec.offset)
                return False
            tl.log.add(finding("METADATA_LOG_GAP", f"metadata offsets {self.pos}-{rec.offset - 1} are missing and no "
                               "snapshot covers them: epochs after the gap may be lower than the controller's",
                               file=rec.file, **{"first_missing": self.pos, "next": rec.offset}))
        return True

    def apply(self, rec: _Rec) -> None:
        """Replay one log record (after the snapshots that end at or before it)."""
        while self.si < len(self.snapshots) and _end_offset(self.snapshots[self.si]) <= rec.offset:
            self.flush_skipped()
            self.snapshot(self.snapshots[self.si])
            self.si += 1
        if not self._placed(rec):
            return
        tl = self.tl
        self.pos = rec.offset + 1
        if tl.log_start is None:
            tl.log_start = rec.offset
        tl.log_end = self.pos
        if rec.value is not None:
            d = _decode(rec, tl)
            if d is not None:
                self.state.record(rec, d, "log")

    def finish(self) -> None:
        """The log's end: the snapshots past it, and a metadata transaction left open."""
        self.flush_skipped()
        for s in self.snapshots[self.si:]:
            self.snapshot(s)
        if self.state.txn_overflow:
            self.tl.log.add(finding("METADATA_TRANSACTION_OPEN", "the log ends inside a metadata transaction too "
                                    "large to hold; its records were replayed", replayed=True))
        if self.state.txn:
            self.tl.log.add(finding("METADATA_TRANSACTION_OPEN", f"the log ends inside a metadata transaction; its "
                                    f"{len(self.state.txn)} record(s) are not replayed", records=len(self.state.txn)))


def _end_offset(path: Any) -> int:
    return (snapshot_id(path.name) or (-1, -1))[0]
