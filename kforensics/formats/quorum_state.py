"""``__cluster_metadata-0/quorum-state``: the KRaft election state, one JSON line (data_version 0 or 1)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..findings import Finding, Severity


@dataclass
class QuorumState:
    data_version: int | None = None
    leader_id: int | None = None
    leader_epoch: int | None = None
    voted_id: int | None = None
    raw: dict = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": "quorum_state", "data_version": self.data_version, "leader_id": self.leader_id,
                "leader_epoch": self.leader_epoch, "voted_id": self.voted_id, "raw": self.raw}


def decode(data: bytes) -> QuorumState:
    qs = QuorumState()
    try:
        qs.raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        qs.findings.append(Finding("QUORUM_STATE_MALFORMED", Severity.MEDIUM, f"not JSON: {e}"))
        return qs
    if not isinstance(qs.raw, dict):
        qs.findings.append(Finding("QUORUM_STATE_MALFORMED", Severity.MEDIUM, "not a JSON object"))
        qs.raw = {}
        return qs
    qs.data_version = qs.raw.get("data_version")
    if qs.data_version not in (0, 1):
        qs.findings.append(Finding("QUORUM_STATE_BAD_VERSION", Severity.MEDIUM, f"data_version {qs.data_version!r}"))
    qs.leader_id = qs.raw.get("leaderId")
    qs.leader_epoch = qs.raw.get("leaderEpoch")
    qs.voted_id = qs.raw.get("votedId")
    return qs


def encode(leader_id: int, leader_epoch: int, voted_id: int = -1, data_version: int = 1) -> bytes:
    return json.dumps({"leaderId": leader_id, "leaderEpoch": leader_epoch, "votedId": voted_id,
                       "data_version": data_version}, separators=(",", ":")).encode()
