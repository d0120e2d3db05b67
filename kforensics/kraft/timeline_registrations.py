"""The controller's partition registrations folded record by record (``PartitionRecord``, ``PartitionChangeRecord``,
``ClearElrRecord``, topics and metadata transactions), as the controller replays them (reference §6.2)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..findings import DecodeError, finding
from ..formats.metadata_records import decode_metadata_record
from ..log.metadata_log import MetadataEntry as _Rec
from .cluster_state import ClusterState
from .timeline_model import MAX_TXN_RECORDS, NO_LEADER_CHANGE, RECOVERED, RECOVERING, Timeline, TimelineEntry


class RegistrationState:
    """The controller's view being replayed: topic names and partition registrations."""

    def __init__(self, tl: Timeline, emit: bool):
        self.tl = tl
        self.emit = emit  # False while building a snapshot's state for comparison
        self.names: dict[str, str] = {}  # live topic id -> name
        self.parts: dict[tuple[str, int], TimelineEntry] = {}  # (topic id, partition) -> registration
        self.txn: list[tuple[_Rec, dict]] | None = None  # records of an open metadata transaction
        self.txn_overflow = False  # the open transaction outgrew MAX_TXN_RECORDS: its records are being replayed
        self.cluster = ClusterState()  # brokers, features and configs, folded from the same records

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
                self._finding("METADATA_TRANSACTION_NESTED", "BeginTransactionRecord inside an open metadata "
                              "transaction", rec)
                self._flush()
            self.txn = []
            self.txn_overflow = False
        elif kind == "EndTransactionRecord":
            self._flush()
            self.txn_overflow = False
        elif kind == "AbortTransactionRecord":
            n = len(self.txn or [])
            self.txn = None
            self._finding("METADATA_TRANSACTION_ABORTED", f"metadata transaction aborted; its {n} record(s) are not "
                          "replayed"
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
        self.cluster.apply(kind, data, rec.offset)
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
            self._finding("TOPIC_ID_UNNAMED", f"PartitionRecord for topic id {tid}, which no TopicRecord names", rec,
                          topic_id=tid)
        prev = self.parts.get((tid, p))
        lrs = d.get("leaderRecoveryState", RECOVERED)
        e = TimelineEntry(
            offset=rec.offset, timestamp=rec.timestamp, leader=d["leader"], leader_epoch=d["leaderEpoch"],
            partition_epoch=d["partitionEpoch"], isr=list(d["isr"]), replicas=list(d["replicas"]),
            elr=list(d.get("eligibleLeaderReplicas") or []), last_known_elr=list(d.get("lastKnownElr") or []),
            leader_recovery_state=lrs, leader_changed=True,
            adding_replicas=list(d["addingReplicas"]), removing_replicas=list(d["removingReplicas"]),
            topic_id=tid, record="PartitionRecord", source=source, file=rec.file)
        e.unclean = unclean_election(prev, e) if prev is not None else lrs == RECOVERING
        self._add(tid, p, e)

    def _change(self, rec: _Rec, d: dict, source: str) -> None:
        tid, p = d["topicId"], d["partitionId"]
        prev = self.parts.get((tid, p))
        if prev is None:
            self._finding("CHANGE_WITHOUT_PARTITION", f"PartitionChangeRecord at offset {rec.offset} for "
                          f"{self.name(tid)}-{p}, which no "
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
        e.unclean = unclean_election(prev, e)
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


def unclean_election(prev: TimelineEntry, new: TimelineEntry) -> bool:
    if new.leader_recovery_state == RECOVERING and prev.leader_recovery_state != RECOVERING:
        return True
    return new.leader_changed and new.leader >= 0 and new.leader not in prev.isr and new.leader not in prev.elr


def decode_record(rec: _Rec, tl: Timeline, emit: bool = True) -> dict | None:
    if rec.value is None:  # a control record: nothing to decode
        return None
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

