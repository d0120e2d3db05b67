"""Segment reader benchmark: shallow (headers + CRC) and deep (records) throughput and peak RSS.

Compares against Kafka's own reader (``segment-read`` from ../shared/oracle)
measured in the same run.  Prints figures; asserts nothing.

    python benchmarks/bench_reader.py                      # generate the 1 GiB anchor segment, then measure
    python benchmarks/bench_reader.py --segment FILE.log   # measure an existing segment

The anchor segment (issue #2): ``segment-gen bulk --spec v2:none --records-per-batch 1
--value-size 100 --size-mb 1024`` (5.77 M batches).  Generation needs a built
oracle: ORACLE_DIR (default ../shared/oracle, or a writable copy of it on
which ``./build.sh --no-fixtures`` was run).
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


def measure(mode: str, path: str, runs: int) -> dict:
    """Run in this process: best and median wall time of ``runs`` passes after one warm-up."""
    from kforensics.log.segment_reader import SegmentReader

    def shallow():
        r = SegmentReader(path)
        n = total = bad = 0
        for t in r.tables():
            n += len(t)
            total += int(t["last_offset"].sum())
            bad += int((~t.crc_valid()).sum())
        return n, bad

    def deep():
        from kforensics.log.records import iter_record_tables

        r = SegmentReader(path)
        n = 0
        for _t, rt in iter_record_tables(r):
            n += len(rt)
            _ = rt.offset.sum()  # touch the decoded columns
        return n, 0

    fn = shallow if mode == "shallow" else deep
    fn()  # warm-up (also loads the compiled kernels)
    times = []
    count = bad = 0
    for _ in range(runs):
        t0 = time.perf_counter()
        count, bad = fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return {
        "mode": mode,
        "count": count,
        "crc_failures": bad,
        "best_s": times[0],
        "median_s": times[len(times) // 2],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def in_subprocess(mode: str, path: str, runs: int) -> dict:
    # one process per mode so each peak RSS is its own
    out = subprocess.run(
        [sys.executable, __file__, "--inner", mode, "--segment", path, "--runs", str(runs)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def kafka_anchor(oracle: Path, path: str) -> dict[str, str]:
    """Kafka's FileRecords reader (shallow and deep) from ``segment-read``: its SUMMARY lines."""
    tool = oracle / "bin" / "segment-read"
    if not (oracle / "build" / "classes").exists():
        return {}
    out = subprocess.run(
        [str(tool), "--mode", "both", "--via", "filerecords", "--runs", "3", "--warmup", "1", path],
        capture_output=True,
        text=True,
    )
    figures = {}
    for line in out.stdout.splitlines():
        low = line.lower()
        if "filerecords" in low and ("shallow" in low or "deep" in low):
            figures["shallow" if "shallow" in low else "deep"] = line.strip()
    return figures


def generate(oracle: Path, out_dir: Path) -> str:
    seg = out_dir / "v2-none-1rpb-0" / "00000000000000000000.log"
    if seg.exists():
        return str(seg)
    cmd = [
        str(oracle / "bin" / "segment-gen"), "bulk", "--out", str(seg.parent), "--seed", "42",
        "--spec", "v2:none", "--size-mb", "1024", "--records-per-batch", "1", "--value-size", "100",
        "--key-size", "16", "--epoch-bump-mb", "128", "--manifest", "summary",
    ]
    subprocess.run(cmd, check=True)
    return str(seg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segment")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out-dir", default="/tmp/kfbench")
    ap.add_argument("--inner", choices=["shallow", "deep"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        print(json.dumps(measure(args.inner, args.segment, args.runs)))
        return
    oracle = Path(os.environ.get("ORACLE_DIR", DEFAULT_ORACLE))
    path = args.segment or generate(oracle, Path(args.out_dir))
    size = os.path.getsize(path)
    with open(path, "rb") as fh:  # warm the page cache, as the JVM anchor does
        while fh.read(8 << 20):
            pass
    print(f"segment {path}: {size:,} bytes")
    results = {}
    for mode in ("shallow", "deep"):
        r = results[mode] = in_subprocess(mode, path, args.runs)
        rate = r["count"] / r["best_s"]
        unit = "batches" if mode == "shallow" else "records"
        print(
            f"kforensics {mode:7}: {r['count']:,} {unit}, best {r['best_s']:.3f}s median {r['median_s']:.3f}s, "
            f"{rate / 1e6:.2f} M {unit}/s, {size / r['best_s'] / 1e6:.0f} MB/s, peak RSS {r['peak_rss_mb']:.0f} MB, "
            f"CRC failures {r['crc_failures']}"
        )
    anchor = kafka_anchor(oracle, path)
    if anchor:
        print("Kafka FileRecords (same run):")
        for mode, line in anchor.items():
            print("  " + line)
            fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            kafka_rate = float(fields.get("best_records_per_s" if mode == "deep" else "best_batches_per_s", 0))
            ours = results[mode]["count"] / results[mode]["best_s"]
            if kafka_rate:
                print(f"  ratio kforensics/Kafka FileRecords ({mode}): {ours / kafka_rate:.1f}x")
    else:
        print(f"(no Kafka anchor: build the oracle at {oracle} to compare)")
    print("targets: shallow >= 3 M batches/s; deep >= 1 M records/s; peak RSS <= 150 MB")


if __name__ == "__main__":
    main()
