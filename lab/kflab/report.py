"""Reports: JSON and a Markdown table per run, and a campaign summary (agreement per version and check)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

DATA_CHECKS = ("truncation_point", "lost_ids_replica", "lost_ids_all", "fork_offsets")


def _fmt(v) -> str:
    s = json.dumps(v, default=str) if not isinstance(v, str) else v
    return (s[:90] + "…") if len(s) > 90 else s


def run_markdown(result: dict) -> str:
    """One run as Markdown: status, the story's steps, then every check (disagreements first)."""
    lines = [
        f"# {result['scenario']} · Kafka {result['version']} · seed {result['seed']}",
        "",
        f"status: **{result.get('status')}**",
    ]
    if result.get("error"):
        lines += ["", "```", result["error"], "```"]
    story = result.get("story") or {}
    if story.get("steps"):
        lines += ["", "## Incident", ""] + [
            f"- {s['what']}: " + _fmt({k: v for k, v in s.items() if k not in ("t", "what")}) for s in story["steps"]
        ]
    out = result.get("outcome") or {}
    if out:
        lines += [
            "",
            (
                f"restart: converged={out.get('converged')} in {out.get('seconds_to_converge')} s, "
                f"order {out.get('order')}, clean stop {out.get('clean_stop')}"
            ),
        ]
    checks = (result.get("comparison") or {}).get("checks") or []
    if checks:
        n_ok = sum(c["agree"] for c in checks)
        lines += [
            "",
            f"## Checks: {n_ok}/{len(checks)} agree",
            "",
            "| check | partition | broker | kforensics | Kafka | agree |",
            "|---|---|---|---|---|---|",
        ]
        for c in sorted(checks, key=lambda c: (c["agree"], c["check"], str(c["topic"]), str(c["partition"]))):
            part = f"{c['topic']}-{c['partition']}" if c["topic"] else "-"
            lines.append(
                f"| {c['check']} | {part} | {c['broker'] or '-'} | {_fmt(c['predicted'])} | "
                f"{_fmt(c['observed'])} | {'yes' if c['agree'] else '**no**'} |"
            )
    return "\n".join(lines) + "\n"


def write_run(run_dir: Path, result: dict) -> None:
    (run_dir / "result.json").write_text(json.dumps(result, indent=1, default=str))
    (run_dir / "report.md").write_text(run_markdown(result))


def summarize(results: list[dict]) -> dict:
    """Agreement per version and check, runs per status, and every disagreement with both values."""
    per = defaultdict(lambda: [0, 0])
    per_scn = defaultdict(lambda: [0, 0])
    split = defaultdict(lambda: [0, 0])  # data checks split by whether kforensics named Kafka's leader
    status = defaultdict(int)
    disagreements = []
    for r in results:
        status[f"{r['version']} {r.get('status')}"] += 1
        checks = (r.get("comparison") or {}).get("checks") or []
        leader_ok = {(c["topic"], c["partition"]): c["agree"] for c in checks if c["check"] == "leader"}
        for c in checks:
            if c["check"] in DATA_CHECKS and (c["topic"], c["partition"]) in leader_ok:
                given = "same leader" if leader_ok[(c["topic"], c["partition"])] else "other leader"
                split[(r["version"], c["check"], given)][0] += c["agree"]
                split[(r["version"], c["check"], given)][1] += 1
            for key, table in (((r["version"], c["check"]), per), ((r["version"], r["scenario"], c["check"]), per_scn)):
                table[key][0] += c["agree"]
                table[key][1] += 1
            if not c["agree"]:
                disagreements.append({"run": Path(r["run_dir"]).name, **c})

    def rate(a):
        return {"agree": a[0], "checks": a[1], "rate": round(a[0] / a[1], 3) if a[1] else None}

    return {
        "runs": len(results),
        "status": dict(status),
        "disagreement_classes": disagreement_classes(results),
        "per_version_check": {" ".join(k): rate(v) for k, v in sorted(per.items())},
        "data_checks_by_leader": {" ".join(k): rate(v) for k, v in sorted(split.items())},
        "per_version_scenario_check": {" ".join(k): rate(v) for k, v in sorted(per_scn.items())},
        "disagreements": disagreements,
    }


def disagreement_classes(results: list[dict]) -> dict:
    """Disagreements counted by version, check and whether kforensics named the leader Kafka elected for that
    partition ("leader named", "other leader"; "-" for checks without a partition leader, and for the leader
    and epoch checks themselves): the classes a campaign's explanations go by."""
    out: dict = defaultdict(int)
    for r in results:
        checks = (r.get("comparison") or {}).get("checks") or []
        leader_ok = {(c["topic"], c["partition"]): c["agree"] for c in checks if c["check"] == "leader"}
        for c in checks:
            if c["agree"]:
                continue
            named = leader_ok.get((c["topic"], c["partition"]))
            given = (
                "-"
                if named is None or c["check"] in ("leader", "leader_epoch")
                else ("leader named" if named else "other leader")
            )
            out[f"{r['version']} {c['check']} {given}"] += 1
    return dict(sorted(out.items()))


def summary_markdown(s: dict) -> str:
    lines = [
        "# Lab campaign summary",
        "",
        f"runs: {s['runs']}; " + ", ".join(f"{k}: {v}" for k, v in s["status"].items()),
        "",
        "## Agreement per version and check",
        "",
        "| version check | agree | checks | rate |",
        "|---|---|---|---|",
    ]
    lines += [f"| {k} | {v['agree']} | {v['checks']} | {v['rate']} |" for k, v in s["per_version_check"].items()]
    lines += [
        "",
        "## Data checks, by whether kforensics named the leader Kafka elected",
        "",
        "| version check leader | agree | checks | rate |",
        "|---|---|---|---|",
    ]
    lines += [f"| {k} | {v['agree']} | {v['checks']} | {v['rate']} |" for k, v in s["data_checks_by_leader"].items()]
    lines += ["", "## Per scenario", "", "| version scenario check | agree | checks | rate |", "|---|---|---|---|"]
    lines += [
        f"| {k} | {v['agree']} | {v['checks']} | {v['rate']} |" for k, v in s["per_version_scenario_check"].items()
    ]
    lines += ["", "## Disagreements by class", "", "| version check leader | disagreements |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in (s.get("disagreement_classes") or {}).items()]
    lines += [
        "",
        f"## Disagreements ({len(s['disagreements'])})",
        "",
        "| run | check | partition | broker | kforensics | Kafka |",
        "|---|---|---|---|---|---|",
    ]
    for d in s["disagreements"][:400]:
        lines.append(
            f"| {d['run']} | {d['check']} | {d['topic']}-{d['partition']} | {d['broker'] or '-'} | "
            f"{_fmt(d['predicted'])} | {_fmt(d['observed'])} |"
        )
    return "\n".join(lines) + "\n"


def write_summary(out_root: Path, results: list[dict]) -> dict:
    s = summarize(results)
    (out_root / "summary.json").write_text(json.dumps(s, indent=1, default=str))
    (out_root / "summary.md").write_text(summary_markdown(s))
    return s
