"""kafka-dump-log's batch and record lines and the dump's NDJSON objects for a whole run of batches at once
(:class:`~kforensics.dump.segment.BatchGroupEvent`) or a chunk of a batch's records, written by the native library
(:mod:`kforensics.dump.native_lines`) when the caller takes bytes (``raw``) and it is there, else built a column at
a time by pyarrow's string kernels.

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

import functools
import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..dump import native_lines
from ..dump.batch_groups import BatchGroup
from ..formats.compression import CODECS
from ..formats.record_batch import COMPRESSION_MASK, DELETE_HORIZON_BIT, TIMESTAMP_TYPE_BIT, TRANSACTIONAL_BIT
from ..log import kernels
from ..log.batch_table import COL
from .record_values import json_payload, value_text


class _Lazy:
    """A module imported when one of its names is first used."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        import importlib

        module = importlib.import_module(self._name)
        self.__dict__.update(vars(module))  # its names as attributes from now on
        return getattr(module, attr)


if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..dump.segment import BatchGroupEvent
else:  # pyarrow is imported when a run is first formatted by it (the native lines need none of it: 0.3 s)
    pa, pc = _Lazy("pyarrow"), _Lazy("pyarrow.compute")

#: what a renderer gives: one string of lines, or (``raw``, with the native library) the lines as UTF-8 byte strings
Output = str | list[bytes | memoryview]


# columns are made from buffers: pa.array() imports pandas (about 45 MB and 0.3 s) to ask whether it was given one
def _ints(a: np.ndarray) -> pa.Array:
    """An int64 column."""
    a = np.ascontiguousarray(a, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(a), [None, pa.py_buffer(a)])


def _bools(a: np.ndarray) -> pa.Array:
    """A boolean column."""
    return pa.Array.from_buffers(pa.bool_(), len(a), [None, pa.py_buffer(np.packbits(a, bitorder="little"))])


def _strings(items: list[str]) -> pa.Array:
    """A string column."""
    data = [t.encode("utf-8") for t in items]
    offs = np.zeros(len(data) + 1, dtype=np.int32)
    offs[1:] = np.cumsum(np.fromiter(map(len, data), dtype=np.int64, count=len(data)))
    return pa.Array.from_buffers(pa.string(), len(data), [None, pa.py_buffer(offs), pa.py_buffer(b"".join(data))])


@functools.cache
def _lit(text: str) -> pa.Scalar:
    """A string scalar (pyarrow makes a Python one through pa.array)."""
    return _strings([text])[0]


@functools.cache
def _labels(kind: str) -> pa.Array:
    """The words a column of small ids stands for."""
    words = {"bool": ["false", "true"], "ts_type": ["CreateTime", "LogAppendTime"],
             "codec": [CODECS[i] for i in range(len(CODECS))]}[kind]
    return _strings(words)


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _join(*parts: Any) -> pa.Array:
    """Element-wise concatenation of string columns and scalars (a null part: the row is null)."""
    return pc.binary_join_element_wise(*[_lit(p) if isinstance(p, str) else p for p in parts], _lit(""))


def _dec(a: np.ndarray) -> pa.Array:
    """Integers as decimal text (``str(int)``)."""
    return pc.cast(_ints(a), pa.string())


def _pick(labels: pa.Array, index: np.ndarray) -> pa.Array | str:
    """``labels[index]`` per row (a scalar when every row picks the same)."""
    if len(index) and (index == index[0]).all():
        return str(labels[int(index[0])])
    return labels.take(_ints(index))


def _bad_bytes(payload: bytes | bytearray, json: bool) -> np.ndarray:
    """1 for each byte of ``payload`` that is not its own text (in a JSON string: also ``"`` and ``\\``), and a 0
    after the last."""
    buf = np.frombuffer(payload, dtype=np.uint8)
    out = np.zeros(len(buf) + 1, dtype=np.uint8)
    bad = (buf < 0x20) | (buf > 0x7E)
    if json:
        bad |= (buf == 0x22) | (buf == 0x5C)
    out[:-1] = bad
    return out


