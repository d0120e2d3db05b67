"""``.kafka_cleanshutdown``: empty before Kafka 3.7, JSON ``{"version":0,"brokerEpoch":N}`` since."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..findings import Finding, Severity


@dataclass
class CleanShutdown:
    broker_epoch: int | None = None
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": "clean_shutdown", "broker_epoch": self.broker_epoch}


def decode(data: bytes) -> CleanShutdown:
    cs = CleanShutdown()
    if not data.strip():
        return cs
    try:
        obj = json.loads(data.decode("utf-8"))
        cs.broker_epoch = obj.get("brokerEpoch")
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError) as e:
        cs.findings.append(Finding("CLEAN_SHUTDOWN_MALFORMED", Severity.LOW, f"unreadable marker: {e}"))
    return cs
