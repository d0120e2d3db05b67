"""The transaction coordinator's view (``__transaction_state``) and its cross-check with a partition's markers.

The coordinator keeps one ``TransactionLogValue`` per transactional id; the
latest record of an id wins by log order and a tombstone deletes it
(``TransactionStateManager.loadTransactionMetadata``, 3.8.0).  A transaction's
partitions are listed while it is ``Ongoing`` or ``Prepare*``; ``Complete*``
records list none (``TransactionMetadata.prepareComplete``).  Markers carry
the producer epoch of the ``Prepare*`` record (under transactions v2 one above
the data's, ``prepareAbortOrCommit``).

Cross-check (after ``kafka-transactions.sh find-hanging``,
``TransactionsCommand.filterHangingTransactions``, 3.8.0): an open transaction
is hanging when the coordinator's transaction for its producer does not list
the partition (it will never write that marker), or when the coordinator
expired its transactional id (a tombstone) or moved it to another producer
id.  The tool also calls a producer id no transactional id has hanging; in
evidence that may only mean the coordinator's log was not flushed, so here it
is noted, and only the transaction's age can make it hanging.  A marker whose outcome differs from the
coordinator's decided outcome at the same producer epoch breaks atomicity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, cast

from ..findings import Finding, FindingLog, finding
from ..formats.transaction_log import TOPIC, decode, state_name
from ..log.partition import PartitionLog
from .internal_log import coordinator_copies, coordinator_partition, java_string_hash, logged_records  # noqa: F401
from .model import PartitionTransactions, TransactionMarker

#: Kafka's default ``transaction.state.log.num.partitions`` (``TransactionLogConfigs``)
TRANSACTION_STATE_PARTITIONS = 50
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
DECIDED = {"PrepareCommit": "COMMIT", "CompleteCommit": "COMMIT", "PrepareAbort": "ABORT", "CompleteAbort": "ABORT"}


@dataclass
class TransactionState:
    """The coordinator's latest record of one transactional id, and where it was read."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str | None  # TransactionState name (Empty, Ongoing, PrepareCommit, ...)
    timeout_ms: int
    partitions: list[tuple[str, int]]
    start_timestamp: int
    last_update_timestamp: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0
    log_offset: int = -1  # the record's offset in __transaction_state
    file: str | None = None
    position: int | None = None
    broker_id: int | None = None


