"""Snapshot inputs: paths, globs or a manifest (CSV/JSON) of archived broker log dirs."""

from __future__ import annotations

import csv
import glob
import json
import os
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Snapshot:
    """One archived broker: a log dir (or a dir holding one), or a .tar/.tar.gz/.tgz of one."""

    spec: str
    snapshot_id: str
    broker_id: int | None = None
    snapshot_time: str | None = None
    cluster: str | None = None


def _id(spec: str, taken: set[str]) -> str:
    base = re.sub(r"\.(tar\.gz|tgz|tar)$", "", os.path.basename(spec.rstrip("/"))) or "snapshot"
    sid, n = base, 1
    while sid in taken:
        n += 1
        sid = f"{base}-{n}"
    taken.add(sid)
    return sid


def _int(v) -> int | None:
    return None if v in (None, "") else int(v)


def read_manifest(path: str) -> list[dict]:
    """Rows with ``path`` and optional ``broker_id``, ``snapshot_time``, ``cluster``."""
    with open(path, encoding="utf-8") as fh:
        if path.endswith(".json"):
            doc = json.load(fh)
            return doc["snapshots"] if isinstance(doc, dict) else doc
        return list(csv.DictReader(fh))


def resolve_snapshots(args: list[str], manifest: str | None = None) -> list[Snapshot]:
    """Expand local globs; URIs (``hdfs://``, ``s3://``...) are taken as they are."""
    rows: list[dict] = read_manifest(manifest) if manifest else []
    for a in args:
        if "://" in a or not any(ch in a for ch in "*?["):
            rows.append({"path": a})
        else:
            rows += [{"path": p} for p in sorted(glob.glob(a))]
    taken: set[str] = set()
    out = []
    for r in rows:
        spec = str(r["path"])
        out.append(Snapshot(spec, r.get("snapshot_id") or _id(spec, taken), _int(r.get("broker_id")),
                            r.get("snapshot_time") or None, r.get("cluster") or None))
    return out


def parse_metadata(specs: list[str]) -> list[str | tuple[str, str]]:
    """``--metadata`` values: ``PATH``, or ``(CLUSTER, PATH)`` for ``CLUSTER=PATH`` (a value that names an
    existing path, or whose ``=`` comes after a URI scheme, is a path)."""
    out: list[str | tuple[str, str]] = []
    for spec in specs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)=(.+)", spec)
        out.append(spec if m is None or os.path.exists(spec) else (m.group(1), m.group(2)))
    return out
