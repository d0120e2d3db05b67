"""Command line of the lab.

python -m kflab run SCENARIO [--seed N] [--version V] [--out DIR]
python -m kflab campaign --count N --seed S [--versions 4.4.0,3.9.1] [--parallel N] [--out DIR]
python -m kflab recompare RUN_DIR...      # predictions and checks again on kept evidence (no Kafka)
python -m kflab summary OUT_DIR           # summary.json/.md from the result.json files under OUT_DIR
python -m kflab export RUN_DIR DEST       # a compared run as a fixture set (fixtures/lab/<name>)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import jars
from .incidents import INCIDENTS
from .procs import install_handlers, kill_all
from .report import write_run, write_summary

DEFAULT_OUT = jars.LAB / "runs"


def _run(args) -> int:
    from .runner import run_one

    r = run_one(Path(args.out), args.version, args.scenario, args.seed)
    print(f"{r['status']}: {Path(r['run_dir']) / 'report.md'}")
    return 0 if r["status"] == "compared" else 1


def _campaign(args) -> int:
    """N incidents drawn from a seeded schedule, spread over the versions, --parallel at once (each in a worker
    process of its own, kflab/campaign.py); stops starting incidents at --max-minutes or when OUT/STOP exists."""
    from .campaign import Campaign, prepare, schedule

    versions = args.versions.split(",")
    names = args.scenarios.split(",") if args.scenarios else sorted(INCIDENTS)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    prepare(versions)  # jars, templates and the pinned kforensics once, not by N workers at once
    items = schedule(args.count, args.seed, versions, names)
    c = Campaign(out, items, parallel=max(1, args.parallel), deadline=time.monotonic() + args.max_minutes * 60)
    try:
        c.run()
    except KeyboardInterrupt:  # the workers are stopped (Campaign.run's finally): the summary of what ended
        print(f"interrupted: summary of {len(c.results)} incidents in {out / 'summary.md'}", file=sys.stderr)
        c.summary()
        return 130
    print(f"summary: {out / 'summary.md'}")
    return 0


def _recompare(args) -> int:
    from .compare import compare
    from .predict import kforensics_argv, predict, run_spark

    for d in args.run_dirs:
        d = Path(d)
        r = json.loads((d / "result.json").read_text())
        if (args.reuse or args.spark) and "predictions" not in r or "outcome" not in r:
            print(f"{d.name}: skipped ({r.get('status')}: nothing to compare)")
            continue
        if args.spark:  # the spark front end on the kept evidence, beside the kept replay
            p = r["predictions"]
            meta = None if p.get("zookeeper_mode") else d / "evidence" / "controller-100" / "__cluster_metadata-0"
            ev, flag = d / "evidence", p.get("kafka_version_flag", "latest")
            zk = ev / "zookeeper" if meta is None else None  # ZooKeeper mode: the controller's state is there
            p["spark"] = run_spark(kforensics_argv(), ev, d / "predictions", flag, meta, 900, r["outcome"].get("order"),
                                   zk)
        elif not args.reuse:
            flag = r.get("predictions", {}).get("kafka_version_flag", "latest") if args.same_flag else r["version"]
            order = r["outcome"].get("order")  # the order the restart used (seeded): the prediction is told it
            r["predictions"] = predict(d / "evidence", d / "predictions", kafka_version=flag, restart_order=order)
        r["comparison"] = compare(d, r)
        r["status"] = "compared"
        write_run(d, r)
        c = r["comparison"]["checks"]
        print(f"{d.name}: {sum(x['agree'] for x in c)}/{len(c)} agree")
    return 0


def _summary(args) -> int:
    out = Path(args.out_dir)
    results = [json.loads(p.read_text()) for p in sorted(out.glob("*/result.json"))]
    s = write_summary(out, results)
    print(json.dumps(s["per_version_check"], indent=1))
    return 0


def _zk_explain(args) -> int:
    """The ZooKeeper-mode controller model (kflab/zkmodel.py) beside Kafka and kforensics, per partition."""
    from .jars import zk_mode
    from .zkmodel import explain

    rows = []
    for p in sorted(Path(args.out_dir).glob("*/result.json")):
        r = json.loads(p.read_text())
        if r.get("status") == "compared" and zk_mode(r["version"]):
            rows += [{"run": p.parent.name, **e} for e in explain(r)]
    print("| run | partition | model (leader, epoch) | Kafka | kforensics |\n|---|---|---|---|---|")
    for e in rows:
        print(f"| {e['run']} | {e['partition']} | {e['model']} | {e['kafka']} | {e['kforensics']} |")
    n = len(rows)
    model_ok = sum(e["model"] == e["kafka"] for e in rows)
    kf_ok = sum(e["kforensics"] == e["kafka"] for e in rows)
    print(f"\n{n} partitions: the model names Kafka's leader and epoch in {model_ok}, kforensics in {kf_ok}")
    return 0


def _export(args) -> int:
    from .fixtures import export

    sizes = export(Path(args.run_dir), Path(args.dest))
    print(f"{args.dest}: {sum(sizes.values())} bytes in {len(sizes)} files")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="kflab", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("scenario", choices=sorted(INCIDENTS))
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--version", default=jars.NEWEST)
    r.add_argument("--out", default=str(DEFAULT_OUT))
    c = sub.add_parser("campaign")
    c.add_argument("--count", type=int, default=10)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--versions", default=jars.NEWEST)
    c.add_argument("--scenarios", default="")
    c.add_argument("--max-minutes", type=float, default=24 * 60)
    c.add_argument("--parallel", type=int, default=1, help="incidents at once, each its own cluster and process")
    c.add_argument("--out", default=str(DEFAULT_OUT / "campaign"))
    rc = sub.add_parser("recompare")
    rc.add_argument("run_dirs", nargs="+")
    rc.add_argument("--reuse", action="store_true", help="keep the predictions, only compare again")
    rc.add_argument(
        "--spark", action="store_true", help="keep the predictions, add the spark front end's, compare again"
    )
    rc.add_argument(
        "--same-flag",
        action="store_true",
        help="model the Kafka version the run was predicted with (default: the run's own version)",
    )
    sm = sub.add_parser("summary")
    sm.add_argument("out_dir")
    zx = sub.add_parser("zk-explain")
    zx.add_argument("out_dir")
    ex = sub.add_parser("export")
    ex.add_argument("run_dir")
    ex.add_argument("dest")
    args = ap.parse_args(argv)
    install_handlers()
    try:
        return {
            "run": _run,
            "campaign": _campaign,
            "recompare": _recompare,
            "summary": _summary,
            "export": _export,
            "zk-explain": _zk_explain,
        }[args.cmd](args)
    finally:
        kill_all()


if __name__ == "__main__":
    sys.exit(main())
