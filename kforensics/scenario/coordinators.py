"""The scenario builder's consumer groups and transactions: offset commits, transactional batches, markers and
the coordinator's records, written into the internal partitions (``__consumer_offsets-N``,
``__transaction_state-N``) and the replicated partition."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from ..formats.control import encode_control_key, encode_end_txn_marker
from ..formats.record_batch import RecordData, build_batch
from ..transactions.internal_log import coordinator_partition
from .disk import T0, BrokerDisk, InternalPartition, TxnBatch


class CoordinatorSteps:
    """The steps of :class:`~kforensics.scenario.builder.ScenarioBuilder` that write what coordinators keep."""

    # the builder's state these steps read and extend (set by its __init__)
    brokers: dict[int, BrokerDisk]
    internal: dict[tuple[str, int], InternalPartition]
    producers: dict[int, list[int]]
    _txn: dict[bytes, TxnBatch]
    _clock: int
    leader: int | None
    epoch: int
    name: str
    topic: str
    partition: int

    def _appending(self, b: BrokerDisk) -> None:
        raise NotImplementedError  # the builder's

    def advance(self, ms: int) -> Self:
        """The clock moves on ``ms`` milliseconds (record timestamps and commit times)."""
        self._clock += ms
        return self

    def _internal(self, topic: str, key: str, brokers: list[int] | None) -> InternalPartition:
        n = coordinator_partition(key)
        part = self.internal.get((topic, n))
        if part is None:
            part = self.internal[(topic, n)] = InternalPartition(topic, n, sorted(brokers or self.brokers))
        return part

    def _append_internal(self, part: InternalPartition, key: bytes, value: bytes | None) -> None:
        self._clock += 1
        part.batches.append(build_batch([RecordData(part.leo, T0 + self._clock, key, value)],
                                        partition_leader_epoch=0))

    def commit(self, group: str, offset: int, *, leader_epoch: int | None = None, metadata: str = "",
               topic: str | None = None, partition: int | None = None, brokers: list[int] | None = None
               ) -> Self:
        """Group ``group`` commits ``offset`` for the scenario's partition (or ``topic``/``partition``): an
        ``OffsetCommitValue`` in ``__consumer_offsets-N``, N = abs(hash(group)) % 50.  With ``leader_epoch``
        the value is v3 (brokers 2.1+, KIP-320), without it v1 (older brokers: no epoch, no validation)."""
        from ..formats.group_coordinator import encode

        part = self._internal("__consumer_offsets", group, brokers)
        key = {"group": group, "topic": topic or self.topic, "partition": self.partition if partition is None
               else partition}
        if leader_epoch is None:
            value = {"offset": offset, "metadata": metadata, "commitTimestamp": T0 + self._clock + 1,
                     "expireTimestamp": -1}
            k, v = encode("OffsetCommitValue", 1, key, value)
        else:
            value = {"offset": offset, "leaderEpoch": leader_epoch, "metadata": metadata,
                     "commitTimestamp": T0 + self._clock + 1}
            k, v = encode("OffsetCommitValue", 3, key, value)
        self._append_internal(part, k, v)
        return self

    def produce_txn(self, count: int = 1, *, producer_id: int, broker: int | None = None, tag: str = ""
                    ) -> Self:
        """Transactional producer ``producer_id`` appends ``count`` one-record batches (in its current epoch)."""
        which = broker if broker is not None else self.leader
        assert which is not None, "no leader elected"
        b = self.brokers[which]
        self._appending(b)
        state = self.producers.setdefault(producer_id, [0, 0])
        for _ in range(count):
            off = b.leo
            self._clock += 1
            value = f"{tag or self.name} offset {off} txn {producer_id}".encode()
            data = build_batch([RecordData(off, T0 + self._clock, f"k{off}".encode(), value)],
                               partition_leader_epoch=self.epoch, producer_id=producer_id, producer_epoch=state[0],
                               base_sequence=state[1], transactional=True)
            state[1] += 1
            b.append((off, off, self.epoch, data))
            self._txn[data] = TxnBatch(producer_id)
        return self

    def end_txn(self, producer_id: int, *, commit: bool = True, transaction_version: int = 1,
                coordinator_epoch: int = 0, broker: int | None = None) -> Self:
        """The coordinator's COMMIT or ABORT marker for ``producer_id``'s transaction.  Under transactions v2
        (KIP-890) the coordinator bumps the producer epoch first: the marker carries the data's epoch + 1, and
        so does the producer's next transaction (``TransactionMetadata.prepareAbortOrCommit``)."""
        which = broker if broker is not None else self.leader
        assert which is not None, "no leader elected"
        b = self.brokers[which]
        self._appending(b)
        state = self.producers.setdefault(producer_id, [0, 0])
        if transaction_version >= 2:
            state[0] += 1
            state[1] = 0
        off = b.leo
        self._clock += 1
        kind = "COMMIT" if commit else "ABORT"
        data = build_batch([RecordData(off, T0 + self._clock, encode_control_key(kind),
                                       encode_end_txn_marker(coordinator_epoch))],
                           partition_leader_epoch=self.epoch, producer_id=producer_id, producer_epoch=state[0],
                           transactional=True, control=True)
        b.append((off, off, self.epoch, data))
        self._txn[data] = TxnBatch(producer_id, kind)
        return self

    def transaction_state(self, transactional_id: str, *, producer_id: int, producer_epoch: int, state: str,
                          partitions: Sequence[tuple[str, int]] = (), timeout_ms: int = 60000,
                          start_timestamp: int | None = None, transaction_version: int = 1,
                          brokers: list[int] | None = None) -> Self:
        """The transaction coordinator's record of ``transactional_id`` in ``__transaction_state-N``
        (``TransactionLogValue`` v0, or v1 with ``clientTransactionVersion`` 2 under transactions v2)."""
        from ..formats.transaction_log import TRANSACTION_STATES, encode

        status = {v: k for k, v in TRANSACTION_STATES.items()}[state]
        part = self._internal("__transaction_state", transactional_id, brokers)
        by_topic: dict[str, list[int]] = {}
        for t, n in partitions:
            by_topic.setdefault(t, []).append(n)
        value = {"producerId": producer_id, "producerEpoch": producer_epoch, "transactionTimeoutMs": timeout_ms,
                 "transactionStatus": status,
                 "transactionPartitions": [{"topic": t, "partitionIds": ns} for t, ns in by_topic.items()],
                 "transactionLastUpdateTimestampMs": T0 + self._clock + 1,
                 "transactionStartTimestampMs": start_timestamp if start_timestamp is not None else -1}
        if transaction_version >= 2:
            value["clientTransactionVersion"] = 2
        k, v = encode("TransactionLogValue", 1 if transaction_version >= 2 else 0,
                      {"transactionalId": transactional_id}, value)
        self._append_internal(part, k, v)
        return self

    def _txn_index(self, b: BrokerDisk) -> list[dict[str, int]]:
        """The .txnindex entries Kafka writes for this broker's log: one per ABORT of a non-empty transaction,
        ``(producer id, first offset, marker offset, last stable offset)``, the last stable offset being the
        first offset of the earliest other open transaction, else the marker's offset + 1
        (``ProducerAppendInfo.appendEndTxnMarker``, ``ProducerStateManager.lastStableOffset``,
        ``LogSegment.updateTxnIndex``)."""
        ongoing: dict[int, int] = {}
        entries = []
        for base, _last, _epoch, data in b.batches:
            t = self._txn.get(data)
            if t is None:
                continue
            if t.marker is None:
                ongoing.setdefault(t.producer_id, base)
                continue
            first = ongoing.pop(t.producer_id, None)
            if t.marker == "ABORT" and first is not None:
                lso = min(ongoing.values(), default=base + 1)
                entries.append({"producer_id": t.producer_id, "first_offset": first, "last_offset": base,
                                "last_stable_offset": lso})
        return entries

