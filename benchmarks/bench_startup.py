"""Start-up cost of the command line: wall time and peak RSS of whole processes, medians of several runs.

Targets (the structure issue): ``kforensics --help`` <= 0.15 s and <= 50 MB peak RSS, ``kforensics dump
meta.properties`` <= 0.25 s, on a warm cache.  ``python -c pass`` is measured in the same run as the floor.

    .venv/bin/python benchmarks/bench_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(cmd: list[str], runs: int) -> tuple[float, float]:
    """Median wall seconds and median peak RSS (MB) of ``cmd`` over ``runs`` runs, after one warm-up."""
    walls, rss = [], []
    for i in range(runs + 1):
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, _, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        if i:  # the first run warms the page cache
            walls.append(wall)
            rss.append(usage.ru_maxrss / 1024)
    return statistics.median(walls), statistics.median(rss)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    exe = str(Path(sys.executable).parent / "kforensics")
    with tempfile.TemporaryDirectory() as tmp:
        mp = Path(tmp) / "meta.properties"
        mp.write_bytes(b"#\n#Thu Jan 01 00:00:00 UTC 2026\nversion=1\nnode.id=1\ncluster.id=abc\n")
        cases = [
            ("python -c pass", [sys.executable, "-c", "pass"], None, None),
            ("kforensics --help", [exe, "--help"], 0.15, 50),
            ("kforensics dump meta.properties", [exe, "dump", str(mp)], 0.25, None),
        ]
        print(f"{'command':34} {'median s':>9} {'peak MB':>8}  target")
        for name, cmd, t_max, mb_max in cases:
            wall, mb = measure(cmd, args.runs)
            target = ", ".join(x for x in (f"<= {t_max} s" if t_max else "", f"<= {mb_max} MB" if mb_max else "") if x)
            ok = (t_max is None or wall <= t_max) and (mb_max is None or mb <= mb_max)
            print(f"{name:34} {wall:9.3f} {mb:8.1f}  {target or '(floor)'}{'' if not target else ('  met' if ok else '  MISSED')}")


if __name__ == "__main__":
    main()
