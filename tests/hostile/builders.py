"""Hostile inputs that never finished or grew without bound (issue #22), built on demand in a temporary dir.

Each builder writes below the directory it is given, never into fixtures or
``../shared``; the hang guard (``test_hang_guard.py``) and the peak-RSS script
(``scripts/hostile_rss.py``) run every command on each of them.  Sizes are
parameters: the tests use small ones, the script the issue's.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

from kforensics.formats.control import encode_control_key, encode_end_txn_marker  # noqa: F401  (re-exported)
from kforensics.formats.group_coordinator import encode
from kforensics.formats.record_batch import RecordData, attributes_of, build_batch, encode_batch
from tests.conftest import ROOT

HEALTHY = ROOT / "fixtures" / "brokers" / "healthy"
T0 = 1_700_000_000_000
ZSTD = 4


def _member(tar: tarfile.TarFile, name: str, data: bytes = b"", size: int | None = None, fileobj=None) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data) if size is None else size
    info.mtime = 1_700_000_000
    tar.addfile(info, fileobj if fileobj is not None else io.BytesIO(data))


class _Zeros(io.RawIOBase):
    def __init__(self, n: int):
        self.left = n

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n


def _healthy_members(tar: tarfile.TarFile, prefix: str = "kafka-logs", *, reverse: bool = False,
                     copies: int = 1) -> None:
    files = sorted(p for p in HEALTHY.rglob("*") if p.is_file())
    names = []
    for c in range(copies):
        for p in files:
            rel = p.relative_to(HEALTHY).as_posix()
            if c and "/" not in rel:
                continue  # root files once
            if c:
                d, f = rel.split("/", 1)
                rel = f"{d.rsplit('-', 1)[0]}-c{c}-{d.rsplit('-', 1)[1]}/{f}"
            names.append((rel, p))
    for rel, p in (reversed(names) if reverse else names):
        _member(tar, f"{prefix}/{rel}", p.read_bytes())


def segment_of(n: int, value: bytes = b"v" * 100) -> bytes:
    return b"".join(build_batch([RecordData(i, T0 + i, None, value)], partition_leader_epoch=0) for i in range(n))


def cut_archive(d: Path, suffix: str = ".tgz") -> Path:
    """A healthy broker plus a large segment, archived, the copy cut inside that segment member (#22: every
    command looped forever at 100% CPU)."""
    mode = "w:gz" if suffix == ".tgz" else "w"
    full = d / f"full-for-cut{suffix}"
    seg = segment_of(3000)
    with tarfile.open(full, mode) as tar:
        _healthy_members(tar)
        _member(tar, "kafka-logs/zz-0/00000000000000000000.log", seg)
    raw = full.read_bytes()
    out = d / f"cut{suffix}"
    out.write_bytes(raw[: len(raw) - (len(raw) // 5 if suffix == ".tgz" else len(seg) // 2)])
    full.unlink()
    return out


def padded_reversed_tgz(d: Path, pad: int = 150 << 20, copies: int = 15) -> Path:
    """A small .tgz: ``pad`` bytes of zeros, then partitions stored in reverse order (#22: 111 s, every backward
    seek re-inflating the stream from its start)."""
    out = d / "padded-reversed.tgz"
    with tarfile.open(out, "w:gz", compresslevel=1) as tar:
        _member(tar, "kafka-logs/aaa-padding", size=pad, fileobj=_Zeros(pad))
        _healthy_members(tar, reverse=True, copies=copies)
    return out


def many_members_tgz(d: Path, n: int = 400_000) -> Path:
    """A .tgz of ``n`` tiny members: index files without their log in one partition (#22: 651 MB, one finding
    and one line of text per member)."""
    out = d / f"members-{n}.tgz"
    with tarfile.open(out, "w:gz", compresslevel=1) as tar:
        _healthy_members(tar)
        for i in range(n):
            _member(tar, f"kafka-logs/many-0/{1000 + i:020d}.index")
    return out


def consumer_offsets_dir(d: Path, groups: int = 1_000_000, per_batch: int = 1000) -> Path:
    """A log dir whose ``__consumer_offsets-0`` holds one commit for each of ``groups`` distinct groups (#22: 1.5 GB
    for ``scan --out`` at 1 M groups)."""
    b = d / f"groups-{groups}"
    shutil.copytree(HEALTHY, b)
    p = b / "__consumer_offsets-0"
    p.mkdir()
    value = {"offset": 5, "leaderEpoch": 0, "metadata": "", "commitTimestamp": T0}
    with open(p / "00000000000000000000.log", "wb") as fh:
        for start in range(0, groups, per_batch):
            recs = []
            for i in range(start, min(groups, start + per_batch)):
                k, v = encode("OffsetCommitValue", 3, {"group": f"group-{i:08d}", "topic": "orders", "partition": 0},
                              value)
                recs.append(RecordData(i, T0, k, v))
            fh.write(build_batch(recs, partition_leader_epoch=0))
    return b


def _tiny_records(n: int) -> bytes:
    """The records section of ``n`` records with no key, no value and no header (7 to 10 bytes each)."""
    out = bytearray()
    for i in range(n):
        z = i << 1  # zigzag of a non-negative offset delta
        delta = bytearray()
        while True:
            if z < 0x80:
                delta.append(z)
                break
            delta.append((z & 0x7F) | 0x80)
            z >>= 7
        body = b"\x00\x00" + bytes(delta) + b"\x01\x01\x00"  # attributes, ts delta 0, offset delta, key -1, value -1
        out.append(len(body) << 1)
        out += body
    return bytes(out)


def zstd_batch_segment(d: Path, n: int = 30_000_000) -> Path:
    """One zstd batch of ``n`` tiny records (#22: ``dump --deep --format json`` did not finish in 10 minutes)."""
    from kforensics.formats.compression import compress

    payload = compress(ZSTD, _tiny_records(n), magic=2)
    batch = encode_batch(payload, base_offset=0, last_offset_delta=n - 1, records_count=n, base_timestamp=T0,
                         max_timestamp=T0, attributes=attributes_of(ZSTD), partition_leader_epoch=0,
                         producer_id=-1, producer_epoch=-1, base_sequence=-1)
    p = d / "zstd-0"
    p.mkdir(parents=True, exist_ok=True)
    seg = p / "00000000000000000000.log"
    seg.write_bytes(batch)
    return seg


def all_inputs(d: Path, *, small: bool = True, names: list[str] | None = None) -> dict[str, Path]:
    """Every hostile input (or those in ``names``), small (tests) or at the issue's sizes (the RSS script)."""
    d.mkdir(parents=True, exist_ok=True)
    zstd = 50_000 if small else int(os.environ.get("KF_ZSTD_RECORDS", 30_000_000))
    makers = {"cut.tgz": lambda: cut_archive(d, ".tgz"), "cut.tar": lambda: cut_archive(d, ".tar"),
              "padded-reversed.tgz": (lambda: padded_reversed_tgz(d, 16 << 20, 5)) if small
              else (lambda: padded_reversed_tgz(d)),
              "many-members.tgz": lambda: many_members_tgz(d, 20_000 if small else 400_000),
              "groups": lambda: consumer_offsets_dir(d, 20_000 if small else 1_000_000),
              "zstd-batch": lambda: zstd_batch_segment(d, zstd)}
    return {k: make() for k, make in makers.items() if names is None or k in names}
