"""The scenario builder: a replication history (elections, appends, replication, crashes, flushes, damage)
and the events after the snapshot, as steps; see :mod:`kforensics.scenario` for an example.

The snapshot is the brokers' disks at the moment replay starts; ``then`` events are what happens next (see
:mod:`kforensics.replay.engine`).
"""

from __future__ import annotations

from typing import Any

from ..formats.record_batch import RecordData, build_batch
from .coordinators import CoordinatorSteps
from .disk import DAMAGE_KINDS, T0, BrokerDisk, InternalPartition, TxnBatch
from .expectations import Expectations
from .writing import ScenarioWriting


class ScenarioBuilder(CoordinatorSteps, Expectations, ScenarioWriting):
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
        self.brokers = {b: BrokerDisk(b) for b in brokers}
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
        self.record: list[tuple[Any, ...]] = []
        self.internal: dict[tuple[str, int], InternalPartition] = {}
        self.producers: dict[int, list[int]] = {}  # producer id -> [epoch, next sequence]
        self._txn: dict[bytes, TxnBatch] = {}  # batch bytes -> what it is in a transaction
        self.expected_impact: dict[str, list[dict[str, Any]]] = {}
        self.expected_transactions: dict[str, Any] = {}

    @property
    def elections(self) -> list[tuple[int, int]]:
        return [(r[1], r[2]) for r in self.record if r[0] == "elect"]

    # ------------------------------------------------------------- history before the snapshot
    def elect(self, leader: int, *, epoch: int | None = None, record_epoch: bool = False,
              unclean: bool = False) -> ScenarioBuilder:
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

    def isr(self, members: list[int]) -> ScenarioBuilder:
        """The controller shrinks or expands the ISR (its record shows the change)."""
        self._isr = sorted(members)
        self.record.append(("isr", self._isr))
        return self

    def _appending(self, b: BrokerDisk) -> None:
        if b.frozen_epochs is not None or b.torn is not None:
            b.restarted()
        b.clean_shutdown = False

    def produce(self, count: int = 1, *, tag: str = "", broker: int | None = None, producer_id: int = -1
                ) -> ScenarioBuilder:
        """The leader (or ``broker``) appends ``count`` one-record batches in the current epoch."""
        which = broker if broker is not None else self.leader
        assert which is not None, "no leader elected"
        b = self.brokers[which]
        self._appending(b)
        for _ in range(count):
            off = b.leo
            self._clock += 1
            value = f"{tag or self.name} offset {off} epoch {self.epoch} broker {b.broker_id}".encode()
            data = build_batch([RecordData(off, T0 + self._clock, f"k{off}".encode(), value)],
                               partition_leader_epoch=self.epoch, producer_id=producer_id,
                               producer_epoch=0 if producer_id >= 0 else -1,
                               base_sequence=off if producer_id >= 0 else -1)
            b.append((off, off, self.epoch, data))
        return self

    def replicate(self, follower: int, *, up_to: int | None = None, source: int | None = None) -> ScenarioBuilder:
        """``follower`` copies the leader's batches it lacks (up to offset ``up_to``, exclusive)."""
        which = source if source is not None else self.leader
        assert which is not None, "no leader elected"
        src = self.brokers[which]
        dst = self.brokers[follower]
        self._appending(dst)
        for batch in src.batches:
            if batch[0] >= dst.leo and (up_to is None or batch[1] < up_to):
                dst.append(batch)
        return self

    def follow(self, follower: int, *, up_to: int | None = None) -> ScenarioBuilder:
        """``follower`` truncates to the longest prefix it shares with the leader, then copies the leader's
        batches (up to offset ``up_to``, exclusive): what epoch-based truncation reaches in a history Kafka
        wrote, with the checkpoint truncated the same way."""
        assert self.leader is not None, "no leader elected"
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

    def high_watermark(self, broker: int, hw: int) -> ScenarioBuilder:
        self.brokers[broker].hw = hw
        return self

    def recovery_point(self, broker: int, offset: int) -> ScenarioBuilder:
        """The broker's recovery-point checkpoint (what it had flushed when it last wrote the checkpoint)."""
        self.brokers[broker].recovery_point = offset
        return self

    def epoch_checkpoint(self, broker: int, entries: list[tuple[int, int]]) -> ScenarioBuilder:
        """The broker's leader-epoch-checkpoint, line for line (even lines Kafka would not write)."""
        self.brokers[broker].checkpoint_lines = [(int(e), int(s)) for e, s in entries]
        return self

    def epoch_checkpoint_file(self, broker: int, data: bytes) -> ScenarioBuilder:
        """The broker's leader-epoch-checkpoint file, byte for byte (say, one Kafka cannot read)."""
        self.brokers[broker].checkpoint_bytes = data
        return self

    def shut_down_cleanly(self, broker: int) -> ScenarioBuilder:
        """The broker stopped cleanly: it flushed everything and left the ``.kafka_cleanshutdown`` marker."""
        b = self.brokers[broker]
        b.clean_shutdown = True
        if b.recovery_point is None or b.recovery_point < b.leo:
            b.recovery_point = b.leo
        return self

    def crash(self, broker: int, *, keep_to: int, torn_bytes: int | None = None, checkpoints_lost: bool = False
              ) -> ScenarioBuilder:
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

    def damage(self, broker: int, offset: int, kind: str, *, keep_bytes: int = 40) -> ScenarioBuilder:
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

    def compact(self, broker: int, *, drop_offsets: set[int]) -> ScenarioBuilder:
        """This broker's cleaner removed the batches at these offsets."""
        b = self.brokers[broker]
        b.batches = [x for x in b.batches if x[0] not in drop_offsets]
        return self

    # ------------------------------------------------------------- after the snapshot
    def then(self, op: str, **kw: Any) -> ScenarioBuilder:
        """An event after the snapshot.  An ``elect`` is also in the controller's record; ``unclean=True``
        makes the record show it outside the ISR (the event itself says nothing: replay finds it there)."""
        if op == "elect":
            unclean = bool(kw.pop("unclean", False))
            last = next((r for r in reversed(self.record) if r[0] == "elect"), None)
            if last is None or (last[1], last[2]) != (kw["leader"], kw.get("epoch")):  # else: it stays leader
                self._controller_elects(kw["leader"], kw.get("epoch"), unclean)
        self.events.append({"op": op, **kw})
        return self
