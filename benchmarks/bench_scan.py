"""Scan benchmark: ``kforensics scan`` of the 1 GiB anchor segment against hashing its bytes; peak RSS with --out.

    python benchmarks/bench_scan.py [--runs 5]              # the anchor figures (below)
    python benchmarks/bench_scan.py --mixed [--partitions 24 --mb-per-partition 128]

Anchor figures (the segment of bench_reader.py: 5.77 M one-record v2 batches,
1 GiB, generated once with the oracle's ``segment-gen``; ORACLE_DIR, default
../shared/oracle, or a writable copy on which ``./build.sh --no-fixtures`` ran):

* log dirs: ``x1`` holds the anchor as one partition, ``x2`` holds it twice
  (two partitions, hard links), each with a ``meta.properties``;
* each run, in this order: SHA-256 of the segment's bytes with hashlib (in
  this process: the hash alone, 8 MiB reads, page cache warm), then
  ``kforensics scan x1`` (no --out), ``kforensics scan x1 --out DIR`` and
  ``kforensics scan x2 --out DIR``, each a fresh process timed from spawn to
  exit (start-up included), its peak RSS from ``wait4``;
* printed: each figure's median over ``--runs`` runs, and the ratios
  scan / SHA-256 (target <= 1.5) and 2x / 1x peak RSS (target: no growth;
  <= 300 MB with --out).

``--small [--partitions 10000] [--against CHECKOUT]`` measures a fleet of small partitions (issue 26): bench_spark's
small set, 3 brokers x N partition dirs of 10 batches; ``scan DIR --out`` of each broker and ``replay`` of the three,
fresh processes, wall and CPU time and peak RSS, against the issue's anchors (23.9 s and 31.9 s for N = 10 000)
and targets (6 s each); ``--against`` times another checkout's commands in turn in the same run (the same load).
``--small --stages`` prints instead the CPU seconds and peak RSS of each stage in one process (``scan_log_dirs`` and
the tables of one broker, then ``replay_all``'s loading, the rest of it and ``to_jsonable``).

``--mixed`` measures the older figure: a ~3 GiB log dir of 24 partitions of
small batches (uncompressed, idempotent, lz4), ``scan_log_dirs`` in a fresh
process: batches/s, MB/s, peak RSS.  Asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_ORACLE = HERE.parent.parent / "shared" / "oracle"
META = "#\nversion=1\nbroker.id=1\nnode.id=1\ncluster.id=kfbenchAnchorCluster0\n"


# ----------------------------------------------------------------------------- the anchor


def anchor_dirs(segment: Path, root: Path) -> dict[str, Path]:
    """Log dirs holding the anchor segment once (x1) and twice (x2), as partition dirs of their own."""
    out = {}
    for copies in (1, 2):
        d = root / f"x{copies}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "meta.properties").write_text(META)
        for p in range(copies):
            part = d / f"anchor-{p}"
            part.mkdir(exist_ok=True)
            seg = part / segment.name
            if not seg.exists():
                try:
                    os.link(segment, seg)
                except OSError:
                    shutil.copyfile(segment, seg)
        out[f"x{copies}"] = d
    return out


def hash_seconds(path: Path) -> tuple[float, float]:
    """Wall and CPU seconds of SHA-256 over the file's bytes (hashlib: OpenSSL, as the scan hashes them)."""
    t0, c0 = time.perf_counter(), time.process_time()
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(8 << 20)
        mv = memoryview(buf)
        while n := fh.readinto(buf):
            h.update(mv[:n])
    h.hexdigest()
    return time.perf_counter() - t0, time.process_time() - c0


