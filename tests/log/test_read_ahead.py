"""The window's read ahead: the next window read on a helper thread while the walk consumes the current one.

The expected records are the ones built into the segment; each walk is also
run with the read ahead switched off, and must give the same tables and
findings.  A file that shrinks between two windows must still end with a
``SHORT_READ`` finding (never a signal, never a hang), at a byte no later
than the bytes actually read.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log import read_window
from kforensics.log.records import iter_record_tables
from kforensics.log.segment_reader import SegmentReader

WINDOW = 64 << 10


def _segment(tmp_path, sizes: list[int]) -> tuple[os.PathLike, list[int]]:
    """Batches of one record each, with values of the given sizes; their offsets."""
    raw = b"".join(build_batch([RecordData(i, 1_700_000_000_000 + i, b"k%d" % i, bytes([i % 251]) * size)])
                   for i, size in enumerate(sizes))
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(raw)
    return p, list(range(len(sizes)))


def _walk(p, monkeypatch, ahead: bool) -> tuple[list, list]:
    with monkeypatch.context() as m:
        m.setattr(read_window, "AHEAD_MIN", 0 if ahead else 1 << 62)
        m.setattr(read_window, "AHEAD_ROOM", 16 << 10)
        reader = SegmentReader(p, window=WINDOW)
        rows, errors = [], []
        for t, rt in iter_record_tables(reader):
            rows += np.column_stack([t["position"][rt.batch_index], rt.data, rt.offset]).tolist()
            errors += [(e.code, e.position) for e in rt.errors]
        errors += [(f.code, f.position) for f in reader.summary.findings]
    return rows, errors


def test_a_segment_of_many_windows_reads_the_same_with_and_without_the_read_ahead(tmp_path, monkeypatch):
    # small batches, batches larger than the room kept before the bytes read ahead (read again the ordinary way),
    # and one larger than the window (the buffer grows)
    sizes = [100 + (i * 37) % 900 for i in range(600)] + [30_000, 20 << 10, 90 << 10] + [300] * 400
    p, offsets = _segment(tmp_path, sizes)
    with_ahead = _walk(p, monkeypatch, True)
    assert with_ahead == _walk(p, monkeypatch, False)
    assert [r[-1] for r in with_ahead[0]] == offsets
    assert with_ahead[1] == []


class _Truncating:
    """Truncates the (test's own copy of the) segment once the walk has read its first tables."""

    def __init__(self, p, keep: int):
        self.p, self.keep = p, keep

    def __call__(self) -> None:
        os.truncate(self.p, self.keep)


@pytest.mark.parametrize("ahead", [True, False])
def test_a_segment_that_shrinks_between_windows_ends_with_a_finding(tmp_path, monkeypatch, ahead):
    p, _ = _segment(tmp_path, [500] * 2000)  # about 1.2 MB: many windows
    size = os.path.getsize(p)
    keep = size // 3 + 123  # inside an entry
    with monkeypatch.context() as m:
        m.setattr(read_window, "AHEAD_MIN", 0 if ahead else 1 << 62)
        reader = SegmentReader(p, window=WINDOW)
        cut = _Truncating(p, keep)
        read_to = 0
        for i, t in enumerate(reader.tables()):
            if i == 0:
                cut()
            read_to = max(read_to, int((t["position"] + t["size_in_bytes"]).max()))
    short = [f for f in reader.summary.findings if f.code == "SHORT_READ"]
    assert len(short) == 1
    # the data ends no earlier than the bytes the walk decoded, and no later than the cut plus what was read
    # ahead before it (one window)
    assert read_to <= short[0].position <= keep + WINDOW + WINDOW
    assert reader.summary.size == short[0].position
