"""``records_columns``: many batches' records decoded with each row's positions, offset and timestamp finished.

Expected values come from the batches as built (their records' offsets and
timestamps, a LogAppendTime batch's max timestamp, the byte where each batch
sits), and the decoding itself from ``records_many`` on the same bytes; both
kernel forms are checked (numba's, and the process's own, native when it
links).
"""

from __future__ import annotations

import numpy as np
import pytest

from kforensics.formats import record_batch
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log import kernels
from kforensics.log.kernels.records_columns import BATCH_INFO

SHIFT = 1_000_000


def _batches() -> tuple[list[bytes], list[list[RecordData]], list[int | None]]:
    specs = [
        ([RecordData(10 + i, 1_700_000_000_000 + 5 * i, b"k%d" % i, b"v" * i) for i in range(4)], None),
        ([RecordData(14, 1_700_000_000_100, None, b"x")], 1_700_000_009_999),  # LogAppendTime
        ([RecordData(15 + i, 1_700_000_000_200 - i, b"k", None) for i in range(3)], None),
    ]
    raws = [build_batch(recs, log_append_time=lat) for recs, lat in specs]
    return raws, [recs for recs, _ in specs], [lat for _, lat in specs]


@pytest.fixture(params=["numba", "process"])
def K(request):
    return kernels.jit() if request.param == "numba" else kernels.get()


def _info(raws: list[bytes], lasts: list[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    info = np.zeros((len(raws), len(BATCH_INFO)), dtype=np.int64)
    col = {name: i for i, name in enumerate(BATCH_INFO)}
    at = 0
    for b, raw in enumerate(raws):
        h = record_batch.RecordBatchHeader.parse(raw[: record_batch.HEADER_SIZE])
        info[b, col["start"]] = at + record_batch.HEADER_SIZE
        info[b, col["end"]] = at + len(raw)
        info[b, col["count"]] = h.records_count
        info[b, col["shift"]] = SHIFT
        info[b, col["base_offset"]] = h.base_offset
        info[b, col["last_offset_delta"]] = h.last_offset_delta if lasts is None else lasts[b]
        info[b, col["base_timestamp"]] = h.base_timestamp
        info[b, col["max_timestamp"]] = h.max_timestamp
        info[b, col["log_append_time"]] = h.attributes & record_batch.TIMESTAMP_TYPE_BIT
        at += len(raw)
    return info, np.frombuffer(b"".join(raws), dtype=np.uint8)


def test_rows_are_finished_as_the_batches_say(K):
    raws, recs, lats = _batches()
    info, buf = _info(raws)
    out, bout = K.new_record_table(16), np.empty(16, dtype=np.int64)
    absolute, status = np.empty((2, 16), dtype=np.int64), np.empty((3, 3), dtype=np.int64)
    done, rows = K.decode_records_columns(buf, info, out, bout, absolute.T, status)
    assert (done, rows) == (3, 8)
    want_off = [r.offset for rs in recs for r in rs]
    want_ts = [lat if lat is not None else r.timestamp for rs, lat in zip(recs, lats) for r in rs]
    assert absolute[0, :8].tolist() == want_off
    assert absolute[1, :8].tolist() == want_ts
    assert bout[:8].tolist() == [0] * 4 + [1] + [2] * 3
    assert status.tolist() == [[kernels.RS_OK, -1, -1]] * 3
    # the rows themselves: records_many's, positions moved by the shift
    many = K.new_record_table(16)
    bmany, smany = np.empty(16, dtype=np.int64), np.zeros(3, dtype=np.int64)
    col = {name: i for i, name in enumerate(BATCH_INFO)}
    assert K.decode_records_many(buf, info[:, col["start"]].copy(), info[:, col["end"]].copy(),
                                 info[:, col["count"]].copy(), many, bmany, smany) == (3, 8)
    for name in ("position", "key_pos", "value_pos", "headers_pos"):
        many[:8, K.RCOL[name]] += SHIFT
    assert np.array_equal(out[:8], many[:8])
    # a key's bytes are where the shifted position says (less the shift)
    first = out[0]
    kp, kl = first[K.RCOL["key_pos"]] - SHIFT, first[K.RCOL["key_len"]]
    assert buf[kp : kp + kl].tobytes() == b"k0"


def test_the_first_record_outside_its_batch_and_the_first_not_increasing_are_noted(K):
    raws, _, _ = _batches()
    # claims a last offset delta of 1 for the first batch (deltas 0..3): record 2 is the first outside
    info, buf = _info(raws, lasts=[1, 0, 2])
    out, bout = K.new_record_table(16), np.empty(16, dtype=np.int64)
    absolute, status = np.empty((2, 16), dtype=np.int64), np.empty((3, 3), dtype=np.int64)
    K.decode_records_columns(buf, info, out, bout, absolute.T, status)
    assert status[:, 1].tolist() == [2, -1, -1]
    assert status[:, 2].tolist() == [-1, -1, -1]
    # a batch whose record offset deltas go 0, 2, 1 (rebuilt with its records out of order)
    rs = [RecordData(20, 1, b"a", b"a"), RecordData(22, 1, b"b", b"b"), RecordData(21, 1, b"c", b"c")]
    raw = build_batch(rs, base_offset=20, last_offset=22)
    info, buf = _info([raw])
    status = np.empty((1, 3), dtype=np.int64)
    K.decode_records_columns(buf, info, out, bout, absolute.T, status)
    assert status.tolist() == [[kernels.RS_OK, -1, 2]]
    assert absolute[0, :3].tolist() == [20, 22, 21]


def test_a_batch_that_does_not_fit_stops_the_call_before_it(K):
    raws, _, _ = _batches()
    info, buf = _info(raws)
    out, bout = K.new_record_table(5), np.empty(5, dtype=np.int64)
    absolute, status = np.empty((2, 5), dtype=np.int64), np.empty((3, 3), dtype=np.int64)
    assert K.decode_records_columns(buf, info, out, bout, absolute.T, status) == (2, 5)
