"""``kforensics dump``: one file's contents as kafka-dump-log text or NDJSON objects.

Pure functions producing lines or dicts; the CLI only prints them.  Text
output follows ``kafka-dump-log`` (DumpLogSegments) where the two overlap so
operators can diff the two tools' output; JSON output is one object per batch
with snake_case field names, findings as ``{"kind": "finding", ...}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .findings import Finding, Severity
from .log.file_kinds import FileKind, classify_name
from .log.records import entry_dict
from .log.segment_reader import SegmentReader


@dataclass
class DumpOptions:
    deep: bool = False
    print_data: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = 5 * 1024 * 1024
    metadata: bool = False  # decode KRaft metadata record values


@dataclass
class DumpResult:
    """What dumping one file found (the lines/objects are streamed separately)."""

    findings: list[Finding] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)  # kafka-dump-log's stderr reports


def _bool(v: bool) -> str:
    return "true" if v else "false"


def _optional_long(v: int | None) -> str:
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def batch_line(d: dict[str, Any]) -> str:
    """The kafka-dump-log batch line for one entry dict."""
    if d["magic"] >= 2:
        return (
            f"baseOffset: {d['base_offset']} lastOffset: {d['last_offset']} count: {d['count']} "
            f"baseSequence: {d['base_sequence']} lastSequence: {d['last_sequence']} producerId: {d['producer_id']} "
            f"producerEpoch: {d['producer_epoch']} partitionLeaderEpoch: {d['partition_leader_epoch']} "
            f"isTransactional: {_bool(d['is_transactional'])} isControl: {_bool(d['is_control'])} "
            f"deleteHorizonMs: {_optional_long(d['delete_horizon_ms'])} position: {d['position']} "
            f"{d['timestamp_type']}: {d['max_timestamp']} size: {d['size_in_bytes']} magic: {d['magic']} "
            f"compresscodec: {d['compression']} crc: {d['crc']} isvalid: {_bool(d['is_valid'])}"
        )
    return (
        f"offset: {d['last_offset']} position: {d['position']} {d['timestamp_type']}: {d['max_timestamp']} "
        f"size: {d['size_in_bytes']} magic: {d['magic']} compresscodec: {d['compression']} crc: {d['crc']} "
        f"isvalid: {_bool(d['is_valid'])}"
    )


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")


def record_line(batch: dict[str, Any], r: dict[str, Any], print_data: bool) -> str:
    """The kafka-dump-log ``| offset: ...`` line for one record."""
    ts_type = batch["timestamp_type"]
    line = f"| offset: {r['offset']} {ts_type}: {r['timestamp']} keySize: {r['key_size']} valueSize: {r['value_size']}"
    if batch["magic"] >= 2:
        keys = ",".join(h["key"] for h in r["headers"])
        line += f" sequence: {r['sequence']} headerKeys: [{keys}]"
    else:
        line += f" isValid: {_bool(r['is_valid'])} crc: {r['crc']}"
    control = r.get("control")
    if control:
        kind = control.get("type")
        if kind in ("COMMIT", "ABORT"):
            line += f" endTxnMarker: {kind} coordinatorEpoch: {control.get('coordinatorEpoch')}"
        else:
            body = {k: v for k, v in control.items() if k not in ("type", "typeId", "keyVersion", "detail")}
            label = {
                "LEADER_CHANGE": "LeaderChange:",
                "SNAPSHOT_HEADER": "SnapshotHeader",
                "SNAPSHOT_FOOTER": "SnapshotFooter",
                "KRAFT_VERSION": "KRaftVersion",
                "KRAFT_VOTERS": "KRaftVoters",
            }.get(kind)
            if label:
                line += f" {label} {json.dumps(body, default=str, separators=(',', ':'))}"
            else:
                line += f" controlType: {kind}({control.get('typeId')})"
    elif print_data:
        if r.get("key") is not None:
            line += f" key: {_text(r['key'])}"
        line += f" payload: {_text(r.get('value'))}"
    return line


def _is_metadata(path: str, kind: FileKind, opts: DumpOptions) -> bool:
    return opts.metadata or kind.kind in ("kraft_snapshot", "bootstrap_snapshot") or os.path.basename(
        os.path.dirname(os.path.abspath(path))).startswith("__cluster_metadata")


def _decode_metadata(d: dict[str, Any], path: str, result: DumpResult) -> None:
    """Attach the decoded metadata record to each data record (kafka-dump-log --cluster-metadata-decoder)."""
    from .findings import DecodeError
    from .formats.metadata_records import decode_metadata_record

    for r in d.get("records", []):
        if r.get("control") is None and r.get("value") is not None:
            try:
                r["metadata"] = decode_metadata_record(r["value"])
            except DecodeError as e:
                r["metadata"] = {"error": e.message}
                result.findings.append(Finding(e.code, Severity.MEDIUM, e.message, file=path, position=d["position"],
                                               facts={"offset": r["offset"]}))


def dump_batches_text(path: str, kind: FileKind, opts: DumpOptions, result: DumpResult) -> Iterator[str]:
    """kafka-dump-log text for a ``.log`` or KRaft snapshot file."""
    yield f"Dumping {path}"
    if kind.kind == "log":
        yield f"Log starting offset: {kind.base_offset if kind.base_offset is not None else 0}"
    elif kind.kind == "kraft_snapshot":
        yield f"Snapshot end offset: {kind.base_offset}, epoch: {kind.epoch}"
    elif kind.kind == "bootstrap_snapshot":
        yield "KRaft bootstrap snapshot"
    meta = _is_metadata(path, kind, opts)
    deep = opts.deep or opts.print_data or opts.metadata
    reader = SegmentReader(path)
    prev_last = None
    gaps: list[tuple[int, int]] = []
    for b in reader.batches():
        d = entry_dict(b, deep=deep, with_data=opts.print_data or meta)
        if deep and meta:
            _decode_metadata(d, path, result)
        first = d["base_offset"] if d["base_offset"] is not None else d["last_offset"]
        if prev_last is not None and first != prev_last + 1:
            gaps.append((prev_last, first))
        prev_last = d["last_offset"]
        line = batch_line(d)
        if b.recovered:
            line += " recovered: true"
        yield line
        if deep:
            for r in d["records"]:
                line = record_line(d, r, opts.print_data)
                if "metadata" in r:
                    line += " payload: " + json.dumps(r["metadata"], default=str, separators=(",", ":"))
                yield line
            if d["records_error"]:
                result.findings.append(
                    Finding(
                        d["records_error"]["code"],
                        Severity.HIGH,
                        d["records_error"]["message"],
                        file=path,
                        position=b.position,
                    )
                )
    if gaps:
        result.stderr.append(f"Non-consecutive offsets in {os.path.abspath(path)}")
        result.stderr += [f"  {a} is followed by {b}" for a, b in gaps]
    summary = reader.summary
    trailing = summary.size - summary.kafka_valid_bytes
    if trailing:
        yield f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}"
    result.findings.extend(summary.findings)


def dump_batches_json(path: str, opts: DumpOptions, result: DumpResult, kind: FileKind | None = None
                      ) -> Iterator[dict[str, Any]]:
    """NDJSON objects (one per batch) for a ``.log`` or KRaft snapshot file."""
    meta = _is_metadata(path, kind or classify_name(path), opts)
    deep = opts.deep or opts.print_data or opts.metadata
    reader = SegmentReader(path)
    for b in reader.batches():
        d = entry_dict(b, deep=deep, with_data=opts.print_data or meta)
        if deep and meta:
            _decode_metadata(d, path, result)
            if not opts.print_data:
                for r in d["records"]:
                    r.pop("key", None)
                    r.pop("value", None)
        d = {"kind": "batch", "file": path, **d, "recovered": b.recovered}
        if deep and d["records_error"]:
            result.findings.append(
                Finding(d["records_error"]["code"], Severity.HIGH, d["records_error"]["message"], file=path,
                        position=b.position)
            )
        yield d
    result.findings.extend(reader.summary.findings)


def json_default(value: Any) -> Any:
    """Encode bytes payloads for JSON (UTF-8 when they are text, else hex)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return {"hex": data.hex()}
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


__all__ = [
    "DumpOptions",
    "DumpResult",
    "batch_line",
    "record_line",
    "dump_batches_text",
    "dump_batches_json",
    "classify_name",
    "json_default",
]
