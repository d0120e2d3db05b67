"""``partition.metadata`` (Kafka 2.8+): ``version: 0`` then ``topic_id: <Uuid>``, with no trailing newline.

Kafka's reader splits each of the two lines on ``:\\s+`` and looks only at
the value: it accepts any version >= 0, refuses the all-zero topic id, and
ignores the key names and anything after line 2.  A file it refuses takes the
log dir offline, hence HIGH.

Also home of Kafka's ``Uuid`` text form (URL-safe base64 of 16 bytes, no
padding, 22 characters), which meta.properties and quorum-state use too.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..findings import Finding, finding
from .java_text import parse_int

_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(?:==)?")  # what Java's URL-safe decoder turns into 16 bytes
_SPLIT = re.compile(r":[ \t\n\x0b\f\r]+")  # Java's \s is ASCII-only
_LINE_END = re.compile(r"\r\n|\r|\n")
ZERO_UUID = bytes(16)


def parse_uuid(text: str) -> bytes | None:
    """The 16 bytes of a Kafka ``Uuid`` in text form, or None where ``Uuid.fromString`` would throw."""
    if not _UUID_TEXT.fullmatch(text):
        return None
    return base64.urlsafe_b64decode(text[:22] + "==")


def uuid_text(raw: bytes) -> str:
    """Kafka's text form of 16 Uuid bytes."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_halves(raw: bytes) -> tuple[int, int]:
    """``(mostSignificantBits, leastSignificantBits)`` as Kafka's ``Uuid`` holds them (signed longs)."""
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)


@dataclass
class PartitionMetadata:
    """A decoded ``partition.metadata``: its version, the topic id (text and bytes) and findings."""

    version: int | None = None
    topic_id: str | None = None
    topic_id_bytes: bytes | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def topic_id_halves(self) -> tuple[int, int] | None:
        """The topic id as ``(msb, lsb)``."""
        return None if self.topic_id_bytes is None else uuid_halves(self.topic_id_bytes)

    def __json__(self) -> dict[str, Any]:
        halves = self.topic_id_halves
        return {"version": self.version, "topic_id": self.topic_id,
                "topic_id_hex": None if self.topic_id_bytes is None else self.topic_id_bytes.hex(),
                "topic_id_msb": None if halves is None else halves[0],
                "topic_id_lsb": None if halves is None else halves[1]}


class _Refuse(Protocol):
    """Records a finding at a line."""

    def __call__(self, code: str, message: str, line: int | None, **facts: Any) -> None: ...


def decode(data: bytes | str) -> PartitionMetadata:
    """Decode a ``partition.metadata`` file."""
    pm = PartitionMetadata()

    def refuse(code: str, message: str, line: int | None, **facts: Any) -> None:
        pm.findings.append(finding(code, message, line=line, **facts))

    odd = refuse  # the catalogue grades each code: what Kafka refuses is HIGH, the rest LOW

    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            text = data.decode("utf-8", errors="replace")
            refuse("PARTITION_METADATA_NOT_UTF8", f"bytes that are not UTF-8 at byte {e.start}",
                   data[: e.start].count(b"\n") + 1, byte=e.start)
    else:
        text = data
    lines = _LINE_END.split(text)
    if lines[-1] == "" and len(lines) > 1:
        lines.pop()
        odd("PARTITION_METADATA_TRAILING_NEWLINE", "the file ends in a newline, which Kafka never writes",
            len(lines))
    if len(lines) > 2:
        odd("PARTITION_METADATA_EXTRA_LINES", f"{len(lines) - 2} lines after the topic id (Kafka ignores them)", 3,
            extra_lines=len(lines) - 2)
    for no, (key, parse) in enumerate((("version", _version), ("topic_id", _topic_id)), start=1):
        if no > len(lines):
            refuse("PARTITION_METADATA_MALFORMED", f"no {key} line", no)
            return pm
        parts = _SPLIT.split(lines[no - 1])
        while parts and parts[-1] == "":
            parts.pop()  # Java's split drops trailing empty strings
        if len(parts) != 2:
            refuse("PARTITION_METADATA_MALFORMED", f"line {no} is not '{key}: <value>': {lines[no - 1]!r}", no,
                   text=lines[no - 1])
            return pm  # Kafka stops at the first bad line
        if parts[0] != key:
            odd("PARTITION_METADATA_UNEXPECTED_KEY", f"line {no} names {parts[0]!r}, not {key!r} (Kafka does not "
                "look at the name)", no, key=parts[0])
        if not parse(pm, parts[1], no, refuse):
            return pm
    return pm


def _version(pm: PartitionMetadata, value: str, no: int, refuse: _Refuse) -> bool:
    version = parse_int(value)
    if version is None:
        refuse("PARTITION_METADATA_MALFORMED", f"version {value!r:.40} is not a number", no, text=value[:80])
        return False
    pm.version = version
    if pm.version < 0:
        refuse("PARTITION_METADATA_BAD_VERSION", f"version {pm.version} is below 0", no, version=pm.version)
        return False
    if pm.version > 0:  # accepted for downgrade compatibility, but no Kafka writes it
        pm.findings.append(finding("PARTITION_METADATA_UNKNOWN_VERSION", f"version {pm.version}; only 0 exists",
                                   line=no, version=pm.version))
    return True


def _topic_id(pm: PartitionMetadata, value: str, no: int, refuse: _Refuse) -> bool:
    raw = parse_uuid(value)
    if raw is None:
        refuse("PARTITION_METADATA_BAD_TOPIC_ID", f"topic id {value!r} is not a Kafka Uuid", no, text=value)
        return False
    pm.topic_id, pm.topic_id_bytes = uuid_text(raw), raw
    if raw == ZERO_UUID:
        refuse("PARTITION_METADATA_BAD_TOPIC_ID", "the topic id is the all-zero Uuid", no, text=value)
        return False
    return True


def encode(topic_id: str | bytes, version: int = 0) -> bytes:
    """The file as Kafka writes it; ``topic_id`` in text form or as 16 bytes."""
    text = uuid_text(topic_id) if isinstance(topic_id, bytes) else topic_id
    return f"version: {version}\ntopic_id: {text}".encode()
