"""``partition.metadata``: ``version: 0`` and ``topic_id: <Uuid>`` (Kafka 2.8+)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..findings import Finding, Severity
from .protocol import str_to_uuid

_LINE = re.compile(r"^(\w+):\s+(\S+)$")


@dataclass
class PartitionMetadata:
    version: int | None = None
    topic_id: str | None = None
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": "partition_metadata", "version": self.version, "topic_id": self.topic_id}


def decode(data: bytes) -> PartitionMetadata:
    pm = PartitionMetadata()
    text = data.decode("utf-8", errors="replace")
    for no, line in enumerate(text.splitlines(), start=1):
        m = _LINE.match(line.strip())
        if not m:
            pm.findings.append(Finding("PARTITION_METADATA_MALFORMED", Severity.MEDIUM, f"malformed line {line!r}", line=no))
            continue
        key, value = m.groups()
        if key == "version":
            try:
                pm.version = int(value)
            except ValueError:
                pm.findings.append(Finding("PARTITION_METADATA_MALFORMED", Severity.MEDIUM, f"version {value!r}", line=no))
        elif key == "topic_id":
            try:
                raw = str_to_uuid(value)
            except ValueError:
                pm.findings.append(Finding("PARTITION_METADATA_BAD_TOPIC_ID", Severity.MEDIUM, f"topic id {value!r}", line=no))
                continue
            if raw == bytes(16):
                pm.findings.append(Finding("PARTITION_METADATA_BAD_TOPIC_ID", Severity.MEDIUM, "all-zero topic id", line=no))
            pm.topic_id = value
    if pm.version is None or pm.version < 0 or pm.topic_id is None:
        pm.findings.append(Finding("PARTITION_METADATA_INCOMPLETE", Severity.MEDIUM,
                                   "version or topic_id missing or invalid", line=None))
    return pm


def encode(topic_id: str, version: int = 0) -> bytes:
    return f"version: {version}\ntopic_id: {topic_id}".encode()
