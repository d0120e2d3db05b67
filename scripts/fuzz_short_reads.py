"""Fuzz kinds of issue #22 for ``scripts/fuzz_campaign.py``: archives cut at random points, files shrinking as read.

``archive_cut``: the bundled healthy broker plus a segment of random batches,
archived as ``.tar`` or ``.tgz`` (members in order or reversed), the copy cut
at a random byte; ``scan`` (most inputs), ``replay`` or ``timeline`` runs on
it in-process through the CLI.  ``shrinking_file``: a segment (random
batches, or a copy of a Kafka-written segment of the fuzz corpus) read while
a "live broker" truncates it: either by the segment reader through a file
truncated to a random size after a random number of reads (reproducible), or
by ``scan`` of a log dir holding the copy while a writer thread truncates it
after a random delay (a race, as on a live broker).  Every file written or
truncated is the campaign's own copy in its work dir, never the evidence.
Judged: no exception escapes, the exit code is 0, 1 or 2, the walk ends (the
campaign's time limit catches a hang), and a short read is reported where
the data ended.  Every input is rebuilt from (kind, index, seed).
"""

from __future__ import annotations

import functools
import io
import json
import os
import random
import shutil
import tarfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEALTHY = ROOT / "fixtures" / "brokers" / "healthy"
KINDS = ("archive_cut", "shrinking_file")


def _segment(rng: random.Random) -> bytes:
    from kforensics.formats.record_batch import RecordData, build_batch

    out, off = [], 0
    for _ in range(rng.randint(1, 60)):
        n = rng.randint(1, 8)
        recs = [RecordData(off + i, 1_700_000_000_000 + off + i, None, rng.randbytes(rng.randint(0, 300)))
                for i in range(n)]
        out.append(build_batch(recs, codec=rng.choice((0, 0, 1, 4)), partition_leader_epoch=rng.randint(0, 3)))
        off += n
    return b"".join(out)


def _archive_cut(rng: random.Random, work: Path) -> tuple[Path, int]:
    mode, suffix = rng.choice((("w", ".tar"), ("w:gz", ".tgz")))
    members = [(f"kafka-logs/{p.relative_to(HEALTHY).as_posix()}", p.read_bytes())
               for p in sorted(HEALTHY.rglob("*")) if p.is_file()]
    members.append(("kafka-logs/fz-0/00000000000000000000.log", _segment(rng)))
    if rng.random() < 0.5:
        members.reverse()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    raw = buf.getvalue()
    cut = rng.randint(1, len(raw))
    path = work / f"cut{suffix}"
    path.write_bytes(raw[:cut])
    return path, len(raw)


def _run_archive_cut(rng: random.Random, work: Path) -> tuple[str | None, list[str], int]:
    from click.testing import CliRunner

    from kforensics.cli import main

    path, size = _archive_cut(rng, work)
    command = rng.choices(("scan", "replay", "timeline"), (6, 1, 1))[0]
    r = CliRunner().invoke(main, [command, str(path), "--format", "json"])
    problems = []
    if r.exit_code not in (0, 1, 2):
        tb = "".join(traceback.format_exception(*r.exc_info)) if r.exc_info else r.output
        return f"{command} of an archive cut at {path.stat().st_size} of {size} bytes: exit {r.exit_code}\n{tb}", [], 0
    if command != "scan":
        return None, problems, 0
    findings = 0
    if r.exit_code in (0, 1):
        try:
            doc = json.loads(r.stdout)
            findings = len(doc["findings"])
        except (ValueError, KeyError) as e:
            problems.append(f"scan output is not a report: {e}")
    return None, problems, findings


class _Shrinking(io.RawIOBase):
    def __init__(self, path: Path, keep: int, after: int):
        super().__init__()
        self.path, self.keep, self.after, self.reads = path, keep, after, 0
        self.fh = open(path, "rb", buffering=0)  # noqa: SIM115 - closed with the wrapper

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
        self.reads += 1
        if self.reads == self.after:
            os.truncate(self.path, self.keep)
        return self.fh.readinto(b)

    def close(self):
        self.fh.close()
        super().close()


