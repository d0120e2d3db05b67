"""Severities of findings, ordered: ``--fail-on`` compares with ``>=``."""

from __future__ import annotations

import enum


class Severity(enum.IntEnum):
    """How bad a finding is, graded by what Kafka itself does about it."""

    INFO = 0  # a fact worth knowing (e.g. legacy format, absent optional file)
    LOW = 1  # odd but harmless; Kafka fixes or ignores it (e.g. stale index)
    MEDIUM = 2  # Kafka rebuilds or truncates derived state; no record lost
    HIGH = 3  # records damaged or unreadable; Kafka's recovery would drop data
    CRITICAL = 4  # committed data lost or replicas forked

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[str(text).strip().upper()]
        except KeyError:
            names = ", ".join(s.name.lower() for s in cls)
            raise ValueError(f"unknown severity {text!r} (one of {names})") from None

    def __str__(self) -> str:  # "high", as users type it
        return self.name.lower()

    @classmethod
    def worst_first(cls) -> list[Severity]:
        """Every severity, critical first: the order tables, counts and figures list them in."""
        return sorted(cls, reverse=True)


#: severity names worst first ("critical" … "info"), as tables and counts show them
NAMES_WORST_FIRST: tuple[str, ...] = tuple(str(s) for s in Severity.worst_first())
