"""What read_committed consumers see after a replay: transactions whose COMMIT or ABORT marker is lost.

A marker is written to every partition of a transaction once the coordinator
decided it, and read_committed consumers deliver (COMMIT) or drop (ABORT) the
transaction's records once the marker is below the last stable offset.  When
the replay truncates or loses a marker (a replica's DISCARD_UNCOMMITTED,
POSSIBLY_COMMITTED, LOSS_COMMITTED, LOST_TO_RECOVERY or FORK range) while the
new leader keeps the transaction's data without a marker after it, the
transaction is open again: the coordinator completed it and never writes the
marker again (when it loads its partition it resends markers only of
transactions still in ``PrepareCommit``/``PrepareAbort``,
``TransactionStateManager.loadTransactionsForTxnTopicPartition`` 3.8.0), so the new
leader's last stable offset stays at the transaction's first offset and
read_committed consumers stall there, after having seen it end.

The transactions of each replica are read from its partition directory with
the replay's lost ranges watched (:mod:`kforensics.transactions.partition`);
the new leader's are read up to its log end at restart (what recovery leaves).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding, finding
from ..transactions.model import PartitionTransactions, TransactionMarker
from ..transactions.partition import read_partition_transactions
from ..verdict_rules import LOSS


@dataclass
class ReopenedTransaction:
    """A transaction whose marker the replay loses while the new leader keeps its data: open again."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int  # of the data on the new leader
    first_offset: int  # on the new leader: where its last stable offset now stops
    last_offset: int
    marker: TransactionMarker  # the lost marker, as read on the replica named by ``broker_id``
    broker_id: int
    verdict: str  # the verdict whose range held the marker
    leader: int
    detail: str = ""


@dataclass
class TransactionsAfterReplay:
    """One replayed partition's transactions: on the new leader after the replay, and the reopened ones."""

    topic: str
    partition: int
    leader: int
    leader_transactions: PartitionTransactions | None
    reopened: list[ReopenedTransaction] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def partition_logs(brokers: dict[int | None, list[Any]]) -> dict[tuple[int | None, str, int], Any]:
    """``(broker id, topic, partition) -> PartitionLog`` for every partition directory of these log dirs."""
    from ..log.log_dir import find_log_dirs, open_log_dir

    out = {}
    for broker_id, dirs in brokers.items():
        for root in dirs:
            for d in find_log_dirs(root):
                for pd in open_log_dir(d).partitions:
                    if pd.name.suffix is None:
                        out[(broker_id, pd.topic, pd.partition)] = pd
    return out


def _lost(outcome: Any) -> list[tuple[int, int, str]]:
    """The ranges a replica loses from its own log (verdicts of :data:`~kforensics.verdict_rules.LOSS`), with the
    verdict code."""
    return [(a, b, v.code) for v in outcome.verdicts if v.code in LOSS for a, b in v.offsets]


def reopened(p: Any, replicas: dict[int, PartitionTransactions], leader: PartitionTransactions
             ) -> tuple[list[ReopenedTransaction], list[Finding]]:
    """The transactions a replay reopens: each replica's markers in its lost ranges (``replicas``: broker id ->
    its log's transactions, with those ranges' markers listed) whose producer has a transaction open on the new
    leader's log from an offset before the marker (``leader``: its transactions up to its log end at restart).

    Pure: the Spark job can pass the scan's transactions of each replica (which list the last markers).
    """
    out: list[ReopenedTransaction] = []
    findings: list[Finding] = []
    open_on_leader = {t.producer_id: t for t in leader.open}
    seen: set[tuple[int, int]] = set()
    for r in p.replicas:
        lost = _lost(r)
        rt = replicas.get(r.broker_id)
        if not lost or rt is None or r.role == "offline":
            continue
        for m in rt.markers:
            code = next((c for a, b, c in lost if a <= m.offset <= b), None)
            t = open_on_leader.get(m.producer_id)
            if code is None or t is None or m.control_type not in ("COMMIT", "ABORT") or t.first_offset > m.offset \
                    or (m.producer_id, m.offset) in seen:
                continue
            seen.add((m.producer_id, m.offset))
            detail = (f"broker {r.broker_id}'s {m.control_type} marker of producer {m.producer_id} at offset "
                      f"{m.offset} is lost ({code}); on the new leader (broker {p.leader}) the transaction is open "
                      f"again from offset {t.first_offset}: read_committed consumers saw it "
                      f"{'committed' if m.control_type == 'COMMIT' else 'aborted'}, and now the last stable offset "
                      f"stops at {t.first_offset}")
            out.append(ReopenedTransaction(p.topic, p.partition, m.producer_id, t.producer_epoch, t.first_offset,
                                           t.last_offset, m, r.broker_id, code, p.leader, detail))
            findings.append(finding("TXN_MARKER_LOST", detail, file=m.file, position=m.position,
                                    producer_id=m.producer_id, marker=m.control_type, marker_offset=m.offset,
                                    broker_id=r.broker_id, verdict=code, leader=p.leader,
                                    first_offset=t.first_offset))
    return out, findings


def partition_after_replay(p: Any, logs: dict[tuple[int | None, str, int], Any], *, coordinator: Any = None
                           ) -> TransactionsAfterReplay:
    """The transactions of one replayed partition (``p`` a ``PartitionReplay``; ``logs``: :func:`partition_logs`)."""
    leader = next(r for r in p.replicas if r.broker_id == p.leader)
    pd = logs.get((leader.broker_id, p.topic, p.partition))
    out = TransactionsAfterReplay(p.topic, p.partition, p.leader, None)
    if pd is None:
        return out
    out.leader_transactions = read_partition_transactions(
        pd, broker_id=leader.broker_id, end_offset=leader.log_end_offset_at_restart, coordinator=coordinator)
    replicas = {}
    for r in p.replicas:
        lost = _lost(r)
        rpd = logs.get((r.broker_id, p.topic, p.partition))
        if lost and rpd is not None and r.role != "offline":
            replicas[r.broker_id] = read_partition_transactions(rpd, broker_id=r.broker_id,
                                                                watch=[(a, b) for a, b, _ in lost],
                                                                check_txn_index=False)
    out.reopened, out.findings = reopened(p, replicas, out.leader_transactions)
    return out


def transactions_after_replay(report: Any, *, coordinator: Any = "read", all_partitions: bool = False,
                              log_dirs: dict[int | None, list[Any]] | None = None) -> list[TransactionsAfterReplay]:
    """For each partition of a :class:`~kforensics.replay.report.ReplayReport` whose replay loses records (or
    every partition with ``all_partitions``), its transactions after the replay and the reopened ones.

    ``coordinator``: a :class:`~kforensics.transactions.coordinator.CoordinatorView`; by default the
    ``__transaction_state`` partitions among the brokers' log dirs are read (None: no cross-check).
    ``log_dirs`` (broker id -> log dirs) replaces the report's brokers' log dirs (a scenario's ``log_dirs``).
    """
    from ..verdict_rules import affects_consumers

    chosen = [p for p in report.partitions if all_partitions or affects_consumers(p)]
    if not chosen:
        return []  # nothing to read: the brokers' partition dirs are not listed again
    brokers = log_dirs if log_dirs is not None else {b.broker_id: list(b.log_dirs) for b in report.brokers}
    if isinstance(coordinator, str):
        from ..transactions.coordinator import coordinator_view

        coordinator = coordinator_view(brokers)
    logs = partition_logs(brokers)
    return [partition_after_replay(p, logs, coordinator=coordinator) for p in chosen]
