"""Dumping every file kind that is not a sequence of batches: decoded through the log layer, verified on demand.

Index verification (kafka-dump-log ``--verify-index-only``) streams the
sibling ``.log`` through the reader and runs the same check as ``scan``
(:class:`~kforensics.checks.index.IndexCheck`), so both report the same
fault with the same code and severity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import Finding, finding
from ..log.file_kinds import FileKind, classify_name
from ..log.side_files import read_side_file


@dataclass
class FileDump:
    """A decoded side file (``value`` None when unreadable or of an unknown kind) and its findings."""

    file: str
    kind: FileKind
    value: Any = None
    findings: list[Finding] = field(default_factory=list)
    sanity: list[Finding] | None = None  # with --index-sanity-check: Kafka's sanityCheck failures ([] = passed)


def dump_file(path: Any, *, verify_index: bool = False, sanity_check: bool = False) -> FileDump:
    """Decode one side file; with ``verify_index`` check an index against its ``.log``."""
    label = str(path)
    kind = classify_name(label)
    out = FileDump(label, kind)
    if kind.kind == "unknown":
        out.findings.append(finding("UNKNOWN_FILE", "not a Kafka file kind kforensics knows (by its name)", file=label))
        return out
    if kind.kind == "lock":
        return out
    sf = read_side_file(path, kind)
    out.value, out.findings = sf.value, list(sf.findings)
    if sf.value is None or kind.kind not in ("offset_index", "time_index"):
        return out
    if sanity_check:
        from ..formats import offset_index, time_index

        mod = offset_index if kind.kind == "offset_index" else time_index
        out.sanity = [f.at(label) for f in mod.sanity_findings(sf.value)]
        out.findings += out.sanity
    if verify_index:
        out.findings += verify(label, kind, sf.value)
    return out


def verify(label: str, kind: FileKind, index: Any) -> list[Finding]:
    """An index's entries against the batches of the ``.log`` beside it."""
    from ..checks.index import IndexCheck
    from ..log.segment_reader import SegmentReader

    log = _sibling_log(label)
    if log is None:
        return [finding("INDEX_WITHOUT_LOG", "no .log beside this index to verify against", file=label)]
    if kind.kind == "offset_index":
        check = IndexCheck(index, None, index_file=label)
    else:
        check = IndexCheck(None, index, timeindex_file=label)
    reader = SegmentReader(log)
    for t in reader.tables():
        check.feed(t)
    return check.finish()


def _sibling_log(label: str) -> Path | None:
    p = Path(label)
    cand = p.with_name(p.name.rsplit(".", 1)[0] + ".log")
    return cand if cand.is_file() else None