def _values(payload: bytes | bytearray, bad: np.ndarray, pos: np.ndarray, lens: np.ndarray, prefix: str, suffix: str,
            slow_text: Callable[[bytes | bytearray], str]) -> pa.Array:
    """Keys or values as text pieces: null where absent (``lens < 0``), ``prefix + bytes + suffix`` where every
    byte is its own text (``bad``: :func:`_bad_bytes`), ``slow_text(bytes)`` (in Python) for the rest.

    The pieces are cut from ``payload`` where they lie: a column of ``2n`` spans over it (each key or value, then
    the bytes up to the next), of which every other one is taken; keys (and values) follow one another in the
    records sections, so the spans' bounds never go back."""
    n = len(pos)
    if not n:
        return _strings([])
    present = lens >= 0
    ln = np.where(present, lens, 0)
    end = np.maximum.accumulate(np.where(present, pos + ln, 0))
    start = np.where(present, pos, end)
    bounds = np.empty(2 * n + 1, dtype=np.int64)
    bounds[0:-1:2], bounds[1::2], bounds[-1] = start, end, end[-1]
    if (np.diff(bounds) < 0).any():  # never for records the decoder read in order; said, not guessed
        raise ValueError("keys or values out of order in a run's records")
    slow = (ln > 0) & (np.maximum.reduceat(bad, bounds[:-1])[0::2] > 0)
    valid = np.ones(2 * n, dtype=bool)
    valid[0::2] = present & ~slow
    spans = pa.Array.from_buffers(pa.string(), 2 * n, [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                       pa.py_buffer(bounds.astype(np.int32)), pa.py_buffer(payload)])
    arr = _join(prefix, spans.take(_ints(np.arange(0, 2 * n, 2))), suffix)
    slow_rows = np.flatnonzero(slow)
    if len(slow_rows):
        texts = [slow_text(payload[p : p + m]) for p, m in zip(pos[slow_rows].tolist(), lens[slow_rows].tolist())]
        arr = pc.replace_with_mask(arr, _bools(slow), _strings(texts))
    return arr


