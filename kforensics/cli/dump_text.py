"""kafka-dump-log's text for batches, records and side files, and the NDJSON objects of side files.

Where kafka-dump-log has a format (batch and record lines, indexes,
producer snapshots) the text is the same, so the two tools' output can be
diffed; other files get ``key: value`` lines.  Every value goes through
escaping, so evidence cannot write control bytes to the terminal.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..serialize import to_jsonable
from .common import payload_text, printable
from .record_values import json_payload, value_text

if TYPE_CHECKING:  # the record types pull in numpy; side files are dumped without it
    import numpy as np

    from ..dump.files import FileDump
    from ..dump.record_chunks import RecordChunks
    from ..dump.segment import SegmentDump
    from ..formats.internal_topics import CoordinatorRecord
    from ..log.records import BatchEntry, Record


def _bool(v: bool | None) -> str:
    return "true" if v else "false"


def _optional_long(v: int | None) -> str:
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def batch_line(d: BatchEntry) -> str:
    """The kafka-dump-log batch line for one entry."""
    if d.magic >= 2:
        line = (f"baseOffset: {d.base_offset} lastOffset: {d.last_offset} count: {d.count} "
                f"baseSequence: {d.base_sequence} lastSequence: {d.last_sequence} producerId: {d.producer_id} "
                f"producerEpoch: {d.producer_epoch} partitionLeaderEpoch: {d.partition_leader_epoch} "
                f"isTransactional: {_bool(d.is_transactional)} isControl: {_bool(d.is_control)} "
                f"deleteHorizonMs: {_optional_long(d.delete_horizon_ms)} position: {d.position} "
                f"{d.timestamp_type}: {d.max_timestamp} size: {d.size_in_bytes} magic: {d.magic} "
                f"compresscodec: {d.compression} crc: {d.crc} isvalid: {_bool(d.is_valid)}")
    else:
        line = (f"offset: {d.last_offset} position: {d.position} {d.timestamp_type}: {d.max_timestamp} "
                f"size: {d.size_in_bytes} magic: {d.magic} compresscodec: {d.compression} crc: {d.crc} "
                f"isvalid: {_bool(d.is_valid)}")
    return line + (" recovered: true" if d.recovered else "")


_CONTROL_LABELS = {
    "LEADER_CHANGE": "LeaderChange:",
    "SNAPSHOT_HEADER": "SnapshotHeader",
    "SNAPSHOT_FOOTER": "SnapshotFooter",
    "KRAFT_VERSION": "KRaftVersion",
    "KRAFT_VOTERS": "KRaftVoters",
}


def _compact(obj: Any) -> str:
    return printable(json.dumps(to_jsonable(obj), ensure_ascii=False, separators=(",", ":")))


def _kafka_json(obj: Any) -> str:
    """JSON as kafka-dump-log prints its decoders' output (Jackson's compact form), escaped for a terminal."""
    return printable(json.dumps(obj, ensure_ascii=False, separators=(",", ":")))


def internal_parts(rec: CoordinatorRecord, offset: int) -> list[str]:
    """What kafka-dump-log's internal-topic decoders print after a record's metadata: ``key: {...} payload:
    {...}`` (``payload: <DELETE>`` for a tombstone), or its ``Unknown record type`` / ``Error at offset`` text;
    the remote-log-metadata decoder prints no key."""
    codes = {f.code for f in rec.findings}
    first = rec.findings[0].message if rec.findings else "does not decode"
    error = f"Error at offset {offset}, skipping. {printable(first)}"
    payload = rec.kafka_payload()
    if rec.decoder == "remote-log-metadata":
        return [f"payload: {_kafka_json(payload) if payload is not None else error}"]
    key = rec.kafka_key()
    if key is None and "INTERNAL_RECORD_UNKNOWN_TYPE" in codes:
        return [f"key: Unknown record type {rec.type_id} at offset {offset}, skipping."]
    if key is None or payload is None:
        return [f"key: {error}"]
    return [f"key: {_kafka_json(key)}", f"payload: {payload if isinstance(payload, str) else _kafka_json(payload)}"]


def record_line(batch: BatchEntry, r: Record, print_data: bool, metadata: dict[str, Any] | None = None,
                skip_metadata: bool = False, internal: CoordinatorRecord | None = None,
                decode: Callable[[bool, bytes | None], str | None] | None = None) -> str:
    """The kafka-dump-log ``| offset: ...`` line for one record (``internal``: the record decoded by an
    internal topic's decoder, printed as kafka-dump-log's decoder prints it; ``decode``: a key or value framed for
    a Schema Registry as JSON text, None to print its bytes)."""
    parts = []
    if not skip_metadata:
        parts.append(f"offset: {r.offset} {batch.timestamp_type}: {r.timestamp} keySize: {r.key_size} "
                     f"valueSize: {r.value_size}")
        if batch.magic >= 2:
            parts.append(f"sequence: {r.sequence} headerKeys: [{printable(','.join(h.key for h in r.headers))}]")
        else:
            parts.append(f"isValid: {_bool(r.is_valid)} crc: {r.crc}")
    control = r.control
    if control:
        kind = control.get("type")
        if kind in ("COMMIT", "ABORT"):
            parts.append(f"endTxnMarker: {kind} coordinatorEpoch: {control.get('coordinatorEpoch')}")
        elif kind in _CONTROL_LABELS:
            body = {k: v for k, v in control.items() if k not in ("type", "typeId", "keyVersion", "detail")}
            parts.append(f"{_CONTROL_LABELS[kind]} {_compact(body)}")
        else:
            parts.append(f"controlType: {kind}({control.get('typeId')})")
    elif metadata is not None:
        parts.append(f"payload: {_compact(metadata)}")
    elif internal is not None:
        parts += internal_parts(internal, r.offset)
    elif print_data:
        key = decode(True, r.key) if decode is not None else None
        value = decode(False, r.value) if decode is not None else None
        if r.key is not None:
            parts.append(f"key: {printable(key) if key is not None else payload_text(r.key)}")
        parts.append(f"payload: {printable(value) if value is not None else payload_text(r.value)}")
    return "| " + " ".join(parts)


# ---------------------------------------------------------------- side files
def file_lines(d: FileDump, verify: bool, sanity: bool) -> Iterator[str]:
    """Text lines for a decoded side file (kafka-dump-log's where it has a format)."""
    kind, v = d.kind.kind, d.value
    if kind in ("offset_index", "time_index"):
        if sanity:
            if kind == "offset_index" and not len(v) and not v.padding_entries:
                yield f"{printable(d.file)} is empty."
            elif d.sanity:
                for f in d.sanity:
                    yield f"{printable(d.file)} failed sanity check: {printable(f.message)}"
            else:
                yield f"{printable(d.file)} passed sanity check."
            return
        if verify:
            return  # like kafka-dump-log: nothing per entry, problems on stderr
        if kind == "offset_index":
            for e in v.entries():
                yield f"offset: {e.offset} position: {e.position}"
        else:
            for e in v.entries():
                yield f"timestamp: {e.timestamp} offset: {e.offset}"
    elif kind == "txn_index":
        for e in v.entries():
            yield (f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
                   f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}")
    elif kind == "producer_snapshot":
        for e in v.entries:
            txn_first = e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None
            line = (f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
                    f"currentTxnFirstOffset: {_optional_long(txn_first)} "
                    f"lastTimestamp: {e.timestamp}")
            if e.has_batch_metadata:
                line += (f" firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} "
                         f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
            yield line
    elif kind.endswith("_checkpoint") and hasattr(v, "entries"):
        yield f"version: {_value(v.version)} entries: {_value(v.declared_count)}"
        for e in v.entries:
            yield " ".join(f"{k}: {_value(x)}" for k, x in to_jsonable(e).items())
    else:
        for k, x in to_jsonable(v).items():
            if k == "findings":
                continue
            if isinstance(x, dict):
                for kk, xx in x.items():
                    yield f"{k}.{printable(str(kk))}: {_value(xx)}"
            else:
                yield f"{k}: {_value(x)}"


def _value(x: Any) -> str:
    """A value for a ``key: value`` line: absent values as ``-``, never a Python repr."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return _bool(x)
    if isinstance(x, (list, dict)):
        return _compact(x)
    return printable(str(x))


def file_objects(d: FileDump, verify: bool, sanity: bool) -> Iterator[dict[str, Any]]:
    """NDJSON objects for a decoded side file: one header object, then one per entry for entry files."""
    kind, v = d.kind.kind, d.value
    if kind in ("offset_index", "time_index", "txn_index"):
        head = {"kind": kind, "file": d.file, "base_offset": getattr(v, "base_offset", None), "entries": len(v)}
        if kind != "txn_index":
            head.update(padding_entries=v.padding_entries, trailing_bytes=v.trailing_bytes)
        if sanity and d.sanity is not None:
            head["sanity_check"] = "passed" if not d.sanity else "failed"
        yield head
        if verify or sanity:
            return
        for e in v.entries():
            yield {"kind": f"{kind}_entry", "file": d.file, **e._asdict()}
        return
    body = {k: x for k, x in to_jsonable(v).items() if k != "findings"}
    yield {"kind": kind, "file": d.file, **body}


# ---------------------------------------------------------------- what follows the point Kafka's reader stops
#: the reader's findings that name a range of bytes no entry can be read from, and what each holds
_DAMAGE = ("ZERO_GAP", "ZERO_TAIL", "CORRUPT_RANGE", "IMPLAUSIBLE_SIZE", "TRUNCATED_BATCH", "TRAILING_BYTES")


def _bytes(n: int) -> str:
    return f"{n} byte{'' if n == 1 else 's'}"


def damaged_ranges(result: SegmentDump) -> list[dict[str, Any]]:
    """The byte ranges of a file of batches that hold no readable entry, in file order: ``{"code", "position",
    "end", "length", "what"}`` (``end`` exclusive), from the reader's findings."""
    out = []
    for f in result.findings:
        if f.code not in _DAMAGE or f.position is None:
            continue
        facts = f.facts
        if f.code == "IMPLAUSIBLE_SIZE":
            end = facts.get("resumed_at") or result.size
            what = f"an entry whose size field claims {facts.get('declared_size')} bytes, past the end of the file"
        elif f.code == "TRUNCATED_BATCH":
            end = result.size
            what = f"a torn batch: it declares {facts.get('declared_size')} bytes"
        elif f.code == "TRAILING_BYTES":
            end = f.position + (facts.get("length") or result.size - f.position)
            what = "too few for an entry header"
        else:
            end = facts.get("end") or result.size
            what = None
        n = end - f.position
        if f.code in ("ZERO_GAP", "ZERO_TAIL"):
            text = f"{n} zero {'byte' if n == 1 else 'bytes'}"
        elif f.code == "CORRUPT_RANGE":
            text = f"{_bytes(n)} unreadable ({printable(f.message.split(': ', 1)[-1].split(' (')[0])})"
        else:
            text = f"{_bytes(n)}, {what}"
        out.append({"code": f.code, "position": f.position, "end": end, "length": n, "what": text})
    return sorted(out, key=lambda r: r["position"])


def stop_lines(result: SegmentDump, recovered: list[tuple[int, int, int, int, int]], name: str) -> list[str]:
    """What lies after the point Kafka's reader stops, for the end of a dump.

    kafka-dump-log's ``Found N invalid bytes at the end of NAME`` where that is true (no valid entry follows);
    otherwise where Kafka's reader stops and why, and each range after it: zero or unreadable bytes, and the valid
    batches that follow (``recovered``: runs of ``(position, end, first offset, last offset, batches)``).
    """
    if not result.trailing_invalid_bytes:
        return []
    if not recovered:
        return [f"Found {result.trailing_invalid_bytes} invalid bytes at the end of {printable(name)}"]
    if result.kafka_stop_kind == "partial":
        why = (f"an entry runs past the end of the file: kafka-dump-log reports \"Found "
               f"{result.trailing_invalid_bytes} invalid bytes at the end\" there")
    else:
        reason = result.kafka_stop or "unreadable entry"
        why = (f"{printable(reason.split(': ', 1)[1])}: kafka-dump-log throws CorruptRecordException there"
               if reason.startswith("CorruptRecordException: ") else printable(reason))
    lines = [f"Kafka's reader stops at byte {result.kafka_valid_bytes} of {printable(name)} ({why}); "
             "valid batches follow:"]
    parts = [(r["position"], r["end"], r["what"]) for r in damaged_ranges(result)]
    for pos, end, first, last, n in recovered:
        offsets = f"offsets {first}..{last}" if first != last else f"offset {first}"
        parts.append((pos, end, f"{n} valid batch{'' if n == 1 else 'es'}, {offsets} "
                                "(listed above with recovered: true)"))
    for pos, end, what in sorted(parts):
        lines.append(f"  bytes {pos}..{end - 1}: {what}")
    return lines


# ---------------------------------------------------------------- records a chunk of rows at a time
#: a chunk of at most this many rows is turned into columns by Python, not numpy
_SMALL_CHUNK = 64
#: a chunk of at least this many rows is formatted from columns (dump_columns: the native lines, or pyarrow's
#: string kernels, whose import costs more than a few hundred lines)
_COLUMNS_FROM = 256
_LONG = 1 << 63


def _long(v: int) -> int:
    """``v`` as Java's long arithmetic leaves it (``wrap_long``)."""
    return v if -_LONG <= v < _LONG else (v + _LONG) % (1 << 64) - _LONG


def _longs(v: list[int]) -> list[int]:
    """:func:`_long` of each (the list itself when all are longs already)."""
    return v if not v or (-_LONG <= min(v) and max(v) < _LONG) else [_long(x) for x in v]


@functools.cache
def _record_cols() -> tuple[int, ...]:
    from ..log import kernels

    c = kernels.get().RCOL
    return tuple(c[n] for n in ("offset_delta", "timestamp_delta", "key_pos", "key_len", "value_pos", "value_len",
                                "headers_count", "size_in_bytes"))


class _Columns:
    """A chunk's records as :class:`Record` holds them, a column at a time (lists of Python ints): offsets and
    timestamps wrap as Java's longs do (numpy's int64 arithmetic wraps the same way), sequences as Kafka's
    producer sequences (``wrap_sequence``), null keys and values are -1 long."""

    def __init__(self, chunks: RecordChunks, rows: np.ndarray):
        import numpy as np

        from ..formats.record_batch import TIMESTAMP_TYPE_BIT

        b = chunks.batch
        od, td, kp, kl, vp, vl, hc, sz = _record_cols()
        n = len(rows)
        if n <= _SMALL_CHUNK:
            self._lists(b, rows.tolist(), TIMESTAMP_TYPE_BIT)
            return
        d = rows[:, od]
        with np.errstate(over="ignore"):
            self.offset = (d + b.base_offset).tolist()
            if b.attributes & TIMESTAMP_TYPE_BIT:
                self.timestamp = [b.max_timestamp] * n
            else:
                self.timestamp = (rows[:, td] + b.base_timestamp).tolist()
        self.sequence = ((d + b.base_sequence) % 2147483648).tolist() if b.base_sequence >= 0 else [-1] * n
        k, v = rows[:, kl], rows[:, vl]
        self.key_size = np.where(k >= 0, k, -1).tolist()
        self.value_size = np.where(v >= 0, v, -1).tolist()
        self.key_pos, self.value_pos = rows[:, kp].tolist(), rows[:, vp].tolist()
        self.size = rows[:, sz].tolist()
        self.with_headers = np.flatnonzero(rows[:, hc] > 0).tolist()

    def _lists(self, b: Any, rows: list[list[int]], log_append_bit: int) -> None:
        """The same columns for a few rows (numpy's calls cost more than the rows then)."""
        od, td, kp, kl, vp, vl, hc, sz = _record_cols()
        d = [r[od] for r in rows]
        base, base_ts, base_seq = b.base_offset, b.base_timestamp, b.base_sequence  # a batch's are attribute calls
        self.offset = _longs([base + x for x in d])
        if b.attributes & log_append_bit:
            self.timestamp = [b.max_timestamp] * len(rows)
        else:
            self.timestamp = _longs([base_ts + r[td] for r in rows])
        self.sequence = [(base_seq + x) % 2147483648 for x in d] if base_seq >= 0 else [-1] * len(d)
        self.key_size = [r[kl] if r[kl] >= 0 else -1 for r in rows]
        self.value_size = [r[vl] if r[vl] >= 0 else -1 for r in rows]
        self.key_pos, self.value_pos = [r[kp] for r in rows], [r[vp] for r in rows]
        self.size = [r[sz] for r in rows]
        self.with_headers = [i for i, r in enumerate(rows) if r[hc] > 0]

    def keys(self, payload: bytes | bytearray) -> list[bytes | bytearray | None]:
        return [payload[p : p + n] if n >= 0 else None for p, n in zip(self.key_pos, self.key_size)]

    def values(self, payload: bytes | bytearray) -> list[bytes | bytearray | None]:
        return [payload[p : p + n] if n >= 0 else None for p, n in zip(self.value_pos, self.value_size)]


def _row_line(batch: BatchEntry, chunks: RecordChunks, payload: bytes | bytearray, rows: np.ndarray,
              print_data: bool, skip_metadata: bool, i: int) -> str:
    """Row ``i``'s line by the per-record path."""
    return record_line(batch, chunks.record(payload, rows[i].tolist()), print_data, skip_metadata=skip_metadata)


def _row_json(chunks: RecordChunks, payload: bytes | bytearray, rows: np.ndarray, slow: Callable[[Record], str],
              i: int) -> str:
    """Row ``i``'s object by the per-record path."""
    return slow(chunks.record(payload, rows[i].tolist()))


def record_chunk_lines(batch: BatchEntry, chunks: RecordChunks, print_data: bool, skip_metadata: bool,
                       raw: bool = False) -> Iterator[str | list[bytes | memoryview]]:
    """The ``| offset: ...`` lines of a batch's records (:func:`record_line`'s, character for character), a
    chunk of rows at a time, each chunk one string of lines ending in a newline (``raw``: or, for chunks the
    native function writes, a list of UTF-8 byte strings)."""
    meta = "" if skip_metadata else (f"offset: {{}} {batch.timestamp_type}: {{}} keySize: {{}} valueSize: {{}} "
                                     "sequence: {} headerKeys: []")
    for payload, rows in chunks.chunks():
        if len(rows) >= _COLUMNS_FROM:  # a column at a time (pyarrow), as runs of batches are
            from .dump_columns import chunk_text

            yield chunk_text(chunks.batch.row, payload, rows, print_data, skip_metadata,
                             functools.partial(_row_line, batch, chunks, payload, rows, print_data, skip_metadata),
                             raw)
            continue
        c = _Columns(chunks, rows)
        n = len(rows)
        if print_data:
            keys = ["" if k is None else f"key: {value_text(k)} " for k in c.keys(payload)]
            values = ["payload: null" if v is None else "payload: " + value_text(v) for v in c.values(payload)]
            fmt = "| " + meta + (" " if meta else "") + "{}{}"
        else:
            keys = values = [""] * n
            fmt = "| " + meta + "{}{}"
        if skip_metadata:
            lines = list(map(fmt.format, keys, values))
        else:
            lines = list(map(fmt.format, c.offset, c.timestamp, c.key_size, c.value_size, c.sequence, keys, values))
        for i in c.with_headers:  # header keys: the per-record path
            lines[i] = record_line(batch, chunks.record(payload, rows[i].tolist()), print_data,
                                   skip_metadata=skip_metadata)
        if lines:
            yield "\n".join(lines) + "\n"


def _sha(data: bytes | bytearray | None) -> str:
    return "null" if data is None else '"' + hashlib.sha256(data).hexdigest() + '"'


def record_chunk_json(batch: BatchEntry, chunks: RecordChunks, print_data: bool, file_json: str,
                      slow: Callable[[Record], str], raw: bool = False) -> Iterator[str | list[bytes | memoryview]]:
    """The NDJSON record objects of a batch's records (those the per-record path writes, byte for byte: the keys
    in :class:`Record`'s order), a chunk of rows at a time; ``file_json``: the file's name as JSON text;
    ``slow``: one record's line by the per-record path (for records with headers)."""
    head = '{"kind": "record", "file": ' + file_json + f', "batch_position": {batch.position}, "offset": '
    fmt = (head.replace("{", "{{").replace("}", "}}") + '{}, "timestamp": {}, "sequence": {}, "size_in_bytes": {}, '
           '"key_size": {}, "value_size": {}, "key_sha256": {}, "value_sha256": {}, "headers": [], "crc": null, '
           '"is_valid": null, "control": null{}}}')
    for payload, rows in chunks.chunks():
        if len(rows) >= _COLUMNS_FROM:
            from .dump_columns import chunk_json

            yield chunk_json(chunks.batch.row, payload, rows, print_data, file_json,
                             functools.partial(_row_json, chunks, payload, rows, slow), raw)
            continue
        c = _Columns(chunks, rows)
        keys, values = c.keys(payload), c.values(payload)
        if print_data:
            data = [', "key": ' + ("null" if k is None else json_payload(k)) + ', "value": '
                    + ("null" if v is None else json_payload(v)) for k, v in zip(keys, values)]
        else:
            data = [""] * len(rows)
        lines = list(map(fmt.format, c.offset, c.timestamp, c.sequence, c.size, c.key_size, c.value_size,
                         map(_sha, keys), map(_sha, values), data))
        for i in c.with_headers:
            lines[i] = slow(chunks.record(payload, rows[i].tolist()))
        if lines:
            yield "\n".join(lines) + "\n"
