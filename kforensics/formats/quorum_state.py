"""``__cluster_metadata-0/quorum-state``: the KRaft election state, one JSON line (data_version 0 or 1).

Read as ``FileQuorumStateStore`` reads it: the first line only, a JSON
object whose ``data_version`` selects the fields of ``QuorumStateData``; the
generated JSON converter requires every field of that version, each of its
type and range (int32 ids and epochs, an int64 offset, a Uuid).  A file it
cannot read keeps the controller from starting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding, finding
from . import json_limits
from .java_text import INT32, INT64
from .partition_metadata import parse_uuid

_LINE_END = re.compile(r"\r\n|\r|\n")

#: the fields of ``QuorumStateData`` per data_version, with their types
FIELDS: dict[int, dict[str, Any]] = {
    0: {"clusterId": str, "leaderId": INT32, "leaderEpoch": INT32, "votedId": INT32, "appliedOffset": INT64,
        "currentVoters": list},
    1: {"leaderId": INT32, "leaderEpoch": INT32, "votedId": INT32, "votedDirectoryId": "uuid"},
}


@dataclass
class QuorumState:
    data_version: int | None = None
    leader_id: int | None = None
    leader_epoch: int | None = None
    voted_id: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def _int(obj: dict[str, Any], key: str) -> int | None:
    v = obj.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _field_problem(obj: dict[str, Any], name: str, kind: Any) -> str | None:
    if name not in obj:
        return "is missing"
    v = obj[name]
    if isinstance(kind, tuple):
        if not isinstance(v, int) or isinstance(v, bool):
            return f"is not an integer ({type(v).__name__})"
        if not kind[0] <= v <= kind[1]:
            return f"{v} is out of range"
    elif kind is str and not isinstance(v, str):
        return f"is not a string ({type(v).__name__})"
    elif kind is list and v is not None and not isinstance(v, list):
        return f"is not an array ({type(v).__name__})"
    elif kind == "uuid" and (not isinstance(v, str) or parse_uuid(v) is None):
        return "is not a Kafka Uuid"
    return None


def decode(data: bytes) -> QuorumState:
    qs = QuorumState()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        qs.findings.append(finding("QUORUM_STATE_MALFORMED", f"not UTF-8 at byte {e.start}", position=e.start))
        return qs
    first = _LINE_END.split(text, 1)[0]  # Kafka reads the first line only
    try:
        obj = json_limits.loads(first)
    except ValueError as e:
        qs.findings.append(finding("QUORUM_STATE_MALFORMED", f"not readable JSON: {e}", line=1))
        return qs
    if not isinstance(obj, dict):
        qs.findings.append(finding("QUORUM_STATE_MALFORMED", "not a JSON object", line=1))
        return qs
    qs.raw = obj
    qs.data_version = _int(obj, "data_version")
    qs.leader_id, qs.leader_epoch, qs.voted_id = _int(obj, "leaderId"), _int(obj, "leaderEpoch"), _int(obj, "votedId")
    if qs.data_version not in FIELDS:
        qs.findings.append(finding("QUORUM_STATE_BAD_VERSION", f"data_version {obj.get('data_version')!r:.40}",
                                   line=1))
        return qs
    for name, kind in FIELDS[qs.data_version].items():
        problem = _field_problem(obj, name, kind)
        if problem is not None:
            qs.findings.append(finding("QUORUM_STATE_BAD_FIELD", f"{name} {problem} (data_version "
                                                                 f"{qs.data_version})", line=1, field=name))
    for name in ("leader_id", "leader_epoch", "voted_id"):
        v = getattr(qs, name)
        if v is not None and not INT32[0] <= v <= INT32[1]:
            setattr(qs, name, None)  # reported above; not a value any broker holds
    return qs


def encode(leader_id: int, leader_epoch: int, voted_id: int = -1, data_version: int = 1) -> bytes:
    """The file as Kafka writes it (v0 with an empty cluster id, no applied offset and no voters)."""
    if data_version == 0:
        return (f'{{"clusterId":"","leaderId":{leader_id},"leaderEpoch":{leader_epoch},"votedId":{voted_id},'
                f'"appliedOffset":0,"currentVoters":null,"data_version":0}}').encode()
    return (f'{{"leaderId":{leader_id},"leaderEpoch":{leader_epoch},"votedId":{voted_id},'
            f'"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":{data_version}}}').encode()
