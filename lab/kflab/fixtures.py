"""Small evidence sets the lab produced, kept under fixtures/lab/<name>/ and checked without Kafka.

Layout: ``before/<node>.tgz`` (the frozen evidence of each broker and the controller, exactly as copied),
``after/<broker>.tgz`` (the lab topics' partition dirs after the restart and clean stop), ``outcome.json``
(what Kafka did: leaders, ISRs, epochs, recovery lines, elections, the incident's story) and
``expected.json`` (every check with Kafka's value and whether kforensics agreed when it was recorded).
"""

from __future__ import annotations

import gzip
import json
import shutil
import tarfile
from pathlib import Path

from .cluster import BROKERS, node_name, nodes
from .compare import TOPICS, compare
from .predict import predict

KEEP_OUTCOME = (
    "converged",
    "seconds_to_converge",
    "states",
    "epochs",
    "order",
    "restart",
    "recovery",
    "elections",
    "clean_stop",
    "timeout",
    "end_offsets",
    "group_offsets",
    "zk_states",  # ZooKeeper mode: leader and epoch as the partition state znodes record them
    "epochs_listoffsets",
    "transactions",  # Kafka's DescribeProducers (3.0+): the open_transactions check
)


def _tar(src: Path, dst: Path, members: list[Path] | None = None) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    # gzip header time 0: the same evidence gives the same bytes, so re-exporting does not churn git
    with gzip.GzipFile(dst, "wb", compresslevel=9, mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as t:
        for m in members if members is not None else [src]:
            t.add(m, arcname=str(m.relative_to(src.parent)))


def export(run_dir: Path, dest: Path) -> dict:
    """Write one compared run as a fixture set; returns its size in bytes per file."""
    result = json.loads((run_dir / "result.json").read_text())
    if result.get("status") != "compared":
        raise ValueError(f"{run_dir} has no comparison (status {result.get('status')})")
    shutil.rmtree(dest, ignore_errors=True)
    for node in nodes(result["version"]):
        _tar(run_dir / "evidence" / node_name(node), dest / "before" / f"{node_name(node)}.tgz")
    restart = Path(result["outcome"]["data"])
    for b in BROKERS:
        d = restart / node_name(b)
        parts = [p for p in sorted(d.iterdir()) if p.is_dir() and p.name.rpartition("-")[0] in TOPICS]
        _tar(d, dest / "after" / f"{node_name(b)}.tgz", parts)
    outcome = {k: result["outcome"].get(k) for k in KEEP_OUTCOME}
    meta = {
        "scenario": result["scenario"],
        "version": result["version"],
        "seed": result["seed"],
        "story": result.get("story"),
        "kforensics": result["predictions"].get("kforensics"),
        "kafka_version_flag": result["predictions"].get("kafka_version_flag", "latest"),
    }
    (dest / "outcome.json").write_text(json.dumps({**meta, "outcome": outcome}, indent=1, default=str))
    checks = [
        {k: c[k] for k in ("check", "topic", "partition", "broker", "observed", "agree")}
        | {"predicted_then": c["predicted"]}
        for c in result["comparison"]["checks"]
    ]
    (dest / "expected.json").write_text(json.dumps({"checks": checks}, indent=1, default=str))
    return {str(p.relative_to(dest)): p.stat().st_size for p in sorted(dest.rglob("*")) if p.is_file()}


def unpack(fixture: Path, work: Path) -> Path:
    """Extract a fixture set into work/evidence and work/restart (a run dir's layout)."""
    for sub, target in (("before", "evidence"), ("after", "restart")):
        (work / target).mkdir(parents=True, exist_ok=True)
        for t in sorted((fixture / sub).glob("*.tgz")):
            with tarfile.open(t) as tf:
                tf.extractall(work / target, filter="data")
    for b in BROKERS:
        (work / "restart" / node_name(b)).mkdir(parents=True, exist_ok=True)
    return work


def recheck(fixture: Path, work: Path) -> list[dict]:
    """kforensics (as installed now) on the fixture's evidence, checked against the outcome Kafka recorded."""
    unpack(fixture, work)
    meta = json.loads((fixture / "outcome.json").read_text())
    outcome = dict(meta["outcome"], data=str(work / "restart"))
    flag = meta.get("kafka_version_flag", "latest")
    order = outcome.get("order")  # the order the lab restarted the brokers in: the prediction is told it
    result = {
        "predictions": predict(work / "evidence", work / "predictions", kafka_version=flag, restart_order=order),
        "outcome": outcome,
    }
    return compare(work, result)["checks"]


def rerecord(fixture: Path, work: Path) -> dict[str, int]:
    """Record again whether kforensics (as installed now) agrees with each of the set's checks: Kafka's values stay
    as observed; a check that changed sides is counted.  For a fix that turns known disagreements into agreements
    (the fixture test's XPASS), or a change that costs one (its failure, to be explained)."""
    path = fixture / "expected.json"
    old = json.loads(path.read_text())["checks"]
    now = {(c["check"], c["topic"], c["partition"], c["broker"]): c for c in recheck(fixture, work)}
    moved = {"now_agree": 0, "now_disagree": 0}
    for c in old:
        got = now.get((c["check"], c["topic"], c["partition"], c["broker"]))
        if got is None or got["observed"] != c["observed"]:
            continue  # no longer predicted, or the lab reads Kafka's outcome differently: left as recorded
        if got["agree"] != c["agree"]:
            moved["now_agree" if got["agree"] else "now_disagree"] += 1
        c["agree"], c["predicted_then"] = got["agree"], got["predicted"]
    path.write_text(json.dumps({"checks": old}, indent=1, default=str))
    return moved