class _Run:
    """A run's columns as the lines need them: each record's batch fields and its own (those computed when first
    asked for: the native lines need only :meth:`native_columns`)."""

    offset: np.ndarray
    timestamp: np.ndarray
    sequence: np.ndarray
    key_pos: np.ndarray
    value_pos: np.ndarray
    key_len: np.ndarray
    value_len: np.ndarray
    size: np.ndarray
    headers: np.ndarray

    def __init__(self, g: BatchGroup):
        self.b, self.r, self.owner, self.first = g.batches, g.records, g.record_batch, g.first_record
        self.log_append = (self.b[:, COL["attributes"]] & TIMESTAMP_TYPE_BIT != 0).astype(np.int64)

    def __getattr__(self, name: str) -> np.ndarray:  # a record column, the first time one is asked for
        if name not in _Run.__annotations__:
            raise AttributeError(name)
        self._record_columns()
        return self.__dict__[name]  # type: ignore[no-any-return]

    def _record_columns(self) -> None:
        c = kernels.get().RCOL
        b, r, own = self.b, self.r, self.owner
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
        self.headers = r[:, c["headers_count"]]

    def native_columns(self) -> list[np.ndarray | int]:
        """The records' :data:`~kforensics.dump.native_lines.FIELDS`, the same values as the record columns; for a
        chunk of one batch, what is the same for every record as one int (no column of it built)."""
        if len(self.b) != 1:
            return [self.offset, self.timestamp, self.sequence, self.size, self.key_pos, self.key_len,
                    self.value_pos, self.value_len, self.headers, self.log_append[self.owner],
                    self.b[:, COL["position"]][self.owner]]
        c = kernels.get().RCOL
        row, r = self.b[0], self.r
        d = r[:, c["offset_delta"]]
        bseq = int(row[COL["base_sequence"]])
        with np.errstate(over="ignore"):
            offset = d + row[COL["base_offset"]]
            ts = (int(row[COL["max_timestamp"]]) if self.log_append[0]
                  else r[:, c["timestamp_delta"]] + row[COL["base_timestamp"]])
        return [offset, ts, -1 if bseq < 0 else (d + bseq) % 2147483648, r[:, c["size_in_bytes"]],
                r[:, c["key_pos"]], np.maximum(r[:, c["key_len"]], -1), r[:, c["value_pos"]],
                np.maximum(r[:, c["value_len"]], -1), r[:, c["headers_count"]], int(self.log_append[0]),
                int(row[COL["position"]])]

    def native_batch_columns(self, non_consecutive: np.ndarray | int = 0, previous: np.ndarray | int = 0
                             ) -> list[np.ndarray | int]:
        """The batches' :data:`~kforensics.dump.native_lines.BATCH_FIELDS`, the values :meth:`batch_fields`
        shows."""
        b = self.b
        attrs = b[:, COL["attributes"]]
        base, last, bseq = b[:, COL["base_offset"]], b[:, COL["last_offset"]], b[:, COL["base_sequence"]]
        with np.errstate(over="ignore"):
            last_seq = np.where(bseq >= 0, (bseq + (last - base)) % 2147483648, -1)
        return [b[:, COL["position"]], b[:, COL["size_in_bytes"]], base, last, b[:, COL["records_count"]],
                b[:, COL["crc"]], (b[:, COL["crc"]] == b[:, COL["crc_computed"]]).astype(np.int64),
                attrs & COMPRESSION_MASK, self.log_append, b[:, COL["base_timestamp"]], b[:, COL["max_timestamp"]],
                (attrs & DELETE_HORIZON_BIT != 0).astype(np.int64), b[:, COL["partition_leader_epoch"]],
                (attrs & TRANSACTIONAL_BIT != 0).astype(np.int64), b[:, COL["producer_id"]],
                b[:, COL["producer_epoch"]], bseq, last_seq, non_consecutive, previous]

    def ts_type(self, per_record: bool) -> pa.Array | str:
        return _pick(_labels("ts_type"), self.log_append[self.owner] if per_record else self.log_append)

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
            "txn": _pick(_labels("bool"), (attrs & TRANSACTIONAL_BIT != 0).astype(np.int64)),
            "pos": _dec(b[:, COL["position"]]), "max_ts": _dec(b[:, COL["max_timestamp"]]),
            "base_ts": _dec(b[:, COL["base_timestamp"]]), "size": _dec(b[:, COL["size_in_bytes"]]),
            "codec": _pick(_labels("codec"), attrs & COMPRESSION_MASK), "crc": _dec(b[:, COL["crc"]]),
            "valid": _pick(_labels("bool"), (b[:, COL["crc"]] == b[:, COL["crc_computed"]]).astype(np.int64)),
            "dh": dh, "ts_type": self.ts_type(False),
        }

    def lines(self, batch_lines: pa.Array, record_lines: pa.Array) -> str:
        """Batch and record lines (each ending in a newline) in file order: a batch's line before its records'."""
        nb, nr = len(batch_lines), len(record_lines)
        order = np.empty(nb + nr, dtype=np.int64)
        order[self.first[:-1] + np.arange(nb)] = np.arange(nb)
        order[np.arange(nr) + self.owner + 1] = nb + np.arange(nr)
        return _text_of(pa.concat_arrays([batch_lines, record_lines]).take(_ints(order)))


def _text_of(lines: pa.Array) -> str:
    """A column of lines as one string."""
    offs = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset : lines.offset + len(lines) + 1]
    return str(memoryview(lines.buffers()[2])[offs[0] : offs[-1]], "utf-8") if len(lines) else ""


def _one_batch(batch_row: list[int], payload: bytes | bytearray, rows: np.ndarray) -> BatchGroup:
    """A chunk of one batch's records as a run of that batch."""
    n = len(rows)
    return BatchGroup(np.array([batch_row], dtype=np.int64), payload, rows,
                      np.zeros(n, dtype=np.int64), np.array([0, n], dtype=np.int64))


def _with_headers(run: _Run, lines: pa.Array, slow_line: Callable[[int], str]) -> str:
    """Record lines with those of records with headers replaced by the per-record path's (``slow_line(i)``)."""
    at = np.flatnonzero(run.headers > 0)
    if len(at):
        slow = _strings([slow_line(i) + "\n" for i in at.tolist()])
        lines = pc.replace_with_mask(lines, _bools(run.headers > 0), slow)
    return _text_of(lines)


def _native(raw: bool) -> native_lines.Library | None:
    """The native record-line function when the caller takes byte strings (``raw``) and it is to be had."""
    return native_lines.library() if raw else None


