"""Findings: what kforensics reports about evidence.

A finding is a typed, located observation: a stable ``code`` that scripts can
match on, a ``severity`` that reflects what Kafka itself would do about it, the
file and byte position (or line) where it was seen, a human message and a dict
of machine-readable facts.  Every layer reports problems as findings instead of
raising, so one bad file never stops a scan.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any


class Severity(enum.IntEnum):
    """Ordered severities; ``--fail-on`` compares with ``>=``."""

    INFO = 0  # a fact worth knowing (e.g. legacy format, absent optional file)
    LOW = 1  # odd but harmless; Kafka fixes or ignores it (e.g. stale index)
    MEDIUM = 2  # Kafka rebuilds or truncates derived state; no record lost
    HIGH = 3  # records damaged or unreadable; Kafka's recovery would drop data
    CRITICAL = 4  # committed data lost or replicas forked

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.name.lower() for s in cls)
            raise ValueError(f"unknown severity {text!r} (one of {names})") from None

    def __str__(self) -> str:  # "high", as users type it
        return self.name.lower()


@dataclass(frozen=True)
class Finding:
    """One located observation about a piece of evidence."""

    code: str
    severity: Severity
    message: str
    file: str | None = None
    position: int | None = None  # byte position in ``file``
    line: int | None = None  # 1-based line number for text files
    facts: dict[str, Any] = field(default_factory=dict)

    def at(self, file: str | None = None, *, offset: int = 0) -> "Finding":
        """The same finding attributed to ``file``, with positions shifted by ``offset``."""
        pos = None if self.position is None else self.position + offset
        return replace(self, file=file if file is not None else self.file, position=pos)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``kind: finding`` so it can sit in an NDJSON stream)."""
        return {
            "kind": "finding",
            "code": self.code,
            "severity": str(self.severity),
            "file": self.file,
            "position": self.position,
            "line": self.line,
            "message": self.message,
            "facts": self.facts,
        }


class FormatError(ValueError):
    """Bytes that do not decode as the format they claim to be.

    ``position`` is relative to the start of the buffer handed to the decoder;
    callers shift it to a file position when they turn it into a finding.
    """

    def __init__(self, code: str, message: str, position: int | None = None, **facts: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.position = position
        self.facts = facts

    def to_finding(self, severity: Severity, file: str | None = None, offset: int = 0) -> Finding:
        pos = None if self.position is None else self.position + offset
        return Finding(self.code, severity, self.message, file=file, position=pos, facts=dict(self.facts))
