"""Which records to salvage: those the replay's loss verdicts name that the new leader does not keep.

For every partition whose replay loses records (a verdict of
:data:`kforensics.verdict_rules.LOSS` on some replica), the batches each
verdict covers are read back from the disk of the replica that loses them,
record by record, in offset order.  A record is *kept* when the new leader's
log after the replay holds the same record: the same key, value, headers
and producer sequence at the same offset, or, for an idempotent producer
(producer id >= 0), anywhere in the leader's log (the same producer id,
epoch and sequence with the same content: a retried batch the leader took
at another offset: Kafka's duplicate check is on the producer epoch and the
sequence range, ``ProducerStateEntry.findDuplicateBatch``,
storage/src/main/java/org/apache/kafka/storage/internals/log/
ProducerStateEntry.java, apache/kafka 3.9.0).  Every other record is
salvaged once, however many brokers hold a copy, with the brokers and the
verdict each gives it.

Memory: the replicas' records stream (a merge over the losing brokers, one
record each); the only state per record is the leader's index of the
records it keeps that a lost record could match (16 bytes each, only over
the lost offsets' span and the lost records' producers).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..findings import Finding
from ..log.log_dir import LogDir, open_log_dir
from ..log.log_entry import Batch
from ..log.partition import PartitionLog
from ..verdict_rules import LOSS, ORDER
from .model import SalvagedRecord, SalvageSummary
from .reading import ReadRecord, batch_records, control_markers, digest64, not_read, read_batch_at

#: rank of a verdict (worse is higher), for naming the worst one that loses a record
_RANK = {c: i for i, c in enumerate(ORDER)}
#: a replica's batch row that is on no disk of it (written or fetched during the replay)
_ON_DISK_MIN = 0


class LeaderIndex:
    """What the new leader keeps that a lost record could be: per offset in the lost span, and per producer."""

    def __init__(self, offsets: np.ndarray, at_offset: np.ndarray, produced: np.ndarray):
        order = np.argsort(offsets, kind="stable")
        self.offsets, self.at_offset = offsets[order], at_offset[order]
        self.produced = np.sort(produced)

    @classmethod
    def empty(cls) -> LeaderIndex:
        e = np.empty(0, dtype=np.int64)
        return cls(e, e, e)

    def keeps(self, rec: ReadRecord) -> bool:
        """Whether the leader holds this record (same content at its offset, or anywhere for an idempotent
        producer's record)."""
        if not len(self.offsets) and not len(self.produced):
            return False  # the leader holds nothing a lost record could be (the common case after an election)
        d = digest64(rec.digest)
        if len(self.offsets):
            lo, hi = np.searchsorted(self.offsets, rec.offset, "left"), np.searchsorted(self.offsets, rec.offset,
                                                                                        "right")
            if lo < hi and bool((self.at_offset[lo:hi] == d).any()):
                return True
        if rec.producer_id >= 0 and len(self.produced):
            i = int(np.searchsorted(self.produced, d))
            return i < len(self.produced) and int(self.produced[i]) == d
        return False


def leader_index(pd: PartitionLog | None, kept_end: int, lo: int, hi: int, pids: set[int],
                 findings: list[Finding]) -> LeaderIndex:
    """The leader's records below ``kept_end`` (its log after the replay) that lie in ``lo..hi`` or were
    written by one of ``pids`` (only those batches are decoded)."""
    if pd is None or kept_end <= lo and not pids:
        return LeaderIndex.empty()
    from array import array

    offs, at, produced = array("q"), array("q"), array("q")
    pid_arr = np.array(sorted(pids), dtype=np.int64)
    for seg in pd.sorted_segments():
        if seg.log is None:
            continue
        reader = seg.reader()
        for table in reader.tables():
            last, base, pid = table["last_offset"], table.first_offsets(), table["producer_id"]
            span = (last >= lo) & (base <= hi)
            mine = np.isin(pid, pid_arr) if len(pid_arr) else np.zeros(len(table), dtype=bool)
            want = (span | mine) & (last < kept_end)
            for row in table.data[want].tolist():
                b = Batch(row, reader.entry_bytes(row[0], row[1]))
                for r in batch_records(b, str(seg.log), findings):
                    if r.offset >= kept_end:
                        continue
                    if lo <= r.offset <= hi:
                        offs.append(r.offset)
                        at.append(digest64(r.digest))
                    if r.producer_id in pids:
                        produced.append(digest64(r.digest))
    return LeaderIndex(np.frombuffer(offs, dtype=np.int64).copy(), np.frombuffer(at, dtype=np.int64).copy(),
                       np.frombuffer(produced, dtype=np.int64).copy())


class TxnStatus:
    """Transactional status of a replica's records from its own markers (read once, on the first need).

    A producer's transaction ends at its next COMMIT or ABORT control record
    (``ProducerAppendInfo.appendEndTxnMarker``, storage/src/main/java/org/
    apache/kafka/storage/internals/log/ProducerAppendInfo.java;
    ``EndTransactionMarker``, ``ControlRecordType``, clients/src/main/java/
    org/apache/kafka/common/record/; apache/kafka 3.9.0).
    """

    def __init__(self, pd: PartitionLog, from_offset: int, findings: list[Finding]):
        self._by_pid: dict[int, tuple[list[int], list[str]]] = {}
        for off, pid, kind in control_markers(pd, from_offset, findings):
            offs, kinds = self._by_pid.setdefault(pid, ([], []))
            offs.append(off)
            kinds.append(kind)

    def status(self, rec: ReadRecord) -> str:
        """committed/aborted: the first marker of its producer after it says so; open: no marker follows."""
        if not rec.transactional:
            return "none"
        offs, kinds = self._by_pid.get(rec.producer_id, ([], []))
        i = bisect_right(offs, rec.offset)
        return "open" if i >= len(offs) else ("committed" if kinds[i] == "COMMIT" else "aborted")


class Salvage:
    """The salvage of one replay report: iterate :meth:`records`; :attr:`summary` is complete once it ends."""

    def __init__(self, report: Any, committed: Any = None):
        self.report = report
        cluster = next((b.cluster_id for b in report.brokers if b.cluster_id), None)
        self.summary = SalvageSummary(report.kafka_version, cluster)
        self._dirs: dict[int | None, list[LogDir]] = {}
        self._groups: dict[tuple[str, int], dict[str, int]] = {}
        for c in getattr(committed, "offsets", None) or []:
            g = self._groups.setdefault((c.topic, c.partition), {})
            g[c.group] = max(g.get(c.group, -1), c.offset)

    def partition_dir(self, broker: int | None, topic: str, partition: int) -> PartitionLog | None:
        """The partition dir of a broker (its log dirs listed once)."""
        if broker not in self._dirs:
            self._dirs[broker] = [open_log_dir(d) for d in self.report.log_dirs.get(broker, [])]
        for ld in self._dirs[broker]:
            for pd in ld.partitions:
                if pd.topic == topic and pd.partition == partition:
                    return pd
        return None

    def records(self) -> Iterator[SalvagedRecord]:
        """Every salvaged record, partition by partition, in offset order within each."""
        for p in self.report.partitions:
            yield from self.partition_records(p)

    def partition_records(self, p: Any) -> Iterator[SalvagedRecord]:
        """The salvaged records of one partition's replay."""
        unsettled = leader_unsettled(p)
        if unsettled is not None:
            self.summary.findings.append(unsettled)
        losing = losing_batches(p)
        if not losing:
            return
        self.summary.partitions_read += 1
        findings = self.summary.findings
        lo = min(int(rows[:, 0].min()) for parts in losing.values() for _c, rows in parts)
        hi = max(int(rows[:, 1].max()) for parts in losing.values() for _c, rows in parts)
        leader = next((r for r in p.replicas if r.broker_id == p.leader and r.role == "leader"), None)
        index = LeaderIndex.empty()
        if leader is not None:
            ends = [e for e in (leader.log_end_offset_at_restart, leader.log_end_offset_after) if e is not None]
            pids = {int(x) for parts in losing.values() for _c, rows in parts for x in np.unique(rows[:, 6])
                    if x >= 0}
            index = leader_index(self.partition_dir(p.leader, p.topic, p.partition), min(ends, default=0), lo,
                                 hi, pids, findings)
        streams = [self._broker_stream(p, b, parts) for b, parts in sorted(losing.items(), key=lambda x: x[0])]
        groups = self._groups.get((p.topic, p.partition), {})
        for offset, copies in _by_offset(heapq.merge(*streams, key=lambda x: x[0].offset)):
            yield from self._distinct(p, offset, copies, index, groups)

    def _distinct(self, p: Any, offset: int, copies: list[tuple[ReadRecord, int, str, str]], index: LeaderIndex,
                  groups: dict[str, int]) -> Iterator[SalvagedRecord]:
        """The distinct records among the copies of one offset that the leader does not keep."""
        seen: dict[bytes, SalvagedRecord] = {}
        for rec, broker, code, status in copies:
            if rec.digest in seen:
                s = seen[rec.digest]
                if broker in s.verdicts:  # two verdicts of one broker name the batch: its worse one stands
                    if _RANK.get(code, 0) > _RANK.get(s.verdicts[broker], 0):
                        s.verdicts[broker] = code
                else:
                    s.brokers.append(broker)
                    s.verdicts[broker] = code
                    self.summary.duplicates += bool(s.topic)  # copies of a record the leader keeps are not counted
                if _RANK.get(code, 0) > _RANK.get(s.verdict, 0):
                    s.verdict = code
                continue
            if index.keeps(rec):
                self.summary.kept_by_leader += 1
                seen[rec.digest] = _placeholder(rec, broker, code)  # further copies are kept too
                continue
            seen[rec.digest] = salvaged(self.summary.cluster_id, p.topic, p.partition, rec, broker, code, status,
                                        sorted(g for g, o in groups.items() if o > offset))
        for s in seen.values():
            if s.topic:
                self.summary.add(s)
                yield s

    def _broker_stream(self, p: Any, broker: int, parts: list[tuple[str, np.ndarray]]
                       ) -> Iterator[tuple[ReadRecord, int, str, str]]:
        """One losing broker's lost records in offset order: (record, broker, verdict, transactional status)."""
        pd = self.partition_dir(broker, p.topic, p.partition)
        rows = [(code, row) for code, arr in parts for row in arr.tolist()]
        rows.sort(key=lambda x: (x[1][0], x[1][1]))
        txn: TxnStatus | None = None
        findings = self.summary.findings
        for code, (base, last, crc, position, size, _seg, _pid) in rows:
            got = read_batch_at(pd, base, last, crc, position, size) if pd is not None else None
            if got is None:
                findings.append(not_read(pd, broker, p.topic, p.partition, base, last, position))
                continue
            b, file = got
            for rec in batch_records(b, file, findings):
                if rec.transactional and txn is None and pd is not None:
                    txn = TxnStatus(pd, base, findings)
                yield rec, broker, code, txn.status(rec) if txn is not None else "none"


def leader_unsettled(p: Any) -> Finding | None:
    """A finding when another return order of the brokers elects another leader (or none) for this partition: the
    records lost, so those salvaged, are the chosen leader's (the replay's ``alternatives``)."""
    from ..findings import finding

    e = getattr(p, "election", None)
    others = sorted({b for b in getattr(e, "alternatives", None) or [] if b != p.leader})
    if not others or e is None:
        return None
    named = ", ".join("nobody" if b < 0 else f"broker {b}" for b in others)
    return finding("SALVAGE_LEADER_UNSETTLED", f"{p.topic}-{p.partition}: salvaged for leader {p.leader} (the "
                   f"brokers back first: {', '.join(map(str, e.returning)) or 'none'}); another return order "
                   f"elects {named}: choose the order you will start the brokers in and salvage with it "
                   "(--restart-order), then restart the controller, let it fence the brokers it holds, and start "
                   "the brokers in that order, each once the one before is unfenced",
                   topic=p.topic, partition=p.partition, leader=p.leader, alternatives=others)


def losing_batches(p: Any) -> dict[int, list[tuple[str, np.ndarray]]]:
    """Per broker, the batches its loss verdicts cover that are on its disk: ``(verdict, rows)`` with rows of
    (base, last, stored crc, position, size, segment, producer id)."""
    out: dict[int, list[tuple[str, np.ndarray]]] = {}
    for r in p.replicas:
        for v in r.verdicts:
            if v.code not in LOSS or v.batches is None or not len(v.batches):
                continue
            bl = v.batches
            rows = np.stack([bl.col(c) for c in ("base_offset", "last_offset", "crc", "position", "size_in_bytes",
                                                 "segment", "producer_id")], axis=1)
            rows = rows[(rows[:, 5] >= _ON_DISK_MIN) & (rows[:, 3] >= 0)]
            if len(rows):
                out.setdefault(r.broker_id, []).append((v.code, rows))
    return out


def _by_offset(stream: Iterator[tuple[ReadRecord, int, str, str]]
               ) -> Iterator[tuple[int, list[tuple[ReadRecord, int, str, str]]]]:
    group: list[tuple[ReadRecord, int, str, str]] = []
    for item in stream:
        if group and item[0].offset != group[0][0].offset:
            yield group[0][0].offset, group
            group = []
        group.append(item)
    if group:
        yield group[0][0].offset, group


def salvaged(cluster: str | None, topic: str, partition: int, rec: ReadRecord, broker: int, code: str,
             status: str, groups: list[str]) -> SalvagedRecord:
    """A salvaged record from the first copy read."""
    return SalvagedRecord(cluster, topic, partition, rec.offset, rec.leader_epoch, rec.timestamp,
                          rec.timestamp_type, rec.key, rec.value, rec.headers, rec.producer_id, rec.producer_epoch,
                          rec.sequence, status, code, {broker: code}, [broker], groups, rec.size_in_bytes,
                          rec.digest, rec.crc_valid)


def _placeholder(rec: ReadRecord, broker: int, code: str) -> SalvagedRecord:
    """Stands for a record the leader keeps (topic empty: never yielded)."""
    return SalvagedRecord(None, "", -1, rec.offset, -1, -1, "", None, None, [], -1, -1, -1, "none", code,
                          {broker: code}, [broker], [], 0, rec.digest)
