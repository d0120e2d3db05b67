"""``kforensics dump`` benchmark: text and JSON records/s against kafka-dump-log's on the same segment, peak RSS.

kafka-dump-log is Kafka's own ``kafka.tools.DumpLogSegments`` (from the
``kafka_2.13`` 3.9.1 jar the lab fetches: ``lab/kflab/jars.py``), run as
``--deep-iteration --print-data-log --files SEG``; kforensics runs
``dump --deep`` with and without ``--print-data``, in text and JSON.
Every command writes to /dev/null; each is timed as a whole process (start-up
included, the JVM's too), page cache warm, best of ``--runs``; kforensics with
its bytecode cached (:func:`child_env`), after one warm-up run.  Prints
figures; asserts nothing.

    python benchmarks/bench_dump.py                  # generate a lz4 segment (10 records a batch), then measure
    python benchmarks/bench_dump.py --segment F.log  # measure an existing segment
    python benchmarks/bench_dump.py --huge           # also: one zstd batch of 30 M tiny records

The generated segment is written with kforensics' own encoder
(``build_batch``, Kafka's ``MemoryRecordsBuilder`` layout); the huge batch
too.  Timing resolution is the process's wall time (``time.perf_counter``),
peak RSS is the child's ``ru_maxrss``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lab"))
#: the Kafka release whose kafka-dump-log is the anchor
ANCHOR_VERSION = "3.9.1"


def generate(out: Path, size_mb: int, per_batch: int = 10, codec: int = 3) -> Path:
    """A segment of ``size_mb`` MiB of ``per_batch``-record batches (lz4 by default), keys and values of text."""
    from kforensics.formats.record_batch import RecordData, build_batch

    seg = out / f"{'lz4' if codec == 3 else codec}-{size_mb}mb-{per_batch}" / "00000000000000000000.log"
    if seg.exists():
        return seg
    seg.parent.mkdir(parents=True, exist_ok=True)
    limit, offset, written = size_mb << 20, 0, 0
    with open(seg.with_suffix(".tmp"), "wb") as f:
        while written < limit:
            recs = [RecordData(offset + i, 1_700_000_000_000 + offset + i, f"key-{(offset + i) % 997}".encode(),
                               f"value {offset + i} lorem ipsum dolor sit amet consectetur {i}".encode() * 2)
                    for i in range(per_batch)]
            raw = build_batch(recs, codec=codec, producer_id=7, producer_epoch=0, base_sequence=offset,
                              partition_leader_epoch=3)
            f.write(raw)
            written += len(raw)
            offset += per_batch
    seg.with_suffix(".tmp").rename(seg)
    return seg


def generate_huge(out: Path, records: int = 30_000_000) -> Path:
    """One zstd batch of ``records`` tiny records (null key and value), as issue #26 asks: 30 M by default.

    Records this small take 7 to 10 bytes each, so 30 M decompress to about 290 MB, past the 256 MiB cap on a
    records section held whole (``DEFAULT_MAX_DECOMPRESSED``): the dump streams a large zstd section
    (``kforensics/dump/streamed_section.py``), whose cap is 4 GiB.  The records section is built by numpy, a
    varint width at a time (the offset deltas' zig-zag varints take 1 to 4 bytes)."""
    import numpy as np

    from kforensics.formats.compression import compress
    from kforensics.formats.record_batch import MAGIC, attributes_of, encode_batch

    seg = out / f"zstd-one-batch-null-{records}" / "00000000000000000000.log"
    if seg.exists():
        return seg
    seg.parent.mkdir(parents=True, exist_ok=True)
    parts = []
    for width in range(1, 5):  # records whose offset delta's varint is this wide, in offset order
        lo, hi = (0 if width == 1 else 1 << (7 * (width - 1) - 1)), min(records, 1 << (7 * width - 1))
        if lo >= hi:
            continue
        z = np.arange(lo, hi, dtype=np.int64) << 1  # zig-zag of a non-negative delta
        rec = np.zeros((hi - lo, 6 + width), dtype=np.uint8)
        # length (zig-zag), attributes 0, timestamp delta 0, offset delta, key -1, value -1, 0 headers
        rec[:, 0] = 2 * (5 + width)
        for k in range(width):
            rec[:, 3 + k] = ((z >> (7 * k)) & 0x7F) | (0x80 if k < width - 1 else 0)
        rec[:, 3 + width], rec[:, 4 + width] = 1, 1
        parts.append(rec.tobytes())
    payload = compress(4, b"".join(parts), magic=MAGIC)
    seg.with_suffix(".tmp").write_bytes(encode_batch(
        payload, base_offset=0, last_offset_delta=records - 1, records_count=records, base_timestamp=1_700_000_000_000,
        max_timestamp=1_700_000_000_000, attributes=attributes_of(4)))
    seg.with_suffix(".tmp").rename(seg)
    return seg


def child_env(out: Path) -> dict[str, str]:
    """The children's environment: Python's bytecode cached (under ``out``, never in the source tree), as an
    installed package has it, even where ``PYTHONDONTWRITEBYTECODE`` is set (compiling kforensics' modules at
    every start costs about 0.3 s of CPU)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(out / "pycache")
    return env


def run(argv: list[str], runs: int, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Best wall time and best CPU time (user + sys: on a loaded machine the wall time is mostly waiting) of
    ``runs``, and the peak RSS (MB) of the children, stdout to /dev/null."""
    best, cpu, peak = float("inf"), float("inf"), 0.0
    for _ in range(runs):
        t0 = time.perf_counter()
        pid = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env).pid
        _, status, usage = os.wait4(pid, 0)
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, usage.ru_utime + usage.ru_stime)
        peak = max(peak, usage.ru_maxrss / 1024)
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            raise SystemExit(f"failed ({status}): {' '.join(argv)}")
    return best, cpu, peak


