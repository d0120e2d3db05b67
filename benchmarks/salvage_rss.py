"""Salvage benchmark: peak memory and time of ``kforensics salvage`` on a partition that loses N records (1 M).

A generated scenario: two brokers of one cluster; broker 2 holds the first
``--kept`` records of ``orders-0``, broker 1 those and N more (batches of
``--per-batch`` records, each a copy of one template batch with its base
offset rewritten: the base offset is outside a v2 batch's CRC, so every copy
is valid).  ``--leader 2`` makes broker 1 truncate everything above the
kept records, so all N are salvaged (Parquet and JSON lines).  The peak RSS
of the ``salvage`` process is compared with ``replay`` on the same input
(the replay salvage runs first).

    python benchmarks/salvage_rss.py [--records 1000000] [--per-batch 100] [--dir /tmp/kf-salvage-bench]

Prints figures; asserts nothing.  Measured (2026-11, the shared two-core build machine): 1 M lost records, peak
RSS 194 MiB in 500 s; 20 000 records, 187 MiB (the floor: imports and the replay).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.scenario.writer import LogDirWriter

T0 = 1_700_000_000_000


def template(per_batch: int) -> bytes:
    recs = [RecordData(i, T0 + i, f"key-{i:06d}".encode(), (f"order {i:06d} " + "x" * 80).encode(),
                       [("source", b"bench")]) for i in range(per_batch)]
    return build_batch(recs, partition_leader_epoch=0)


def write_brokers(root: Path, records: int, per_batch: int, kept: int) -> tuple[Path, Path]:
    tpl = template(per_batch)
    out = []
    for node, n in ((1, kept + records), (2, kept)):
        w = LogDirWriter(root / f"broker-{node}", node_id=node, cluster_id="salvage-bench")
        pw = w.partition("orders", 0, segment_bytes=256 << 20)
        for base in range(0, n, per_batch):
            pw.append(base.to_bytes(8, "big") + tpl[8:])
        w.high_watermarks = {("orders", 0): n}
        w.recovery_points = {("orders", 0): n}
        w.clean_shutdown = True
        out.append(w.write())
    return out[0], out[1]


def run(args: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB of the child, exit code).  The child's own peak (``wait4``); this process stays
    small (the data is generated in another one): a forked child counts its parent's pages until it execs."""
    t = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "kforensics", *args], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    first = child.stdout.readline()
    child.stdout.read()
    _pid, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    took = time.perf_counter() - t
    print(first.rstrip())
    return took, usage.ru_maxrss / 1024, child.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--per-batch", type=int, default=100)
    ap.add_argument("--kept", type=int, default=1000)
    ap.add_argument("--dir", default="/tmp/kf-salvage-bench")
    ap.add_argument("--which", choices=("salvage", "replay"), default="salvage",
                    help="the command measured (one per process: the peak of a process's children is one figure)")
    ap.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    root = Path(a.dir)
    b1, b2 = root / "broker-1", root / "broker-2"
    if a.generate_only:
        t = time.perf_counter()
        write_brokers(root, a.records, a.per_batch, a.kept)
        took = time.perf_counter() - t
        print(f"wrote {a.records} lost records in {a.records // a.per_batch} batches in {took:.1f} s")
        return
    if not (b1 / "orders-0").exists():
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run([sys.executable, __file__, "--generate-only", "--records", str(a.records), "--per-batch",
                        str(a.per_batch), "--kept", str(a.kept), "--dir", str(root)], check=True)
    common = ["--broker", f"1={b1}", "--broker", f"2={b2}", "--leader", "2"]
    if a.which == "replay":
        took, rss, code = run(["replay", *common])
    else:
        out = root.parent / (root.name + "-out")
        shutil.rmtree(out, ignore_errors=True)
        took, rss, code = run(["salvage", *common, "--out", str(out)])
        print(f"outputs: {sum(p.stat().st_size for p in out.iterdir()) / 2**20:.0f} MiB in {out}")
    print(f"{a.which}: {took:.1f} s, peak RSS {rss:.0f} MiB, exit {code}")


if __name__ == "__main__":
    main()
