"""Spark pipeline benchmark: ``kforensics spark`` on local[N] against ``kforensics scan --out`` of each broker plus
``kforensics replay`` of them all (single process), measured in one run on the same data.

    python benchmarks/bench_spark.py [--large-partitions 24] [--mb-per-partition 16] [--small-partitions 10000]
                                     [--brokers 3] [--cores 2] [--scaling] [--only large|small]

Data (written once under --root, kept between runs): one segment of one-record v2 batches (a template batch
repeated with its base offset rewritten: the base offset is outside the CRC) hard-linked into every partition dir
of every broker, identical replicas as in a healthy cluster, with meta.properties and checkpoints.

Sets: "large" = BROKERS x --large-partitions partitions of --mb-per-partition MiB each (the issue's set is 3 x 100
x 8 MiB = 2.34 GiB); "small" = BROKERS x --small-partitions tiny partitions (one 10-batch segment each; the
issue's set is 3 x 10 000), spread over 100 topics.  --scaling also runs the large set at 2x and 4x partitions.

Targets (issue 15): Spark end to end no slower than the single process; the replay stage under 20% of the
Spark wall time; doubling the input multiplies the wall time by at most 2.1.  Prints figures and ratios; asserts
nothing.  Spark's figures are for a warm session (JVM start-up, about 5-10 s, is printed apart); ``--cold`` also runs
the job in a fresh process from spawn to exit (issue 26's cold figure, target <= 1.0x the single process) and prints
its parts: interpreter, imports, JVM and session start, the job's stages, the session's stop.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def segment(path: Path, batches: int, value_size: int = 100) -> None:
    """One segment of ``batches`` one-record batches (epoch 0), written in one go."""
    import numpy as np

    from kforensics.formats.record_batch import RecordData, build_batch

    t = build_batch([RecordData(0, 1_700_000_000_000, key=b"k" * 16, value=b"v" * value_size)],
                    partition_leader_epoch=0, base_offset=0)
    arr = np.frombuffer(t, np.uint8)
    out = np.tile(arr, batches).reshape(batches, len(t))
    out[:, 0:8] = np.arange(batches, dtype=">i8").view(np.uint8).reshape(batches, 8)
    path.write_bytes(out.tobytes())


def build(root: Path, name: str, brokers: int, partitions: int, batches: int, topics: int = 1) -> list[Path]:
    from kforensics.formats import checkpoint, meta_properties

    seg = root / f"seg-{batches}.log"
    if not seg.exists():
        segment(seg, batches)
    dirs = []
    for b in range(1, brokers + 1):
        d = root / f"{name}-b{b}"
        dirs.append(d)
        if d.exists():
            continue
        tmp = d.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        (tmp / "meta.properties").write_bytes(meta_properties.encode(0, b, "bench-cluster"))
        hw = []
        for p in range(partitions):
            topic, part = f"t{p % topics}", p // topics
            pd = tmp / f"{topic}-{part}"
            pd.mkdir()
            os.link(seg, pd / "00000000000000000000.log")
            (pd / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
            hw.append((topic, part, batches))
        (tmp / "replication-offset-checkpoint").write_bytes(checkpoint.encode("replication_offset_checkpoint", hw))
        tmp.rename(d)
    return dirs


def single_process(dirs: list[Path]) -> dict[str, float]:
    """``kforensics scan DIR --out`` of each broker, then ``kforensics replay`` of them all: seconds each (one
    process per command, start-up included)."""
    cmd = [sys.executable, "-m", "kforensics"]
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i, d in enumerate(dirs):
            subprocess.run(cmd + ["scan", str(d), "--out", f"{tmp}/{i}", "--format", "json"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    scan = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run(cmd + ["replay", *map(str, dirs), "--format", "json"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    replay = time.perf_counter() - t
    return {"scan_s": scan, "replay_s": replay, "wall_s": scan + replay}


_SPARK: list = []


def spark_run(dirs: list[Path], out: Path, cores: int) -> dict:
    from kforensics.spark.inputs import Snapshot
    from kforensics.spark.job import run, session

    if not _SPARK:
        t = time.perf_counter()
        s = session(f"local[{cores}]", {"spark.ui.enabled": "false", "spark.log.level": "ERROR",
                                        "spark.sql.shuffle.partitions": str(cores * 4)})
        s.sparkContext.setLogLevel("ERROR")
        _SPARK.append(s)
        print(f"  (Spark session start-up: {time.perf_counter() - t:.1f}s, not counted below)")
        warm = out.parent / "warmup"
        run(s, [Snapshot(str(dirs[0]), dirs[0].name)], str(warm), overwrite=True)  # Python workers, kernels
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    summary = run(_SPARK[0], [Snapshot(str(d), d.name) for d in dirs], str(out))
    summary["wall_s"] = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    return summary


#: a cold run: a fresh interpreter imports kforensics' Spark job, which starts the session (the JVM) as
#: ``kforensics spark`` does (once nothing is left to refuse, the plan's rest built beside it), runs and stops it; it
#: prints how long each part took (JSON on its last line)
COLD = """
import json, sys, time
t0 = time.perf_counter()
from kforensics.spark.inputs import Snapshot
from kforensics.spark.job import run, session
t1 = time.perf_counter()
started = {}

def begin():
    t = time.perf_counter()
    s = session(sys.argv[1], {"spark.ui.enabled": "false", "spark.log.level": "ERROR",
                              "spark.sql.shuffle.partitions": sys.argv[2]})
    s.sparkContext.setLogLevel("ERROR")
    started["s"], started["session_s"] = s, time.perf_counter() - t
    return s

