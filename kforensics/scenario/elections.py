"""The controller's record for the election cases: brokers, features, configs and a partition's last registration.

:class:`~kforensics.scenario.builder.ScenarioBuilder` writes the brokers'
disks; this writes what the controller's choice at the restart reads, as a
KRaft metadata log (``controller/__cluster_metadata-0``): the brokers'
registrations (epoch, fenced, in controlled shutdown), the
``metadata.version`` and ``eligible.leader.replicas.version`` features, the
topic's ``min.insync.replicas`` and ``unclean.leader.election.enable``, and
the partition's registrations ending in the state declared (ISR, ELR,
LastKnownElr, leader), with the epochs a controller would write.  It also
writes the brokers' ``.kafka_cleanshutdown`` markers naming a broker epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..formats import clean_shutdown
from ..formats.control import encode_control_key, encode_leader_change
from ..formats.metadata_records import encode_metadata_record
from ..formats.protocol import uuid_to_str
from ..formats.record_batch import RecordData, build_batch
from .disk import T0

#: metadata.version 4.0-IV3 (MetadataVersion.java at 4.0.0): ELR may be enabled, no epoch bump on ISR shrink
MV_4_0_IV3 = 25


@dataclass
class BrokerState:
    """A broker as the controller last recorded it."""

    epoch: int
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclass
class PartitionState:
    """A partition's registration after one record of the controller."""

    isr: list[int]
    leader: int
    leader_epoch: int
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)


@dataclass
class ControllerRecord:
    """What the controller's metadata log holds at the time of the evidence."""

    replicas: list[int]
    history: list[PartitionState]  # the partition's registrations, first to last
    brokers: dict[int, BrokerState]
    elr: bool = False
    min_insync_replicas: int | None = None
    unclean: bool | None = None
    metadata_version: int = MV_4_0_IV3


def _records(rec: ControllerRecord, topic: str, partition: int, tid: str) -> list[bytes]:
    out = [encode_metadata_record("FeatureLevelRecord", 0, {"Name": "metadata.version",
                                                            "FeatureLevel": rec.metadata_version})]
    if rec.elr:
        out.append(encode_metadata_record("FeatureLevelRecord", 0, {"Name": "eligible.leader.replicas.version",
                                                                    "FeatureLevel": 1}))
    for b, reg in sorted(rec.brokers.items()):
        out.append(encode_metadata_record("RegisterBrokerRecord", 3, {
            "BrokerId": b, "IsMigratingZkBroker": False, "IncarnationId": uuid_to_str(bytes([b]) * 16),
            "BrokerEpoch": reg.epoch, "EndPoints": [], "Features": [], "Rack": None, "Fenced": reg.fenced,
            "InControlledShutdown": reg.in_controlled_shutdown}))
    out.append(encode_metadata_record("TopicRecord", 0, {"Name": topic, "TopicId": tid}))
    for name, value in (("min.insync.replicas", rec.min_insync_replicas),
                        ("unclean.leader.election.enable", rec.unclean)):
        if value is not None:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(encode_metadata_record("ConfigRecord", 0, {"ResourceType": 2, "ResourceName": topic,
                                                                  "Name": name, "Value": text}))
    first, *rest = rec.history
    out.append(encode_metadata_record("PartitionRecord", 2, {
        "PartitionId": partition, "TopicId": tid, "Replicas": rec.replicas, "Isr": first.isr, "RemovingReplicas": [],
        "AddingReplicas": [], "Leader": first.leader, "LeaderEpoch": first.leader_epoch, "PartitionEpoch": 0,
        "Directories": [], "EligibleLeaderReplicas": first.elr, "LastKnownElr": first.last_known_elr}))
    prev = first
    for st in rest:
        body: dict[str, Any] = {"PartitionId": partition, "TopicId": tid, "Isr": st.isr,
                                "EligibleLeaderReplicas": st.elr, "LastKnownElr": st.last_known_elr}
        if st.leader_epoch != prev.leader_epoch:
            body["Leader"] = st.leader  # a record that names a leader (or none) bumps the epoch
        out.append(encode_metadata_record("PartitionChangeRecord", 2, body))
        prev = st
    return out


def write_controller_record(root: Path, name: str, topic: str, partition: int, rec: ControllerRecord,
                            markers: dict[int, int]) -> None:
    """The metadata log under ``root/controller`` and, per broker in ``markers``, a ``.kafka_cleanshutdown``
    naming that broker epoch (written over the builder's empty marker)."""
    tid = uuid_to_str(name.encode().ljust(16, b"\0")[:16])
    d = root / "controller" / "__cluster_metadata-0"
    d.mkdir(parents=True, exist_ok=True)
    ids = sorted(rec.brokers)
    batches = [build_batch([RecordData(0, T0, encode_control_key("LEADER_CHANGE"),
                                       encode_leader_change(ids[0], ids, ids))],
                           partition_leader_epoch=1, control=True)]
    for i, value in enumerate(_records(rec, topic, partition, tid), start=1):
        batches.append(build_batch([RecordData(i, T0 + i, None, value)], partition_leader_epoch=1))
    (d / "00000000000000000000.log").write_bytes(b"".join(batches))
    for b, epoch in markers.items():
        (root / f"broker-{b}" / ".kafka_cleanshutdown").write_bytes(clean_shutdown.encode(epoch))
