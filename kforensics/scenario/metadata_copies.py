"""Scenarios whose controller record is several copies of the KRaft metadata log, one per controller.

The single-controller writer (:mod:`.writing`) writes one ``controller/`` metadata log derived from the
elections.  Here the metadata log is declared as Raft writes it: a lineage of records, each in the Raft
epoch of the controller that wrote it (a ``LeaderChange`` control record opens each epoch, as
``KafkaRaftClient.onBecomeLeader`` appends one), and each controller's copy is a prefix of it, possibly with
a tail of its own (a deposed leader's records nobody fetched) or with its last records lost (its
``leader-epoch-checkpoint`` and ``quorum-state`` still naming what it held).  Each copy is written to
``controller-<node id>/`` as a log dir: ``meta.properties``, ``__cluster_metadata-0/`` with one segment,
``leader-epoch-checkpoint`` and ``quorum-state`` (data version 0, with the static voters).  What the
timeline is expected to make of the copies goes into ``scenario.json`` as ``expected_quorum``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from ..formats import checkpoint
from ..formats.control import encode_control_key, encode_leader_change
from ..formats.metadata_records import encode_metadata_record
from ..formats.protocol import uuid_to_str
from ..formats.record_batch import RecordData, build_batch
from .builder import ScenarioBuilder
from .disk import T0
from .writer import LogDirWriter, set_mtimes


@dataclass(frozen=True)
class RaftRecord:
    """One record of the metadata log: the Raft epoch of the leader that wrote it; ``key`` set for a control record."""

    raft_epoch: int
    value: bytes
    key: bytes | None = None


@dataclass
class MetadataLineage:
    """The metadata log as its leaders write it, record after record, for one topic partition."""

    name: str
    topic: str
    partition: int
    voters: list[int]
    records: list[RaftRecord] = field(default_factory=list)
    raft_epoch: int = 0

    @property
    def topic_id(self) -> str:
        return uuid_to_str(self.name.encode().ljust(16, b"\0")[:16])

    def lead(self, raft_epoch: int, leader: int) -> Self:
        """A controller becomes Raft leader of ``raft_epoch``: its LeaderChange record opens the epoch."""
        self.raft_epoch = raft_epoch
        value = encode_leader_change(leader, self.voters, self.voters)
        self.records.append(RaftRecord(raft_epoch, value, encode_control_key("LEADER_CHANGE")))
        return self

    def fork(self) -> MetadataLineage:
        """A copy of the lineage so far, to go on differently (a deposed leader's tail)."""
        return MetadataLineage(self.name, self.topic, self.partition, self.voters, list(self.records), self.raft_epoch)

    def add(self, record_type: str, **fields: Any) -> Self:
        self.records.append(RaftRecord(self.raft_epoch, encode_metadata_record(record_type, 0, fields)))
        return self

    def create(self, replicas: list[int], leader: int) -> Self:
        """The metadata version, the topic and its partition (leader epoch 0, every replica in the ISR)."""
        self.add("FeatureLevelRecord", Name="metadata.version", FeatureLevel=7)
        self.add("TopicRecord", Name=self.topic, TopicId=self.topic_id)
        return self.add("PartitionRecord", PartitionId=self.partition, TopicId=self.topic_id, Replicas=replicas,
                        Isr=replicas, RemovingReplicas=[], AddingReplicas=[], Leader=leader, LeaderEpoch=0,
                        PartitionEpoch=0)

    def change(self, **fields: Any) -> Self:
        """A PartitionChangeRecord of the partition (``Leader``, ``Isr``, ``LeaderRecoveryState``, ...)."""
        return self.add("PartitionChangeRecord", PartitionId=self.partition, TopicId=self.topic_id, **fields)


@dataclass
class MetadataCopy:
    """One controller's copy: ``records`` as it held them; its segments keep only the first ``kept`` of them."""

    node_id: int
    records: list[RaftRecord]
    quorum_leader: int
    quorum_epoch: int
    kept: int | None = None  # None: every record it held is still in its segment

    def epochs(self) -> list[tuple[int, int]]:
        """Its leader-epoch cache: an entry at the first offset of each Raft epoch it appended (written, and
        flushed, when the batch is appended: ``LeaderEpochFileCache.assign``, 3.8.0)."""
        out: list[tuple[int, int]] = []
        for offset, r in enumerate(self.records):
            if not out or r.raft_epoch > out[-1][0]:
                out.append((r.raft_epoch, offset))
        return out

    def write(self, root: Path, cluster_id: str, voters: list[int]) -> None:
        log_dir = root / f"controller-{self.node_id}"
        LogDirWriter(log_dir, node_id=self.node_id, cluster_id=cluster_id, meta_version=1).write(checkpoints=False)
        d = log_dir / "__cluster_metadata-0"
        d.mkdir(parents=True, exist_ok=True)
        held = self.records if self.kept is None else self.records[:self.kept]
        batches = [build_batch([RecordData(i, T0 + i, r.key, r.value)], partition_leader_epoch=r.raft_epoch,
                               control=r.key is not None) for i, r in enumerate(held)]
        (d / "00000000000000000000.log").write_bytes(b"".join(batches))
        (d / "leader-epoch-checkpoint").write_bytes(checkpoint.encode("leader_epoch_checkpoint", self.epochs()))
        state = {"clusterId": "", "leaderId": self.quorum_leader, "leaderEpoch": self.quorum_epoch, "votedId": -1,
                 "appliedOffset": 0, "currentVoters": [{"voterId": v} for v in voters], "data_version": 0}
        (d / "quorum-state").write_text(json.dumps(state, separators=(",", ":")))


class MetadataCopiesScenario(ScenarioBuilder):
    """A :class:`ScenarioBuilder` whose controller record is several metadata log copies (``controller-<id>/``)."""

    def __init__(self, name: str, *, brokers: list[int], voters: list[int], description: str = ""):
        super().__init__(name, brokers=brokers, description=description, controller=False)
        self.lineage = MetadataLineage(name, self.topic, self.partition, voters)
        self.copies: list[MetadataCopy] = []
        self.expected_quorum: dict[str, Any] = {}

    def copy(self, node_id: int, records: list[RaftRecord], *, quorum_leader: int, quorum_epoch: int,
             kept: int | None = None) -> Self:
        self.copies.append(MetadataCopy(node_id, list(records), quorum_leader, quorum_epoch, kept))
        return self

    def expect_quorum(self, **expected: Any) -> Self:
        """What the timeline makes of the copies (derived by hand from Raft's rules, cited)."""
        self.expected_quorum.update(expected)
        return self

    def write(self, root: str | Path, *, cleaner_offsets: dict[int, int] | None = None) -> Path:
        out = super().write(root, cleaner_offsets=cleaner_offsets)
        for c in self.copies:
            c.write(out, f"scenario-{self.name}", self.lineage.voters)
        doc = json.loads((out / "scenario.json").read_text())
        doc["expected_quorum"] = self.expected_quorum
        (out / "scenario.json").write_text(json.dumps(doc, indent=1) + "\n")
        set_mtimes(out)
        return out