def timed_process(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds from spawn to exit, peak RSS in MB and CPU seconds (the child's own, from wait4)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode not in (0, 1):  # 1: findings at or above --fail-on
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err[-2000:]}")
    return dt, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def warm(paths) -> None:
    for p in paths:
        with open(p, "rb") as fh:
            while fh.read(8 << 20):
                pass


def run_anchor(args) -> None:
    sys.path.insert(0, str(HERE))
    from bench_reader import generate

    oracle = Path(os.environ.get("ORACLE_DIR", DEFAULT_ORACLE))
    segment = Path(args.segment or generate(oracle, Path(args.out_dir)))
    dirs = anchor_dirs(segment, Path(args.out_dir) / "scanmem")
    size = segment.stat().st_size
    warm([segment])
    kf = [sys.executable, "-m", "kforensics", "scan"]
    cases = {
        "scan x1": lambda out: kf + [str(dirs["x1"])],
        "scan x1 --out": lambda out: kf + [str(dirs["x1"]), "--out", out],
        "scan x2 --out": lambda out: kf + [str(dirs["x2"]), "--out", out],
    }
    print(f"anchor segment {segment}: {size:,} bytes; log dirs {dirs['x1']} (1 partition), {dirs['x2']} "
          f"(2 partitions, the same segment hard-linked)")
    timed_process(cases["scan x1"](""))  # warm-up: kernels compiled or loaded, modules in the page cache
    figures: dict[str, list[tuple[float, float, float]]] = {}
    for run in range(args.runs):
        wall, cpu = hash_seconds(segment)
        figures.setdefault("sha256", []).append((wall, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, cpu))
        for name, cmd in cases.items():
            with tempfile.TemporaryDirectory(prefix="kfbench-out-") as out:
                figures.setdefault(name, []).append(timed_process(cmd(str(Path(out) / "tables"))))
        print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1][0]:.2f}s" for k, v in figures.items()), flush=True)
    med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in figures.items()}
    sha, _, sha_cpu = med["sha256"]
    print(f"medians of {args.runs} runs:")
    print(f"  SHA-256 of the segment (hashlib, in process): {sha:.2f}s wall, {sha_cpu:.2f}s CPU "
          f"({size / sha / 1e6:.0f} MB/s)")
    for name in cases:
        t, rss, cpu = med[name]
        copies = 2 if "x2" in name else 1
        batches = 5772805 * copies if size == 1073741730 else None
        rate = f", {batches / t / 1e6:.2f} M batches/s" if batches else ""
        print(f"  {name:14}: {t:.2f}s wall (process start to exit){rate}, {t / (sha * copies):.2f}x SHA-256 of the "
              f"same bytes; {cpu:.2f}s CPU ({cpu / (sha_cpu * copies):.2f}x the hash's); peak RSS {rss:.0f} MB")
    one, two = med["scan x1 --out"][1], med["scan x2 --out"][1]
    print(f"  peak RSS with --out: {one:.0f} MB for 1x, {two:.0f} MB for 2x the batches ({two / one:.2f}x)")
    print(f"  scan x2 --out / scan x1 --out wall: {med['scan x2 --out'][0] / med['scan x1 --out'][0]:.2f}x")
    print("targets: scan <= 1.5x SHA-256 of the same bytes, start-up included; peak RSS with --out <= 300 MB and "
          "not growing with the number of batches")


# ----------------------------------------------------------------------------- the mixed log dir


def generate_mixed(oracle: Path, root: Path, partitions: int, mb: int) -> None:
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


def run_mixed(args) -> None:
    oracle = Path(os.environ.get("ORACLE_DIR", DEFAULT_ORACLE))
    root = Path(args.out_dir) / "scan" / "logdir"
    t0 = time.perf_counter()
    generate_mixed(oracle, root, args.partitions, args.mb_per_partition)
    print(f"log dir {root}: {args.partitions} partitions x {args.mb_per_partition} MiB "
          f"(generated/checked in {time.perf_counter() - t0:.0f}s)")
    warm(root.rglob("*.log"))
    for run in range(args.runs):
        out = subprocess.run([sys.executable, __file__, "--inner", str(root)], check=True, capture_output=True,
                             text=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"run {run + 1}: {r['partitions']} partitions, {r['batches']:,} batches, {r['bytes'] / 2**30:.2f} GiB in "
              f"{r['seconds']:.2f}s: {r['batches'] / r['seconds'] / 1e6:.2f} M batches/s, "
              f"{r['bytes'] / r['seconds'] / 1e6:.0f} MB/s, peak RSS {r['peak_rss_mb']:.0f} MB, "
              f"findings {r['findings']}")


# ----------------------------------------------------------------------------- fleets of small partitions

#: issue 26, measured when it was filed (2 cores): 3 brokers x 10 000 partition dirs of 10 batches
SMALL_ANCHORS = {"scan --out": 23.9, "replay": 31.9}
SMALL_TARGET_S = 6.0


def small_commands(dirs: list[Path], out: str) -> dict[str, list[list[str]]]:
    """The commands timed on the small set: ``scan DIR --out`` of each broker, and ``replay`` of the three (JSON to
    /dev/null, as bench_spark's single process)."""
    kf = ["-m", "kforensics"]
    return {"scan --out": [kf + ["scan", str(d), "--out", f"{out}/{i}", "--format", "json"]
                           for i, d in enumerate(dirs)],
            "replay": [kf + ["replay", *map(str, dirs), "--format", "json"]]}


