"""Committed offsets: the offset each consumer group committed for each partition, from ``__consumer_offsets``.

The group coordinator loads its partition from the log start to the log end
and keeps, per (group, topic, partition), the latest offset commit by log
order (``GroupMetadataManager.doLoadGroupsAndOffsets`` up to 3.x;
``OffsetMetadataManager.replay`` / ``replayEndTransactionMarker`` from 3.6):

* a commit (``OffsetCommitKey`` type 0 or 1 with an ``OffsetCommitValue``)
  replaces the previous one; a tombstone deletes it (and, from 3.6, the
  pending transactional commits of that key);
* a commit written by a transactional producer (``sendOffsetsToTransaction``)
  is pending until its producer's marker: a COMMIT applies each pending
  commit unless the stored one was written later in the log, an ABORT drops
  them;
* the value's ``leaderEpoch`` (v3+, brokers 2.1+) is the epoch of the last
  consumed record; -1 means none.

Memory holds one row of columns per (group, topic, partition)
(:mod:`.offset_store`: no object a group) and the pending commits of open
transactions, never the records; ``CommittedOffset`` objects are made a slice
at a time for the Parquet table (``tables/committed_offsets_file.py``) and
for the checks that ask for them.  Several copies of one partition
(brokers' replicas) are merged: per key the commit or deletion at the highest
log offset wins.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..findings import Finding, FindingLog, finding
from ..formats.group_coordinator import TOPIC as TOPIC  # re-exported
from ..formats.group_coordinator import decode
from ..formats.internal_topics import CoordinatorRecord
from ..transactions.internal_log import LoggedRecord, logged_records
from ..transactions.internal_log import coordinator_copies as coordinator_copies  # re-exported
from .offset_commit import CommittedOffset as CommittedOffset  # re-exported
from .offset_commit import Key as Key  # re-exported
from .offset_store import OffsetStore, OffsetView, key_bytes

OFFSET_KEYS = ("OffsetCommitKey", "LegacyOffsetCommitKey")
@dataclass
class CommittedOffsets:
    """Every committed offset found, sorted by group, topic, partition."""

    offsets: Sequence[CommittedOffset] = field(default_factory=list)  # an OffsetView: each made when read
    partitions_read: list[tuple[int | None, int]] = field(default_factory=list)  # (broker, __consumer_offsets N)
    records: int = 0  # offset-commit records read (all copies)
    tombstones: int = 0
    aborted_commits: int = 0  # transactional commits an ABORT dropped
    pending_commits: int = 0  # transactional commits with no marker at the end of the log
    findings: list[Finding] = field(default_factory=list)

    def for_partition(self, topic: str, partition: int) -> list[CommittedOffset]:
        if isinstance(self.offsets, OffsetView):
            return self.offsets.for_partition(topic, partition)
        return [c for c in self.offsets if c.topic == topic and c.partition == partition]


@dataclass
class CopyOffsets:
    """What one copy (one broker's replica) of one ``__consumer_offsets`` partition yields: per key its latest
    commit, or the log offset of the tombstone that deleted it (what merging copies needs), in ``store``."""

    partition: int
    broker_id: int | None = None
    store: OffsetStore = field(default_factory=OffsetStore)
    records: int = 0
    tombstones: int = 0
    aborted_commits: int = 0
    pending_commits: int = 0
    findings: list[Finding] = field(default_factory=list)


class _Commit:
    """An offset commit read by :func:`_fast_decode`: the fields of a ``CoordinatorRecord`` that ``read_copy`` uses."""

    __slots__ = ("key", "tombstone", "value", "value_version")
    key_type = "OffsetCommitKey"
    findings: tuple[Finding, ...] = ()

    def __init__(self, key: dict[str, Any], value: dict[str, Any] | None, version: int | None):
        self.key, self.value, self.value_version, self.tombstone = key, value, version, value is None


_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
#: OffsetCommitValue v0..v3: the fields after the version, in wire order (v4+ is flexible: the schema decoder reads it)
_VALUE_FIELDS = {0: ("offset", "metadata", "commitTimestamp"),
                 1: ("offset", "metadata", "commitTimestamp", "expireTimestamp"),
                 2: ("offset", "metadata", "commitTimestamp"),
                 3: ("offset", "leaderEpoch", "metadata", "commitTimestamp")}
_WIDTH = {"offset": _I64, "commitTimestamp": _I64, "expireTimestamp": _I64, "leaderEpoch": _I32}


def _string(b: bytes, at: int) -> tuple[str, int]:
    n = _I16.unpack_from(b, at)[0]
    if n < 0 or at + 2 + n > len(b):
        raise ValueError("null or cut string")
    return b[at + 2 : at + 2 + n].decode("utf-8"), at + 2 + n


def _fast_decode(key: bytes | None, value: bytes | None) -> _Commit | None:
    """An ``OffsetCommitKey`` (type 1) with a v0..v3 value or a tombstone, read with ``struct`` (the schema decoder
    costs a millisecond a record: a million groups took minutes); None for anything else, and for any byte that does
    not read exactly as Kafka wrote it, which the schema decoder then reads and reports."""
    try:
        if key is None or _I16.unpack_from(key, 0)[0] != 1:
            return None
        group, at = _string(key, 2)
        topic, at = _string(key, at)
        partition = _I32.unpack_from(key, at)[0]
        if at + 4 != len(key):
            return None
        k = {"group": group, "topic": topic, "partition": partition}
        if value is None:
            return _Commit(k, None, None)
        version = _I16.unpack_from(value, 0)[0]
        fields = _VALUE_FIELDS.get(version)
        if fields is None:
            return None
        v: dict[str, Any] = {}
        at = 2
        for name in fields:
            if name == "metadata":
                v[name], at = _string(value, at)
            else:
                v[name] = _WIDTH[name].unpack_from(value, at)[0]
                at += _WIDTH[name].size
        return _Commit(k, v, version) if at == len(value) else None
    except (struct.error, ValueError):  # UnicodeDecodeError is a ValueError
        return None


def _commit(rec: _Commit | CoordinatorRecord, r: LoggedRecord, n: int, broker_id: int | None) -> CommittedOffset:
    k, v = rec.key, rec.value
    assert k is not None and v is not None  # read_copy passes commits only
    epoch = v.get("leaderEpoch")
    expire = v.get("expireTimestamp")
    return CommittedOffset(k["group"], sys.intern(k["topic"]), int(k["partition"]), v["offset"],
                           epoch if epoch is not None and epoch >= 0 else None, v.get("metadata") or "",
                           v["commitTimestamp"], expire if expire is not None and expire >= 0 else None,
                           rec.value_version,
                           r.producer_id if r.transactional else -1, n, r.offset, r.file, r.position, broker_id)


def _invalid_commit(co: CommittedOffset) -> Finding:
    """A commit no consumer can fetch from: the coordinator stores it, and the consumer reads any offset below 0
    as "no committed offset" (ConsumerCoordinator's OffsetFetch handler, 3.9.0) and resets."""
    return finding("GROUP_COMMIT_INVALID", f"group {co.group!r} committed offset {co.offset} for {co.topic}-"
                   f"{co.partition}: below 0, so its consumers find no committed offset and reset per "
                   "auto.offset.reset, whatever happens to the partition", file=co.file, position=co.position,
                   group=co.group, topic=co.topic, partition=co.partition, committed_offset=co.offset)


def read_copy(pd: Any, broker_id: int | None = None, *,
              keep: Callable[[str, str, int], bool] | None = None) -> CopyOffsets:
    """One ``__consumer_offsets`` partition directory (a ``PartitionLog``), replayed as its coordinator loads it.

    ``keep(group, topic, partition)`` limits what is kept.  (A Spark task can
    run this on the partition directories it holds and send the results to be
    merged with :func:`merge_copies`.)
    """
    c = CopyOffsets(pd.partition, broker_id)
    store = c.store
    log = FindingLog()
    pending: dict[int, dict[bytes, CommittedOffset]] = {}
    for r in logged_records(pd, log):
        if r.control is not None:
            p = pending.pop(r.producer_id, None)
            if not p:
                continue
            if r.control != "COMMIT":
                c.aborted_commits += len(p)
                continue
            for kb, co in p.items():
                have = store.loaded(kb)
                if have is None or store.log_offset(have) < co.log_offset:
                    store.put(kb, co)
            continue
        rec = _fast_decode(r.key, r.value) or decode(r.key, r.value)
        for f in rec.findings:
            log.add(replace(f, file=r.file, position=r.position))
        if rec.key_type not in OFFSET_KEYS or rec.key is None:
            continue
        key = (rec.key["group"], rec.key["topic"], int(rec.key["partition"]))
        if keep is not None and not keep(*key):
            continue
        kb = key_bytes(*key)
        c.records += 1
        if rec.tombstone:
            c.tombstones += 1
            store.delete(kb, r.offset)
            for p in pending.values():
                p.pop(kb, None)
            continue
        if rec.value is None:
            continue  # a value that does not decode: its finding is listed
        co = _commit(rec, r, pd.partition, broker_id)
        if co.offset < 0:
            log.add(_invalid_commit(co))
        if r.transactional and r.producer_id >= 0:
            pending.setdefault(r.producer_id, {})[kb] = co
        else:
            store.put(kb, co)
    c.pending_commits = sum(len(p) for p in pending.values())
    c.findings = log.findings()
    return c


def merge_copies(copies: Iterable[CopyOffsets]) -> CommittedOffsets:
    """The committed offsets of several copies (of one or more ``__consumer_offsets`` partitions): per key and
    partition the commit or deletion at the highest log offset among its copies wins; a key found in two
    partitions (the partition count changed) keeps the later commit."""
    out = CommittedOffsets()
    by_partition: dict[int, list[CopyOffsets]] = {}
    for c in copies:
        by_partition.setdefault(c.partition, []).append(c)
        out.partitions_read.append((c.broker_id, c.partition))
        out.records += c.records
        out.tombstones += c.tombstones
        out.aborted_commits += c.aborted_commits
        out.pending_commits += c.pending_commits
        out.findings += c.findings
    numbers = sorted(by_partition)
    # one partition (a scan's): its merge as it is, without a second store of every key
    merged = _merge(by_partition[numbers[0]]) if len(numbers) == 1 else OffsetStore()
    for n in numbers if len(numbers) > 1 else []:
        part = _merge(by_partition[n])
        for kb, row, deleted in part.rows():
            if deleted:
                continue
            have = merged.loaded(kb)
            co = part.offset(kb, row)
            if have is None or merged.cols["commit_timestamp"][have] < co.commit_timestamp:
                merged.put(kb, co)
    out.offsets = OffsetView(merged)
    out.partitions_read.sort(key=lambda x: (x[1], -1 if x[0] is None else x[0]))
    return out


def read_committed_offsets(copies: Iterable[tuple[int | None, Any]], *,
                           keep: Callable[[str, str, int], bool] | None = None) -> CommittedOffsets:
    """Committed offsets from ``__consumer_offsets`` partition directories: ``copies`` are ``(broker id,
    PartitionLog)`` (other topics are ignored).  ``keep(group, topic, partition)`` limits what is kept."""
    return merge_copies(read_copy(pd, broker_id, keep=keep) for broker_id, pd in copies
                        if pd.topic == TOPIC and pd.name.suffix is None)


def _merge(copies: list[CopyOffsets]) -> OffsetStore:
    """Per key, the commit or deletion at the highest log offset among the copies of one partition."""
    if len(copies) == 1:  # one copy (a scan): its commits as they are, without a second store of every key
        (c,) = copies
        c.store.held_by((c.broker_id,))
        return c.store
    best: dict[bytes, tuple[int, int, int]] = {}  # key -> (log offset, copy, row; -1: deleted)
    for i, c in enumerate(copies):
        for kb, row, deleted in c.store.rows():
            off = c.store.log_offset(row)
            if deleted:
                continue
            if kb not in best or best[kb][0] < off:
                best[kb] = (off, i, row)
        for kb, row, deleted in c.store.rows():
            off = c.store.log_offset(row)
            if deleted and (kb not in best or best[kb][0] < off):
                best[kb] = (off, i, -1)
    out = OffsetStore()
    for kb, (_, i, row) in best.items():
        if row < 0:
            continue
        winner = copies[i].store.offset(kb, row)
        winner.copies = tuple(c.broker_id for c in copies if _same(c.store, kb, winner))
        out.put(kb, winner)
    return out


def _same(store: OffsetStore, kb: bytes, b: CommittedOffset) -> bool:
    row = store.loaded(kb)
    if row is None:
        return False
    a = store.offset(kb, row)
    return (a.log_offset, a.offset, a.leader_epoch, a.commit_timestamp) == \
        (b.log_offset, b.offset, b.leader_epoch, b.commit_timestamp)
