"""kforensics' predictions on the frozen evidence: ``scan`` of each broker, ``replay`` of all with the metadata log."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .cluster import BROKERS, CONTROLLER, ZOOKEEPER, node_name
from .jars import release

REPO = Path(__file__).resolve().parents[2]


def pinned(rev: str) -> tuple[list[str], str]:
    """kforensics as committed at rev (git archive into lab/.cache), run by the repo's Python: predictions
    stay reproducible while the working tree is being edited.  Returns (argv, full commit id)."""
    from .jars import CACHE

    sha = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", rev], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()
    dst = CACHE / f"kforensics-{sha[:12]}"
    if not (dst / "kforensics" / "__init__.py").exists():
        dst.mkdir(parents=True, exist_ok=True)
        arch = subprocess.run(
            ["git", "-C", str(REPO), "archive", sha, "kforensics"], capture_output=True, check=True, timeout=60
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dst)], input=arch, check=True, timeout=60)
    py = REPO / ".venv" / "bin" / "python"
    py = str(py) if py.exists() else sys.executable
    return ["env", f"PYTHONPATH={dst}", py, "-m", "kforensics"], sha


def kforensics_argv() -> list[str]:
    """The kforensics command: $KFLAB_KFORENSICS, a committed revision ($KFLAB_KFORENSICS_REV, e.g. HEAD),
    the repo's virtualenv, PATH's, or this Python's module."""
    env = os.environ.get("KFLAB_KFORENSICS")
    if env:
        return env.split()
    rev = os.environ.get("KFLAB_KFORENSICS_REV")
    if rev:
        return pinned(rev)[0]
    venv = REPO / ".venv" / "bin" / "kforensics"
    if venv.exists():
        return [str(venv)]
    found = shutil.which("kforensics")
    return [found] if found else [sys.executable, "-m", "kforensics"]


def _run(argv: list[str], out: Path, timeout_s: int) -> dict:
    """Run one kforensics command; keep its JSON (exit 0 or 1 are answers; 2 and 3 are errors)."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"argv": argv, "error": f"timed out after {timeout_s}s"}
    rec = {"argv": argv, "exit": r.returncode}
    if r.returncode in (0, 1) and r.stdout.strip():
        out.write_text(r.stdout)
        rec["json"] = str(out)
    else:
        rec["error"] = (r.stderr or r.stdout)[-2000:]
    return rec


def predict(evidence: Path, out_dir: Path, kafka_version: str = "latest", timeout_s: int = 300) -> dict:
    """Scan every broker and replay all, modelling kafka_version (a lab version: kforensics' --kafka-version
    gets its release); returns where each JSON went and how each command ended.  ZooKeeper-mode evidence (a
    zookeeper/ dir, no controller) has no metadata log: the replay runs on the brokers' dirs alone, as
    kforensics does for ZooKeeper-era clusters."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kf = kforensics_argv()
    kafka_version = release(kafka_version)
    zk = (evidence / node_name(ZOOKEEPER)).exists() and not (evidence / node_name(CONTROLLER)).exists()
    res = {"scan": {}, "kforensics": " ".join(kf), "kafka_version_flag": kafka_version, "zookeeper_mode": zk}
    meta = evidence / node_name(CONTROLLER) / "__cluster_metadata-0"
    replay = ["replay", *[str(evidence / node_name(b)) for b in BROKERS]]
    replay += [] if zk else ["--metadata", str(meta)]
    replay += ["--format", "json", "--kafka-version", kafka_version]
    jobs = {"replay": (kf + replay, out_dir / "replay.json")}
    for b in BROKERS:
        jobs[b] = (
            kf
            + [
                "scan",
                str(evidence / node_name(b)),
                "--format",
                "json",
                "--no-progress",
                "--kafka-version",
                kafka_version,
            ],
            out_dir / f"scan-{node_name(b)}.json",
        )
    # two at a time: the commands are independent and mostly start-up time
    with ThreadPoolExecutor(2) as ex:
        done = {k: ex.submit(_run, argv, out, timeout_s) for k, (argv, out) in jobs.items()}
    res["replay"] = done.pop("replay").result()
    res["scan"] = {b: f.result() for b, f in done.items()}
    (out_dir / "commands.json").write_text(json.dumps(res, indent=1))
    return res


def load(rec: dict) -> dict | None:
    p = rec.get("json")
    return json.loads(Path(p).read_text()) if p and Path(p).exists() else None
