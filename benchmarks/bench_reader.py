"""Segment reader benchmark: shallow (headers + CRC) and deep (records) throughput and peak RSS.

Compares against Kafka's own reader (``segment-read`` from ../shared/oracle),
measured in the same run: through FileRecords (the broker's read path) and
through a read-only mmap (MemoryRecords, Kafka's fastest path), shallow
(``ensureValid()``: size and CRC, header fields) and deep (every record
iterated).  kforensics shallow = batch headers + CRC-32C of every batch; deep
= every record decoded into columns.  Readers run in interleaved rounds (the
machine's load drifts); ratios are taken on the medians over the rounds,
page cache warm.  Prints figures; asserts nothing.

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
import statistics
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


def kafka_anchor(oracle: Path, path: str, runs: int, via: str = "both") -> dict[tuple[str, str], dict[str, str]]:
    """Kafka's own reader from ``segment-read``, shallow and deep, through FileRecords (the broker's path) and
    through a read-only mmap (MemoryRecords): the fields of its SUMMARY lines, by (via, mode)."""
    tool = oracle / "bin" / "segment-read"
    if not (oracle / "build" / "classes").exists():
        return {}
    out = subprocess.run(
        [str(tool), "--mode", "both", "--via", via, "--runs", str(runs), "--warmup", "1", path],
        capture_output=True,
        text=True,
    )
    figures = {}
    for line in out.stdout.splitlines():
        if line.startswith("SUMMARY"):
            fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            figures[(fields["via"], fields["mode"])] = fields
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
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of (kforensics shallow and deep, then Kafka's four readers), interleaved so that "
                         "both meet the same machine load; figures are medians over the rounds")
    ap.add_argument("--runs", type=int, default=1, help="timed passes per reader and round, after a warm-up")
    ap.add_argument("--via", choices=["both", "mmap", "filerecords"], default="both",
                    help="Kafka's readers to run (FileRecords takes about ten times as long as mmap)")
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
    print(f"segment {path}: {size:,} bytes; {args.rounds} rounds of {args.runs} timed pass(es) per reader")
    ours: dict[str, list[dict]] = {}
    kafka: dict[tuple[str, str], list[dict]] = {}
    for rnd in range(args.rounds):
        for mode in ("shallow", "deep"):
            ours.setdefault(mode, []).append(in_subprocess(mode, path, args.runs))
        for key, fields in kafka_anchor(oracle, path, args.runs, args.via).items():
            kafka.setdefault(key, []).append(fields)
        line = ", ".join(f"kforensics {m} {v[-1]['median_s']:.3f}s" for m, v in ours.items())
        line += "".join(f", Kafka {via} {mode} {float(v[-1]['median_s']):.3f}s" for (via, mode), v in sorted(kafka.items()))
        print(f"round {rnd + 1}: {line}", flush=True)
    med = {mode: statistics.median(r["median_s"] for r in v) for mode, v in ours.items()}
    print(f"medians over {args.rounds} rounds:")
    for mode, rs in ours.items():
        r = rs[-1]
        unit = "batches" if mode == "shallow" else "records"
        print(f"  kforensics {mode:7}: {r['count']:,} {unit} in {med[mode]:.3f}s, {r['count'] / med[mode] / 1e6:.2f} M "
              f"{unit}/s, {size / med[mode] / 1e6:.0f} MB/s, peak RSS {max(x['peak_rss_mb'] for x in rs):.0f} MB, "
              f"CRC failures {r['crc_failures']}")
    if kafka:
        print("  Kafka's reader (segment-read: kafka-clients' ensureValid() per batch; deep also iterates every "
              "record):")
        for (via, mode), fs in sorted(kafka.items()):
            count = int(fs[-1]["batches"] if mode == "shallow" else fs[-1]["records"])
            t = statistics.median(float(f["median_s"]) for f in fs)
            unit = "batches" if mode == "shallow" else "records"
            print(f"    Kafka {via:11} {mode:7}: {t:.3f}s, {count / t / 1e6:.2f} M {unit}/s; "
                  f"kforensics is {t / med[mode]:.1f}x as fast")
    else:
        print(f"(no Kafka anchor: build the oracle at {oracle} to compare)")
    print("targets: faster than Kafka's mmap path, shallow and deep; peak RSS <= 150 MB")


if __name__ == "__main__":
    main()
