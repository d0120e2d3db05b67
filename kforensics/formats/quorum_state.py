"""``__cluster_metadata-0/quorum-state``: the KRaft election state, one JSON line (data_version 0 or 1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding, finding
from . import json_limits


@dataclass
class QuorumState:
    data_version: int | None = None
    leader_id: int | None = None
    leader_epoch: int | None = None
    voted_id: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def _int(obj: dict, key: str) -> int | None:
    v = obj.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def decode(data: bytes) -> QuorumState:
    qs = QuorumState()
    try:
        obj = json_limits.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        qs.findings.append(finding("QUORUM_STATE_MALFORMED", f"not readable JSON: {e}"))
        return qs
    if not isinstance(obj, dict):
        qs.findings.append(finding("QUORUM_STATE_MALFORMED", "not a JSON object"))
        return qs
    qs.raw = obj
    qs.data_version = _int(obj, "data_version")
    if qs.data_version not in (0, 1):
        qs.findings.append(finding("QUORUM_STATE_BAD_VERSION", f"data_version {obj.get('data_version')!r:.40}"))
    qs.leader_id, qs.leader_epoch, qs.voted_id = _int(obj, "leaderId"), _int(obj, "leaderEpoch"), _int(obj, "votedId")
    return qs


def encode(leader_id: int, leader_epoch: int, voted_id: int = -1, data_version: int = 1) -> bytes:
    return (f'{{"leaderId":{leader_id},"leaderEpoch":{leader_epoch},"votedId":{voted_id},'
            f'"data_version":{data_version}}}').encode()
