"""The Spark scan stage scans a task's small plain partition dirs together, as ``scan`` does (#26: one by one, the
scan stage of 3 x 10 000 small partitions took 50 s of a 67 s job where ``scan --out`` of the three took 24 s);
its status rows, sketches and table rows are those of the one-by-one scan.  No Spark session: the stage's function
runs in this process on the driver's plan."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import kforensics.scan.broker as broker
import kforensics.scan.small_partitions as small
from kforensics.epoch.versions import LATEST
from kforensics.spark.inputs import Snapshot
from kforensics.spark.plan import plan
from kforensics.spark.scan_task import scan_tasks
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))


def _fleet(root: Path) -> list[Path]:
    from bench_spark import build

    root.mkdir(parents=True)
    dirs = build(root, "fleet", 2, 40, 10, topics=7)
    # one dir that needs the per-partition path: a torn tail
    seg = dirs[0] / "t3-0" / "00000000000000000000.log"
    data = seg.read_bytes()
    seg.unlink()  # it is a hard link of the shared segment: a file of its own
    seg.write_bytes(data[:-20])
    return dirs


def _run(tmp: Path, dirs: list[Path], tag: str) -> tuple[list[tuple], dict[str, list[dict]]]:
    staging = tmp / f"staging-{tag}"
    p = plan([Snapshot(str(d), d.name) for d in dirs], str(staging))
    frames = list(scan_tasks(str(staging), LATEST, p.snapshots)(iter([p.tasks])))
    status = pd.concat(frames)
    rows = []
    for r in status.itertuples(index=False):
        sketch = pickle.loads(r.sketch) if r.sketch is not None else None
        rows.append((r.snapshot_id, r.dir_name, r.status, r.batches, r.bytes, r.findings,
                     None if sketch is None else (sketch.rows, repr(sketch.summary) if hasattr(sketch, "summary")
                                                  else None)))
    tables: dict[str, list[dict]] = {}
    for f in sorted(staging.rglob("*.parquet")):
        name = f.relative_to(staging).parts[0]
        t = pq.read_table(f).to_pylist()
        tables.setdefault(name, []).extend({k: v for k, v in r.items() if k != "part"} for r in t)
    return sorted(rows, key=repr), {k: sorted(v, key=repr) for k, v in tables.items()}


def test_small_dirs_are_scanned_together_with_the_same_rows(tmp_path, monkeypatch):
    dirs = _fleet(tmp_path / "fleet")
    calls = []
    real = small.scan_small_partitions

    def counted(items, **kw):
        got = real(items, **kw)
        calls.append(sum(w is not None for w in got))
        return got

    monkeypatch.setattr(small, "scan_small_partitions", counted)
    together = _run(tmp_path, dirs, "together")
    assert sum(calls) == 79, calls  # every dir but the torn one
    monkeypatch.setattr(broker, "BATCHED", False)
    calls.clear()
    alone = _run(tmp_path, dirs, "alone")
    assert not calls
    assert together[0] == alone[0]
    assert together[1] == alone[1] and {"partitions", "segments", "batches"} <= set(together[1]), \
        sorted(together[1])


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