def compiled_env(checkout: str | None, out_dir: Path) -> dict[str, str]:
    """The environment of a checkout's timed commands (None: this one): its kforensics first on the path, its
    bytecode compiled beforehand into a cache under ``out_dir`` (bench_dump's :func:`child_env`).  Without it, where
    ``PYTHONDONTWRITEBYTECODE`` is set, each command compiled again every module edited since the set-up compiled
    the tree (tens of ms a process), and a change looked slower than it was."""
    sys.path.insert(0, str(HERE))
    from bench_dump import child_env

    env = child_env(out_dir)
    if checkout:
        env["PYTHONPATH"] = checkout
    package = Path(checkout or HERE.parent) / "kforensics"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return env


def timed_with(cmd: list[str], checkout: str | None, env: dict[str, str] | None = None
               ) -> tuple[float, float, float]:
    """:func:`timed_process` of ``python cmd`` with ``checkout``'s kforensics first on the path (None: this one)
    and the environment ``env`` (:func:`compiled_env`; None: this process's)."""
    if checkout and env is None:
        env = {**os.environ, "PYTHONPATH": checkout}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            cwd=checkout or None)
    _pid, status, usage = os.wait4(proc.pid, 0)
    dt = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed: {err[-2000:]}")
    return dt, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def run_small(args) -> None:
    """3 brokers x ``--partitions`` partition dirs of 10 batches (bench_spark's small set): ``scan --out`` of each
    and ``replay`` of the three, each a fresh process; with ``--against CHECKOUT``, the same commands of another
    checkout (e.g. ``git archive`` of an earlier commit) in turn, so both meet the same load."""
    sys.path.insert(0, str(HERE))
    from bench_spark import build

    root = Path(args.out_dir) / "small"
    root.mkdir(parents=True, exist_ok=True)
    dirs = build(root, f"small{args.partitions}", 3, args.partitions, 10, topics=100)
    warm(f for d in dirs for f in d.rglob("*") if f.is_file())
    sides = {"this checkout": None, **({f"against {args.against}": args.against} if args.against else {})}
    envs = {side: compiled_env(checkout, Path(args.out_dir)) for side, checkout in sides.items()}
    figures: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    loads = []
    for run in range(args.runs):
        for side, checkout in sides.items():
            with tempfile.TemporaryDirectory(prefix="kfbench-small-") as out:
                for name, cmds in small_commands(dirs, out).items():
                    got = [timed_with(c, checkout, envs[side]) for c in cmds]
                    figures.setdefault((side, name), []).append(
                        (sum(g[0] for g in got), max(g[1] for g in got), sum(g[2] for g in got)))
        loads.append(os.getloadavg()[0])
        print(f"run {run + 1}: " + ", ".join(f"{s} {n} {v[-1][0]:.1f}s" for (s, n), v in figures.items())
              + f"; load average {loads[-1]:.1f}", flush=True)
    n = args.partitions
    print(f"3 brokers x {n:,} partition dirs of 10 batches ({dirs[0].parent}); medians of {args.runs} run(s), load "
          f"average {min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores")
    med = {key: tuple(statistics.median(x[i] for x in v) for i in range(3)) for key, v in figures.items()}
    for (side, name), (wall, rss, cpu) in med.items():
        anchor = SMALL_ANCHORS[name] * n / 10_000
        per = wall / (3 * n) * 1e3 if name == "scan --out" else wall / n * 1e3
        unit = "partition dir" if name == "scan --out" else "three-replica partition"
        print(f"  {side:>16} {name:10}: {wall:6.1f}s wall ({per:.2f} ms a {unit}), {cpu:6.1f}s CPU, peak RSS "
              f"{rss:.0f} MB; anchor {anchor:.1f}s -> {anchor / wall:.2f}x as fast; target <= "
              f"{SMALL_TARGET_S * n / 10_000:.1f}s ({'met' if wall <= SMALL_TARGET_S * n / 10_000 else 'missed'})")
    if args.against:
        # on a loaded machine wall times are mostly waiting: the child's CPU time is the comparison
        other = f"against {args.against}"
        for name in SMALL_ANCHORS:
            (w1, r1, c1), (w0, r0, c0) = med[("this checkout", name)], med[(other, name)]
            # each run times both sides back to back: the median of the runs' ratios holds where the machine's
            # speed drifts from run to run (the medians of each side do not)
            paired = statistics.median(a[0] / b[0] for a, b in zip(figures[("this checkout", name)],
                                                                    figures[(other, name)]))
            print(f"  {name:10}: this checkout / {args.against}: CPU {c1 / c0:.2f}x ({c1:.1f}s / {c0:.1f}s, "
                  f"{c1 / (3 * n if name == 'scan --out' else n) * 1e3:.2f} ms CPU a "
                  f"{'partition dir' if name == 'scan --out' else 'three-replica partition'}), wall {w1 / w0:.2f}x "
                  f"(run by run: median {paired:.2f}x), peak RSS {r1:.0f} / {r0:.0f} MB")


