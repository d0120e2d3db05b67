#!/usr/bin/env python
"""Peak RSS and wall time of every command on every hostile input of issue #22, as a table (target: 500 MB).

Builds the inputs of ``tests/hostile/builders.py`` at the issue's sizes (or
small ones with ``--small``) in a temporary directory (``--work``; never the
repository or ../shared), runs ``scan``, ``replay``, ``timeline`` and ``dump``
on each in a child process (``scan`` also with ``--out``), and reads each
child's own peak RSS from ``wait4``.  A run past ``--timeout`` is killed and
reported as a hang.  Exit status 1 when any run is over ``--limit-mb`` or hangs.

    .venv/bin/python scripts/hostile_rss.py                 # the issue's sizes (a few minutes to build)
    .venv/bin/python scripts/hostile_rss.py --small         # the test suite's sizes
    KF_ZSTD_RECORDS=1000000 .venv/bin/python scripts/hostile_rss.py --only zstd-batch
    .venv/bin/python scripts/hostile_rss.py --work /tmp/w --only groups                    # build once
    .venv/bin/python scripts/hostile_rss.py --work /tmp/w --only groups --package-root /tmp/old  # before

``--work DIR`` keeps the inputs (and reuses those already built there), so two
runs can measure the same inputs; ``--package-root DIR`` runs the kforensics
found there (e.g. ``git archive`` of an older commit) instead of the checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CLI = [sys.executable, "-c", "import sys; from kforensics.cli import main; sys.argv[0] = 'kforensics'; main()"]
#: the same, importing kforensics from the dir in $KF_PACKAGE_ROOT (the editable install's finder set aside)
SNAPSHOT_CLI = [sys.executable, "-c", "import os, sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' "
                "not in getattr(f, '__module__', '') and 'editable' not in type(f).__module__]; "
                "sys.path.insert(0, os.environ['KF_PACKAGE_ROOT']); from kforensics.cli import main; "
                "sys.argv[0] = 'kforensics'; main()"]


def runs(name: str, path: Path, out_dir: Path) -> dict[str, list[str]]:
    """The command lines to measure on one input."""
    root, seg = path, None
    if name == "zstd-batch":
        root, seg = path.parent.parent, path
    elif name == "groups":
        seg = path / "__consumer_offsets-0" / "00000000000000000000.log"
    out = {"scan": ["scan", str(root), "--format", "json"],
           "scan --out": ["scan", str(root), "--format", "json", "--out", str(out_dir / name.replace("/", "_"))],
           "replay": ["replay", str(root), "--format", "json"],
           "timeline": ["timeline", str(root), "--format", "json"]}
    if seg is not None:
        out["dump --deep"] = ["dump", "--deep", "--format", "json", str(seg)]
    return out


def measure(argv: list[str], timeout: float, package_root: str | None = None) -> tuple[int | None, float, float]:
    """(exit code or None for a hang, peak RSS in MB, seconds) of one child run, output discarded."""
    t = time.monotonic()
    cli, env = CLI, None
    if package_root:
        cli, env = SNAPSHOT_CLI, dict(os.environ, KF_PACKAGE_ROOT=package_root)
    proc = subprocess.Popen([*cli, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=package_root or ROOT, env=env)
    deadline = t + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_maxrss / 1024, time.monotonic() - t
        if time.monotonic() > deadline:
            proc.send_signal(signal.SIGKILL)
            _, _, usage = os.wait4(proc.pid, 0)
            return None, usage.ru_maxrss / 1024, time.monotonic() - t
        time.sleep(0.05)


def build(where: Path, small: bool, names: list[str] | None) -> dict[str, Path]:
    """The inputs, built in a child process: a child's peak RSS starts at its parent's (Linux keeps the high-water
    mark across fork and exec), so this process stays small for the children it measures.  Inputs already built
    under ``where`` (listed in its ``inputs.json``) are reused."""
    listed = where / "inputs.json"
    if listed.exists():
        made = {k: Path(v) for k, v in json.loads(listed.read_text()).items()}
        if all(k in made for k in names or ()) and names:
            return {k: made[k] for k in names}
    code = ("import json, sys; from pathlib import Path; from tests.hostile import builders; "
            f"made = builders.all_inputs(Path({str(where)!r}), small={small}, names={names!r}); "
            "print(json.dumps({k: str(v) for k, v in made.items()}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    made = {k: Path(v) for k, v in json.loads(out.splitlines()[-1]).items()}
    old = json.loads(listed.read_text()) if listed.exists() else {}
    listed.write_text(json.dumps({**old, **{k: str(v) for k, v in made.items()}}))
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="the test suite's sizes")
    ap.add_argument("--work", help="where to build the inputs (default: a temporary dir, removed after)")
    ap.add_argument("--only", action="append", help="input names to build and run (default: all)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--limit-mb", type=float, default=500)
    ap.add_argument("--command", action="append", help="commands to measure, e.g. 'scan --out' (default: all)")
    ap.add_argument("--package-root", help="run the kforensics in this dir (a snapshot) instead of the checkout's")
    args = ap.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="kf-hostile-rss-"))
    try:
        t = time.monotonic()
        inputs = build(work / "inputs", args.small, args.only)
        print(f"inputs built in {time.monotonic() - t:.0f} s under {work}", flush=True)
        print(f"{'input':<22} {'command':<12} {'exit':>5} {'peak RSS MB':>12} {'seconds':>8}")
        bad = 0
        for name, path in inputs.items():
            if args.only and name not in args.only:
                continue
            for command, argv in runs(name, path, work / "out").items():
                if args.command and command not in args.command:
                    continue
                code, rss, secs = measure(argv, args.timeout, args.package_root)
                over = code is None or rss > args.limit_mb
                bad += over
                shown = "HANG" if code is None else str(code)
                print(f"{name:<22} {command:<12} {shown:>5} {rss:>12.0f} {secs:>8.1f}{'  OVER' if over else ''}",
                      flush=True)
        return 1 if bad else 0
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
