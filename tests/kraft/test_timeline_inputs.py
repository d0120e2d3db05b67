"""``timeline`` refuses what is not a KRaft metadata log (exit 2 and a sentence), instead of replaying it.

Kafka keeps the metadata log only in ``__cluster_metadata-0`` (``KafkaRaftManager``, apache/kafka 3.9.0
core/src/main/scala/kafka/raft/RaftManager.scala: the log dir is ``UnifiedLog.logDirName(topicPartition)`` of the
metadata topic partition); any other partition's records are not metadata records.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kforensics.errors import InputError
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.kraft.timeline import build_timeline

T0 = 1_700_000_000_000


def _segment(d: Path, n: int = 40) -> Path:
    d.mkdir(parents=True)
    data = b"".join(build_batch([RecordData(i, T0 + i, f"k{i}".encode(), f"an ordinary record {i}".encode())],
                                partition_leader_epoch=0) for i in range(n))
    f = d / "00000000000000000000.log"
    f.write_bytes(data)
    return f


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kforensics", *args], capture_output=True, text=True, timeout=120)


def test_a_segment_of_an_ordinary_topic_is_refused(tmp_path):
    f = _segment(tmp_path / "orders-0")
    with pytest.raises(InputError, match="not of the KRaft metadata log"):
        build_timeline([str(f)])
    r = _cli("timeline", str(f))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "BAD_METADATA_FRAME" not in r.stdout and "not of the KRaft metadata log" in r.stderr


def test_an_empty_consumer_offsets_segment_is_refused(tmp_path):
    d = tmp_path / "__consumer_offsets-7"
    d.mkdir()
    f = d / "00000000000000000000.log"
    f.write_bytes(b"")
    r = _cli("timeline", str(f))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "no findings" not in r.stdout and "__consumer_offsets" in r.stderr


def test_a_loose_segment_of_ordinary_records_is_refused(tmp_path):
    f = _segment(tmp_path / "copy")  # not a partition dir: only its content can say what it is
    with pytest.raises(InputError, match="not a KRaft metadata log"):
        build_timeline([str(f)])
    r = _cli("timeline", str(f))
    assert r.returncode == 2 and "BAD_METADATA_FRAME" not in r.stdout


def test_a_dir_that_is_no_metadata_log_is_refused(tmp_path):
    _segment(tmp_path / "broker" / "orders-0")
    r = _cli("timeline", str(tmp_path / "broker"))
    assert r.returncode == 2 and "no KRaft metadata log" in r.stderr


def test_a_metadata_segment_is_still_replayed(tmp_path):
    from tests.kraft.test_timeline import part, topic, write_log

    d = write_log(tmp_path, [topic(), part()])
    tl = build_timeline([str(d / "00000000000000000000.log")])
    assert tl.records == 2 and ("t", 0) in tl.partitions
