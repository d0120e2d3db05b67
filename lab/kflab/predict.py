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
from .jars import JDK17, release

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


def predict(
    evidence: Path,
    out_dir: Path,
    kafka_version: str = "latest",
    timeout_s: int = 300,
    spark: bool | None = None,
    restart_order: list[int] | None = None,
) -> dict:
    """Scan every broker and replay all, modelling kafka_version (a lab version: kforensics' --kafka-version
    gets its release); returns where each JSON went and how each command ended.  ZooKeeper-mode evidence (a
    zookeeper/ dir, no controller) has no metadata log: the replay reads ZooKeeper's data dir instead
    (``--zookeeper``), where the ZooKeeper-era controller's partition states are.  spark (default: when
    $KFLAB_SPARK is 1): the spark front end's verdicts too (minutes of a 2-core machine per run: ``kflab recompare
    --spark`` adds them later).  restart_order: the order the lab will start the brokers in (``replay
    --restart-order``): the operator's plan is an input of the prediction, as it is of Kafka's outcome (both
    modes: both controller models take it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spark = os.environ.get("KFLAB_SPARK", "0") == "1" if spark is None else spark
    kf = kforensics_argv()
    kafka_version = release(kafka_version)
    zk = (evidence / node_name(ZOOKEEPER)).exists() and not (evidence / node_name(CONTROLLER)).exists()
    res = {"scan": {}, "kforensics": " ".join(kf), "kafka_version_flag": kafka_version, "zookeeper_mode": zk}
    meta = evidence / node_name(CONTROLLER) / "__cluster_metadata-0"
    replay = ["replay", *[str(evidence / node_name(b)) for b in BROKERS]]
    zk_dir = evidence / node_name(ZOOKEEPER)
    replay += ["--zookeeper", str(zk_dir)] if zk else ["--metadata", str(meta)]
    if restart_order:
        replay += ["--restart-order", ",".join(map(str, restart_order))]
        res["restart_order"] = list(restart_order)
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
    if spark:  # after the others: Spark's JVM alone is as heavy as all of them
        res["spark"] = run_spark(kf, evidence, out_dir, kafka_version, None if zk else meta, timeout_s * 2,
                                 restart_order, zk_dir if zk else None)
    (out_dir / "commands.json").write_text(json.dumps(res, indent=1))
    return res


def run_spark(kf: list[str], evidence: Path, out_dir: Path, kafka_version: str, meta: Path | None, timeout_s: int,
              restart_order: list[int] | None = None, zookeeper: Path | None = None):
    """``kforensics spark`` over the same broker dirs (local[1], the verdicts table only); its verdicts are
    saved as spark-verdicts.json, keyed like the replay's replicas, for the comparison with the replay."""
    tables = out_dir / "spark"
    argv = kf + ["spark", *[str(evidence / node_name(b)) for b in BROKERS], "--out", str(tables), "--overwrite"]
    argv += ["--master", "local[1]", "--tables", "verdicts", "--format", "json", "--kafka-version", kafka_version]
    argv += ["--metadata", str(meta)] if meta else []
    argv += ["--zookeeper", str(zookeeper)] if zookeeper else []
    argv += ["--restart-order", ",".join(map(str, restart_order))] if restart_order else []
    env = dict(os.environ)
    if Path(JDK17, "bin", "java").exists():  # Spark runs on 17; the lab may be running Kafka on another Java
        env["JAVA_HOME"] = JDK17
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
    except subprocess.TimeoutExpired:
        return {"argv": argv, "error": f"timed out after {timeout_s}s"}
    rec = {"argv": argv, "exit": r.returncode}
    if r.returncode not in (0, 1) or not (tables / "verdicts").exists():
        (out_dir / "spark-stderr.txt").write_text(r.stderr)  # Spark's traces are long; the cause is early on
        rec["error"] = (r.stderr or r.stdout)[-2000:]
        rec["stderr"] = str(out_dir / "spark-stderr.txt")
        return rec
    out = out_dir / "spark-verdicts.json"
    out.write_text(json.dumps(spark_verdicts(tables / "verdicts"), indent=1))
    rec["json"] = str(out)
    return rec


def spark_verdicts(table: Path) -> dict:
    """'topic-partition/broker' -> {leader, leader_epoch, verdicts (codes, sorted), log_end_offset_after}
    from Spark's verdicts table (one row per replica and verdict)."""
    import pyarrow.parquet as pq

    rows = []
    for f in sorted(table.rglob("*.parquet")):  # hive-style dirs (cluster=/topic=): the file's own columns
        rows += pq.ParquetFile(f).read().to_pylist()
    out: dict = {}
    for r in rows:
        k = f"{r['topic']}-{r['partition']}/{r['broker_id']}"
        e = out.setdefault(
            k,
            {
                "leader": r["leader"],
                "leader_epoch": r["leader_epoch"],
                "verdicts": [],
                "log_end_offset_after": r["log_end_offset_after"],
            },
        )
        e["verdicts"] = sorted(e["verdicts"] + [r["verdict"]])
    return out


def replay_verdicts(replay: dict) -> dict:
    """The replay's JSON in spark_verdicts' shape (the same facts, for the comparison of the two front ends)."""
    out = {}
    for p in replay.get("partitions") or []:
        for r in p.get("replicas") or []:
            out[f"{p['topic']}-{p['partition']}/{r['broker_id']}"] = {
                "leader": p.get("leader"),
                "leader_epoch": p.get("leader_epoch"),
                "verdicts": sorted(v["code"] for v in r.get("verdicts") or []),
                "log_end_offset_after": r.get("log_end_offset_after"),
            }
    return out


def load(rec: dict) -> dict | None:
    p = rec.get("json")
    return json.loads(Path(p).read_text()) if p and Path(p).exists() else None
