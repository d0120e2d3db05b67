"""``records_plain``: the uncompressed v2 batches of a chunk decoded straight from the batch table.

Expected values come from the batches as built (their records' offsets and
timestamps, a LogAppendTime batch's max timestamp, where each batch sits)
and from Kafka's rules as the other decoders model them (a batch claiming
more records than its section holds is reported as too few; the first record
offset outside the batch is noted); both kernel forms are checked (numba's,
and the process's own, native when it links).
"""

from __future__ import annotations

import numpy as np
import pytest

from kforensics.formats import record_batch
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log import kernels
from kforensics.log.segment_reader import SegmentReader

ROWS = 64


@pytest.fixture(params=["numba", "process"])
def K(request):
    return kernels.jit() if request.param == "numba" else kernels.get()


def _claims(raw: bytes, count: int) -> bytes:
    b = bytearray(raw)
    f = record_batch.HEADER["records_count"]
    b[f.offset : f.offset + f.size] = count.to_bytes(4, "big", signed=True)
    return bytes(b)


def _segment(tmp_path) -> tuple[object, list]:
    specs = [
        ([RecordData(10 + i, 1_700_000_000_000 + 5 * i, b"k%d" % i, b"v" * i) for i in range(4)], None, 0),
        ([RecordData(14, 1_700_000_000_100, None, b"x")], 1_700_000_009_999, 0),  # LogAppendTime
        ([RecordData(15 + i, 1_700_000_000_200, b"k", b"z") for i in range(3)], None, 3),  # lz4: not here
        ([RecordData(18 + i, 1_700_000_000_300, b"k", b"y") for i in range(2)], None, 0),  # claims 5: too few
        ([RecordData(20 + i, 1_700_000_000_400, b"k", b"w") for i in range(40)], None, 0),  # past the room
    ]
    raws = [build_batch(recs, log_append_time=lat, codec=codec) for recs, lat, codec in specs]
    raws[3] = _claims(raws[3], 5)
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b"".join(raws))
    return p, specs


def _run(K, p, room: int) -> tuple:
    reader = SegmentReader(p)
    for t in reader.tables():
        held = reader.held()
        out = K.new_record_table(ROWS)
        bout = np.empty(ROWS, dtype=np.int64)
        absolute = np.empty((ROWS, 2), dtype=np.int64)
        status = np.empty((len(t), 3), dtype=np.int64)
        res = K.records_plain(held.buf, t.data, held.file_pos, held.end, ROWS, room, out, bout, absolute, status, 0)
        return t, tuple(int(x) for x in res), out, bout, absolute, status
    raise AssertionError("no table")


def test_rows_status_and_the_compressed_batch_left_out(K, tmp_path):
    p, specs = _segment(tmp_path)
    t, (nxt, nrows, bad, stop, packed), out, bout, absolute, status = _run(K, p, ROWS)
    assert (nxt, stop, packed) == (5, 0, 1)
    want = [r for i, (recs, _, codec) in enumerate(specs) if codec == 0 for r in recs]
    assert nrows == len(want)
    assert absolute[:nrows, 0].tolist() == [r.offset for r in want]
    ts = [specs[1][1] if r.offset == 14 else r.timestamp for r in want]
    assert absolute[:nrows, 1].tolist() == ts
    assert bout[:nrows].tolist() == [i for i, (recs, _, codec) in enumerate(specs) if codec == 0 for _ in recs]
    rc = K.RCOL
    positions = t["position"]
    # positions are file positions: each record lies inside its batch's bytes
    assert all(positions[b] + record_batch.HEADER_SIZE <= out[k, rc["position"]] < positions[b] + t["size_in_bytes"][b]
               for k, b in enumerate(bout[:nrows].tolist()))
    assert status[:, 0].tolist() == [kernels.RS_OK, kernels.RS_OK, -1, kernels.RS_TOO_FEW, kernels.RS_OK]
    assert bad == 1


def test_the_rows_stop_at_the_room_but_the_first_batch_always_fits(K, tmp_path):
    p, _specs = _segment(tmp_path)
    _t, (nxt, nrows, _bad, stop, _packed), *_ = _run(K, p, 3)
    # the first batch (4 records) passes a room of 3 alone; the next one would pass it
    assert (nxt, nrows, stop) == (1, 4, 2)


def test_a_batch_of_more_records_than_a_table_stops_the_call_for_the_caller(K, tmp_path):
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(build_batch([RecordData(0, 1, None, b"a")]) +
                  build_batch([RecordData(1 + i, 1, None, b"b") for i in range(ROWS + 5)]))
    _t, (nxt, nrows, _bad, stop, _packed), *_ = _run(K, p, ROWS)
    assert (nxt, nrows, stop) == (1, 1, 1)