def stages(paths: list[str]) -> None:
    """In this (fresh) process: CPU seconds of each stage of ``scan --out`` of the first broker (``scan_log_dirs``
    with the batches writer, then the report's tables) and of ``replay_all`` of them all (loading the replicas, the
    rest, then ``to_jsonable`` of the report), with the peak RSS after each; one JSON line."""
    t = time.process_time()
    from kforensics.replay import report as replay_report
    from kforensics.scan.broker import broker_identity, resolve_log_dirs, scan_log_dirs
    from kforensics.serialize import to_jsonable
    from kforensics.tables.scan_tables import ScanParquet

    try:
        from kforensics.collector import tune  # as the command line does
    except ImportError:  # an older checkout (--against)
        pass
    else:
        tune()
    out: dict[str, float] = {"imports": round(time.process_time() - t, 2)}

    def mark(name: str, since: float) -> float:
        now = time.process_time()
        out[name] = round(now - since, 2)
        out[f"{name} peak RSS MB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return now

    with tempfile.TemporaryDirectory(prefix="kfbench-stages-") as tmp:
        dirs = resolve_log_dirs([paths[0]])
        who = broker_identity(dirs)
        w = ScanParquet(tmp, {"cluster": who.cluster_id, "broker_id": who.node_id})
        t = time.process_time()
        scan = scan_log_dirs(dirs, batch_sink=w.batches)
        t = mark("scan_log_dirs (one broker)", t)
        w.finish(scan)
        mark("tables", t)
    del scan, w
    load = replay_report.load_replicas

    def timed_load(*a, **kw):
        s = time.process_time()
        loaded = load(*a, **kw)
        mark("replay: load_replicas", s)
        return loaded

    replay_report.load_replicas = timed_load
    t = time.process_time()
    rep = replay_report.replay_all([Path(p) for p in paths])
    t = mark("replay_all", t)
    to_jsonable(rep)
    mark("to_jsonable", t)
    print(json.dumps(out))


def run_stages(args) -> None:
    """``--small --stages``: :func:`stages` of the small set in a fresh process (``--against``: also another
    checkout's, in turn)."""
    sys.path.insert(0, str(HERE))
    from bench_spark import build

    root = Path(args.out_dir) / "small"
    root.mkdir(parents=True, exist_ok=True)
    dirs = build(root, f"small{args.partitions}", 3, args.partitions, 10, topics=100)
    for side, checkout in {"this checkout": None, **({args.against: args.against} if args.against else {})}.items():
        env = {**os.environ, "PYTHONPATH": checkout} if checkout else None
        got = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--inner-stages", *map(str, dirs)],
                             capture_output=True, text=True, env=env, cwd=checkout or None, check=True)
        print(f"{side} (load average {os.getloadavg()[0]:.1f}): {got.stdout.strip()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--segment", help="the anchor segment (default: generate it under --out-dir)")
    ap.add_argument("--out-dir", default="/tmp/kfbench")
    ap.add_argument("--mixed", action="store_true", help="the 24-partition log dir figure instead")
    ap.add_argument("--partitions", type=int, help="--mixed: 24 partitions; --small: 10 000 per broker")
    ap.add_argument("--mb-per-partition", type=int, default=128)
    ap.add_argument("--small", action="store_true", help="the fleet of small partitions (issue 26) instead")
    ap.add_argument("--against", help="with --small: another checkout whose commands are timed in the same run")
    ap.add_argument("--stages", action="store_true", help="with --small: CPU and peak RSS per stage, in-process")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    ap.add_argument("--inner-stages", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.partitions = args.partitions or (10_000 if args.small else 24)
    if args.inner:
        inner(args.inner)
    elif args.inner_stages:
        stages(args.inner_stages)
    elif args.small and args.stages:
        run_stages(args)
    elif args.small:
        run_small(args)
    elif args.mixed:
        run_mixed(args)
    else:
        run_anchor(args)


if __name__ == "__main__":
    main()
