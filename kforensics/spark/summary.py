"""The job's summary: the ``summary`` table's rows and the counts ``kforensics spark`` prints.

The counts come from what the tasks returned (their status rows) and from
the driver's own few findings files: no table is read back.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from . import files
from .files import FileSystem
from .plan import Plan
from .report import SEVERITIES, ClusterCounts, FailedGroup, FailedTask, Summary

if TYPE_CHECKING:
    from ..kraft.timeline import Timeline

#: part-name prefixes of the findings files the driver writes (the executors' counts travel in their status rows)
DRIVER_PARTS = ("d-", "t-", "c-", "n-")


def verdict_summary(groups: list[dict]) -> list[dict]:
    """The ``summary`` table's rows from the groups' status rows: per (cluster, topic, broker, verdict) the
    records and bytes summed (None where none is known) and the partitions counted."""
    acc: dict[tuple, dict] = {}
    for g in groups:
        if not g.get("summary"):
            continue
        for topic, broker_id, verdict, records, nbytes in json.loads(g["summary"]):
            key = (g["cluster"], topic, broker_id, verdict)
            e = acc.setdefault(key, {"cluster": g["cluster"], "topic": topic, "broker_id": broker_id,
                                     "verdict": verdict, "records": None, "bytes": None, "partitions": 0})
            if records is not None:
                e["records"] = (e["records"] or 0) + int(records)
            if nbytes is not None:
                e["bytes"] = (e["bytes"] or 0) + int(nbytes)
            e["partitions"] += 1
    return list(acc.values())


def finding_counts(statuses: list[dict], groups: list[dict], staging: str, filesystem: FileSystem = None
                   ) -> dict[tuple[str | None, str], int]:
    """Findings per (cluster, severity): the scan tasks' and the groups' from their status rows, the driver's from
    its own few files (snapshots' root files, timelines, broker checks)."""
    out: dict[tuple[str | None, str], int] = {}
    for s in list(statuses) + list(groups):
        if s.get("findings"):
            for sev, n in json.loads(s["findings"]).items():
                out[(s["cluster"], sev)] = out.get((s["cluster"], sev), 0) + int(n)
    for path in files.parquet_files(filesystem, f"{staging.rstrip('/')}/findings"):
        if posixpath.basename(path).startswith(DRIVER_PARTS):
            t = pq.read_table(path, columns=["cluster", "severity"], filesystem=filesystem)
            for c, sev in zip(t.column("cluster").to_pylist(), t.column("severity").to_pylist()):
                out[(c, sev)] = out.get((c, sev), 0) + 1
    return out


def verdict_counts(summary_rows: list[dict]) -> dict[tuple[str | None, str], int]:
    """Partitions per (cluster, verdict)."""
    out: dict[tuple[str | None, str], int] = {}
    for r in summary_rows:
        key = (r["cluster"], r["verdict"])
        out[key] = out.get(key, 0) + int(r["partitions"])
    return out


@dataclass
class Outcome:
    """What the stages returned, for the summary."""

    plan: Plan
    statuses: list[dict] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)
    findings: dict[tuple[str | None, str], int] = field(default_factory=dict)
    verdicts: dict[tuple[str | None, str], int] = field(default_factory=dict)
    timelines: dict[str | None, Timeline] = field(default_factory=dict)
    corrected: int = 0
    timings: dict[str, float] = field(default_factory=dict)


def _name(c: object) -> str | None:
    return None if c is None else str(c)


def _clusters(o: Outcome) -> tuple[list[ClusterCounts], list[FailedTask], list[FailedGroup]]:
    """Per cluster its counts, and the failed tasks and groups named."""
    clusters: dict[str | None, ClusterCounts] = {}

    def entry(c: object) -> ClusterCounts:
        return clusters.setdefault(_name(c), {"cluster": _name(c), "snapshots": 0, "partitions": 0, "batches": 0,
                                              "bytes": 0, "failed_tasks": 0, "failed_groups": 0,
                                              "findings": {s: 0 for s in SEVERITIES}, "verdicts": {}})

    for ctx in o.plan.contexts.values():
        entry(ctx["cluster"])["snapshots"] += 1
    for t in o.plan.tasks.itertuples(index=False):
        entry(o.plan.contexts[t.snapshot_id]["cluster"])["partitions"] += 1
    failed: list[FailedTask] = []
    failed_groups: list[FailedGroup] = []
    for s in o.statuses:
        e = entry(o.plan.contexts[s["snapshot_id"]]["cluster"])
        e["batches"] += int(s["batches"] or 0)
        e["bytes"] += int(s["bytes"] or 0)
        if s["status"] != "ok":
            e["failed_tasks"] += 1
            failed.append(FailedTask(snapshot_id=s["snapshot_id"], dir_name=s["dir_name"], status=s["status"],
                                     error=s["error"]))
    for g in o.groups:
        if g["status"] != "ok":
            entry(g["cluster"])["failed_groups"] += 1
            failed_groups.append(FailedGroup(cluster=g["cluster"], topic=g["topic"], partition=g["partition"],
                                             error=g["error"]))
    for (c, sev), n in o.findings.items():
        entry(c)["findings"][str(sev)] = entry(c)["findings"].get(str(sev), 0) + n
    for (c, code), n in o.verdicts.items():
        v = entry(c)["verdicts"]
        v[code] = v.get(code, 0) + n
    rows = sorted(clusters.values(), key=lambda e: (e["cluster"] is not None, e["cluster"] or ""))
    for e in rows:
        e["verdicts"] = dict(sorted(e["verdicts"].items(), key=lambda kv: (kv[0] != "OK", kv[0])))
    return rows, failed, failed_groups


def summarize(o: Outcome, out: str) -> Summary:
    """The job's summary: per cluster snapshots, partitions, batches, findings by severity, verdicts by code and
    failed tasks and groups; the same totals; the failed tasks and groups and unreadable snapshots named."""
    rows, failed, failed_groups = _clusters(o)
    unreadable = sorted({sid for sid, fs in o.plan.findings.items()
                         for f in fs if f.code in ("SNAPSHOT_UNREADABLE", "NO_LOG_DIR")})
    total_verdicts: dict[str, int] = {}
    for e in rows:
        for code, n in e["verdicts"].items():
            total_verdicts[code] = total_verdicts.get(code, 0) + n
    return {
        "snapshots": len(o.plan.contexts),
        "tasks": len(o.statuses),
        "failed_tasks": failed,
        "groups": len(o.groups),
        "failed_groups": failed_groups,
        "unreadable_snapshots": unreadable,
        "partitions": len(o.plan.tasks),
        "batches": sum(int(s["batches"] or 0) for s in o.statuses),
        "bytes": sum(int(s["bytes"] or 0) for s in o.statuses),
        "findings": {s: sum(e["findings"].get(s, 0) for e in rows) for s in SEVERITIES},
        "verdicts": total_verdicts,
        "clusters": rows,
        "clusters_with_metadata": sorted(str(c) for c in o.timelines),
        "topic_names_corrected": o.corrected,
        "out": out,
        "timings": o.timings,
    }
