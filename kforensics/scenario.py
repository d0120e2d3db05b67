"""Scenario builder: declare brokers, elections, appends, replication, crashes and flushes; write log dirs.

Users reproduce a hypothesis as on-disk evidence and replay it:

    sb = ScenarioBuilder("my-incident", brokers=[1, 2, 3])
    sb.elect(1, epoch=0)
    sb.produce(3)                 # leader 1 appends 3 one-record batches in epoch 0
    sb.replicate(2); sb.replicate(3, up_to=2)
    sb.high_watermark(1, 3); sb.high_watermark(2, 3); sb.high_watermark(3, 2)
    sb.crash(3, keep_to=1)        # broker 3 loses what it had not flushed
    sb.then("elect", leader=2)    # replay events after the snapshot
    sb.then("follow", broker=1); sb.then("follow", broker=3)
    sb.expect("latest", {1: ["OK"], 2: ["OK"], 3: ["OK"]})
    sb.write("out/my-incident")   # broker-<id>/ log dirs + scenario.json

The snapshot is the brokers' disks at the moment replay starts; ``then``
events are what happens next (see :mod:`kforensics.replay.engine`).

Consumer groups and transactions: ``commit`` writes a group's offset commit
into its ``__consumer_offsets-N`` partition, ``produce_txn``/``end_txn`` write
transactional batches and their COMMIT/ABORT markers (transactions v1 or v2),
``transaction_state`` the coordinator's record into ``__transaction_state-N``;
``advance`` moves the producers' clock.  The internal partitions are written
on every broker (or those named), replicated and flushed (HW = log end), in
the broker's second log dir ``coordinators/broker-<id>/`` (JBOD), so that
``Scenario.brokers`` (the first log dirs) keeps one partition to replay and
``Scenario.log_dirs`` holds both; a crash or damage leaves them alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .epoch.cache import LeaderEpochCache
from .formats.control import encode_control_key, encode_end_txn_marker
from .formats.record_batch import RecordData, build_batch
from .log.writer import LogDirWriter, PartitionWriter, set_mtimes
from .transactions.internal_log import coordinator_partition

T0 = 1_700_000_000_000
#: Kafka's default index.interval.bytes: appends add an offset-index entry only after this many bytes
INDEX_INTERVAL_BYTES = 4096
DAMAGE_KINDS = ("crc", "zero", "torn")
@dataclass
class _Internal:
    """An internal topic partition (``__consumer_offsets-N``, ``__transaction_state-N``), the same on its brokers."""

    topic: str
    partition: int
    brokers: list[int]
    batches: list[bytes] = field(default_factory=list)

    @property
    def leo(self) -> int:
        return len(self.batches)  # one record per batch


@dataclass
class _Txn:
    """What the builder knows of a batch it wrote for a transactional producer (to write the .txnindex)."""

    producer_id: int
    marker: str | None = None  # None: data; COMMIT / ABORT


@dataclass
class _Broker:
    broker_id: int
    batches: list[tuple[int, int, int, bytes]] = field(default_factory=list)  # (base, last, epoch, bytes)
    hw: int | None = None
    # the broker's leader-epoch cache as Kafka (2.0.1+) keeps it: every appended batch and every election it
    # records go through assign, truncation trims it; its checkpoint is written on every change
    cache: LeaderEpochCache = field(default_factory=lambda: LeaderEpochCache(mode="latest"))
    epoch_checkpoint: bool = True
    checkpoint_lines: list[tuple[int, int]] | None = None  # a leader-epoch-checkpoint given verbatim
    frozen_epochs: list[tuple[int, int]] | None = None  # the checkpoint as a crash left it
    recovery_point: int | None = None  # None: everything flushed (the log end)
    clean_shutdown: bool = False
    damage: dict[int, str] = field(default_factory=dict)  # base offset -> "crc" / "zero"
    torn: bytes | None = None  # the surviving start of a batch torn by the crash, after the last batch
    checkpoint_bytes: bytes | None = None  # a leader-epoch-checkpoint file's bytes, verbatim (e.g. unreadable)

    @property
    def leo(self) -> int:
        return self.batches[-1][1] + 1 if self.batches else 0

    def append(self, batch: tuple[int, int, int, bytes]) -> None:
        """Append a batch; the append path assigns its epoch (``UnifiedLog.append``, 2.0.1+ rules)."""
        self.batches.append(batch)
        base, _last, epoch, _data = batch
        if epoch >= 0 and base >= 0:
            self.cache.assign(epoch, base)

    def truncate(self, keep: int) -> None:
        """Keep the first ``keep`` batches; the cache loses the entries at or past the new log end."""
        self.batches = self.batches[:keep]
        self.cache.truncate_from_end(self.leo)

    def epochs(self) -> list[tuple[int, int]]:
        """The leader-epoch checkpoint as its broker last wrote it."""
        if self.checkpoint_lines is not None:
            return list(self.checkpoint_lines)
        if self.frozen_epochs is not None:
            return list(self.frozen_epochs)
        return self.cache.entries

    def restarted(self) -> None:
        """The broker runs again after a crash: loading dropped the torn batch and the entries past its log."""
        if self.frozen_epochs is not None:
            self.cache = LeaderEpochCache(self.frozen_epochs, mode="latest")
            self.cache.truncate_from_end(self.leo)
            self.frozen_epochs = None
        self.torn = None


class ScenarioBuilder:
    """A replication history written as brokers' disks, with the events that follow and the verdicts expected.

    ``cite`` records where the expected verdicts come from (Kafka functions at
    release tags, docs/replay-at-restart.md sections); they land in scenario.json.
    """

    def __init__(self, name: str, *, brokers: list[int], topic: str = "orders", partition: int = 0,
                 description: str = "", controller: bool = True):
        self.name = name
        self.topic = topic
        self.partition = partition
        self.description = description
        self.brokers = {b: _Broker(b) for b in brokers}
        self.leader: int | None = None
        self.epoch = 0
        self.events: list[dict[str, Any]] = []
        self.expected: dict[str, dict[int, list[str]]] = {}
        self.citations: list[str] = []
        self.derivation: dict[str, Any] = {}
        self._clock = 0
        self._isr = sorted(brokers)
        self.controller = controller  # write the controller's record (a KRaft metadata log) when it can be
        # the controller's record, in order: ("elect", leader, epoch, unclean) or ("isr", members)
        self.record: list[tuple] = []
        self.internal: dict[tuple[str, int], _Internal] = {}
        self.producers: dict[int, list[int]] = {}  # producer id -> [epoch, next sequence]
        self._txn: dict[bytes, _Txn] = {}  # batch bytes -> what it is in a transaction
        self.expected_impact: dict[str, list[dict[str, Any]]] = {}
        self.expected_transactions: dict[str, Any] = {}

    @property
    def elections(self) -> list[tuple[int, int]]:
        return [(r[1], r[2]) for r in self.record if r[0] == "elect"]

    # ------------------------------------------------------------- history before the snapshot
    def elect(self, leader: int, *, epoch: int | None = None, record_epoch: bool = False,
              unclean: bool = False) -> "ScenarioBuilder":
        """``leader`` leads from now on in ``epoch`` (default: next).  ``record_epoch`` writes the
        KAFKA-7415 entry (epoch at its LEO) into its leader-epoch-checkpoint, as 2.0.1+ brokers do.
        ``unclean``: the controller elects it from outside the ISR (its record shows it)."""
        self.leader = leader
        self.epoch = self.epoch + 1 if epoch is None else epoch
        self._controller_elects(leader, self.epoch, unclean)
        if record_epoch:
            b = self.brokers[leader]
            b.cache.assign(self.epoch, b.leo)  # KAFKA-7415: the new leader records its epoch at its log end
        return self

    def _controller_elects(self, leader: int, epoch: int | None, unclean: bool) -> None:
        if unclean:
            self._isr = [leader]
        elif leader not in self._isr:
            raise ValueError(f"broker {leader} is not in the ISR {self._isr}: say unclean=True")
        self.record.append(("elect", leader, epoch, unclean))

    def isr(self, members: list[int]) -> "ScenarioBuilder":
        """The controller shrinks or expands the ISR (its record shows the change)."""
        self._isr = sorted(members)
        self.record.append(("isr", self._isr))
        return self

    def _appending(self, b: _Broker) -> None:
        if b.frozen_epochs is not None or b.torn is not None:
            b.restarted()
        b.clean_shutdown = False

    def produce(self, count: int = 1, *, tag: str = "", broker: int | None = None, producer_id: int = -1
                ) -> "ScenarioBuilder":
        """The leader (or ``broker``) appends ``count`` one-record batches in the current epoch."""
        b = self.brokers[broker if broker is not None else self.leader]
        self._appending(b)
        for _ in range(count):
            off = b.leo
            self._clock += 1
            value = f"{tag or self.name} offset {off} epoch {self.epoch} broker {b.broker_id}".encode()
            data = build_batch([RecordData(off, T0 + self._clock, f"k{off}".encode(), value)],
                               partition_leader_epoch=self.epoch, producer_id=producer_id,
                               producer_epoch=0 if producer_id >= 0 else -1, base_sequence=off if producer_id >= 0 else -1)
            b.append((off, off, self.epoch, data))
        return self

    def replicate(self, follower: int, *, up_to: int | None = None, source: int | None = None) -> "ScenarioBuilder":
        """``follower`` copies the leader's batches it lacks (up to offset ``up_to``, exclusive)."""
        src = self.brokers[source if source is not None else self.leader]
        dst = self.brokers[follower]
        self._appending(dst)
        for batch in src.batches:
            if batch[0] >= dst.leo and (up_to is None or batch[1] < up_to):
                dst.append(batch)
        return self

    def follow(self, follower: int, *, up_to: int | None = None) -> "ScenarioBuilder":
        """``follower`` truncates to the longest prefix it shares with the leader, then copies the leader's
        batches (up to offset ``up_to``, exclusive): what epoch-based truncation reaches in a history Kafka
        wrote, with the checkpoint truncated the same way."""
        src, dst = self.brokers[self.leader], self.brokers[follower]
        self._appending(dst)
        common = 0
        while common < min(len(src.batches), len(dst.batches)) and src.batches[common] == dst.batches[common]:
            common += 1
        if common < len(dst.batches):
            dst.truncate(common)
        else:
            dst.cache.truncate_from_end(dst.leo)  # a truncation to the log end still trims it (KAFKA-10706)
        return self.replicate(follower, up_to=up_to)

    def high_watermark(self, broker: int, hw: int) -> "ScenarioBuilder":
        self.brokers[broker].hw = hw
        return self

    def recovery_point(self, broker: int, offset: int) -> "ScenarioBuilder":
        """The broker's recovery-point checkpoint (what it had flushed when it last wrote the checkpoint)."""
        self.brokers[broker].recovery_point = offset
        return self

    def epoch_checkpoint(self, broker: int, entries: list[tuple[int, int]]) -> "ScenarioBuilder":
        """The broker's leader-epoch-checkpoint, line for line (even lines Kafka would not write)."""
        self.brokers[broker].checkpoint_lines = [(int(e), int(s)) for e, s in entries]
        return self

    def epoch_checkpoint_file(self, broker: int, data: bytes) -> "ScenarioBuilder":
        """The broker's leader-epoch-checkpoint file, byte for byte (say, one Kafka cannot read)."""
        self.brokers[broker].checkpoint_bytes = data
        return self

    def shut_down_cleanly(self, broker: int) -> "ScenarioBuilder":
        """The broker stopped cleanly: it flushed everything and left the ``.kafka_cleanshutdown`` marker."""
        b = self.brokers[broker]
        b.clean_shutdown = True
        if b.recovery_point is None or b.recovery_point < b.leo:
            b.recovery_point = b.leo
        return self

    def crash(self, broker: int, *, keep_to: int, torn_bytes: int | None = None, checkpoints_lost: bool = False
              ) -> "ScenarioBuilder":
        """Power loss: ``broker`` keeps only batches below ``keep_to`` (the rest was never flushed).

        The checkpoints were written and fsynced before the crash, so they
        survive as they were: its high watermark, its leader-epoch entries
        (also those of batches it lost) and a recovery point no later than
        what it kept.  ``torn_bytes`` keeps the first bytes of the first lost
        batch (a torn write).  ``checkpoints_lost`` makes the checkpoints
        agree with what survived instead (an older, simpler model).
        """
        b = self.brokers[broker]
        lost = [x for x in b.batches if x[1] >= keep_to]
        if checkpoints_lost:
            b.truncate(len([x for x in b.batches if x[1] < keep_to]))
            b.hw = None if b.hw is None else min(b.hw, keep_to)
            return self
        b.frozen_epochs = b.epochs()
        b.batches = [x for x in b.batches if x[1] < keep_to]
        b.torn = lost[0][3][:torn_bytes] if torn_bytes and lost else None
        b.recovery_point = min(keep_to, b.recovery_point if b.recovery_point is not None else keep_to)
        b.clean_shutdown = False
        return self

    def damage(self, broker: int, offset: int, kind: str, *, keep_bytes: int = 40) -> "ScenarioBuilder":
        """Damage the batch at ``offset`` on ``broker``'s disk: ``crc`` flips a byte of its record value (the
        stored CRC no longer matches), ``zero`` overwrites it with zeros, ``torn`` keeps only its first
        ``keep_bytes`` bytes (it must be the last batch)."""
        if kind not in DAMAGE_KINDS:
            raise ValueError(f"damage kind must be one of {DAMAGE_KINDS}")
        b = self.brokers[broker]
        if kind == "torn":
            if not b.batches or b.batches[-1][0] != offset:
                raise ValueError("only the last batch can be torn")
            b.torn = b.batches.pop()[3][:keep_bytes]
        else:
            if not any(x[0] == offset for x in b.batches):
                raise ValueError(f"broker {broker} has no batch at offset {offset}")
            b.damage[offset] = kind
        return self

    def compact(self, broker: int, *, drop_offsets: set[int]) -> "ScenarioBuilder":
        """This broker's cleaner removed the batches at these offsets."""
        b = self.brokers[broker]
        b.batches = [x for x in b.batches if x[0] not in drop_offsets]
        return self

    # ------------------------------------------------------------- consumer groups and transactions
    def advance(self, ms: int) -> "ScenarioBuilder":
        """The clock moves on ``ms`` milliseconds (record timestamps and commit times)."""
        self._clock += ms
        return self

    def _internal(self, topic: str, key: str, brokers: list[int] | None) -> _Internal:
        n = coordinator_partition(key)
        part = self.internal.get((topic, n))
        if part is None:
            part = self.internal[(topic, n)] = _Internal(topic, n, sorted(brokers or self.brokers))
        return part

    def _append_internal(self, part: _Internal, key: bytes, value: bytes | None) -> None:
        self._clock += 1
        part.batches.append(build_batch([RecordData(part.leo, T0 + self._clock, key, value)],
                                        partition_leader_epoch=0))

    def commit(self, group: str, offset: int, *, leader_epoch: int | None = None, metadata: str = "",
               topic: str | None = None, partition: int | None = None, brokers: list[int] | None = None
               ) -> "ScenarioBuilder":
        """Group ``group`` commits ``offset`` for the scenario's partition (or ``topic``/``partition``): an
        ``OffsetCommitValue`` in ``__consumer_offsets-N``, N = abs(hash(group)) % 50.  With ``leader_epoch``
        the value is v3 (brokers 2.1+, KIP-320), without it v1 (older brokers: no epoch, no validation)."""
        from .formats.group_coordinator import encode

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
                    ) -> "ScenarioBuilder":
        """Transactional producer ``producer_id`` appends ``count`` one-record batches (in its current epoch)."""
        b = self.brokers[broker if broker is not None else self.leader]
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
            self._txn[data] = _Txn(producer_id)
        return self

    def end_txn(self, producer_id: int, *, commit: bool = True, transaction_version: int = 1,
                coordinator_epoch: int = 0, broker: int | None = None) -> "ScenarioBuilder":
        """The coordinator's COMMIT or ABORT marker for ``producer_id``'s transaction.  Under transactions v2
        (KIP-890) the coordinator bumps the producer epoch first: the marker carries the data's epoch + 1, and
        so does the producer's next transaction (``TransactionMetadata.prepareAbortOrCommit``)."""
        b = self.brokers[broker if broker is not None else self.leader]
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
        self._txn[data] = _Txn(producer_id, kind)
        return self

    def transaction_state(self, transactional_id: str, *, producer_id: int, producer_epoch: int, state: str,
                          partitions: list[tuple[str, int]] = (), timeout_ms: int = 60000,
                          start_timestamp: int | None = None, transaction_version: int = 1,
                          brokers: list[int] | None = None) -> "ScenarioBuilder":
        """The transaction coordinator's record of ``transactional_id`` in ``__transaction_state-N``
        (``TransactionLogValue`` v0, or v1 with ``clientTransactionVersion`` 2 under transactions v2)."""
        from .formats.transaction_log import TRANSACTION_STATES, encode

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

    def _txn_index(self, b: _Broker) -> list[dict[str, int]]:
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

    def expect_impact(self, kafka_version: str, rows: list[dict[str, Any]]) -> "ScenarioBuilder":
        """The consumer impact expected after the replay with ``kafka_version``'s rules (derived by hand)."""
        self.expected_impact[kafka_version] = rows
        return self

    def expect_transactions(self, partition: str, expected: dict[str, Any]) -> "ScenarioBuilder":
        """The transactions expected on a partition: ``"<topic>-<n>@broker-<id>"`` (one replica's log as written)
        or ``"<topic>-<n>@after-replay@<version>"`` (the new leader's after the replay, with the reopened ones)."""
        self.expected_transactions[partition] = expected
        return self

    # ------------------------------------------------------------- after the snapshot
    def then(self, op: str, **kw) -> "ScenarioBuilder":
        """An event after the snapshot.  An ``elect`` is also in the controller's record; ``unclean=True``
        makes the record show it outside the ISR (the event itself says nothing: replay finds it there)."""
        if op == "elect":
            unclean = bool(kw.pop("unclean", False))
            last = next((r for r in reversed(self.record) if r[0] == "elect"), None)
            if last is None or (last[1], last[2]) != (kw["leader"], kw.get("epoch")):  # else: it stays leader
                self._controller_elects(kw["leader"], kw.get("epoch"), unclean)
        self.events.append({"op": op, **kw})
        return self

    def expect(self, kafka_version: str, verdicts: dict[int, list[str]]) -> "ScenarioBuilder":
        self.expected[kafka_version] = verdicts
        return self

    def cite(self, *sources: str) -> "ScenarioBuilder":
        """Where the expected verdicts come from (Kafka functions at release tags, docs sections)."""
        self.citations += sources
        return self

    def derive(self, **steps: Any) -> "ScenarioBuilder":
        """The hand derivation of the expected verdicts, per version mode or step."""
        self.derivation.update(steps)
        return self

    # ------------------------------------------------------------- output
    def _write_metadata_log(self, root: Path) -> None:
        """The controller's record of the partition, as a KRaft metadata log.

        Written to ``controller/__cluster_metadata-0`` beside the brokers when
        the elections are ones a controller could have made (epochs only go up).
        """
        from .formats.control import encode_control_key, encode_leader_change
        from .formats.metadata_records import encode_metadata_record
        from .formats.protocol import uuid_to_str

        epochs = [e for _, e in self.elections]
        if not self.controller or not epochs or any(e is None for e in epochs) or \
                any(b <= a for a, b in zip(epochs, epochs[1:])):
            return
        tid = uuid_to_str(self.name.encode().ljust(16, b"\0")[:16])
        ids = sorted(self.brokers)
        records = [
            encode_metadata_record("FeatureLevelRecord", 0, {"Name": "metadata.version", "FeatureLevel": 7}),
            encode_metadata_record("TopicRecord", 0, {"Name": self.topic, "TopicId": tid}),
        ]
        first = next(i for i, r in enumerate(self.record) if r[0] == "elect")
        isr = ids
        for r in self.record[:first]:
            isr = r[1]
        _, leader, current, unclean = self.record[first]
        isr = [leader] if unclean else isr
        records.append(encode_metadata_record("PartitionRecord", 0, {
            "PartitionId": self.partition, "TopicId": tid, "Replicas": ids, "Isr": isr, "RemovingReplicas": [],
            "AddingReplicas": [], "Leader": leader, "LeaderEpoch": current, "PartitionEpoch": 0}))
        for r in self.record[first + 1:]:
            change: dict[str, Any] = {"PartitionId": self.partition, "TopicId": tid}
            if r[0] == "isr":
                records.append(encode_metadata_record("PartitionChangeRecord", 0, {**change, "Isr": r[1]}))
                continue
            _, leader, epoch, unclean = r
            while current < epoch:  # the controller bumps one epoch per leader (re)election
                current += 1
                body = {**change, "Leader": leader}
                if unclean:
                    body.update(Isr=[leader], LeaderRecoveryState=1)
                    unclean = False
                records.append(encode_metadata_record("PartitionChangeRecord", 0, body))
        d = root / "controller" / "__cluster_metadata-0"
        d.mkdir(parents=True, exist_ok=True)
        batches = [build_batch([RecordData(0, T0, encode_control_key("LEADER_CHANGE"),
                                           encode_leader_change(ids[0], ids, ids))],
                               partition_leader_epoch=1, control=True)]
        for i, value in enumerate(records, start=1):
            batches.append(build_batch([RecordData(i, T0 + i, None, value)], partition_leader_epoch=1))
        (d / "00000000000000000000.log").write_bytes(b"".join(batches))

    def write(self, root: str | Path, *, cleaner_offsets: dict[int, int] | None = None) -> Path:
        root = Path(root)
        for b in self.brokers.values():
            lw = LogDirWriter(root / f"broker-{b.broker_id}", node_id=b.broker_id, cluster_id=f"scenario-{self.name}",
                              clean_shutdown=b.clean_shutdown)
            pw: PartitionWriter = lw.partition(self.topic, self.partition, index_interval_bytes=INDEX_INTERVAL_BYTES)
            for _base, _last, _epoch, data in b.batches:
                pw.append(data)
            pw.epochs = b.epochs()
            key = (self.topic, self.partition)
            if b.hw is not None:
                lw.high_watermarks[key] = b.hw
            lw.recovery_points[key] = b.recovery_point if b.recovery_point is not None else b.leo
            if cleaner_offsets and b.broker_id in cleaner_offsets:
                lw.cleaner_offsets[key] = cleaner_offsets[b.broker_id]
            lw.write()
            self._write_internal(b, root)
            entries = self._txn_index(b)
            if entries:
                from .formats.txn_index import encode as encode_txn_index

                (root / f"broker-{b.broker_id}" / pw.dir_name / "00000000000000000000.txnindex").write_bytes(
                    encode_txn_index(entries))
            if b.checkpoint_bytes is not None:
                (root / f"broker-{b.broker_id}" / pw.dir_name / "leader-epoch-checkpoint").write_bytes(
                    b.checkpoint_bytes)
            self._damage_disk(b, root / f"broker-{b.broker_id}" / pw.dir_name / "00000000000000000000.log")
        doc = {
            "name": self.name,
            "description": self.description,
            "topic": self.topic,
            "partition": self.partition,
            "events": self.events,
            "expected": {v: {str(k): codes for k, codes in exp.items()} for v, exp in self.expected.items()},
        }
        if self.citations:
            doc["sources"] = self.citations
        if self.derivation:
            doc["derivation"] = self.derivation
        if self.expected_impact:
            doc["expected_impact"] = self.expected_impact
        if self.expected_transactions:
            doc["expected_transactions"] = self.expected_transactions
        (root / "scenario.json").write_text(json.dumps(doc, indent=1) + "\n")
        self._write_metadata_log(root)
        set_mtimes(root)
        return root

    def _write_internal(self, b: _Broker, root: Path) -> None:
        """The broker's internal partitions, in its second log dir ``coordinators/broker-<id>/`` (JBOD: a
        ``log.dirs`` entry of the same broker, with its own meta.properties and checkpoints)."""
        parts = [p for _, p in sorted(self.internal.items()) if b.broker_id in p.brokers]
        if not parts:
            return
        lw = LogDirWriter(root / "coordinators" / f"broker-{b.broker_id}", node_id=b.broker_id,
                          cluster_id=f"scenario-{self.name}", clean_shutdown=b.clean_shutdown)
        for part in parts:
            pw = lw.partition(part.topic, part.partition, index_interval_bytes=INDEX_INTERVAL_BYTES)
            for data in part.batches:
                pw.append(data)
            lw.high_watermarks[(part.topic, part.partition)] = part.leo
            lw.recovery_points[(part.topic, part.partition)] = part.leo
        lw.write()

    @staticmethod
    def _damage_disk(b: _Broker, log: Path) -> None:
        """Apply the declared damage to the written segment (indexes were written from the intact bytes)."""
        if not b.damage and b.torn is None:
            return
        data = bytearray(log.read_bytes()) if log.exists() else bytearray()
        pos = 0
        for base, _last, _epoch, batch in b.batches:
            kind = b.damage.get(base)
            if kind == "zero":
                data[pos : pos + len(batch)] = bytes(len(batch))
            elif kind == "crc":
                at = pos + batch.rindex(b"offset")  # inside the record value: the CRC covers it
                data[at] ^= 0x20
            pos += len(batch)
        if b.torn is not None:
            data += b.torn
        log.write_bytes(bytes(data))


