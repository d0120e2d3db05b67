"""Small segments walked together (``log/small_segments.py``): a torn tail leaves only its own segment to the
per-segment reader.  Before, its last batch's length reached into the next file's bytes, the walk read on from
there misaligned, and one garbage entry could swallow the segments after it (on 80 segments, 55 were left to the
slow path); each segment walked alone is the reference."""

from __future__ import annotations

from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.batch_table import COL
from kforensics.log.segment_reader import SegmentReader
from kforensics.log.small_segments import walk_small_segments


def _segment(path, batches: int) -> bytes:
    data = b"".join(build_batch([RecordData(i, 1_700_000_000_000 + i, b"k" * 16, b"v" * 100)], base_offset=i,
                                partition_leader_epoch=0) for i in range(batches))
    path.write_bytes(data)
    return data


def test_a_torn_tail_leaves_only_its_segment_unframed(tmp_path):
    paths = []
    for i in range(80):
        p = tmp_path / f"{i:02d}.log"
        data = _segment(p, 10)
        if i == 18:
            p.write_bytes(data[:-20])  # the last batch torn 20 bytes short
        paths.append(p)
    w = walk_small_segments(paths)
    assert [i for i, ok in enumerate(w.framed.tolist()) if not ok] == [18]
    for i in (0, 19, 79):  # framed ones: the rows the segment reader finds in the file alone
        reader = SegmentReader(paths[i])
        alone = [int(x) for t in reader.tables() for x in t["base_offset"]]
        lo = int(w.first[i])
        assert w.rows[lo:lo + int(w.count[i]), COL["base_offset"]].tolist() == alone == list(range(10))
