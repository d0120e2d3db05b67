"""Kafka's text checkpoint files (``CheckpointFile``): a version line, a count line, then one entry per line.

Kinds: ``replication-offset-checkpoint`` (high watermarks),
``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``cleaner-offset-checkpoint`` (entries ``topic partition offset``) and a
partition's ``leader-epoch-checkpoint`` (entries ``epoch startOffset``).

Lines are read the way Java's ``BufferedReader.readLine`` reads them (``\\n``,
``\\r\\n`` or ``\\r`` end a line), numbers the way ``Integer.parseInt`` and
``Long.parseLong`` parse them (no surrounding blanks, ASCII digits, in range)
and entries are split on ASCII whitespace as ``Pattern.split("\\\\s+")`` splits
them (a leading blank yields an empty first token).  Every reason Kafka would
refuse the file becomes a finding with its line number, at the kind's
severity, and the readable entries are still returned.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import astuple, dataclass, field, fields
from typing import Any, Protocol, cast

from ..findings import Finding, FindingLog, Severity, finding
from .java_text import INT32, INT64, parse_int

_LINE_END = re.compile(r"\r\n|\r|\n")
_TEXT = 200  # characters of a bad line kept in a finding
_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


@dataclass(frozen=True)
class OffsetEntry:
    """A ``topic partition offset`` line of an offset checkpoint."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class EpochEntry:
    """An ``epoch startOffset`` line of a leader-epoch checkpoint."""

    epoch: int
    start_offset: int


#: fields on an entry line
_WIDTH = {OffsetEntry: len(fields(OffsetEntry)), EpochEntry: len(fields(EpochEntry))}


@dataclass(frozen=True)
class CheckpointKind:
    """One kind of checkpoint: file name, expected version, entry type and the severity of a file Kafka refuses."""

    name: str
    file_name: str
    version: int
    entry_type: type
    severity: Severity


KINDS: dict[str, CheckpointKind] = {
    k.name: k
    for k in (
        # Kafka takes the whole log dir offline when these fail to read
        CheckpointKind("replication_offset_checkpoint", "replication-offset-checkpoint", 0, OffsetEntry, Severity.HIGH),
        CheckpointKind("leader_epoch_checkpoint", "leader-epoch-checkpoint", 0, EpochEntry, Severity.HIGH),
        # LogManager logs a warning and carries on without them
        CheckpointKind("recovery_point_offset_checkpoint", "recovery-point-offset-checkpoint", 0, OffsetEntry,
                       Severity.MEDIUM),
        CheckpointKind("log_start_offset_checkpoint", "log-start-offset-checkpoint", 0, OffsetEntry, Severity.MEDIUM),
        CheckpointKind("cleaner_offset_checkpoint", "cleaner-offset-checkpoint", 0, OffsetEntry, Severity.MEDIUM),
    )
}


#: the findings for which Kafka's ``CheckpointFile`` reader throws instead of returning entries
REFUSED = frozenset({"CHECKPOINT_BAD_VERSION", "CHECKPOINT_BAD_COUNT", "CHECKPOINT_COUNT_MISMATCH",
                     "CHECKPOINT_MALFORMED_LINE", "CHECKPOINT_NOT_UTF8"})


@dataclass
class Checkpoint:
    """A decoded checkpoint: its kind, version, declared entry count, entries and findings."""

    kind: str
    version: int | None = None
    entries: list[OffsetEntry | EpochEntry] = field(default_factory=list)  # OffsetEntry or EpochEntry, by kind
    declared_count: int | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def kafka_refuses(self) -> bool:
        """Whether Kafka's checkpoint reader throws on this file (its entries are then never used)."""
        return any(f.code in REFUSED for f in self.findings)

    def offsets(self) -> dict[tuple[str, int], int]:
        """``{(topic, partition): offset}`` of an offset checkpoint (the last line wins, as in Kafka's map)."""
        return {(e.topic, e.partition): e.offset for e in cast(list[OffsetEntry], self.entries)}

    def epochs(self) -> list[tuple[int, int]]:
        """``[(epoch, start_offset)]`` of a leader-epoch checkpoint, in file order."""
        return [(e.epoch, e.start_offset) for e in cast(list[EpochEntry], self.entries)]


def _fields(entry: OffsetEntry | EpochEntry) -> dict[str, Any]:
    return {f.name: getattr(entry, f.name) for f in fields(entry)}


def _lines(data: bytes | str) -> tuple[list[str], set[int]]:
    """The file's lines as readLine returns them, and the numbers of lines that held bytes that are not UTF-8.

    Undecodable bytes become U+FFFD so the rest of the line can still be read.
    """
    bad: set[int]
    if isinstance(data, str):
        text, bad = data, set()
    else:
        try:
            text, bad = data.decode("utf-8"), set()
        except UnicodeDecodeError:
            pieces = _LINE_END.split(data.decode("latin-1"))  # one char per byte: the line structure survives
            text = data.decode("utf-8", errors="replace")
            bad = {no for no, p in enumerate(pieces, start=1) if not _is_utf8(p.encode("latin-1"))}
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()  # the terminator of the last line, not an empty line
    return lines, bad


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class _Report(Protocol):
    """Records a finding of the file (at a line, when there is one)."""

    def __call__(self, code: str, message: str, line: int | None, severity: Severity | None = ...,
                 **facts: Any) -> None: ...