@dataclass
class CoordinatorView:
    """Every transactional id's latest state found in the ``__transaction_state`` partitions read."""

    states: dict[str, TransactionState] = field(default_factory=dict)
    # transactional ids whose latest record is a tombstone (the coordinator expired them): their last state
    expired: dict[str, TransactionState] = field(default_factory=dict)
    partitions_read: list[int] = field(default_factory=list)
    partition_count: int = TRANSACTION_STATE_PARTITIONS
    findings: list[Finding] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether every partition of ``__transaction_state`` was read.  Even then a producer id no record names
        is not proof the coordinator forgot it (its log may be unflushed in the evidence), so it alone never
        makes a transaction hanging; an expired id (a tombstone) does."""
        return set(range(self.partition_count)) <= set(self.partitions_read)

    def by_producer(self) -> dict[int, TransactionState]:
        out: dict[int, TransactionState] = {}
        for st in self.states.values():
            if st.producer_id >= 0:
                out[st.producer_id] = st
        return out


def read_transaction_state(copies: Iterable[tuple[int | None, PartitionLog]], *,
                           partition_count: int = TRANSACTION_STATE_PARTITIONS) -> CoordinatorView:
    """The coordinator's view from ``__transaction_state`` partition directories: ``copies`` are
    ``(broker id, PartitionLog)``.  Several copies of one partition are merged: per transactional id the record
    at the highest offset wins (a tombstone deletes)."""
    view = CoordinatorView(partition_count=partition_count)
    log = FindingLog()
    latest: dict[str, tuple[int, TransactionState | None]] = {}
    before: dict[str, TransactionState] = {}  # the state a tombstone deleted
    read: set[int] = set()
    for broker_id, pd in copies:
        if pd.topic != TOPIC or pd.name.suffix is not None:
            continue
        read.add(pd.partition)
        for r in logged_records(pd, log):
            if r.control is not None:
                continue
            rec = decode(r.key, r.value)
            for f in rec.findings:
                log.add(replace(f, file=r.file, position=r.position))
            if rec.key is None or rec.key_type != "TransactionLogKey":
                continue
            tid = cast(str, rec.key.get("transactionalId"))  # a non-nullable string of every TransactionLogKey
            seen = latest.get(tid)
            if seen is not None and seen[0] > r.offset:
                continue
            if rec.tombstone:
                if seen is not None and seen[1] is not None:
                    before[tid] = seen[1]
                latest[tid] = (r.offset, None)
            elif rec.value is not None:
                v = rec.value
                parts = [(p["topic"], int(n)) for p in (v.get("transactionPartitions") or [])
                         for n in p.get("partitionIds") or []]
                latest[tid] = (r.offset, TransactionState(
                    tid, v["producerId"], v["producerEpoch"], state_name(v.get("transactionStatus")),
                    v["transactionTimeoutMs"], parts, v["transactionStartTimestampMs"],
                    v["transactionLastUpdateTimestampMs"], v.get("previousProducerId", -1),
                    v.get("nextProducerId", -1), v.get("clientTransactionVersion", 0), r.offset, r.file,
                    r.position, broker_id))
    view.states = {tid: st for tid, (_, st) in sorted(latest.items()) if st is not None}
    view.expired = {tid: before[tid] for tid, (_, st) in sorted(latest.items()) if st is None and tid in before}
    view.partitions_read = sorted(read)
    view.findings = log.findings()
    return view


def coordinator_view(log_dirs: dict[int | None, list[Any]], **kw: Any) -> CoordinatorView | None:
    """The coordinator's view from the ``__transaction_state`` partitions in these brokers' log dirs (None when
    there is none)."""
    copies = coordinator_copies(log_dirs, TOPIC)
    return read_transaction_state(copies, **kw) if copies else None


def cross_check(pt: PartitionTransactions, last_markers: dict[int, TransactionMarker],
                view: CoordinatorView) -> list[Finding]:
    """Update ``pt``'s open transactions (hanging or not, the coordinator's state) from the coordinator's view
    and return the findings where the coordinator and the markers disagree."""
    out: list[Finding] = []
    by_pid = view.by_producer()
    moved = {st.previous_producer_id: st for st in view.states.values() if st.previous_producer_id >= 0}
    expired = {st.producer_id: st for st in view.expired.values()}
    tp = (pt.topic, pt.partition)
    for t in pt.open:
        st = by_pid.get(t.producer_id)
        if st is None and t.producer_id in expired:
            st = expired[t.producer_id]
            t.coordinator_state = "expired"
            t.hanging = True
            t.why = (f"the coordinator expired transactional id {st.transactional_id!r} (a tombstone in "
                     "__transaction_state): nobody will write this transaction's marker")
            continue
        if st is None and t.producer_id in moved:
            st = moved[t.producer_id]
            t.coordinator_state = st.state
            t.hanging = True
            t.why = (f"the coordinator moved transactional id {st.transactional_id!r} on to producer id "
                     f"{st.producer_id}: nobody will write this transaction's marker")
            continue
        if st is None:
            t.why += (f"; no transactional id in the __transaction_state evidence has producer id {t.producer_id}"
                      + ("" if view.complete else " (not every partition of it was read)"))
            continue
        t.coordinator_state = st.state
        if st.state in OPEN_STATES and tp in st.partitions:
            t.hanging = False
            t.why = (f"the coordinator lists this partition in transactional id {st.transactional_id!r}'s "
                     f"{st.state} transaction: it writes the marker"
                     + (" when it completes" if st.state == "Ongoing" else " (pending markers)")
                     + f", or aborts it after {st.timeout_ms} ms")
            if st.state == "Ongoing":
                t.at_restart, t.coordinator_timeout_at = "aborted once timed out", st.start_timestamp + st.timeout_ms
            elif st.state in DECIDED:
                t.at_restart = "completed by the coordinator"
        else:
            timed_out = f" (and {t.why})" if t.hanging else ""
            t.hanging = True
            t.why = (f"the coordinator's state for transactional id {st.transactional_id!r} is {st.state}"
                     + (" without this partition" if st.state in OPEN_STATES else "")
                     + ": it will not write this partition's marker" + timed_out)
    for pid, m in sorted(last_markers.items()):
        st = by_pid.get(pid)
        if st is None or st.producer_epoch != m.producer_epoch:
            continue
        expect = DECIDED.get(st.state or "")
        if expect is not None and m.control_type in ("COMMIT", "ABORT") and m.control_type != expect:
            out.append(finding(
                "TXN_COORDINATOR_DISAGREES",
                f"{m.control_type} marker of producer {pid} (epoch {m.producer_epoch}) at offset {m.offset}, but the "
                f"coordinator's record for transactional id {st.transactional_id!r} says {st.state}: this partition "
                "shows the other outcome than the transaction's other partitions", file=m.file, position=m.position,
                producer_id=pid, producer_epoch=m.producer_epoch, offset=m.offset, marker=m.control_type,
                coordinator_state=st.state, transactional_id=st.transactional_id, coordinator_file=st.file,
                coordinator_offset=st.log_offset))
    return out
