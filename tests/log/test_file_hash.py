"""Evidence hashing apart from the walk: prefetched digests are taken only for the very file that was hashed."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.log import file_hash
from kforensics.log.file_hash import HASH_APART, cancel_prefetched, digest_of, prefetch, segment_files
from kforensics.log.segment_reader import SegmentReader


def _segment(path: Path, batches: int, value_size: int = 1000) -> bytes:
    out = bytearray()
    for i in range(batches):
        out += build_batch([RecordData(0, 1_700_000_000_000 + i, key=b"k", value=bytes([i % 251]) * value_size)],
                           partition_leader_epoch=i // 500, base_offset=i)
    path.write_bytes(bytes(out))
    return bytes(out)


@pytest.fixture(autouse=True)
def _clean():
    cancel_prefetched()
    yield
    cancel_prefetched()


def _read_all(path: Path) -> SegmentReader:
    reader = SegmentReader(str(path), sha256=True)
    for _ in reader.tables():
        pass
    return reader


def test_large_and_small_files_get_the_digest_of_their_bytes(tmp_path):
    big, small = tmp_path / "00000000000000000000.log", tmp_path / "00000000000000001000.log"
    big_bytes = _segment(big, 1500)  # above HASH_APART: hashed on the helper thread
    small_bytes = _segment(small, 3)  # hashed from the walk's own reads
    assert len(big_bytes) > HASH_APART >= len(small_bytes)
    for path, data in ((big, big_bytes), (small, small_bytes)):
        r = _read_all(path)
        assert r.summary.sha256 == hashlib.sha256(data).hexdigest()
        assert r.summary.batches == (1500 if path is big else 3)


def test_a_prefetched_digest_is_taken_once_and_only_for_the_same_file(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    data = _segment(seg, 1500)
    assert prefetch([str(seg)]) == 1
    assert str(seg.resolve()) in file_hash._PREFETCHED
    r = _read_all(seg)
    assert r.summary.sha256 == hashlib.sha256(data).hexdigest()
    assert not file_hash._PREFETCHED  # taken

    # the file changes after its prefetch (another inode, same name): the reader hashes what it reads
    assert prefetch([str(seg)]) == 1
    time.sleep(0.01)
    replaced = tmp_path / "new.log"
    new_data = _segment(replaced, 1600)
    os.replace(replaced, seg)
    r = _read_all(seg)
    assert r.summary.sha256 == hashlib.sha256(new_data).hexdigest() != hashlib.sha256(data).hexdigest()


def test_prefetch_skips_small_files_links_and_non_regular_files(tmp_path):
    big = tmp_path / "p-0" / "00000000000000000000.log"
    big.parent.mkdir()
    _segment(big, 1500)
    small = tmp_path / "p-0" / "00000000000000001500.log"
    _segment(small, 2)
    (tmp_path / "p-1").mkdir()
    os.symlink(big, tmp_path / "p-1" / "00000000000000000000.log")
    os.mkfifo(tmp_path / "p-1" / "00000000000000000001.log")
    (tmp_path / "p-1" / "leader-epoch-checkpoint").write_text("0\n0\n")
    found = list(segment_files([str(tmp_path)]))
    assert found == [str(big), str(small)]  # sorted; the link and the FIFO are not followed or listed
    assert prefetch(found + [str(tmp_path / "p-1" / "00000000000000000001.log")]) == 1  # only the large one


def test_prefetch_stops_at_its_byte_budget_or_after_looking_at_enough_files(tmp_path):
    """The hashes' head start is the command's load time: a prefetch queues until its budget is reached, looks at
    a bounded number of files, and takes nothing more from the walk."""
    (tmp_path / "p").mkdir()
    small = [str(tmp_path / "p" / f"{i:020d}.log") for i in (0, 1)]
    big = [str(tmp_path / "p" / f"{i:020d}.log") for i in (10, 20)]
    for path, batches in [*((p, 2) for p in small), *((p, 1500) for p in big)]:
        _segment(Path(path), batches)
    taken = []

    def walk(paths):
        for p in paths:
            taken.append(p)
            yield p

    assert prefetch(walk(big), budget=1) == 1 and taken == big[:1]  # queued one: the budget is spent
    cancel_prefetched()
    taken.clear()
    assert prefetch(walk(small + big), looked_at=2) == 0 and taken == small  # the large ones were never looked at
    taken.clear()
    assert prefetch(walk(small + big)) == 2 and taken == small + big


def test_segment_files_lists_a_directory_only_when_its_files_are_taken(tmp_path, monkeypatch):
    for d in ("a-0", "b-0", "c-0"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "00000000000000000000.log").write_bytes(b"x")
    listed = []
    real = os.scandir
    monkeypatch.setattr(file_hash.os, "scandir", lambda p: listed.append(os.path.basename(p)) or real(p))
    walk = segment_files([str(tmp_path)])
    assert next(walk) == str(tmp_path / "a-0" / "00000000000000000000.log")
    assert listed == [tmp_path.name, "a-0"]
    assert list(walk) == [str(tmp_path / d / "00000000000000000000.log") for d in ("b-0", "c-0")]


def test_digest_of_a_file_not_prefetched_starts_one_and_cancel_stops_it(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    data = _segment(seg, 1500)
    with open(seg, "rb") as fh:
        h = digest_of(str(seg), fh.fileno())
        assert h.result() == hashlib.sha256(data).hexdigest()
        h2 = digest_of(str(seg), fh.fileno())
        h2.cancel()
        assert h2.result() in (None, hashlib.sha256(data).hexdigest())  # stopped, or done before the cancel


def test_scan_command_hashes_and_exits_with_its_code_without_teardown(tmp_path):
    """The command line's scan prefetches the segments' hashes and ends the process itself (no interpreter
    teardown): the report is complete, the exit code the one the findings give, the digests right."""
    import json

    logdir = tmp_path / "logs"
    part = logdir / "t-0"
    part.mkdir(parents=True)
    data = _segment(part / "00000000000000000000.log", 1500)
    (logdir / "meta.properties").write_text("version=1\nbroker.id=1\nnode.id=1\ncluster.id=c\n")
    with open(part / "00000000000000000000.log", "ab") as fh:  # a torn tail: a finding at medium or above
        fh.write(data[:100])
    full = (part / "00000000000000000000.log").read_bytes()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-m", "kforensics", "scan", str(logdir), "--format", "json",
                          "--fail-on", "low"], capture_output=True, env=env, timeout=300)
    assert out.returncode == 1, out.stderr.decode()
    doc = json.loads(out.stdout)  # the whole document was flushed before the process ended
    files = {f["path"]: f for f in doc["files"]}
    assert files[str(part / "00000000000000000000.log")]["sha256"] == hashlib.sha256(full).hexdigest()
    assert any(f["code"] == "TRUNCATED_BATCH" for f in doc["findings"]) or any(
        f["code"] == "TRUNCATED_BATCH" for p in doc["partitions"] for f in p.get("findings", []))
    bad = subprocess.run([sys.executable, "-m", "kforensics", "scan", str(logdir), "--fail-on", "nonsense"],
                         capture_output=True, env=env, timeout=300)
    assert bad.returncode == 2 and b"nonsense" in bad.stderr


def test_a_hash_apart_that_cannot_read_the_file_falls_back_to_the_readers_own_descriptor(tmp_path, monkeypatch):
    """The file is unlinked after the reader opened it: the hash apart cannot open it, the reader hashes what it
    holds open, and the walk's results stand (before: an OSError after the last batch)."""
    seg = tmp_path / "00000000000000000000.log"
    data = _segment(seg, 1500)
    real = file_hash.open_binary

    def vanished(path):
        raise FileNotFoundError(2, "No such file or directory", str(path))

    monkeypatch.setattr(file_hash, "open_binary", vanished)
    r = _read_all(seg)
    assert r.summary.sha256 == hashlib.sha256(data).hexdigest()
    assert r.summary.batches == 1500 and not r.summary.findings
    monkeypatch.setattr(file_hash, "open_binary", real)


def test_stop_hashing_ends_the_thread_and_a_later_hash_starts_it_again(tmp_path):
    """A process about to fork a helper ends its idle hashing thread (a process with another thread is not forked);
    hashing later starts one again, with the same digests."""
    import threading

    def hashing() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("kforensics-file-sha256")]

    seg = tmp_path / "00000000000000000000.log"
    data = _segment(seg, 1500)
    with open(seg, "rb") as fh:
        assert digest_of(str(seg), fh.fileno()).result() == hashlib.sha256(data).hexdigest()
    assert hashing()
    file_hash.stop_hashing()
    assert not hashing()
    with open(seg, "rb") as fh:
        assert digest_of(str(seg), fh.fileno()).result() == hashlib.sha256(data).hexdigest()
    assert hashing()
