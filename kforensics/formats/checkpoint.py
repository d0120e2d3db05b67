"""Kafka's text checkpoint files (``CheckpointFile``): a version line, a count line, then entries.

Kinds: ``replication-offset-checkpoint`` (high watermarks),
``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``cleaner-offset-checkpoint`` (entries ``topic partition offset``) and a
partition's ``leader-epoch-checkpoint`` (entries ``epoch startOffset``).

Decoding is lenient: every problem Kafka would reject the file for becomes a
finding with its line number, and the readable entries are still returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..findings import Finding, Severity

#: kind -> (version, entry field names, severity of a malformed file)
KINDS = {
    # Kafka takes the whole log dir offline when these fail to read
    "replication_offset_checkpoint": (0, ("topic", "partition", "offset"), Severity.HIGH),
    "leader_epoch_checkpoint": (0, ("epoch", "start_offset"), Severity.HIGH),
    # LogManager logs a warning and carries on with an empty map
    "recovery_point_offset_checkpoint": (0, ("topic", "partition", "offset"), Severity.MEDIUM),
    "log_start_offset_checkpoint": (0, ("topic", "partition", "offset"), Severity.MEDIUM),
    "cleaner_offset_checkpoint": (0, ("topic", "partition", "offset"), Severity.MEDIUM),
}


@dataclass
class Checkpoint:
    """A decoded checkpoint: its version, entries (dicts) and findings."""

    kind: str
    version: int | None
    entries: list[dict]
    declared_count: int | None = None
    findings: list[Finding] = field(default_factory=list)

    def offsets(self) -> dict[tuple[str, int], int]:
        """``{(topic, partition): offset}`` for the offset-checkpoint kinds."""
        return {(e["topic"], e["partition"]): e["offset"] for e in self.entries}

    def epochs(self) -> list[tuple[int, int]]:
        """``[(epoch, start_offset)]`` for a leader-epoch checkpoint."""
        return [(e["epoch"], e["start_offset"]) for e in self.entries]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "version": self.version, "declared_count": self.declared_count, "entries": self.entries}


def decode(data: bytes, kind: str) -> Checkpoint:
    expected_version, names, bad = KINDS[kind]
    cp = Checkpoint(kind, None, [])

    def finding(code, message, line, **facts):
        cp.findings.append(Finding(code, bad, message, line=line, facts=facts))

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        finding("CHECKPOINT_NOT_UTF8", f"bytes that are not UTF-8 at byte {e.start}", line, byte=e.start)
        text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return cp  # an empty file reads as an empty list
    try:
        cp.version = int(lines[0].strip())
    except ValueError:
        finding("CHECKPOINT_BAD_VERSION", f"version line {lines[0]!r} is not a number", 1)
        return cp
    if cp.version != expected_version:
        finding("CHECKPOINT_BAD_VERSION", f"version {cp.version}, expected {expected_version}", 1, version=cp.version)
    if len(lines) < 2:
        return cp
    try:
        cp.declared_count = int(lines[1].strip())
    except ValueError:
        finding("CHECKPOINT_BAD_COUNT", f"count line {lines[1]!r} is not a number", 2)
    for no, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if len(parts) != len(names):
            finding("CHECKPOINT_MALFORMED_LINE", f"malformed line {line!r}", no)
            continue
        entry = {}
        try:
            for name, tok in zip(names, parts):
                entry[name] = tok if name == "topic" else int(tok)
        except ValueError:
            finding("CHECKPOINT_MALFORMED_LINE", f"non-integer field in {line!r}", no)
            continue
        if any(v < 0 for k, v in entry.items() if k != "topic"):
            finding("CHECKPOINT_NEGATIVE", f"negative value in {line!r}", no)
        cp.entries.append(entry)
    if cp.declared_count is not None and cp.declared_count != len(lines) - 2:
        finding("CHECKPOINT_COUNT_MISMATCH", f"declares {cp.declared_count} entries, holds {len(lines) - 2}",
                2, declared=cp.declared_count, actual=len(lines) - 2)
    keys = [tuple(e[n] for n in names[:-1]) for e in cp.entries]
    if len(set(keys)) != len(keys):
        finding("CHECKPOINT_DUPLICATE", "the same key appears more than once", None)
    return cp


def encode(kind: str, entries: list[tuple]) -> bytes:
    version = KINDS[kind][0]
    lines = [str(version), str(len(entries))] + [" ".join(str(x) for x in e) for e in entries]
    return ("\n".join(lines) + "\n").encode("utf-8")


def text_lines(cp: Checkpoint) -> Iterator[str]:
    yield f"version: {cp.version} entries: {cp.declared_count}"
    for e in cp.entries:
        yield " ".join(f"{k}: {v}" for k, v in e.items())
