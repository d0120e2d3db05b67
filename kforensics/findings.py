"""Findings: what kforensics reports about evidence.

A finding is a typed, located observation: a stable ``code`` from the
catalogue (:mod:`kforensics.catalogue`) that scripts can match on, a
``severity`` that reflects what Kafka itself does about it, the file and byte
position (or line) where it was seen, a message and machine-readable facts.
It is the only shape a fault takes, at every layer.

Decoders that cannot go on raise :class:`DecodeError`, which carries the
finding it becomes; the layer that owns the file catches it, places it in the
file and goes on.  :class:`FindingLog` collects findings with a cap per file
and code, so damage repeated a million times costs one finding and a count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .catalogue import CATALOGUE
from .errors import ExitCode, KforensicsError
from .severity import Severity

__all__ = ["Severity", "Finding", "finding", "DecodeError", "FindingLog", "worst"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One located observation about a piece of evidence."""

    code: str
    severity: Severity
    message: str
    file: str | None = None
    position: int | None = None  # byte position in ``file``
    line: int | None = None  # 1-based line number for text files
    facts: dict[str, Any] = field(default_factory=dict)

    def at(self, file: str | None = None, *, offset: int = 0, default: int | None = None) -> Finding:
        """The same finding placed in ``file``, with its byte position shifted by ``offset``.

        A finding without a position gets ``default`` (a position in ``file``,
        not shifted): e.g. the start of the entry a decoder could not place
        its error in.
        """
        pos = default if self.position is None else self.position + offset
        return replace(self, file=file if file is not None else self.file, position=pos)


def finding(code: str, message: str, *, severity: Severity | None = None, file: object = None,
            position: int | None = None, line: int | None = None, **facts: Any) -> Finding:
    """A :class:`Finding` whose severity defaults to the catalogue's for ``code``.

    ``severity`` is given only where the context changes what Kafka does
    (the catalogue entry says when).  An unknown code raises ``KeyError``:
    a test walks the package so that this never happens at run time.
    """
    info = CATALOGUE[code]
    return Finding(code, info.severity if severity is None else severity, message,
                   None if file is None else str(file), position, line, facts)


class DecodeError(KforensicsError, ValueError):
    """Bytes that do not decode as the format they claim to be; carries the finding they become.

    Every reader turns it into its finding; one that escapes to a command is
    a reader that forgot to, so it is reported as an internal error.

    ``position`` is relative to the buffer handed to the decoder; the layer
    that owns the file shifts it with :meth:`Finding.at`.
    """

    def __init__(self, code: str, message: str, position: int | None = None, *, severity: Severity | None = None,
                 **facts: Any):
        super().__init__(message)
        self.exit_code = ExitCode.INTERNAL
        self.finding = finding(code, message, severity=severity, position=position, **facts)

    @property
    def code(self) -> str:
        return self.finding.code

    @property
    def message(self) -> str:
        return self.finding.message

    @property
    def position(self) -> int | None:
        return self.finding.position


class FindingLog:
    """Findings in arrival order, at most ``per_code`` per (file, code); the rest are counted.

    :meth:`findings` returns what was kept plus one ``MORE_FINDINGS`` per
    capped (file, code) giving the total, so output and memory stay bounded
    whatever the damage.
    """

    def __init__(self, per_code: int = 100):
        self.per_code = per_code
        self._kept: list[Finding] = []
        self._counts: dict[tuple[str | None, str], int] = {}

    def add(self, f: Finding) -> None:
        key = (f.file, f.code)
        n = self._counts.get(key, 0) + 1
        self._counts[key] = n
        if n <= self.per_code:
            self._kept.append(f)

    def extend(self, fs: Iterable[Finding]) -> None:
        for f in fs:
            self.add(f)

    def count(self, code: str) -> int:
        """How many findings of ``code`` arrived (kept or not)."""
        return sum(n for (_, c), n in self._counts.items() if c == code)

    def findings(self) -> list[Finding]:
        out = list(self._kept)
        for (file, code), n in self._counts.items():
            if n > self.per_code:
                out.append(finding("MORE_FINDINGS", f"{n - self.per_code} more {code} findings not listed ({n} in all)",
                                   file=file, finding_code=code, total=n, listed=self.per_code))
        return out

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.findings())

    def __len__(self) -> int:
        return len(self._kept)

    def __bool__(self) -> bool:
        return bool(self._kept)


def worst(findings: Iterable[Finding]) -> Severity | None:
    """The highest severity among ``findings`` (None when there are none)."""
    return max((f.severity for f in findings), default=None)