def _source_segment(rng: random.Random) -> bytes:
    """Random batches, or (one time in three) a Kafka-written segment of the fuzz corpus: the input a copy is made
    of (the corpus file itself is only read)."""
    if rng.random() < 1 / 3:
        files = _corpus_segments()
        if files:
            return rng.choice(files)
    return _segment(rng)


@functools.cache
def _corpus_segments() -> list[bytes]:
    from tests.fuzz import corpus

    pool = [s for kind in ("log_v2", "control", "metadata_log") for s in corpus.all_seeds().get(kind, [])]
    return [data for seed in pool for name, data in seed.files.items() if name.endswith(".log") and data]


def _run_live_truncation(rng: random.Random, work: Path, data: bytes) -> tuple[str | None, list[str], int]:
    """``scan`` of a log dir holding a copy of a segment while a writer thread truncates the copy (a race)."""
    import threading

    from click.testing import CliRunner

    from kforensics.cli import main

    part = work / "live" / "fz-0"
    part.mkdir(parents=True, exist_ok=True)
    for side in ("meta.properties",):
        if (HEALTHY / side).exists():
            (work / "live" / side).write_bytes((HEALTHY / side).read_bytes())
    path = part / "00000000000000000000.log"
    path.write_bytes(data)
    keep, delay = rng.randint(0, len(data)), rng.choice((0.0, 0.0005, 0.002, 0.01, 0.05))
    writer = threading.Timer(delay, os.truncate, (path, keep))
    writer.start()
    try:
        r = CliRunner().invoke(main, ["scan", str(work / "live"), "--format", "json"])
    finally:
        writer.cancel()
        writer.join()
    if r.exit_code not in (0, 1, 2):
        tb = "".join(traceback.format_exception(*r.exc_info)) if r.exc_info else r.output
        return f"scan of a segment truncated {len(data)} -> {keep} after {delay} s: exit {r.exit_code}\n{tb}", [], 0
    return None, [], 0


def _run_shrinking(rng: random.Random, work: Path) -> tuple[str | None, list[str], int]:
    import kforensics.log.segment_reader as sr

    data = _source_segment(rng)
    if rng.random() < 0.25:
        return _run_live_truncation(rng, work, data)
    path = work / "00000000000000000000.log"
    path.write_bytes(data)
    keep, after = rng.randint(0, len(data)), rng.randint(1, 4)
    real = sr.open_binary
    sr.open_binary = lambda p: _Shrinking(Path(p), keep, after)
    try:
        reader = sr.SegmentReader(str(path), window=rng.choice((4096, 16384, 1 << 20)), sha256=rng.random() < 0.5)
        for _ in reader.tables():
            pass
    except Exception:  # noqa: BLE001 - reported as a crash
        return f"shrinking file ({len(data)} -> {keep} after read {after}):\n{traceback.format_exc()}", [], 0
    finally:
        sr.open_binary = real
    s = reader.summary
    problems = []
    # the reads before the truncation may have taken more than ``keep`` bytes: the data ends where reads ended
    if s.short_read_at is not None and not 0 <= s.short_read_at < len(data):
        problems.append(f"short read reported at {s.short_read_at} of a file of {len(data)} bytes")
    if s.short_read_at is None and s.size != len(data):
        problems.append(f"{s.size} of {len(data)} bytes read, and no short read reported")
    if s.short_read_at is not None and not any(f.code == "SHORT_READ" for f in s.findings):
        problems.append("a short read without a SHORT_READ finding")
    return None, problems, len(s.findings)


def run(kind: str, index: int, mseed: int, work: Path):
    """One input of ``kind``: an ``Outcome`` of ``tests.fuzz.harness`` and the input's size."""
    from tests.fuzz.harness import Outcome

    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(mseed)
    crash, problems, findings = (_run_archive_cut if kind == "archive_cut" else _run_shrinking)(rng, work)
    size = sum(p.stat().st_size for p in work.rglob("*") if p.is_file())
    for p in work.iterdir():
        if p.is_file():
            p.unlink()
        elif p.is_dir():
            shutil.rmtree(p)
    return Outcome(crash=crash, problems=problems, findings=findings), size
