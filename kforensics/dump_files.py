"""``kforensics dump`` for every file kind that is not a sequence of batches.

Indexes, checkpoints, producer snapshots and metadata files, as kafka-dump-log
text (where kafka-dump-log has a format for them) or JSON objects.  Index
verification reads the sibling ``.log`` to check each entry, as
``kafka-dump-log --verify-index-only`` does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from .dump import DumpOptions, DumpResult
from .findings import Finding, Severity
from .formats import (
    checkpoint,
    clean_shutdown,
    meta_properties,
    offset_index,
    partition_metadata,
    producer_snapshot,
    quorum_state,
    time_index,
    txn_index,
)
from .log.file_kinds import FileKind, sniff
from .log.segment_reader import SegmentReader

_SIMPLE = {
    "partition_metadata": partition_metadata,
    "meta_properties": meta_properties,
    "quorum_state": quorum_state,
    "clean_shutdown": clean_shutdown,
}
MAX_SIDE_FILE = 64 << 20  # indexes are at most segment.index.bytes (10 MiB by default)


def _read(path: str, result: DumpResult) -> bytes | None:
    try:
        size = os.path.getsize(path)
        if size > MAX_SIDE_FILE:
            result.findings.append(
                Finding("FILE_TOO_LARGE", Severity.MEDIUM, f"{size} bytes: too large for its kind", file=path)
            )
            return None
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as e:
        result.findings.append(Finding("UNREADABLE_FILE", Severity.HIGH, str(e), file=path))
        return None


def decode_file(path: str, kind: FileKind, data: bytes):
    """The decoded object for a non-batch file kind (None for unknown kinds)."""
    base = kind.base_offset or 0
    if kind.kind == "offset_index":
        return offset_index.decode(data, base)
    if kind.kind == "time_index":
        return time_index.decode(data, base)
    if kind.kind == "txn_index":
        return txn_index.decode(data, kind.base_offset)
    if kind.kind == "producer_snapshot":
        return producer_snapshot.decode(data)
    if kind.kind in checkpoint.KINDS:
        return checkpoint.decode(data, kind.kind)
    if kind.kind in _SIMPLE:
        return _SIMPLE[kind.kind].decode(data)
    return None


def _sibling_log(path: str) -> str | None:
    stem = os.path.basename(path).rsplit(".", 1)[0]
    cand = os.path.join(os.path.dirname(path), stem + ".log")
    return cand if os.path.exists(cand) else None


def _log_batches(log: str) -> list[tuple[int, int, int]]:
    """(position, last_offset, max_timestamp) of every batch of a segment."""
    out = []
    for t in SegmentReader(log).tables():
        out += zip(t["position"].tolist(), t["last_offset"].tolist(), t["max_timestamp"].tolist())
    return out


def verify_index(path: str, kind: FileKind, decoded, opts: DumpOptions) -> list[Finding]:
    """Check index entries against the ``.log`` they point into (the batch's LAST offset)."""
    log = _sibling_log(path)
    if log is None:
        return [Finding("INDEX_WITHOUT_LOG", Severity.LOW, "no .log beside this index to verify against", file=path)]
    batches = _log_batches(log)
    by_pos = {p: (lo, ts) for p, lo, ts in batches}
    findings = []
    if kind.kind == "offset_index":
        for i, (off, pos) in enumerate(decoded.entries):
            got = by_pos.get(pos)
            if got is None or got[0] != off:
                findings.append(
                    Finding(
                        "INDEX_MISMATCH",
                        Severity.LOW,
                        f"Index offset: {off}, log offset: {None if got is None else got[0]}"
                        + ("" if got is not None else f" (no batch starts at position {pos})"),
                        file=path,
                        position=i * offset_index.ENTRY_SIZE,
                        facts={"index_offset": off, "log_offset": None if got is None else got[0], "log_position": pos},
                    )
                )
    else:
        import bisect

        lasts = [lo for _, lo, _ in batches]
        prev_ts = None
        for i, (ts, off) in enumerate(decoded.entries):
            j = bisect.bisect_left(lasts, off)
            if j >= len(batches) or batches[j][1] != off:
                findings.append(Finding("TIMEINDEX_OFFSET_NOT_FOUND", Severity.LOW,
                                        f"Indexed offset: {off}, found log offset: "
                                        f"{batches[j][1] if j < len(batches) else None}",
                                        file=path, position=i * time_index.ENTRY_SIZE, facts={"offset": off}))
            elif batches[j][2] != ts:
                findings.append(Finding("TIMEINDEX_TIMESTAMP_MISMATCH", Severity.LOW,
                                        f"Index timestamp: {ts}, log timestamp: {batches[j][2]}",
                                        file=path, position=i * time_index.ENTRY_SIZE,
                                        facts={"index_timestamp": ts, "log_timestamp": batches[j][2]}))
            if prev_ts is not None and ts <= prev_ts:
                findings.append(Finding("TIMEINDEX_OUT_OF_ORDER", Severity.LOW,
                                        f"Index timestamp: {ts}, Previously indexed timestamp: {prev_ts}",
                                        file=path, position=i * time_index.ENTRY_SIZE))
            prev_ts = ts
    return findings


def _sanity(path: str, kind: FileKind, decoded, size: int) -> Iterator[str]:
    if kind.kind == "offset_index" and not decoded.entries and not decoded.padding_entries:
        yield f"{path} is empty."
        return
    mod = offset_index if kind.kind == "offset_index" else time_index
    problems = mod.sanity_check(decoded, size)
    if problems:
        for p in problems:
            yield f"{path} failed sanity check: {p}"
    else:
        yield f"{path} passed sanity check."


def _collect(path: str, kind: FileKind, opts: DumpOptions, result: DumpResult):
    if kind.kind in ("unknown", "lock"):
        if kind.kind == "unknown":
            result.findings.append(Finding("UNKNOWN_FILE", Severity.LOW,
                                           f"not a Kafka file kind kforensics knows (content looks like: "
                                           f"{_sniff(path)})", file=path))
        return None, None
    data = _read(path, result)
    if data is None:
        return None, None
    decoded = decode_file(path, kind, data)
    for f in decoded.findings:
        result.findings.append(f.at(path))
    if kind.kind in ("offset_index", "time_index"):
        if opts.index_sanity_check:
            for problem in (offset_index if kind.kind == "offset_index" else time_index).sanity_check(decoded, len(data)):
                result.findings.append(Finding("INDEX_SANITY_CHECK_FAILED", Severity.LOW, problem, file=path))
        if opts.verify_index_only:
            result.findings.extend(verify_index(path, kind, decoded, opts))
    return decoded, data


def _sniff(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return sniff(fh.read(64))
    except OSError:
        return None


def dump_other_text(path: str, kind: FileKind, opts: DumpOptions, result: DumpResult) -> Iterator[str]:
    yield f"Dumping {path}"
    decoded, data = _collect(path, kind, opts, result)
    if decoded is None:
        if kind.kind == "unknown":
            yield f"Ignoring unknown file {path}"
        return
    if opts.index_sanity_check and kind.kind in ("offset_index", "time_index"):
        yield from _sanity(path, kind, decoded, len(data))
        return
    if opts.verify_index_only and kind.kind in ("offset_index", "time_index"):
        return
    mod = {
        "offset_index": offset_index,
        "time_index": time_index,
        "txn_index": txn_index,
        "producer_snapshot": producer_snapshot,
    }.get(kind.kind)
    if mod is not None:
        yield from mod.text_lines(decoded)
    elif kind.kind in checkpoint.KINDS:
        yield from checkpoint.text_lines(decoded)
    else:
        for k, v in decoded.to_dict().items():
            if k != "kind":
                yield f"{k}: {v}"


def dump_other_json(path: str, kind: FileKind, opts: DumpOptions, result: DumpResult) -> Iterator[dict[str, Any]]:
    decoded, _ = _collect(path, kind, opts, result)
    if decoded is not None:
        yield {"file": path, **decoded.to_dict()}