def _native_lines(lib: native_lines.Library, run: _Run, payload: bytes | bytearray, mode: int, head: str,
                  slow_line: Callable[[int], str], batch_lines: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> list[bytes | memoryview]:
    """A run's (or chunk's) lines by the native function, the records it leaves written by ``slow_line(i)`` (with
    its newline); ``batch_lines``: each batch's line (bytes and offsets), written before its records."""
    lines = native_lines.record_lines(lib, run.native_columns(), len(run.r), payload, mode, head.encode("utf-8"),
                                      batch_lines, run.first if batch_lines is not None else None)
    return lines.pieces(slow_line)


def _native_run(lib: native_lines.Library, ev: BatchGroupEvent, print_data: bool, skip_metadata: bool,
                file_json: str | None) -> list[bytes | memoryview]:
    """A run's batch and record lines by the native functions; JSON when ``file_json`` (the file's name as JSON
    text) is given."""
    run, payload = _Run(ev.group), ev.group.payload
    mode = _mode(file_json is not None, print_data, skip_metadata)
    if file_json is None:
        cols = run.native_batch_columns()
        slow = functools.partial(_row_text, run, payload, print_data, skip_metadata)
    else:
        cols = run.native_batch_columns(ev.non_consecutive.astype(np.int64), ev.previous_last)
        slow = functools.partial(_row_json, run, payload, print_data, file_json)
    blines = native_lines.batch_lines(lib, cols, len(run.b), mode, (file_json or "").encode("utf-8"))
    return _native_lines(lib, run, payload, mode, "" if file_json is None else _json_head(file_json), slow, blines)


def _mode(json: bool, print_data: bool, skip_metadata: bool) -> int:
    return ((native_lines.JSON if json else 0) | (native_lines.PRINT_DATA if print_data else 0)
            | (native_lines.SKIP_METADATA if skip_metadata else 0))


def _json_head(file_json: str) -> str:
    return '{"kind": "record", "file": ' + file_json + ', "batch_position": '


def chunk_text(batch_row: list[int], payload: bytes | bytearray, rows: np.ndarray, print_data: bool,
               skip_metadata: bool, slow_line: Callable[[int], str], raw: bool = False) -> Output:
    """The ``| offset: ...`` lines of a chunk of one batch's records (``rows``); ``slow_line(i)``: row ``i``'s
    line by the per-record path (for records with headers)."""
    run = _Run(_one_batch(batch_row, payload, rows))
    lib = _native(raw)
    if lib is not None:
        return _native_lines(lib, run, payload, _mode(False, print_data, skip_metadata), "",
                             lambda i: slow_line(i) + "\n")
    return _with_headers(run, _record_text(run, payload, print_data, skip_metadata), slow_line)


def chunk_json(batch_row: list[int], payload: bytes | bytearray, rows: np.ndarray, print_data: bool,
               file_json: str, slow_line: Callable[[int], str], raw: bool = False) -> Output:
    """The record objects of a chunk of one batch's records, as :func:`chunk_text`."""
    run = _Run(_one_batch(batch_row, payload, rows))
    lib = _native(raw)
    if lib is not None:
        return _native_lines(lib, run, payload, _mode(True, print_data, False), _json_head(file_json),
                             lambda i: slow_line(i) + "\n")
    return _with_headers(run, _record_json(run, payload, print_data, file_json), slow_line)


def _row_text(run: _Run, payload: bytes | bytearray, print_data: bool, skip_metadata: bool, i: int) -> str:
    """Record ``i``'s line of a run (:func:`record_line`'s), in Python: for a key or value the native function
    leaves (not printable ASCII)."""
    line = "| "
    if not skip_metadata:
        ts = "LogAppendTime" if run.log_append[run.owner[i]] else "CreateTime"
        line += (f"offset: {int(run.offset[i])} {ts}: {int(run.timestamp[i])} keySize: {int(run.key_len[i])} "
                 f"valueSize: {int(run.value_len[i])} sequence: {int(run.sequence[i])} headerKeys: []"
                 + (" " if print_data else ""))
    if print_data:
        kp, kl, vp, vl = (int(x[i]) for x in (run.key_pos, run.key_len, run.value_pos, run.value_len))
        line += "" if kl < 0 else "key: " + value_text(payload[kp : kp + kl]) + " "
        line += "payload: null" if vl < 0 else "payload: " + value_text(payload[vp : vp + vl])
    return line + "\n"


def _row_json(run: _Run, payload: bytes | bytearray, print_data: bool, file_json: str, i: int) -> str:
    """Record ``i``'s object of a run (the per-record path's), in Python, as :func:`_row_text`."""
    kp, kl, vp, vl = (int(x[i]) for x in (run.key_pos, run.key_len, run.value_pos, run.value_len))
    key = None if kl < 0 else payload[kp : kp + kl]
    value = None if vl < 0 else payload[vp : vp + vl]
    line = (_json_head(file_json) + f"{int(run.b[run.owner[i], COL['position']])}, \"offset\": {int(run.offset[i])}, "
            f"\"timestamp\": {int(run.timestamp[i])}, \"sequence\": {int(run.sequence[i])}, "
            f"\"size_in_bytes\": {int(run.size[i])}, \"key_size\": {kl}, \"value_size\": {vl}, "
            f"\"key_sha256\": {_sha(key)}, \"value_sha256\": {_sha(value)}, "
            '"headers": [], "crc": null, "is_valid": null, "control": null')
    if print_data:
        line += (', "key": ' + ("null" if key is None else json_payload(key)) + ', "value": '
                 + ("null" if value is None else json_payload(value)))
    return line + "}\n"


def _sha(data: bytes | bytearray | None) -> str:
    return "null" if data is None else '"' + hashlib.sha256(data).hexdigest() + '"'


def group_text(ev: BatchGroupEvent, print_data: bool, skip_metadata: bool, raw: bool = False) -> Output:
    """A run's batch lines and ``| offset: ...`` lines, as kafka-dump-log writes them (:func:`batch_line`,
    :func:`record_line`)."""
    lib = _native(raw)
    if lib is not None:
        return _native_run(lib, ev, print_data, skip_metadata, None)
    run = _Run(ev.group)
    f = run.batch_fields()
    dh = pc.if_else(_bools(f["dh"]), _join("OptionalLong[", f["base_ts"], "]"), _lit("OptionalLong.empty"))
    batch_lines = _join(
        "baseOffset: ", f["base"], " lastOffset: ", f["last"], " count: ", f["count"], " baseSequence: ", f["bseq"],
        " lastSequence: ", f["lseq"], " producerId: ", f["pid"], " producerEpoch: ", f["pepoch"],
        " partitionLeaderEpoch: ", f["epoch"], " isTransactional: ", f["txn"], " isControl: false deleteHorizonMs: ",
        dh, " position: ", f["pos"], " ", f["ts_type"], ": ", f["max_ts"], " size: ", f["size"],
        " magic: 2 compresscodec: ", f["codec"], " crc: ", f["crc"], " isvalid: ", f["valid"], "\n")
    return run.lines(batch_lines, _record_text(run, ev.group.payload, print_data, skip_metadata))


def _record_text(run: _Run, payload: bytes | bytearray, print_data: bool, skip_metadata: bool) -> pa.Array:
    """The ``| offset: ...`` lines of a run's records (:func:`record_line`'s for records without headers)."""
    parts: list[Any] = ["| "]
    if not skip_metadata:
        parts += ["offset: ", _dec(run.offset), " ", run.ts_type(True), ": ", _dec(run.timestamp), " keySize: ",
                  _dec(run.key_len), " valueSize: ", _dec(run.value_len), " sequence: ", _dec(run.sequence),
                  " headerKeys: []"]
        if print_data:
            parts.append(" ")
    if print_data:
        bad = _bad_bytes(payload, False)
        key = _values(payload, bad, run.key_pos, run.key_len, "key: ", " ", lambda d: "key: " + value_text(d) + " ")
        value = _values(payload, bad, run.value_pos, run.value_len, "payload: ", "",
                        lambda d: "payload: " + value_text(d))
        parts += [pc.fill_null(key, _lit("")), pc.fill_null(value, _lit("payload: null"))]
    parts.append("\n")
    return _join(*parts)


def _digests(payload: bytes | bytearray, pos: np.ndarray, lens: np.ndarray) -> pa.Array:
    """Each key's or value's SHA-256 as JSON text (``null`` when absent): the digests by hashlib, their hex in
    numpy."""
    sha = hashlib.sha256
    present = lens >= 0
    at = np.flatnonzero(present)
    raw = b"".join([sha(payload[p : p + n]).digest() for p, n in zip(pos[at].tolist(), lens[at].tolist())])
    d = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 32)
    text = np.empty((len(pos), 66), dtype=np.uint8)
    text[:, 0] = text[:, 65] = ord('"')
    text[at, 1:65:2] = _HEX[d >> 4]
    text[at, 2:65:2] = _HEX[d & 15]
    offs = np.arange(0, 66 * (len(pos) + 1), 66, dtype=np.int32)
    validity = None if len(at) == len(pos) else pa.py_buffer(np.packbits(present, bitorder="little"))
    col = pa.Array.from_buffers(pa.string(), len(pos), [validity, pa.py_buffer(offs), pa.py_buffer(text)])
    return pc.fill_null(col, _lit("null"))


