"""Scanning holds no batch rows beyond a bounded window: with or without ``--out``, memory does not grow with the
number of batches (measured by what is held and traced, never by time)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kforensics.formats import record_batch
from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.scan.broker import scan_log_dirs
from kforensics.scan.partition import SCAN_ROWS
from kforensics.tables.scan_tables import BatchesWriter, ScanParquet
from tests.conftest import ROOT

META = "#\nversion=1\nbroker.id=1\nnode.id=1\ncluster.id=memoryTestCluster00000\n"


def _log_dir(root: Path, batches: int, partitions: int = 1) -> Path:
    """A log dir whose partitions each hold ``batches`` one-record v2 batches (offsets 0.., epochs rising)."""
    template = np.frombuffer(build_batch([RecordData(0, 1_700_000_000_000, b"k", b"v" * 40)], base_offset=0,
                                         partition_leader_epoch=0), dtype=np.uint8)
    size = len(template)
    rows = np.tile(template, (batches, 1))
    # the base offset and the leader epoch lie before the CRC'd bytes: patching them keeps every CRC valid
    rows[:, 0:8] = np.arange(batches, dtype=">i8").view(np.uint8).reshape(batches, 8)
    epoch = record_batch.HEADER["partition_leader_epoch"]
    rows[:, epoch.offset : epoch.offset + 4] = (np.arange(batches, dtype=">i4") // 50_000).view(np.uint8).reshape(
        batches, 4)
    d = root / "logs"
    d.mkdir(parents=True)
    (d / "meta.properties").write_text(META)
    for p in range(partitions):
        (d / f"bulk-{p}").mkdir()
        (d / f"bulk-{p}" / "00000000000000000000.log").write_bytes(rows.tobytes())
    assert size * batches == (d / "bulk-0" / "00000000000000000000.log").stat().st_size
    return d


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    return _log_dir(tmp_path_factory.mktemp("big"), 200_000)


def test_batches_writer_holds_at_most_two_row_groups_during_a_scan(big, tmp_path):
    w = BatchesWriter(str(tmp_path / "batches.parquet"), {"cluster": "c"}, row_group=4096)
    report = scan_log_dirs([big], batch_sink=w)
    w.close()
    [p] = report.partitions
    assert p.batch_count == w.rows == 200_000
    # a row group is gathered while the previous one is written; each may overshoot by one chunk of the reader
    assert w.peak_held_rows <= 2 * (4096 + SCAN_ROWS) < 200_000
    f = pq.ParquetFile(tmp_path / "batches.parquet")
    assert f.metadata.num_rows == 200_000 and f.metadata.num_row_groups == w.row_groups >= 200_000 // (4096 + SCAN_ROWS)
    assert f.read(columns=["base_offset"]).column(0).to_numpy().tolist() == list(range(200_000))


@pytest.mark.parametrize("out", [False, True], ids=["scan", "scan --out"])
def test_no_batch_table_outlives_its_chunk(big, tmp_path, out):
    """Nothing the scan keeps (epochs, transactions, index checks, the report, the Parquet writer once closed)
    holds a batch table: every chunk handed to the sink is freed by the end."""
    alive = []
    parquet = ScanParquet(tmp_path / "out", {"cluster": "c"}) if out else None

    def sink(pd, seg, t):
        alive.append(weakref.ref(t.data))
        if parquet is not None:
            parquet.batches(pd, seg, t)

    report = scan_log_dirs([big], batch_sink=sink)
    if parquet is not None:
        parquet.finish(report)
    gc.collect()
    assert len(alive) >= 200_000 // SCAN_ROWS
    assert sum(r() is not None for r in alive) == 0
    assert report.partitions[0].batch_count == 200_000


def _peak_traced(log_dir: Path, out: Path | None) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        if out is None:
            scan_log_dirs([log_dir])
        else:
            parquet = ScanParquet(out, {"cluster": "c"})
            parquet.finish(scan_log_dirs([log_dir], batch_sink=parquet.batches))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("out", [False, True], ids=["scan", "scan --out"])
def test_peak_memory_does_not_grow_with_the_number_of_batches(tmp_path, out):
    """Python and numpy allocations at their peak for 1x and 3x the batches (three partitions of the same size):
    the same, give or take a chunk; holding every row would take 3x.  Row groups smaller than the default, so
    that the writer reaches its steady state (a group written while the next is gathered) on both.  How many row
    groups are in flight at the peak depends on how the writer's thread keeps up (measured: 23.6 to 29 MB for 1x,
    29 to 32 MB for 3x, on a loaded machine): 1x is the higher of two runs, and the margin half a partition's rows
    (holding one partition's rows more would be twice that; holding every row, four times)."""
    one = _log_dir(tmp_path / "one", 120_000)
    three = _log_dir(tmp_path / "three", 120_000, partitions=3)
    # measured in a fresh interpreter: what earlier tests of this process left (caches, a test runner's threads,
    # which tracemalloc also traces) is not the scan's
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "import kforensics.tables.scan_tables as t\n"
        "t.ROW_GROUP = 8192\n"
        "from tests.scan.test_memory_bounded import _peak_traced\n"
        "one, three, out = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]\n"
        "def o(name):\n"
        "    return Path(out) / name if out else None\n"
        "_peak_traced(one, o('warm'))  # first use: kernels, imports\n"
        "p1 = max(_peak_traced(one, o('o1')), _peak_traced(one, o('o2')))\n"
        "print(json.dumps([p1, _peak_traced(three, o('o3'))]))\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(one), str(three), str(tmp_path) if out else ""],
                       capture_output=True, text=True, timeout=600, cwd=ROOT, check=True)
    p1, p3 = json.loads(r.stdout.strip().splitlines()[-1])
    rows_bytes = 120_000 * 19 * 8  # one partition's rows as a batch table
    assert p3 < p1 + rows_bytes // 2, (p1, p3)