@dataclass
class Scenario:
    """A scenario dir as written by :class:`ScenarioBuilder`: the brokers' dirs, the events, the expectations."""

    name: str
    description: str
    topic: str
    partition: int
    events: list[dict[str, Any]]
    expected: dict[str, dict[int, list[str]]]  # Kafka version -> broker -> verdict codes
    brokers: dict[int, list[Path]]
    metadata: list[Path]
    doc: dict[str, Any] = field(default_factory=dict)  # everything scenario.json says (derivations, citations)
    # every log dir of each broker: ``brokers``' plus the second one holding internal partitions, when written
    log_dirs: dict[int, list[Path]] = field(default_factory=dict)


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario dir (``broker-<id>/`` log dirs, ``scenario.json``, ``controller/`` metadata log)."""
    root = Path(path)
    doc = json.loads((root / "scenario.json").read_text(encoding="utf-8"))
    brokers = {int(d.name.split("-", 1)[1]): [d] for d in sorted(root.glob("broker-*")) if d.is_dir()}
    meta = root / "controller" / "__cluster_metadata-0"
    expected = {v: {int(k): codes for k, codes in exp.items()} for v, exp in doc.get("expected", {}).items()}
    log_dirs = {b: list(dirs) for b, dirs in brokers.items()}
    for d in sorted((root / "coordinators").glob("broker-*")):
        if d.is_dir():
            log_dirs.setdefault(int(d.name.split("-", 1)[1]), []).append(d)
    return Scenario(doc.get("name", root.name), doc.get("description", ""), doc.get("topic", "orders"),
                    doc.get("partition", 0), doc.get("events", []), expected, brokers,
                    [meta] if meta.exists() else [], doc, log_dirs)
