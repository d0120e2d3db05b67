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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .formats.record_batch import RecordData, build_batch
from .log.writer import LogDirWriter, PartitionWriter, set_mtimes

T0 = 1_700_000_000_000


@dataclass
class _Broker:
    broker_id: int
    batches: list[tuple[int, int, int, bytes]] = field(default_factory=list)  # (base, last, epoch, bytes)
    hw: int | None = None
    extra_epochs: list[tuple[int, int]] = field(default_factory=list)  # entries recorded without a batch
    epoch_checkpoint: bool = True

    @property
    def leo(self) -> int:
        return self.batches[-1][1] + 1 if self.batches else 0


class ScenarioBuilder:
    def __init__(self, name: str, *, brokers: list[int], topic: str = "orders", partition: int = 0,
                 description: str = ""):
        self.name = name
        self.topic = topic
        self.partition = partition
        self.description = description
        self.brokers = {b: _Broker(b) for b in brokers}
        self.leader: int | None = None
        self.epoch = 0
        self.events: list[dict[str, Any]] = []
        self.expected: dict[str, dict[int, list[str]]] = {}
        self._clock = 0
        self.elections: list[tuple[int, int]] = []  # (leader, epoch) before the snapshot, for the metadata log

    # ------------------------------------------------------------- history before the snapshot
    def elect(self, leader: int, *, epoch: int | None = None, record_epoch: bool = False) -> "ScenarioBuilder":
        """``leader`` leads from now on in ``epoch`` (default: next).  ``record_epoch`` writes the
        KAFKA-7415 entry (epoch at its LEO) into its leader-epoch-checkpoint, as 2.0.1+ brokers do."""
        self.leader = leader
        self.epoch = self.epoch + 1 if epoch is None else epoch
        self.elections.append((leader, self.epoch))
        if record_epoch:
            b = self.brokers[leader]
            b.extra_epochs.append((self.epoch, b.leo))
        return self

    def produce(self, count: int = 1, *, tag: str = "", broker: int | None = None, producer_id: int = -1
                ) -> "ScenarioBuilder":
        """The leader (or ``broker``) appends ``count`` one-record batches in the current epoch."""
        b = self.brokers[broker if broker is not None else self.leader]
        for _ in range(count):
            off = b.leo
            self._clock += 1
            value = f"{tag or self.name} offset {off} epoch {self.epoch} broker {b.broker_id}".encode()
            data = build_batch([RecordData(off, T0 + self._clock, f"k{off}".encode(), value)],
                               partition_leader_epoch=self.epoch, producer_id=producer_id,
                               producer_epoch=0 if producer_id >= 0 else -1, base_sequence=off if producer_id >= 0 else -1)
            b.batches.append((off, off, self.epoch, data))
        return self

    def replicate(self, follower: int, *, up_to: int | None = None, source: int | None = None) -> "ScenarioBuilder":
        """``follower`` copies the leader's batches it lacks (up to offset ``up_to``, exclusive)."""
        src = self.brokers[source if source is not None else self.leader]
        dst = self.brokers[follower]
        for batch in src.batches:
            if batch[0] >= dst.leo and (up_to is None or batch[1] < up_to):
                dst.batches.append(batch)
        return self

    def high_watermark(self, broker: int, hw: int) -> "ScenarioBuilder":
        self.brokers[broker].hw = hw
        return self

    def crash(self, broker: int, *, keep_to: int) -> "ScenarioBuilder":
        """Power loss: ``broker`` keeps only batches below ``keep_to`` (the rest was never flushed)."""
        b = self.brokers[broker]
        b.batches = [x for x in b.batches if x[1] < keep_to]
        b.extra_epochs = [e for e in b.extra_epochs if e[1] <= keep_to]
        b.hw = None if b.hw is None else min(b.hw, keep_to)
        return self

    def compact(self, broker: int, *, drop_offsets: set[int]) -> "ScenarioBuilder":
        """This broker's cleaner removed the batches at these offsets."""
        b = self.brokers[broker]
        b.batches = [x for x in b.batches if x[0] not in drop_offsets]
        return self

    # ------------------------------------------------------------- after the snapshot
    def then(self, op: str, **kw) -> "ScenarioBuilder":
        self.events.append({"op": op, **kw})
        return self

    def expect(self, kafka_version: str, verdicts: dict[int, list[str]]) -> "ScenarioBuilder":
        self.expected[kafka_version] = verdicts
        return self

    # ------------------------------------------------------------- output
    def _write_metadata_log(self, root: Path) -> None:
        """The controller's view of the elections before the snapshot, as a KRaft metadata log.

        Written to ``controller/__cluster_metadata-0`` beside the brokers when the
        elections are ones a controller could have made (epochs only go up).
        """
        from .formats.control import encode_control_key, encode_leader_change
        from .formats.metadata_records import encode_metadata_record
        from .formats.protocol import uuid_to_str

        epochs = [e for _, e in self.elections]
        if not self.elections or any(b <= a for a, b in zip(epochs, epochs[1:])):
            return
        tid = uuid_to_str(self.name.encode().ljust(16, b"\0")[:16])
        ids = sorted(self.brokers)
        records = [
            encode_metadata_record("FeatureLevelRecord", 0, {"Name": "metadata.version", "FeatureLevel": 7}),
            encode_metadata_record("TopicRecord", 0, {"Name": self.topic, "TopicId": tid}),
        ]
        (leader, epoch) = self.elections[0]
        records.append(encode_metadata_record("PartitionRecord", 0, {
            "PartitionId": self.partition, "TopicId": tid, "Replicas": ids, "Isr": ids, "RemovingReplicas": [],
            "AddingReplicas": [], "Leader": leader, "LeaderEpoch": epoch, "PartitionEpoch": 0}))
        current = epoch
        for leader, epoch in self.elections[1:]:
            while current < epoch:  # the controller bumps one epoch per leader (re)election
                current += 1
                records.append(encode_metadata_record("PartitionChangeRecord", 0, {
                    "PartitionId": self.partition, "TopicId": tid, "Leader": leader}))
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
            lw = LogDirWriter(root / f"broker-{b.broker_id}", node_id=b.broker_id, cluster_id=f"scenario-{self.name}")
            pw: PartitionWriter = lw.partition(self.topic, self.partition)
            for _base, _last, _epoch, data in b.batches:
                pw.append(data)
            for e, s in b.extra_epochs:
                if not pw.epochs or e > pw.epochs[-1][0]:
                    pw.epochs.append((e, s))
            key = (self.topic, self.partition)
            if b.hw is not None:
                lw.high_watermarks[key] = b.hw
            lw.recovery_points[key] = b.leo
            if cleaner_offsets and b.broker_id in cleaner_offsets:
                lw.cleaner_offsets[key] = cleaner_offsets[b.broker_id]
            lw.write()
        doc = {
            "name": self.name,
            "description": self.description,
            "topic": self.topic,
            "partition": self.partition,
            "events": self.events,
            "expected": {v: {str(k): codes for k, codes in exp.items()} for v, exp in self.expected.items()},
        }
        (root / "scenario.json").write_text(json.dumps(doc, indent=1) + "\n")
        self._write_metadata_log(root)
        set_mtimes(root)
        return root


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


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario dir (``broker-<id>/`` log dirs, ``scenario.json``, ``controller/`` metadata log)."""
    root = Path(path)
    doc = json.loads((root / "scenario.json").read_text(encoding="utf-8"))
    brokers = {int(d.name.split("-", 1)[1]): [d] for d in sorted(root.glob("broker-*")) if d.is_dir()}
    meta = root / "controller" / "__cluster_metadata-0"
    expected = {v: {int(k): codes for k, codes in exp.items()} for v, exp in doc.get("expected", {}).items()}
    return Scenario(doc.get("name", root.name), doc.get("description", ""), doc.get("topic", "orders"),
                    doc.get("partition", 0), doc.get("events", []), expected, brokers,
                    [meta] if meta.exists() else [], doc)
