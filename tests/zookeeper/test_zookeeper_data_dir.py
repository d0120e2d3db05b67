"""ZooKeeper data dirs the lab froze (real ZooKeeper 3.5.9 under Kafka 2.8.2), read as ZooKeeper restores them.

Expected values are what the lab read through a ZooKeeper client just before it froze the evidence (outcome.json,
``restart[0].zookeeper``: ``frozen_states``, the partition state znodes; ``held``, the ephemeral znodes), and
ZooKeeper's own reading rules for damage (``FileTxnLog.FileTxnIterator.next``, ``Util.readTxnBytes``,
``FileSnap.deserialize`` at tag release-3.5.9).  Entry positions are found by walking the frames with ``struct``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import struct
import tarfile
from pathlib import Path

import pytest

from kforensics.log.zookeeper_data_dir import read_zookeeper_dir
from kforensics.zookeeper.partition_state import read_zookeeper_cluster
from tests.conftest import ROOT

_UNPACKED: dict[str, Path] = {}


def _unpack(name: str, where: Path) -> Path:
    """The set's ZooKeeper data dir, unpacked once per test module (the 64 MiB preallocated log inflates slowly)."""
    if name not in _UNPACKED:
        tgz = ROOT / "fixtures" / "lab" / name / "before" / "zookeeper.tgz"
        if not tgz.exists():
            pytest.skip(f"{tgz} is not in this checkout")
        with tarfile.open(tgz) as t:
            t.extractall(where, filter="data")
        _UNPACKED[name] = where / "zookeeper"
    return _UNPACKED[name]


def _frozen(name: str) -> dict:
    outcome = json.loads((ROOT / "fixtures" / "lab" / name / "outcome.json").read_text())["outcome"]
    return next(s["zookeeper"] for s in outcome["restart"] if "zookeeper" in s)


def test_partition_states_and_registrations_are_zookeepers(tmp_path):
    name = "unclean-election-2.8.2"  # the set whose outcome holds what the lab read before freezing
    zk_dir = _unpack(name, tmp_path)
    files = [p for p in zk_dir.rglob("*") if p.is_file()]
    modes = {p: p.stat().st_mode for p in files}
    try:
        for p in files:  # evidence as the lab keeps it: read-only
            p.chmod(modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        before = {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in files}
        zk = read_zookeeper_cluster(zk_dir)
        assert {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in files} == before
    finally:
        for p in files:
            p.chmod(modes[p])
    frozen = _frozen(name)
    assert not zk.findings and not zk.incomplete
    for key, st in frozen["frozen_states"].items():
        topic, _, p = key.rpartition("-")
        got = zk.states[(topic, int(p))]
        assert (got.leader, got.leader_epoch, list(got.isr), got.controller_epoch) == (
            st["leader"], st["leader_epoch"], st["isr"], st["controller_epoch"]), key
    held = set(frozen["held"])
    assert {f"/brokers/ids/{b}" for b in zk.registered} == {p for p in held if p.startswith("/brokers/ids/")}
    assert ("/controller" in held) == (zk.controller is not None)
    assert all(owner in zk.data.tree.sessions for owner in zk.registered.values())  # live sessions own them


def _entries_of(data: bytes) -> list[tuple[int, int]]:
    """(position, length) of each entry: a 16-byte file header, then long checksum, int length, bytes, 'B'."""
    out, pos = [], 16
    while pos + 12 <= len(data):
        (length,) = struct.unpack(">i", data[pos + 8:pos + 12])
        if length == 0:
            break
        out.append((pos, length))
        pos += 12 + length + 1
    return out


def _copy(name: str, tmp_path: Path) -> tuple[Path, Path, list[tuple[int, int]]]:
    """A writable copy whose log keeps its entries and 4 KiB of its preallocated zeros (not 64 MiB: lean)."""
    src = _unpack(name, tmp_path / "src")
    dst = tmp_path / "copy"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("log.*"))
    log = dst / "version-2" / "log.1"
    with open(src / "version-2" / "log.1", "rb") as f:
        head = f.read(1 << 20)
    entries = _entries_of(head)
    pos, length = entries[-1]
    log.write_bytes(head[:pos + 12 + length + 1 + 4096])
    return dst, log, entries


