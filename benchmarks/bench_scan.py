"""Scan benchmark: a broker log dir of ~3 GiB across many partitions; batches/s, MB/s, peak RSS.

    python benchmarks/bench_scan.py [--partitions 24] [--mb-per-partition 128]

Generates the log dir once under --out-dir with the oracle's ``segment-gen bulk``
(ORACLE_DIR, default ../shared/oracle, built with ``./build.sh --no-fixtures``):
small one-record batches (the worst case for batches/s), a mix of uncompressed,
idempotent and lz4 batches, 64 MiB segments.  Then runs ``scan_log_dirs`` in a
fresh process and prints figures.  Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ORACLE = HERE.parent.parent / "shared" / "oracle"


def generate(oracle: Path, root: Path, partitions: int, mb: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for p in range(partitions):
        d = root / f"bench.topic-{p}"
        if d.exists():
            continue
        subprocess.run(
            [str(oracle / "bin" / "segment-gen"), "bulk", "--out", str(d), "--seed", str(100 + p),
             "--spec", "v2:none*2,v2:none:idem,v2:lz4", "--size-mb", str(mb), "--segment-mb", "64",
             "--records-per-batch", "1", "--value-size", "100", "--key-size", "16", "--epoch-bump-mb", "32",
             "--manifest", "summary", "--manifest-out", str(root.parent / f"bench.topic-{p}.manifest.json")],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )


def inner(path: str) -> None:
    from kforensics.scan.broker import scan_log_dirs

    t0 = time.perf_counter()
    report = scan_log_dirs([path])
    dt = time.perf_counter() - t0
    batches = sum(p.batch_count for p in report.partitions)
    size = sum(p.bytes for p in report.partitions)
    print(json.dumps({
        "seconds": dt, "batches": batches, "bytes": size, "partitions": len(report.partitions),
        "findings": len(report.all_findings()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=24)
    ap.add_argument("--mb-per-partition", type=int, default=128)
    ap.add_argument("--out-dir", default="/tmp/kfbench/scan")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        inner(args.inner)
        return
    oracle = Path(os.environ.get("ORACLE_DIR", DEFAULT_ORACLE))
    root = Path(args.out_dir) / "logdir"
    t0 = time.perf_counter()
    generate(oracle, root, args.partitions, args.mb_per_partition)
    print(f"log dir {root}: {args.partitions} partitions x {args.mb_per_partition} MiB "
          f"(generated/checked in {time.perf_counter() - t0:.0f}s)")
    for f in root.rglob("*.log"):  # warm page cache
        with open(f, "rb") as fh:
            while fh.read(8 << 20):
                pass
    for run in range(args.runs):
        out = subprocess.run([sys.executable, __file__, "--inner", str(root)], check=True, capture_output=True, text=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"run {run + 1}: {r['partitions']} partitions, {r['batches']:,} batches, {r['bytes'] / 2**30:.2f} GiB in "
              f"{r['seconds']:.2f}s: {r['batches'] / r['seconds'] / 1e6:.2f} M batches/s, "
              f"{r['bytes'] / r['seconds'] / 1e6:.0f} MB/s, peak RSS {r['peak_rss_mb']:.0f} MB, findings {r['findings']}")
    print("target: >= 3 M small batches/s per process, bounded memory")


if __name__ == "__main__":
    main()