def group_json(ev: BatchGroupEvent, print_data: bool, file_json: str, raw: bool = False) -> Output:
    """A run's batch and record objects, as the per-record path writes them (one per line)."""
    lib = _native(raw)
    if lib is not None:
        return _native_run(lib, ev, print_data, False, file_json)
    run = _Run(ev.group)
    f = run.batch_fields()
    dh = pc.if_else(_bools(f["dh"]), f["base_ts"], _lit("null"))
    prev = pc.if_else(_bools(ev.non_consecutive), _dec(ev.previous_last), _lit("null"))
    batch_lines = _join(
        '{"kind": "batch", "file": ', file_json, ', "position": ', f["pos"], ', "size_in_bytes": ', f["size"],
        ', "magic": 2, "base_offset": ', f["base"], ', "last_offset": ', f["last"], ', "next_offset": ', f["next"],
        ', "count": ', f["count"], ', "crc": ', f["crc"], ', "is_valid": ', f["valid"], ', "compression": "',
        f["codec"], '", "timestamp_type": "', f["ts_type"], '", "base_timestamp": ', f["base_ts"],
        ', "max_timestamp": ', f["max_ts"], ', "delete_horizon_ms": ', dh, ', "partition_leader_epoch": ',
        f["epoch"], ', "is_transactional": ', f["txn"], ', "is_control": false, "producer_id": ', f["pid"],
        ', "producer_epoch": ', f["pepoch"], ', "base_sequence": ', f["bseq"], ', "last_sequence": ', f["lseq"],
        ', "record_count": ', f["count"], ', "recovered": false, "non_consecutive": ',
        _pick(_labels("bool"), ev.non_consecutive.astype(np.int64)), ', "previous_last_offset": ', prev, "}\n")
    return run.lines(batch_lines, _record_json(run, ev.group.payload, print_data, file_json))


