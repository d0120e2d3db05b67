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


def _write(path, data):
    path.write_bytes(data)
    return path
