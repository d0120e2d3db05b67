"""Spark pipeline benchmark: N brokers x P partitions; wall time and per-core throughput vs single-process scan.

    python benchmarks/bench_spark.py [--brokers 3] [--partitions 200] [--mb-per-partition 8] [--scaling]

Data: one partition of small one-record batches is generated with the oracle's
``segment-gen bulk`` (ORACLE_DIR, default ../shared/oracle, built with
``./build.sh --no-fixtures``) and hard-linked into every partition dir of every
broker (identical replicas, as in a healthy cluster), with meta.properties and
checkpoints.  Prints figures; asserts nothing.  Target: Spark throughput per
core >= 70% of the single-process scan throughput.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
DEFAULT_ORACLE = HERE.parent.parent / "shared" / "oracle"


def build(root: Path, oracle: Path, brokers: int, partitions: int, mb: int) -> list[Path]:
    from kforensics.formats import checkpoint, meta_properties

    base = root / "base" / "bench-0"
    if not base.exists():
        subprocess.run([str(oracle / "bin" / "segment-gen"), "bulk", "--out", str(base), "--seed", "7",
                        "--spec", "v2:none*3,v2:lz4", "--size-mb", str(mb), "--records-per-batch", "1",
                        "--value-size", "100", "--key-size", "16", "--manifest", "summary",
                        "--manifest-out", str(root / "base.manifest.json")],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = sorted(base.glob("*.log"))
    dirs = []
    for b in range(1, brokers + 1):
        d = root / f"b{b}-p{partitions}"
        dirs.append(d)
        if d.exists():
            continue
        tmp = d.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        (tmp / "meta.properties").write_bytes(meta_properties.encode(0, b, "bench-cluster"))
        hw = []
        for p in range(partitions):
            pd = tmp / f"bench-{p}"
            pd.mkdir()
            for f in files:
                os.link(f, pd / f.name)
            hw.append(("bench", p, 0))
        (tmp / "replication-offset-checkpoint").write_bytes(checkpoint.encode("replication_offset_checkpoint", hw))
        tmp.rename(d)
    return dirs


def single_process(d: Path, with_tables: bool = False) -> tuple[float, int]:
    """Seconds and batches of one broker's scan in one process (optionally writing the Parquet tables too)."""
    out = subprocess.run([sys.executable, "-c", (
        "import sys,time,json,tempfile;from kforensics.scan.broker import scan_log_dirs;"
        "from kforensics.tables.scan_tables import ScanParquet;w=sys.argv[2]=='1';"
        "scan_log_dirs([sys.argv[1]]);t=time.perf_counter();o=ScanParquet(tempfile.mkdtemp()) if w else None;"
        "r=scan_log_dirs([sys.argv[1]],batch_sink=o.batches if w else None);w and o.finish(r);"
        "print(json.dumps([time.perf_counter()-t,sum(p.batch_count for p in r.partitions)]))"), str(d),
        "1" if with_tables else "0"],
        check=True, capture_output=True, text=True)
    import json

    dt, n = json.loads(out.stdout.strip().splitlines()[-1])
    return dt, n


def spark_run(dirs: list[Path], out: Path, cores: int) -> tuple[float, int, dict]:
    from kforensics.spark.inputs import Snapshot
    from kforensics.spark.job import run, session

    spark = session(f"local[{cores}]", {"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    snaps = [Snapshot(str(d), d.name) for d in dirs]
    run(spark, snaps[:1], str(out) + "-warmup", overwrite=True)  # JVM and worker start-up, kernel cache
    t = time.perf_counter()
    s = run(spark, snaps, str(out), overwrite=True)
    return time.perf_counter() - t, s["batches"], s["timings"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--mb-per-partition", type=int, default=8)
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--scaling", action="store_true", help="also run with doubled brokers and doubled partitions")
    ap.add_argument("--root", default="/tmp/kfbench/spark")
    args = ap.parse_args()
    oracle = Path(os.environ.get("ORACLE_DIR", DEFAULT_ORACLE))
    root = Path(args.root)
    configs = [(args.brokers, args.partitions)]
    if args.scaling:
        configs += [(args.brokers * 2, args.partitions), (args.brokers, args.partitions * 2)]
    base_dirs = build(root, oracle, args.brokers, args.partitions, args.mb_per_partition)
    dt, n = single_process(base_dirs[0])
    single_rate = n / dt
    print(f"single process scan: one broker ({args.partitions} partitions, {n:,} batches) in {dt:.2f}s: "
          f"{single_rate / 1e6:.2f} M batches/s")
    dt2, _ = single_process(base_dirs[0], with_tables=True)
    tables_rate = n / dt2
    print(f"single process scan --out (all six Parquet tables, batches included): {dt2:.2f}s: "
          f"{tables_rate / 1e6:.2f} M batches/s")
    for brokers, partitions in configs:
        dirs = build(root, oracle, brokers, partitions, args.mb_per_partition)
        size = sum(f.stat().st_size for d in dirs for f in d.rglob("*.log"))
        dt, n, tm = spark_run(dirs, root / f"out-{brokers}x{partitions}", args.cores)
        scan_s = tm.get("scan_s", dt)
        per_core = n / scan_s / args.cores
        print(f"spark local[{args.cores}]: {brokers} brokers x {partitions} partitions, {size / 2**30:.2f} GiB, "
              f"{n:,} batches; wall {dt:.1f}s (plan {tm.get('plan_s', 0):.1f}s, scan {scan_s:.1f}s, "
              f"replay+tables {tm.get('replay_s', 0):.1f}s); scan {n / scan_s / 1e6:.2f} M batches/s, "
              f"{per_core / 1e6:.2f} M/s per core = {per_core / single_rate:.0%} of the single-process scan, "
              f"{per_core / tables_rate:.0%} of single-process scan --out (same output; target >= 70%)")


if __name__ == "__main__":
    main()