def kafka_dump_log(seg: Path) -> list[str] | None:
    """The kafka-dump-log command line (None when Java or the jars are not here)."""
    try:
        from kflab import jars

        # the 4.4.0 jars the lab fetches have no kafka.tools.DumpLogSegments (not in kafka_2.13-4.4.0.jar);
        # 3.9.1's kafka_2.13 jar has it
        libs = jars.ensure_jars(ANCHOR_VERSION)
        java = jars.java_bin(ANCHOR_VERSION)
    except Exception as e:  # any reason the anchor cannot run: said, and the rest measured
        print(f"(no kafka-dump-log anchor: {e})")
        return None
    return [java, "-cp", f"{libs}/*", "kafka.tools.DumpLogSegments", "--deep-iteration", "--print-data-log",
            "--files", str(seg)]


def count_records(seg: Path) -> int:
    from kforensics.log.records import iter_record_tables
    from kforensics.log.segment_reader import SegmentReader

    return sum(len(rt) for _t, rt in iter_record_tables(SegmentReader(seg)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segment", type=Path)
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--out-dir", type=Path, default=Path("/tmp/kforensics-bench-dump"))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--huge", action="store_true", help="also dump one zstd batch of 30 M tiny records")
    ap.add_argument("--huge-records", type=int, default=30_000_000, help="records in the --huge batch")
    args = ap.parse_args()
    seg = args.segment or generate(args.out_dir, args.size_mb)
    n = count_records(seg)
    kf = [sys.executable, "-m", "kforensics.cli"]
    env = child_env(args.out_dir)
    # a warm-up: the bytecode cache filled, the native record lines built
    run(kf + ["dump", "--deep", "--print-data", "--format", "json", str(generate_huge(args.out_dir, 1000))], 1, env)
    print(f"segment {seg}: {seg.stat().st_size / 2**20:.1f} MiB, {n} records; loadavg {os.getloadavg()[0]:.2f}")
    rows = {}
    anchor = kafka_dump_log(seg)
    if anchor is not None:
        rows["kafka-dump-log --deep-iteration --print-data-log"] = run(anchor, args.runs)
    for flags in ([], ["--print-data"], ["--format", "json"], ["--print-data", "--format", "json"]):
        rows[" ".join(["kforensics dump --deep", *flags])] = run(kf + ["dump", "--deep", *flags, str(seg)], args.runs,
                                                                 env)
    first = rows[next(iter(rows))]
    # records/s against the anchor's, by wall time and by CPU time (the JVM's threads' CPU counted)
    base, base_cpu = (n / first[0], n / first[1]) if anchor is not None else (None, None)
    for name, (secs, cpu, rss) in rows.items():
        rate = n / secs
        ratio = f"{rate / base:5.2f}x wall {n / cpu / base_cpu:5.2f}x cpu" if base and base_cpu else "  -  "
        print(f"  {name:52s} {secs:7.2f} s (cpu {cpu:6.2f} s) {rate / 1e3:7.0f} k rec/s {ratio} "
              f"peak RSS {rss:5.0f} MB")
    if args.huge:
        huge = generate_huge(args.out_dir, args.huge_records)
        print(f"one zstd batch of {args.huge_records / 1e6:g} M records ({huge.stat().st_size / 2**20:.1f} MiB); "
              f"loadavg {os.getloadavg()[0]:.2f}")
        for fmt in ("text", "json"):
            secs, cpu, rss = run(kf + ["dump", "--deep", "--format", fmt, str(huge)], 1, env)
            print(f"  kforensics dump --deep --format {fmt:4s} {secs:7.2f} s (cpu {cpu:6.2f} s) "
                  f"{args.huge_records / secs / 1e6:6.2f} M rec/s, peak RSS {rss:5.0f} MB "
                  f"({'under' if secs < 60 else 'OVER'} a minute)")
    print(f"loadavg after {os.getloadavg()[0]:.2f} (2 cores shared: figures under load when above ~1)")
    _ = resource  # ru_maxrss of children comes from wait4


if __name__ == "__main__":
    main()
