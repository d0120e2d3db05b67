"""Index files without their segment's .log (#22): Kafka deletes each at startup ("Found an orphaned index file",
``loadSegmentFiles`` in core/src/main/scala/kafka/log/LogLoader.scala, tag 3.9.0-rc3, the 3.9.0 release); a partition
holding many is one finding that counts them, and no segment object is kept for any of them."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

from kforensics.log.file_kinds import parse_partition_dir_name
from kforensics.log.partition import ORPHANS_KEPT, open_partition
from kforensics.log.sources import resolve
from kforensics.scan.broker import resolve_log_dirs, scan_log_dirs
from tests.conftest import ROOT

HEALTHY = ROOT / "fixtures" / "brokers" / "healthy"


def _broker_with_orphans(tmp_path: Path, n: int) -> Path:
    b = tmp_path / "broker"
    shutil.copytree(HEALTHY, b)
    p = b / "orphans-0"
    p.mkdir()
    for i in range(n):
        (p / f"{1000 + i:020d}.index").write_bytes(b"")
    (p / f"{5000:020d}.timeindex").write_bytes(b"")
    return b


def _orphan_findings(root: Path):
    r = scan_log_dirs([root])
    return [f for f in r.all_findings() if f.code == "INDEX_WITHOUT_LOG"], r


def test_a_few_orphan_indexes_are_one_finding_each(tmp_path):
    found, _ = _orphan_findings(_broker_with_orphans(tmp_path, 2))
    assert sorted(Path(str(f.file)).name for f in found) == [
        "00000000000000001000.index", "00000000000000001001.index", "00000000000000005000.timeindex"]
    assert all("count" not in f.facts for f in found)


def test_many_orphan_indexes_are_one_finding_that_counts_them(tmp_path):
    n = 3 * ORPHANS_KEPT
    found, r = _orphan_findings(_broker_with_orphans(tmp_path, n))
    (f,) = found
    assert Path(str(f.file)).name == "00000000000000001000.index"  # the first by name, as the example
    assert f.facts["count"] == n + 1
    assert (f.facts["lowest_base_offset"], f.facts["highest_base_offset"]) == (1000, 5000)
    assert f"{n + 1} index files" in f.message
    # the log's bounds are still read from the names, as when each orphan was a segment of its own
    p = next(p for p in r.partitions if p.dir_name == "orphans-0")
    assert p.segments == [] and (p.log_start_offset, p.log_end_offset) == (1000, 5000)


def test_an_archive_of_orphan_indexes_keeps_no_segment_for_them(tmp_path):
    archive = tmp_path / "many.tgz"
    n = 2000
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:
        for i in range(n):
            info = tarfile.TarInfo(f"kafka-logs/many-0/{i:020d}.index")
            tar.addfile(info, io.BytesIO(b""))
        info = tarfile.TarInfo("kafka-logs/many-0/00000000000000000007.log")
        tar.addfile(info, io.BytesIO(b""))
    part = resolve(str(archive)) / "kafka-logs" / "many-0"
    name = parse_partition_dir_name("many-0")
    assert name is not None
    pd = open_partition(part, name, [])
    # the one index with its .log belongs to that segment; the others are counted, the first few kept
    assert list(pd.segments) == [7] and pd.segments[7].offset_index is not None
    assert pd.orphan_indexes.count == n - 1 and len(pd.orphan_indexes.kept) == ORPHANS_KEPT
    found, _ = _orphan_findings(resolve_log_dirs([str(archive)])[0])
    assert len(found) == 1 and found[0].facts["count"] == n - 1
