"""The lab's own ruler (kflab/segments.py) on a damaged batch: a record whose offset delta lands outside its batch
is not counted as held at an invented offset (the lab's crc-flip run crc-flip-2.8.2-s686738073: a flipped byte made
one record's offset -120 in a batch of offsets 0..9, and the truncation check compared that phantom offset)."""

from __future__ import annotations

from kflab.segments import read_segment
from kforensics.formats.record_batch import RecordData, build_batch


def test_a_record_outside_its_batch_is_not_read_as_held(tmp_path):
    values = [f"run|orders|all|{i}|xxxx".encode() for i in range(3)]
    batch = bytearray(build_batch([RecordData(100 + i, 1000 + i, None, v) for i, v in enumerate(values)],
                                  base_offset=100, last_offset=102))
    (good,) = read_segment(_write(tmp_path / "good.log", bytes(batch)))[0]
    assert [o for o, _ in good["records"]] == [100, 101, 102]
    # the second record's offset delta (zig-zag varint: 1 is the byte 2) rewritten to the byte 0x7F (zig-zag -64):
    # a one-byte flip, as the lab's crc-flip incident makes
    first_len = batch[61]  # record length varint (one byte for these small records), zig-zag
    second = 61 + 1 + (first_len >> 1)
    delta_at = second + 1 + 1 + 1  # length, attributes, timestamp delta (one byte each here)
    assert batch[delta_at] == 2  # zig-zag 1
    batch[delta_at] = 0x7F  # zig-zag -64: offset 36, outside 100..102
    (bad,) = read_segment(_write(tmp_path / "bad.log", bytes(batch)))[0]
    assert [o for o, _ in bad["records"]] == [100, 102]


def test_a_record_walk_past_its_batch_ends_the_batchs_records(tmp_path):
    """A flipped record length (the second record's, made huge) runs the walk past the batch's body: the records
    before it are read, the rest are not, and the next batch is read as before (before: IndexError, and the run
    crc-flip-2.8.2-s315412625 ended as a harness error)."""
    first = bytearray(build_batch([RecordData(i, 1000 + i, None, f"run|orders|all|{i}|x".encode()) for i in range(3)],
                                  base_offset=0, last_offset=2))
    second = build_batch([RecordData(3, 1003, None, b"run|orders|all|3|x")], base_offset=3, last_offset=3)
    first_len = first[61]
    at = 61 + 1 + (first_len >> 1)  # the second record's length varint (one byte here)
    first[at] = 0x7E  # zig-zag 63: the record would end past the batch
    batches = read_segment(_write(tmp_path / "walk.log", bytes(first) + second))[0]
    assert [[o for o, _ in b["records"]] for b in batches] == [[0], [3]]
    first[at] = 0xFF  # a varint that never ends inside the batch
    batches = read_segment(_write(tmp_path / "walk2.log", bytes(first) + second))[0]
    assert [[o for o, _ in b["records"]] for b in batches] == [[0], [3]]


def _write(path, data):
    path.write_bytes(data)
    return path
