"""Every read loop ends: a read that comes back short is the end of the data, with a finding at that byte.

Issue #22: a segment that shrinks while it is read (a live broker truncating it),
an archive member cut by a partial copy, or a remote read that ends early made
the walk loop forever (it trusted the size taken at open).  Each walk here runs
on a thread with a deadline, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import io
import os
import tarfile
import threading
from pathlib import Path

import pytest

import kforensics.log.segment_reader as sr
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log.sources import TarPath

DEADLINE = 60


def segment_bytes(n: int = 200, value: bytes = b"v" * 200) -> bytes:
    return b"".join(build_batch([RecordData(i, 1_700_000_000_000 + i, None, value)]) for i in range(n))


def walk(path, **kw) -> sr.SegmentReader:
    """Walk ``path`` to its end on a thread; fail (not hang) when it does not end in time."""
    reader = sr.SegmentReader(path, **kw)
    done: list[BaseException | None] = []

    def go():
        try:
            for _ in reader.tables():
                pass
            done.append(None)
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            done.append(e)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(DEADLINE)
    assert done, f"the walk of {path} did not end in {DEADLINE} s"
    if done[0] is not None:
        raise done[0]
    return reader


class Shrinking(io.RawIOBase):
    """A read-only file that a live broker truncates to ``keep`` bytes after the first read (the file itself is
    truncated, a copy in the test's temp dir: the size taken at open is then stale)."""

    def __init__(self, path: Path, keep: int):
        super().__init__()
        self.path, self.keep = path, keep
        self.fh = open(path, "rb", buffering=0)  # noqa: SIM115 - closed with the wrapper
        self.reads = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        return self.fh.seek(offset, whence)

    def tell(self):
        return self.fh.tell()

    def fileno(self):
        return self.fh.fileno()

    def readinto(self, b):
        n = self.fh.readinto(b)
        self.reads += 1
        if self.reads == 1:
            os.truncate(self.path, self.keep)
        return n

    def close(self):
        self.fh.close()
        super().close()


def test_a_local_segment_that_shrinks_while_read_ends_with_a_finding_at_the_byte(tmp_path, monkeypatch):
    data = segment_bytes()
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    keep = len(data) // 2 + 17  # inside an entry
    monkeypatch.setattr(sr, "open_binary", lambda path: Shrinking(Path(path), keep))
    reader = walk(str(p), window=4096)
    s = reader.summary
    [short] = [f for f in s.findings if f.code == "SHORT_READ"]
    # the first read filled the window before the truncation; the data then ends at the truncated size
    assert short.file == str(p) and short.position == keep and short.facts["opened_size"] == len(data)
    assert s.short_read_at == keep and s.size == keep and s.opened_size == len(data)
    assert "TRUNCATED_BATCH" not in {f.code for f in s.findings}  # a cut copy is not a torn write
    assert s.batches == keep // (len(data) // 200)


def test_a_local_segment_that_shrinks_to_an_entry_boundary_ends_too(tmp_path, monkeypatch):
    data = segment_bytes()
    one = len(data) // 200
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    monkeypatch.setattr(sr, "open_binary", lambda path: Shrinking(Path(path), 150 * one))
    s = walk(str(p), window=4096, sha256=True).summary
    assert s.batches == 150 and s.short_read_at == 150 * one
    assert [f.code for f in s.findings] == ["SHORT_READ"]


def _cut_archive(tmp_path: Path, mode: str, suffix: str) -> tuple[Path, int, int]:
    """An archive whose copy stops inside its segment member: (archive, segment size, bytes of it held)."""
    data = segment_bytes(400)
    full = tmp_path / f"full{suffix}"
    with tarfile.open(full, mode) as tar:
        info = tarfile.TarInfo("kafka-logs/t-0/00000000000000000000.log")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    raw = full.read_bytes()
    if suffix == ".tar":
        held = len(data) // 3
        cut_at = 512 + held
    else:
        cut_at = len(raw) // 3  # a third of the compressed stream: inside the member
        held = None
    cut = tmp_path / f"cut{suffix}"
    cut.write_bytes(raw[:cut_at])
    return cut, len(data), held


@pytest.mark.parametrize("mode,suffix", [("w", ".tar"), ("w:gz", ".tgz")])
def test_an_archive_member_cut_by_a_partial_copy_ends_with_a_finding(tmp_path, mode, suffix):
    cut, size, held = _cut_archive(tmp_path, mode, suffix)
    root = TarPath.open(str(cut))
    seg = root / "kafka-logs" / "t-0" / "00000000000000000000.log"
    s = walk(seg, window=4096, sha256=True).summary
    [short] = [f for f in s.findings if f.code == "SHORT_READ"]
    assert short.file == str(seg) and 0 < short.position < size and short.facts["opened_size"] == size
    if held is not None:
        assert short.position == held
    assert s.size == short.position and s.sha256 is not None
    # the archive says which member it cost, and where
    assert root.archive.damaged[seg.parts and "kafka-logs/t-0/00000000000000000000.log"]["position"] == short.position


def test_a_remote_file_that_ends_early_ends_the_walk(tmp_path):
    pafs = pytest.importorskip("pyarrow.fs")
    from kforensics.log.arrow_path import ArrowPath

    data = segment_bytes()
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)

    class Shrunk(ArrowPath):
        def stat(self):  # the listing said the whole size; the file now holds less
            return type(super().stat())(len(data))

    os.truncate(p, len(data) // 4 + 3)
    s = walk(Shrunk(pafs.LocalFileSystem(), str(p)), window=4096).summary
    assert s.short_read_at == len(data) // 4 + 3
    assert [f.code for f in s.findings] == ["SHORT_READ"]


def test_reads_before_the_cut_of_a_member_still_work(tmp_path):
    """Once a member's read came back short, earlier bytes are still read (a resync or a hash goes back)."""
    cut, size, held = _cut_archive(tmp_path, "w", ".tar")
    seg = TarPath.open(str(cut)) / "kafka-logs" / "t-0" / "00000000000000000000.log"
    with seg.open_binary() as fh:
        assert len(fh.read(size)) == held
        fh.seek(0)
        assert len(fh.read(100)) == 100