def _record_json(run: _Run, payload: bytes | bytearray, print_data: bool, file_json: str) -> pa.Array:
    """The NDJSON objects of a run's records (the per-record path's for records without headers)."""
    parts: list[Any] = [
        '{"kind": "record", "file": ', file_json, ', "batch_position": ',
        _dec(run.b[:, COL["position"]][run.owner]), ', "offset": ', _dec(run.offset), ', "timestamp": ',
        _dec(run.timestamp), ', "sequence": ', _dec(run.sequence), ', "size_in_bytes": ', _dec(run.size),
        ', "key_size": ', _dec(run.key_len), ', "value_size": ', _dec(run.value_len), ', "key_sha256": ',
        _digests(payload, run.key_pos, run.key_len), ', "value_sha256": ',
        _digests(payload, run.value_pos, run.value_len),
        ', "headers": [], "crc": null, "is_valid": null, "control": null']
    if print_data:
        bad = _bad_bytes(payload, True)
        pre, post = '{"encoding": "utf-8", "data": "', '"}'
        parts += [', "key": ', pc.fill_null(_values(payload, bad, run.key_pos, run.key_len, pre, post, json_payload),
                                            _lit("null")),
                  ', "value": ', pc.fill_null(_values(payload, bad, run.value_pos, run.value_len, pre, post,
                                                      json_payload), _lit("null"))]
    parts.append("}\n")
    return _join(*parts)
