"""Segment reader benchmark: shallow (headers + CRC) and deep (records) throughput and peak RSS.

Four segments, measured in one run (issue #26): one-record and ten-record v2
batches, uncompressed and compressed (half lz4, half zstd batches):
``none-1`` (the 1 GiB anchor), ``none-10``, ``lz4zstd-1``, ``lz4zstd-10``.

Compares against Kafka's own reader (``segment-read`` from ../shared/oracle),
measured in the same run: through FileRecords (the broker's read path) and
through a read-only mmap (MemoryRecords, Kafka's fastest path), shallow
(``ensureValid()``: size and CRC, header fields) and deep (every record
iterated).  kforensics shallow = batch headers + CRC-32C of every batch; deep
= every record decoded into columns.  Readers run in interleaved rounds (the
machine's load drifts); ratios are taken on the medians over the rounds,
page cache warm.  Prints figures; asserts nothing.

    python benchmarks/bench_reader.py                      # generate the four segments, then measure them
    python benchmarks/bench_reader.py --files none-1       # the 1 GiB anchor alone
    python benchmarks/bench_reader.py --segment FILE.log   # measure an existing segment

Besides wall time (medians), CPU time per pass is printed for both sides: on a
loaded machine it is the steadier figure.  Ours is the process's CPU time
around each pass; Kafka's is the CPU its process used (``getrusage`` of the
child) over ``--runs`` passes less a run of one pass, divided by the passes
between (JVM start, warm-up and JIT cancel out).

The anchor segment (issue #2): ``segment-gen bulk --spec v2:none --records-per-batch 1
--value-size 100 --size-mb 1024`` (5.77 M batches); the other three the same with
their spec and batch size, ``--size-mb`` MiB each (256 by default).  Generation needs a built
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
    times, cpus = [], []
    count = bad = 0
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        count, bad = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    times.sort()
    return {
        "cpu_s": statistics.median(cpus),
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


def kafka_anchor(oracle: Path, path: str, runs: int, via: str = "both",
                 mode: str = "both") -> dict[tuple[str, str], dict[str, str]]:
    """Kafka's own reader from ``segment-read``, shallow and deep, through FileRecords (the broker's path) and
    through a read-only mmap (MemoryRecords): the fields of its SUMMARY lines, by (via, mode)."""
    tool = oracle / "bin" / "segment-read"
    if not (oracle / "build" / "classes").exists():
        return {}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [str(tool), "--mode", mode, "--via", via, "--runs", str(runs), "--warmup", "1", path],
        capture_output=True,
        text=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    figures = {}
    for line in out.stdout.splitlines():
        if line.startswith("SUMMARY"):
            fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            fields["process_cpu_s"] = str(cpu)  # the whole process: every reader it ran, JVM start included
            figures[(fields["via"], fields["mode"])] = fields
    return figures


#: the four segments: name -> (spec, records per batch)
SEGMENTS = {
    "none-1": ("v2:none", 1),
    "none-10": ("v2:none", 10),
    "lz4zstd-1": ("v2:lz4,v2:zstd", 1),
    "lz4zstd-10": ("v2:lz4,v2:zstd", 10),
}


def generate(oracle: Path, out_dir: Path, name: str = "none-1", size_mb: int = 1024) -> str:
    spec, per_batch = SEGMENTS[name]
    # the anchor keeps its name (and so the segment generated before the others existed)
    label = "v2-none-1rpb" if name == "none-1" else f"v2-{name.replace('-', '-' + str(size_mb) + 'mb-')}rpb"
    seg = out_dir / f"{label}-0" / "00000000000000000000.log"
    if seg.exists():
        return str(seg)
    cmd = [
        str(oracle / "bin" / "segment-gen"), "bulk", "--out", str(seg.parent), "--seed", "42",
        "--spec", spec, "--size-mb", str(size_mb), "--records-per-batch", str(per_batch), "--value-size", "100",
        "--key-size", "16", "--epoch-bump-mb", "128", "--manifest", "summary",
    ]
    subprocess.run(cmd, check=True)
    return str(seg)


def kafka_cpu_per_pass(oracle: Path, path: str, runs: int, via: str, mode: str, total_cpu: float) -> float | None:
    """Kafka's CPU seconds per pass: a run of ``runs`` passes (``total_cpu``) less a run of one, over the passes
    between (None with fewer than two passes)."""
    if runs < 2:
        return None
    one = kafka_anchor(oracle, path, 1, via, mode)
    if not one:
        return None
    base = float(next(iter(one.values()))["process_cpu_s"])
    return (total_cpu - base) / (runs - 1)


def measure_segment(oracle: Path, name: str, path: str, args: argparse.Namespace) -> None:
    """Every round: kforensics (deep; shallow too for the anchor) in its own process, then Kafka's readers."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:  # warm the page cache, as the JVM anchor does
        while fh.read(8 << 20):
            pass
    modes = ("shallow", "deep") if name == "none-1" else ("deep",)
    kmode = "both" if len(modes) == 2 else "deep"
    print(f"== {name}: segment {path}: {size:,} bytes; {args.rounds} rounds of {args.runs} timed pass(es) per reader",
          flush=True)
    ours: dict[str, list[dict]] = {}
    kafka: dict[tuple[str, str], list[dict]] = {}
    for rnd in range(args.rounds):
        for mode in modes:
            ours.setdefault(mode, []).append(in_subprocess(mode, path, args.runs))
        for key, fields in kafka_anchor(oracle, path, args.runs, args.via, kmode).items():
            kafka.setdefault(key, []).append(fields)
        line = ", ".join(f"kforensics {m} {v[-1]['median_s']:.3f}s" for m, v in ours.items())
        line += "".join(f", Kafka {via} {mode} {float(v[-1]['median_s']):.3f}s"
                        for (via, mode), v in sorted(kafka.items()))
        print(f"round {rnd + 1}: {line}; load average {os.getloadavg()[0]:.1f}", flush=True)
    med = {mode: statistics.median(r["median_s"] for r in v) for mode, v in ours.items()}
    cpu = {mode: statistics.median(r["cpu_s"] for r in v) for mode, v in ours.items()}
    print(f"medians over {args.rounds} rounds:")
    for mode, rs in ours.items():
        r = rs[-1]
        unit = "batches" if mode == "shallow" else "records"
        print(f"  kforensics {mode:7}: {r['count']:,} {unit} in {med[mode]:.3f}s, {r['count'] / med[mode] / 1e6:.2f} M "
              f"{unit}/s, {size / med[mode] / 1e6:.0f} MB/s, CPU {cpu[mode]:.3f}s a pass, peak RSS "
              f"{max(x['peak_rss_mb'] for x in rs):.0f} MB, CRC failures {r['crc_failures']}")
    if not kafka:
        print(f"(no Kafka anchor: build the oracle at {oracle} to compare)")
        return
    print("  Kafka's reader (segment-read: kafka-clients' ensureValid() per batch; deep also iterates every record):")
    for (via, mode), fs in sorted(kafka.items()):
        count = int(fs[-1]["batches"] if mode == "shallow" else fs[-1]["records"])
        t = statistics.median(float(f["median_s"]) for f in fs)
        unit = "batches" if mode == "shallow" else "records"
        kcpu = None
        if len(kafka) == 1 and mode in cpu:  # one reader in the process: its CPU is this reader's
            total = statistics.median(float(f["process_cpu_s"]) for f in fs)
            kcpu = kafka_cpu_per_pass(oracle, path, args.runs, via, mode, total)
        cpu_text = "" if kcpu is None else f", CPU {kcpu:.3f}s a pass: kforensics {kcpu / cpu[mode]:.2f}x on CPU"
        print(f"    Kafka {via:11} {mode:7}: {t:.3f}s, {count / t / 1e6:.2f} M {unit}/s; "
              f"kforensics is {t / med[mode]:.2f}x as fast{cpu_text}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segment", help="measure this segment only (named 'segment' in the output)")
    ap.add_argument("--files", default=",".join(SEGMENTS),
                    help=f"which generated segments to measure, comma-separated (default all: {','.join(SEGMENTS)})")
    ap.add_argument("--size-mb", type=int, default=256, help="size of the generated segments but the 1 GiB anchor")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of (kforensics, then Kafka's readers), interleaved so that "
                         "both meet the same machine load; figures are medians over the rounds")
    ap.add_argument("--runs", type=int, default=2, help="timed passes per reader and round, after a warm-up")
    ap.add_argument("--via", choices=["both", "mmap", "filerecords"], default="mmap",
                    help="Kafka's readers to run (FileRecords takes about ten times as long as mmap)")
    ap.add_argument("--out-dir", default="/tmp/kfbench")
    ap.add_argument("--inner", choices=["shallow", "deep"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        print(json.dumps(measure(args.inner, args.segment, args.runs)))
        return
    oracle = Path(os.environ.get("ORACLE_DIR", DEFAULT_ORACLE))
    if args.segment:
        measure_segment(oracle, "segment", args.segment, args)
    else:
        for name in args.files.split(","):
            path = generate(oracle, Path(args.out_dir), name, 1024 if name == "none-1" else args.size_mb)
            measure_segment(oracle, name, path, args)
    print("targets: deep >= 1.2x Kafka's mmap deep rate on all four; shallow faster than Kafka's mmap; "
          "peak RSS <= 150 MB")


if __name__ == "__main__":
    main()
