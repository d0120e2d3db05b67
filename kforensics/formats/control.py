"""Control records: transaction markers and KRaft control messages.

A control batch's records carry a 4-byte key ``version:int16 type:int16`` and
a type-specific value.  Transaction markers (``EndTxnMarker``) use a fixed
layout; the KRaft messages (LeaderChange, SnapshotHeader/Footer, KRaftVersion,
Voters) use the flexible encoding and start with their own ``Version`` field.
"""

from __future__ import annotations

from typing import Any

from construct import Construct, ConstructError, Int16sb, Int16ub, Int32sb, Int64sb, Struct, Terminated

from ..findings import DecodeError
from .protocol import CompactArray, CompactString, Uuid, flexible

ControlRecordKey = Struct("version" / Int16sb, "type" / Int16sb)

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
CONTROL_TYPE_IDS = {v: k for k, v in CONTROL_TYPES.items()}

#: COMMIT / ABORT value (not flexible; higher versions are read with this layout, as Kafka does)
EndTxnMarker = Struct("version" / Int16sb, "coordinator_epoch" / Int32sb)


def _voter(version: int) -> Struct:
    fields = ["voter_id" / Int32sb]
    if version >= 1:
        fields.append("voter_directory_id" / Uuid())
    return flexible(*fields)


def leader_change(version: int) -> Struct:
    return flexible(
        "version" / Int16sb,
        "leader_id" / Int32sb,
        "voters" / CompactArray(_voter(version)),
        "granting_voters" / CompactArray(_voter(version)),
    )


SnapshotHeaderRecord = flexible("version" / Int16sb, "last_contained_log_timestamp" / Int64sb)
SnapshotFooterRecord = flexible("version" / Int16sb)
KRaftVersionRecord = flexible("version" / Int16sb, "kraft_version" / Int16sb)
VotersRecord = flexible(
    "version" / Int16sb,
    "voters"
    / CompactArray(
        flexible(
            "voter_id" / Int32sb,
            "voter_directory_id" / Uuid(),
            "endpoints" / CompactArray(flexible("name" / CompactString(), "host" / CompactString(), "port" / Int16ub)),
            "kraft_version_feature"
            / flexible("min_supported_version" / Int16sb, "max_supported_version" / Int16sb),
        )
    ),
)


def _plain(obj: Any) -> Any:
    """Construct containers to plain dicts/lists, without private fields."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def _parse_all(con: Construct, value: bytes) -> Any:
    return Struct("v" / con, Terminated).parse(value).v


def decode_control(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """Decode one control record into the shape Kafka's accessors give (the oracle manifests')."""
    if key is None or len(key) < 4:
        raise DecodeError("BAD_CONTROL_KEY", f"control record key of {0 if key is None else len(key)} bytes (< 4)", 0)
    k = ControlRecordKey.parse(key)
    if k.version < 0:
        raise DecodeError("BAD_CONTROL_KEY", f"negative control key version {k.version}", 0)
    name = CONTROL_TYPES.get(k.type, "UNKNOWN")
    out: dict[str, Any] = {"type": name, "typeId": k.type, "keyVersion": k.version}
    if name == "UNKNOWN":
        return out
    if value is None:
        raise DecodeError("BAD_CONTROL_VALUE", f"{name} control record has a null value", 0)
    try:
        if name in ("COMMIT", "ABORT"):
            m = EndTxnMarker.parse(value)
            if m.version < 0:
                raise DecodeError("BAD_CONTROL_VALUE", f"negative EndTxnMarker version {m.version}", 0)
            out.update(valueVersion=m.version, coordinatorEpoch=m.coordinator_epoch)
        elif name == "LEADER_CHANGE":
            version = Int16sb.parse(value)
            m = _parse_all(leader_change(version), value)
            out.update(
                valueVersion=m.version,
                leaderId=m.leader_id,
                voters=[v.voter_id for v in m.voters or []],
                grantingVoters=[v.voter_id for v in m.granting_voters or []],
            )
            out["detail"] = _plain(m)
        elif name == "SNAPSHOT_HEADER":
            m = _parse_all(SnapshotHeaderRecord, value)
            out.update(valueVersion=m.version, lastContainedLogTimestamp=m.last_contained_log_timestamp)
        elif name == "SNAPSHOT_FOOTER":
            m = _parse_all(SnapshotFooterRecord, value)
            out.update(valueVersion=m.version)
        elif name == "KRAFT_VERSION":
            m = _parse_all(KRaftVersionRecord, value)
            out.update(kRaftVersion=m.kraft_version)
            out["detail"] = _plain(m)
        elif name == "KRAFT_VOTERS":
            m = _parse_all(VotersRecord, value)
            out.update(valueVersion=m.version, voters=[v.voter_id for v in m.voters or []])
            out["detail"] = _plain(m)
    except ConstructError as e:
        raise DecodeError("BAD_CONTROL_VALUE", f"{name} value does not parse: {e}".replace("\n", " "), None) from None
    return out


def encode_control_key(type_name: str, version: int = 0) -> bytes:
    return ControlRecordKey.build(dict(version=version, type=CONTROL_TYPE_IDS[type_name]))


def encode_end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    return EndTxnMarker.build(dict(version=version, coordinator_epoch=coordinator_epoch))


def encode_leader_change(leader_id: int, voters: list[int], granting: list[int], version: int = 0) -> bytes:
    def vs(ids: list[int]) -> list[dict[str, Any]]:
        return [dict(voter_id=i, _tagged={}) for i in ids]

    return leader_change(version).build(
        dict(version=version, leader_id=leader_id, voters=vs(voters), granting_voters=vs(granting), _tagged={})
    )


def encode_kraft_version(kraft_version: int, version: int = 0) -> bytes:
    return KRaftVersionRecord.build(dict(version=version, kraft_version=kraft_version, _tagged={}))


def encode_snapshot_header(last_contained_log_timestamp: int, version: int = 0) -> bytes:
    return SnapshotHeaderRecord.build(
        dict(version=version, last_contained_log_timestamp=last_contained_log_timestamp, _tagged={})
    )


def encode_snapshot_footer(version: int = 0) -> bytes:
    return SnapshotFooterRecord.build(dict(version=version, _tagged={}))
