"""Hostile evidence built in a temporary directory, and ways to run the command line against it.

Every helper writes below the ``tmp_path`` it is given, never into the
project's fixtures or ``../shared``.  Commands run in-process
(:func:`run`) or, where a hang or a terminal is the point, in a child
process with a timeout (:func:`run_process`, :func:`run_on_tty`).
"""

from __future__ import annotations

import io
import json
import os
import select
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import crc32c
from click.testing import CliRunner

from tests.conftest import ROOT
from kforensics.cli import main
from kforensics.formats.control import encode_control_key, encode_snapshot_footer, encode_snapshot_header
from kforensics.formats.metadata_records import encode_metadata_record
from kforensics.formats.record_batch import CRC_START, RecordData, build_batch

HEALTHY = ROOT / "fixtures" / "brokers" / "healthy"
PYTHON = sys.executable
T0 = 1_700_000_000_000
TID = "AAAAAAAAAAAAAAAAAAAABw"
#: the same command line as the installed ``kforensics`` script
CLI = [PYTHON, "-c", "import sys; from kforensics.cli import main; sys.argv[0] = 'kforensics'; main()"]


# --------------------------------------------------------------------------- evidence
def broker(tmp_path: Path, name: str = "broker") -> Path:
    """A copy of the bundled healthy broker (two partitions, every root file) to damage."""
    d = tmp_path / name
    shutil.copytree(HEALTHY, d)
    return d


def topic_record(name: str = "t", tid: str = TID) -> bytes:
    return encode_metadata_record("TopicRecord", 0, {"name": name, "topicId": tid})


def partition_record(leader: int = 1, epoch: int = 0, pepoch: int = 0, tid: str = TID, p: int = 0) -> bytes:
    return encode_metadata_record("PartitionRecord", 0, {
        "partitionId": p, "topicId": tid, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removingReplicas": [],
        "addingReplicas": [], "leader": leader, "leaderEpoch": epoch, "partitionEpoch": pepoch})


def change_record(leader: int, tid: str = TID, p: int = 0) -> bytes:
    return encode_metadata_record("PartitionChangeRecord", 0, {"partitionId": p, "topicId": tid, "leader": leader})


def metadata_batches(values: list[bytes | None], start: int = 0, raft_epoch: int = 1) -> bytes:
    return b"".join(build_batch([RecordData(start + i, T0 + i, None, v)], partition_leader_epoch=raft_epoch)
                    for i, v in enumerate(values))


def write_metadata_log(log_dir: Path, values: list[bytes], start: int = 0) -> Path:
    d = log_dir / "__cluster_metadata-0"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{start:020d}.log"
    p.write_bytes(metadata_batches(values, start))
    return p


def snapshot_bytes(values: list[bytes], end: int = 0, epoch: int = 1) -> bytes:
    """A whole KRaft snapshot: header, the records, footer."""
    ts = T0 + end
    return b"".join([
        build_batch([RecordData(0, ts, encode_control_key("SNAPSHOT_HEADER"), encode_snapshot_header(ts))],
                    control=True, partition_leader_epoch=epoch),
        build_batch([RecordData(1 + i, ts, None, v) for i, v in enumerate(values)], partition_leader_epoch=epoch),
        build_batch([RecordData(1 + len(values), ts, encode_control_key("SNAPSHOT_FOOTER"), encode_snapshot_footer())],
                    control=True, partition_leader_epoch=epoch),
    ])


def write_snapshot(log_dir: Path, values: list[bytes], end: int, epoch: int = 1) -> Path:
    d = log_dir / "__cluster_metadata-0"
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{end:020d}-{epoch:010d}.checkpoint"
    p.write_bytes(snapshot_bytes(values, end, epoch))
    return p


def undecompressable_batch(offset: int, raft_epoch: int = 1) -> bytes:
    """A gzip batch whose CRC is right but whose compressed records are garbage."""
    raw = bytearray(build_batch([RecordData(offset, T0 + offset, None, b"x" * 200)], codec=1,
                                partition_leader_epoch=raft_epoch))
    for i in range(70, len(raw) - 8):
        raw[i] ^= 0x5A
    raw[17:21] = crc32c.crc32c(bytes(raw[CRC_START:])).to_bytes(4, "big")
    return bytes(raw)


def add_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 1_700_000_000
    tar.addfile(info, io.BytesIO(data))


def add_tree(tar: tarfile.TarFile, src: Path, prefix: str) -> None:
    """Every file below ``src`` as a member under ``prefix`` (sorted, so archives are reproducible)."""
    for p in sorted(src.rglob("*")):
        if p.is_file():
            add_member(tar, f"{prefix}/{p.relative_to(src).as_posix()}", p.read_bytes())


# --------------------------------------------------------------------------- running
def run(*args: str, **kw):
    """The command in-process; exceptions are the command's business (its exit code says what happened)."""
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


def run_json(*args: str) -> dict:
    r = run(*args, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


def run_process(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command in a child process: a hang fails the test instead of hanging the suite."""
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, **(env or {})}, errors="backslashreplace")


def run_on_tty(*args: str, timeout: float = 120, columns: int = 240) -> tuple[int, str]:
    """The command with stdout and stderr on a pseudo-terminal (rich renders as on a user's terminal)."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([*CLI, *map(str, args)], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=ROOT,
                            env=env, close_fds=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(args, timeout)
            ready, _, _ = select.select([master], [], [], min(left, 1.0))
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, out.decode("utf-8", "backslashreplace")


def codes(doc: dict) -> list[str]:
    return [f["code"] for f in doc["findings"]]


def findings_of(doc: dict, code: str) -> list[dict]:
    return [f for f in doc["findings"] if f["code"] == code]