def _state_after(zk_dir: Path) -> dict:
    return read_zookeeper_dir(zk_dir).tree.nodes


def _edit(log: Path, at: int, data: bytes) -> None:
    fd = os.open(log, os.O_WRONLY)
    try:
        os.pwrite(fd, data, at)
    finally:
        os.close(fd)


def test_a_flipped_checksum_is_damage_at_its_entry_and_the_state_before_it_is_kept(tmp_path):
    zk_dir, log, entries = _copy("unclean-election-2.8.2", tmp_path)
    k = len(entries) // 2
    pos, _ = entries[k]
    data = log.read_bytes()
    # the state after the entries before k: the same log cut there (the rest zeros, as preallocated)
    cut = tmp_path / "cut"
    shutil.copytree(zk_dir, cut)
    _edit(cut / "version-2" / "log.1", pos, bytes(len(data) - pos))
    _edit(log, pos + 7, bytes([data[pos + 7] ^ 0x01]))
    got = read_zookeeper_dir(zk_dir)
    damaged = [f for f in got.findings if f.code == "ZOOKEEPER_LOG_DAMAGED"]
    assert [(f.position, "checksum mismatch" in f.message) for f in damaged] == [(pos, True)]
    assert got.incomplete and any(f.code == "ZOOKEEPER_STATE_INCOMPLETE" for f in got.findings)
    assert got.tree.nodes == _state_after(cut)


def test_a_torn_last_entry_ends_the_log_quietly(tmp_path):
    zk_dir, log, entries = _copy("unclean-election-2.8.2", tmp_path)
    pos, length = entries[-1]
    before = tmp_path / "before"
    shutil.copytree(zk_dir, before)
    _edit(before / "version-2" / "log.1", pos, bytes(12 + length + 1))
    with open(log, "r+b") as f:
        f.truncate(pos + 12 + length // 2)  # a write cut in the middle of the last entry
    got = read_zookeeper_dir(zk_dir)
    assert [(f.code, f.position) for f in got.findings] == [("ZOOKEEPER_LOG_TORN_TAIL", pos)]
    assert not got.incomplete  # ZooKeeper too ends the log there (Util.readTxnBytes), and starts
    assert got.tree.nodes == _state_after(before)


def test_zeros_in_the_middle_end_the_log_and_what_follows_is_reported(tmp_path):
    zk_dir, log, entries = _copy("unclean-election-2.8.2", tmp_path)
    pos, length = entries[len(entries) // 3]
    _edit(log, pos, bytes(12 + length + 1))  # a zeroed range: one whole entry
    got = read_zookeeper_dir(zk_dir)
    damaged = [f for f in got.findings if f.code == "ZOOKEEPER_LOG_DAMAGED"]
    assert len(damaged) == 1 and damaged[0].position == pos
    assert damaged[0].facts["resumes_at"] == pos + 12 + length + 1  # the next entry, found again
    assert not got.incomplete  # ZooKeeper too ends the log at the zeros, and starts: what it loads is this
    assert got.tree.last_zxid < read_zookeeper_dir(_copy("unclean-election-2.8.2", tmp_path / "orig")[0]).last_zxid


def test_garbage_and_a_bad_snapshot_never_stop_the_reading(tmp_path):
    zk_dir, log, entries = _copy("unclean-election-2.8.2", tmp_path)
    v2 = zk_dir / "version-2"
    newest = max(v2.glob("snapshot.*"), key=lambda p: int(p.name.split(".")[1], 16))
    (v2 / "snapshot.ff").write_bytes(b"ZKSN" + os.urandom(200) + b"\x00\x00\x00\x01/")  # newest, not a snapshot
    (v2 / "snapshot.fe").write_bytes(b"ZK")  # too short to be one
    pos, _ = entries[2]
    _edit(log, pos, os.urandom(64))
    got = read_zookeeper_dir(zk_dir)
    codes = sorted(f.code for f in got.findings)
    assert codes.count("ZOOKEEPER_SNAPSHOT_DAMAGED") == 2 and "ZOOKEEPER_LOG_DAMAGED" in codes
    assert got.snapshot == str(newest)  # the newest valid one (FileSnap.deserialize tries them newest first)
    assert next(f for f in got.findings if f.code == "ZOOKEEPER_LOG_DAMAGED").position == pos
