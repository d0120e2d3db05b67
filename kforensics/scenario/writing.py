"""Write a scenario: each broker's log dirs (with the declared damage), the controller's metadata log and
``scenario.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..formats.record_batch import RecordData, build_batch
from .disk import INDEX_INTERVAL_BYTES, T0, BrokerDisk, InternalPartition
from .writer import LogDirWriter, PartitionWriter, set_mtimes


class ScenarioWriting:
    """The output steps of :class:`~kforensics.scenario.builder.ScenarioBuilder`."""

    # the builder's state they write (set by its __init__)
    name: str
    description: str
    topic: str
    partition: int
    controller: bool
    brokers: dict[int, BrokerDisk]
    record: list[tuple[Any, ...]]
    internal: dict[tuple[str, int], InternalPartition]
    events: list[dict[str, Any]]
    expected: dict[str, dict[int, list[str]]]
    citations: list[str]
    derivation: dict[str, Any]
    expected_impact: dict[str, list[dict[str, Any]]]
    expected_transactions: dict[str, Any]

    @property
    def elections(self) -> list[tuple[int, int]]:
        raise NotImplementedError  # the builder's

    def _txn_index(self, b: BrokerDisk) -> list[dict[str, int]]:
        raise NotImplementedError  # the coordinator steps'

    def _write_metadata_log(self, root: Path) -> None:
        """The controller's record of the partition, as a KRaft metadata log.

        Written to ``controller/__cluster_metadata-0`` beside the brokers when
        the elections are ones a controller could have made (epochs only go up).
        """
        from ..formats.control import encode_control_key, encode_leader_change
        from ..formats.metadata_records import encode_metadata_record
        from ..formats.protocol import uuid_to_str

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
                from ..formats.txn_index import encode as encode_txn_index

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

    def _write_internal(self, b: BrokerDisk, root: Path) -> None:
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
    def _damage_disk(b: BrokerDisk, log: Path) -> None:
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