summary = run(begin, [Snapshot(d, d.rstrip("/").rsplit("/", 1)[-1]) for d in sys.argv[4:]], sys.argv[3])
t3 = time.perf_counter()
started["s"].stop()
t4 = time.perf_counter()
print(json.dumps({"imports_s": t1 - t0, "session_s": started["session_s"], "job_s": t3 - t1, "stop_s": t4 - t3,
                  "timings": summary["timings"]}))
"""


def spark_cold(dirs: list[Path], out: Path, cores: int) -> dict:
    """``kforensics``' Spark job in a fresh process, from spawn to exit (Python, imports, JVM and session start, the
    job, the session's stop): the wall time and its parts."""
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", COLD, f"local[{cores}]", str(cores * 4), str(out), *map(str, dirs)],
                          capture_output=True, text=True, cwd=HERE.parent)
    wall = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"cold Spark run failed: {done.stderr[-2000:]}")
    parts = json.loads(done.stdout.strip().splitlines()[-1])
    parts["wall_s"] = wall
    parts["python_s"] = wall - parts["imports_s"] - parts["job_s"] - parts["stop_s"]
    return parts


def print_cold(cold: dict, single: float, cores: int) -> None:
    """The cold run's parts; the job's ``start`` is the JVM and session start with the plan's rest built beside it."""
    print(f"  spark local[{cores}] cold (fresh process): {cold['wall_s']:.1f}s = interpreter start and exit "
          f"{cold['python_s']:.1f}s + kforensics/pyspark imports {cold['imports_s']:.1f}s + job {cold['job_s']:.1f}s ("
          + ", ".join(f"{k[:-2]} {v:.1f}s" for k, v in cold["timings"].items())
          + f"; the JVM and session start {cold['session_s']:.1f}s of start) + session stop {cold['stop_s']:.1f}s")
    print(f"  spark cold / single = {cold['wall_s'] / single:.2f} (target <= 1.00); start-up (interpreter, imports, "
          f"JVM and session) {cold['python_s'] + cold['imports_s'] + cold['session_s']:.1f}s, "
          f"work {cold['job_s'] - cold['session_s']:.1f}s")


def compare(label: str, dirs: list[Path], root: Path, cores: int, cold: bool = False) -> dict:
    size = sum(f.stat().st_size for d in dirs for f in d.rglob("*.log"))
    single = single_process(dirs)
    s = spark_run(dirs, root / f"out-{label}", cores)
    tm = s["timings"]
    wall = s["wall_s"]
    print(f"{label}: {len(dirs)} brokers, {s['partitions']:,} partition dirs, {size / 2**30:.2f} GiB, "
          f"{s['batches']:,} batches")
    print(f"  single process: scan --out {single['scan_s']:.1f}s + replay {single['replay_s']:.1f}s = "
          f"{single['wall_s']:.1f}s")
    print(f"  spark local[{cores}]: wall {wall:.1f}s (" + ", ".join(f"{k[:-2]} {v:.1f}s" for k, v in tm.items())
          + f"); verdicts {s['verdicts']}")
    print(f"  spark / single = {wall / single['wall_s']:.2f} (target <= 1.00); replay stage = "
          f"{tm.get('replay_s', 0) / wall:.0%} of the wall time (target < 20%)")
    if cold:
        print_cold(spark_cold(dirs, root / f"out-{label}-cold", cores), single["wall_s"], cores)
    print(f"  load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return {"single": single, "spark": wall, "timings": tm, "size": size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--large-partitions", type=int, default=24)
    ap.add_argument("--mb-per-partition", type=int, default=16)
    ap.add_argument("--small-partitions", type=int, default=10_000)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--scaling", action="store_true", help="also the large set at 2x and 4x partitions")
    ap.add_argument("--only", choices=["large", "small"])
    ap.add_argument("--cold", action="store_true", help="also Spark in a fresh process (JVM start-up included)")
    ap.add_argument("--root", default="/tmp/kfbench/spark2")
    args = ap.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    per_mb = 1024 * 1024 // 186  # batches per MiB of 186-byte batches
    if args.only != "small":
        large = build(root, f"large{args.large_partitions}x{args.mb_per_partition}", args.brokers,
                      args.large_partitions, args.mb_per_partition * per_mb)
        first = compare("large", large, root, args.cores, args.cold)
        if args.scaling:
            walls = [first["spark"]]
            for k in (2, 4):
                dirs = build(root, f"large{args.large_partitions * k}x{args.mb_per_partition}", args.brokers,
                             args.large_partitions * k, args.mb_per_partition * per_mb)
                s = spark_run(dirs, root / f"out-scale{k}", args.cores)
                walls.append(s["wall_s"])
                tm = s["timings"]
                print(f"  scaling {k}x ({args.large_partitions * k} partitions per broker): wall {s['wall_s']:.1f}s ("
                      + ", ".join(f"{n[:-2]} {v:.1f}s" for n, v in tm.items())
                      + f"); replay stage {tm.get('replay_s', 0) / s['wall_s']:.0%}")
            print("  scaling ratios (1x->2x, 2x->4x): " + ", ".join(f"{b / a:.2f}" for a, b in zip(walls, walls[1:]))
                  + " (target <= 2.1 each)")
    if args.only != "large":
        small = build(root, f"small{args.small_partitions}", args.brokers, args.small_partitions, 10, topics=100)
        compare("small", small, root, args.cores, args.cold)


if __name__ == "__main__":
    main()
