"""kafka-dump-log's batch and record lines and the dump's NDJSON objects for a whole run of batches at once
(:class:`~kforensics.dump.segment.BatchGroupEvent`), built a column at a time by pyarrow's string kernels.

The text is :func:`~kforensics.cli.dump_text.batch_line`'s and
:func:`~kforensics.cli.dump_text.record_line`'s (and the JSON the per-record
path's), character for character: numbers are the same decimal integers,
offsets and timestamps wrap as Java's longs do (numpy's int64 arithmetic wraps
the same way) and sequences as Kafka's producer sequences.  A key or value
whose bytes are all printable ASCII (and, for JSON, hold no ``"`` or ``\\``)
is its own text; any other is formatted by the per-record path's function, in
Python, for that value only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..formats.compression import CODECS
from ..formats.record_batch import COMPRESSION_MASK, DELETE_HORIZON_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT
from ..log import kernels
from ..log.batch_table import COL
from .dump_text import _json_payload, _text

if TYPE_CHECKING:
    from ..dump.segment import BatchGroupEvent

#: bytes that are their own text in a line (printable ASCII), and in a JSON string (also not ``"`` or ``\``)
_TEXT_BAD = np.ones(256, dtype=bool)
_TEXT_BAD[0x20:0x7F] = False
_JSON_BAD = _TEXT_BAD.copy()
_JSON_BAD[[0x22, 0x5C]] = True
_FALSE_TRUE = pa.array(["false", "true"])
_TS_TYPES = pa.array(["CreateTime", "LogAppendTime"])
_CODECS = pa.array([CODECS[i] for i in range(len(CODECS))])


def _join(*parts: Any) -> pa.Array:
    """Element-wise concatenation of string columns and scalars (a null part: the row is null)."""
    return pc.binary_join_element_wise(*parts, "")


def _dec(a: np.ndarray) -> pa.Array:
    """Integers as decimal text (``str(int)``)."""
    return pc.cast(pa.array(a, type=pa.int64()), pa.string())


def _pick(labels: pa.Array, index: np.ndarray) -> pa.Array | str:
    """``labels[index]`` per row (a scalar when every row picks the same)."""
    if len(index) and (index == index[0]).all():
        return str(labels[int(index[0])])
    return labels.take(pa.array(index, type=pa.int64()))


def _values(payload: bytes, buf: np.ndarray, pos: np.ndarray, lens: np.ndarray, bad_bytes: np.ndarray,
            prefix: str, suffix: str, slow_text: Callable[[bytes], str]) -> pa.Array:
    """Keys or values as text pieces: null where absent (``lens < 0``), ``prefix + bytes + suffix`` where every
    byte is its own text, ``slow_text(bytes)`` (in Python) for the rest."""
    n = len(pos)
    present = lens >= 0
    ln = np.where(present, lens, 0)
    offs = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(ln, out=offs[1:])
    total = int(offs[-1])
    data = buf[np.repeat(pos - offs[:-1], ln) + np.arange(total, dtype=np.int64)] if total else buf[:0]
    marks = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(bad_bytes[data], out=marks[1:])
    slow = marks[offs[1:]] != marks[offs[:-1]]
    slow_rows = np.flatnonzero(slow)
    if len(slow_rows):  # their bytes left out: what is in a string column is UTF-8
        data = data[np.repeat(~slow, ln)]
        ln = np.where(slow, 0, ln)
        offs[1:] = np.cumsum(ln)
    validity = None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))
    arr = pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offs.astype(np.int32)), pa.py_buffer(data)])
    arr = _join(prefix, arr, suffix)
    if len(slow_rows):
        texts = [slow_text(payload[p : p + m]) for p, m in zip(pos[slow_rows].tolist(), lens[slow_rows].tolist())]
        arr = pc.replace_with_mask(arr, pa.array(slow), pa.array(texts, type=pa.string()))
    return arr


class _Run:
    """A run's columns as the lines need them: each record's batch fields and its own."""

    def __init__(self, ev: BatchGroupEvent):
        g = ev.group
        self.b, self.r, self.owner, self.first = g.batches, g.records, g.record_batch, g.first_record
        self.buf = np.frombuffer(g.payload, dtype=np.uint8)
        c = kernels.get().RCOL
        b, r, own = self.b, self.r, self.owner
        attrs = b[:, COL["attributes"]]
        self.log_append = (attrs & TIMESTAMP_TYPE_BIT != 0).astype(np.int64)
        d = r[:, c["offset_delta"]]
        bseq = b[:, COL["base_sequence"]][own]
        with np.errstate(over="ignore"):
            self.offset = d + b[:, COL["base_offset"]][own]
            ts = r[:, c["timestamp_delta"]] + b[:, COL["base_timestamp"]][own]
        self.timestamp = np.where(self.log_append[own] != 0, b[:, COL["max_timestamp"]][own], ts)
        self.sequence = np.where(bseq >= 0, (d + bseq) % 2147483648, -1)
        self.key_pos, self.value_pos = r[:, c["key_pos"]], r[:, c["value_pos"]]
        self.key_len = np.where(r[:, c["key_len"]] >= 0, r[:, c["key_len"]], -1)
        self.value_len = np.where(r[:, c["value_len"]] >= 0, r[:, c["value_len"]], -1)
        self.size = r[:, c["size_in_bytes"]]

    def ts_type(self, per_record: bool) -> pa.Array | str:
        return _pick(_TS_TYPES, self.log_append[self.owner] if per_record else self.log_append)

    def batch_fields(self) -> dict[str, Any]:
        """The batch columns both lines show, as text."""
        b = self.b
        attrs = b[:, COL["attributes"]]
        base, last, bseq = b[:, COL["base_offset"]], b[:, COL["last_offset"]], b[:, COL["base_sequence"]]
        with np.errstate(over="ignore"):
            last_seq = np.where(bseq >= 0, (bseq + (last - base)) % 2147483648, -1)
        dh = attrs & DELETE_HORIZON_BIT != 0
        return {
            "base": _dec(base), "last": _dec(last), "next": _dec(last + 1), "count": _dec(b[:, COL["records_count"]]),
            "bseq": _dec(bseq), "lseq": _dec(last_seq), "pid": _dec(b[:, COL["producer_id"]]),
            "pepoch": _dec(b[:, COL["producer_epoch"]]), "epoch": _dec(b[:, COL["partition_leader_epoch"]]),
            "txn": _pick(_FALSE_TRUE, (attrs & TRANSACTIONAL_BIT != 0).astype(np.int64)),
            "pos": _dec(b[:, COL["position"]]), "max_ts": _dec(b[:, COL["max_timestamp"]]),
            "base_ts": _dec(b[:, COL["base_timestamp"]]), "size": _dec(b[:, COL["size_in_bytes"]]),
            "codec": _pick(_CODECS, attrs & COMPRESSION_MASK), "crc": _dec(b[:, COL["crc"]]),
            "valid": _pick(_FALSE_TRUE, (b[:, COL["crc"]] == b[:, COL["crc_computed"]]).astype(np.int64)),
            "dh": dh, "ts_type": self.ts_type(False),
        }

    def lines(self, batch_lines: pa.Array, record_lines: pa.Array) -> str:
        """Batch and record lines (each ending in a newline) in file order: a batch's line before its records'."""
        nb, nr = len(batch_lines), len(record_lines)
        order = np.empty(nb + nr, dtype=np.int64)
        order[self.first[:-1] + np.arange(nb)] = np.arange(nb)
        order[np.arange(nr) + self.owner + 1] = nb + np.arange(nr)
        out = pa.concat_arrays([batch_lines, record_lines]).take(pa.array(order))
        offs = np.frombuffer(out.buffers()[1], dtype=np.int32)[out.offset : out.offset + len(out) + 1]
        return str(memoryview(out.buffers()[2])[offs[0] : offs[-1]], "utf-8")

def group_text(ev: BatchGroupEvent, print_data: bool, skip_metadata: bool) -> str:
    """A run's batch lines and ``| offset: ...`` lines, as kafka-dump-log writes them (:func:`batch_line`,
    :func:`record_line`)."""
    run = _Run(ev)
    f = run.batch_fields()
    dh = pc.if_else(pa.array(f["dh"]), _join("OptionalLong[", f["base_ts"], "]"), "OptionalLong.empty")
    batch_lines = _join(
        "baseOffset: ", f["base"], " lastOffset: ", f["last"], " count: ", f["count"], " baseSequence: ", f["bseq"],
        " lastSequence: ", f["lseq"], " producerId: ", f["pid"], " producerEpoch: ", f["pepoch"],
        " partitionLeaderEpoch: ", f["epoch"], " isTransactional: ", f["txn"], " isControl: false deleteHorizonMs: ",
        dh, " position: ", f["pos"], " ", f["ts_type"], ": ", f["max_ts"], " size: ", f["size"],
        " magic: 2 compresscodec: ", f["codec"], " crc: ", f["crc"], " isvalid: ", f["valid"], "\n")
    parts: list[Any] = ["| "]
    if not skip_metadata:
        parts += ["offset: ", _dec(run.offset), " ", run.ts_type(True), ": ", _dec(run.timestamp), " keySize: ",
                  _dec(run.key_len), " valueSize: ", _dec(run.value_len), " sequence: ", _dec(run.sequence),
                  " headerKeys: []"]
        if print_data:
            parts.append(" ")
    if print_data:
        key = _values(ev.group.payload, run.buf, run.key_pos, run.key_len, _TEXT_BAD, "key: ", " ",
                      lambda d: "key: " + _text(d) + " ")
        parts += [pc.fill_null(key, ""),
                  pc.fill_null(_values(ev.group.payload, run.buf, run.value_pos, run.value_len, _TEXT_BAD,
                                       "payload: ", "", lambda d: "payload: " + _text(d)),
                               "payload: null")]
    parts.append("\n")
    return run.lines(batch_lines, _join(*parts))


def _digests(payload: bytes, pos: np.ndarray, lens: np.ndarray) -> pa.Array:
    """Each key's or value's SHA-256 as JSON text (``null`` when absent)."""
    mv = memoryview(payload)
    sha = hashlib.sha256
    return pa.array(['"' + sha(mv[p : p + n]).hexdigest() + '"' if n >= 0 else "null"
                     for p, n in zip(pos.tolist(), lens.tolist())], type=pa.string())


def group_json(ev: BatchGroupEvent, print_data: bool, file_json: str) -> str:
    """A run's batch and record objects, as the per-record path writes them (one per line)."""
    run = _Run(ev)
    f = run.batch_fields()
    dh = pc.if_else(pa.array(f["dh"]), f["base_ts"], "null")
    prev = pc.if_else(pa.array(ev.non_consecutive), _dec(ev.previous_last), "null")
    batch_lines = _join(
        '{"kind": "batch", "file": ', file_json, ', "position": ', f["pos"], ', "size_in_bytes": ', f["size"],
        ', "magic": 2, "base_offset": ', f["base"], ', "last_offset": ', f["last"], ', "next_offset": ', f["next"],
        ', "count": ', f["count"], ', "crc": ', f["crc"], ', "is_valid": ', f["valid"], ', "compression": "',
        f["codec"], '", "timestamp_type": "', f["ts_type"], '", "base_timestamp": ', f["base_ts"],
        ', "max_timestamp": ', f["max_ts"], ', "delete_horizon_ms": ', dh, ', "partition_leader_epoch": ',
        f["epoch"], ', "is_transactional": ', f["txn"], ', "is_control": false, "producer_id": ', f["pid"],
        ', "producer_epoch": ', f["pepoch"], ', "base_sequence": ', f["bseq"], ', "last_sequence": ', f["lseq"],
        ', "record_count": ', f["count"], ', "recovered": false, "non_consecutive": ',
        _pick(_FALSE_TRUE, ev.non_consecutive.astype(np.int64)), ', "previous_last_offset": ', prev, "}\n")
    payload = ev.group.payload
    parts: list[Any] = [
        '{"kind": "record", "file": ', file_json, ', "batch_position": ',
        _dec(run.b[:, COL["position"]][run.owner]), ', "offset": ', _dec(run.offset), ', "timestamp": ',
        _dec(run.timestamp), ', "sequence": ', _dec(run.sequence), ', "size_in_bytes": ', _dec(run.size),
        ', "key_size": ', _dec(run.key_len), ', "value_size": ', _dec(run.value_len), ', "key_sha256": ',
        _digests(payload, run.key_pos, run.key_len), ', "value_sha256": ',
        _digests(payload, run.value_pos, run.value_len),
        ', "headers": [], "crc": null, "is_valid": null, "control": null']
    if print_data:
        null = "null"
        pre, post = '{"encoding": "utf-8", "data": "', '"}'
        parts += [', "key": ', pc.fill_null(_values(payload, run.buf, run.key_pos, run.key_len, _JSON_BAD, pre, post,
                                                    _json_payload), null),
                  ', "value": ', pc.fill_null(_values(payload, run.buf, run.value_pos, run.value_len, _JSON_BAD, pre,
                                                      post, _json_payload), null)]
    parts.append("}\n")
    return run.lines(batch_lines, _join(*parts))
