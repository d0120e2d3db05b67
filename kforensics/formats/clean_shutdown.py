"""``.kafka_cleanshutdown``: empty before Kafka 3.7, JSON ``{"version":0,"brokerEpoch":N}`` since.

Kafka deletes the file right after reading it at startup, so its presence in
evidence means the broker shut down cleanly and has not started since.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import Finding, finding
from . import json_limits


@dataclass
class CleanShutdown:
    broker_epoch: int | None = None
    version: int | None = None
    findings: list[Finding] = field(default_factory=list)


def decode(data: bytes) -> CleanShutdown:
    cs = CleanShutdown()
    if not data.strip():
        return cs
    try:
        obj = json_limits.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        cs.findings.append(finding("CLEAN_SHUTDOWN_MALFORMED", f"unreadable marker: {e}"))
        return cs
    if not isinstance(obj, dict):
        cs.findings.append(finding("CLEAN_SHUTDOWN_MALFORMED", "the marker is not a JSON object"))
        return cs
    epoch, version = obj.get("brokerEpoch"), obj.get("version")
    cs.broker_epoch = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None
    cs.version = version if isinstance(version, int) and not isinstance(version, bool) else None
    if epoch is not None and cs.broker_epoch is None:
        cs.findings.append(finding("CLEAN_SHUTDOWN_MALFORMED", f"brokerEpoch is not a number: {epoch!r:.40}"))
    return cs


def encode(broker_epoch: int | None = None) -> bytes:
    """The marker as Kafka writes it (empty before 3.7)."""
    return b"" if broker_epoch is None else f'{{"version":0,"brokerEpoch":{broker_epoch}}}'.encode()