def decode(data: bytes | str, kind: str) -> Checkpoint:
    """Decode a checkpoint file of ``kind`` (a key of :data:`KINDS`)."""
    spec = KINDS[kind]
    cp = Checkpoint(kind)

    log = FindingLog()  # a file of a million junk lines yields a hundred findings and a count
    built: dict[str, tuple[Finding, int]] = {}

    def report(code: str, message: str, line: int | None, severity: Severity | None = spec.severity,
               **facts: Any) -> None:
        f, n = built.get(code, (None, 0))
        if f is None or n < log.per_code:
            f = finding(code, message, severity=severity, line=line, **facts)
        built[code] = (f, n + 1)
        log.add(f)  # past the cap only counted: the finding is not built again

    lines, not_utf8 = _lines(data)
    for no in sorted(not_utf8):
        report("CHECKPOINT_NOT_UTF8", f"line {no} holds bytes that are not UTF-8 (Kafka's reader fails on them)", no)
    if not lines:
        cp.findings = log.findings()
        return cp  # Kafka reads an empty file as no entries
    cp.version = parse_int(lines[0], INT32)
    if cp.version is None:
        report("CHECKPOINT_BAD_VERSION", f"version line {lines[0][:_TEXT]!r:.80} is not a number", 1,
               text=lines[0][:_TEXT])
    elif cp.version != spec.version:
        report("CHECKPOINT_BAD_VERSION", f"version {cp.version}, expected {spec.version}", 1, version=cp.version)
    if len(lines) < 2:
        cp.findings = log.findings()
        return cp  # Kafka stops after the version line too
    cp.declared_count = parse_int(lines[1], INT32)
    if cp.declared_count is None or cp.declared_count < 0:
        report("CHECKPOINT_BAD_COUNT", f"count line {lines[1][:_TEXT]!r:.80} is not a count", 2, text=lines[1][:_TEXT])
        cp.declared_count = None
    body = lines[2:]
    for no, line in enumerate(body, start=3):
        entry = _entry(spec, line, no, report, check_name=no not in not_utf8)
        if entry is not None:
            cp.entries.append(entry)
    if cp.declared_count is not None and cp.declared_count != len(body):
        report("CHECKPOINT_COUNT_MISMATCH", f"declares {cp.declared_count} entries, holds {len(body)}", 2,
               declared=cp.declared_count, actual=len(body))
    _semantic_checks(cp, spec, report)
    cp.findings = log.findings()
    return cp


def _entry(spec: CheckpointKind, line: str, no: int, report: _Report,
           check_name: bool) -> OffsetEntry | EpochEntry | None:
    tokens = _JAVA_SPACE.split(line)
    while tokens and tokens[-1] == "":
        tokens.pop()  # Java's split drops trailing empty strings, but keeps a leading one
    width = _WIDTH[spec.entry_type]
    if len(tokens) != width:
        report("CHECKPOINT_MALFORMED_LINE",
               f"line {no}: {len(tokens)} fields, expected {width}: {line[:_TEXT]!r:.80}", no, text=line[:_TEXT])
        return None
    values: tuple[str | int | None, ...]
    if spec.entry_type is EpochEntry:
        values = (parse_int(tokens[0], INT32), parse_int(tokens[1], INT64))
    else:
        values = (tokens[0], parse_int(tokens[1], INT32), parse_int(tokens[2], INT64))
    if None in values:
        report("CHECKPOINT_MALFORMED_LINE", f"line {no}: a field is not a number in range: {line[:_TEXT]!r:.80}", no,
               text=line[:_TEXT])
        return None
    entry: OffsetEntry | EpochEntry = spec.entry_type(*values)
    numbers = [v for v in values if isinstance(v, int)]
    if any(v < 0 for v in numbers):
        # the epoch cache refuses a negative epoch or offset; offset checkpoints just carry an impossible value
        severity = spec.severity if spec.entry_type is EpochEntry else Severity.LOW
        report("CHECKPOINT_NEGATIVE", f"line {no}: negative value in {line[:_TEXT]!r:.80}", no, severity,
               **_fields(entry))
    if check_name and isinstance(entry, OffsetEntry) and not _LEGAL_TOPIC.fullmatch(entry.topic):
        report("CHECKPOINT_BAD_TOPIC_NAME", f"line {no}: {entry.topic[:_TEXT]!r:.80} is not a legal topic name", no,
               None, topic=entry.topic[:_TEXT])
    return entry


def _semantic_checks(cp: Checkpoint, spec: CheckpointKind, report: _Report) -> None:
    """Entries Kafka reads without complaint but that no broker writes.

    A leader-epoch checkpoint's order is judged by the epoch cache's rules of
    the Kafka version in question (:mod:`kforensics.epoch.diff`), not here.
    """
    if spec.entry_type is EpochEntry:
        return
    seen: dict[tuple[str, int], int] = {}
    for e in cast(list[OffsetEntry], cp.entries):
        seen[(e.topic, e.partition)] = seen.get((e.topic, e.partition), 0) + 1
    dups = sorted(k for k, n in seen.items() if n > 1)
    if dups:
        report("CHECKPOINT_DUPLICATE", f"{len(dups)} partitions appear more than once (Kafka keeps the last line)",
               None, None, partitions=[f"{t}-{p}" for t, p in dups[:20]], count=len(dups))


def encode(kind: str, entries: Iterable[tuple[str | int, ...] | OffsetEntry | EpochEntry]) -> bytes:
    """Entries (objects or plain tuples in field order) as Kafka writes the checkpoint: every line ends in ``\\n``."""
    spec = KINDS[kind]
    rows = [astuple(e) if isinstance(e, (OffsetEntry, EpochEntry)) else tuple(e) for e in entries]
    lines = [str(spec.version), str(len(rows))] + [" ".join(str(x) for x in row) for row in rows]
    return ("\n".join(lines) + "\n").encode("utf-8")
