"""Snapshot inputs: paths, globs or a manifest (CSV/JSON) of archived broker log dirs."""

from __future__ import annotations

import csv
import glob
import json
import os
import re
from collections import Counter
from dataclasses import dataclass

from ..errors import InputError


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


def _broker_id(v: object, where: str) -> int | None:
    """A broker id as Kafka takes it (``broker.id``/``node.id``: an int32), else :class:`InputError`."""
    if v is None or v == "":
        return None
    try:
        n = int(str(v).strip()) if not isinstance(v, bool) else None
    except ValueError:
        n = None
    if n is None or not -2**31 <= n < 2**31:
        raise InputError(f"{where}: broker_id {str(v)[:40]!r} is not a broker id (an int32, as Kafka's broker.id)")
    return n


def read_manifest(path: str) -> list[dict]:
    """Rows with ``path`` and optional ``broker_id``, ``snapshot_time``, ``cluster``; :class:`InputError` when the
    manifest cannot be read as one."""
    try:
        with open(path, encoding="utf-8") as fh:
            if path.endswith(".json"):
                doc = json.load(fh)
                rows = doc.get("snapshots") if isinstance(doc, dict) else doc
            else:
                rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, csv.Error) as e:
        raise InputError(f"manifest {path}: {type(e).__name__}: {e}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and r.get("path") for r in rows):
        raise InputError(f"manifest {path}: expected rows with a path (CSV columns or a JSON list of objects: path, "
                         "optional broker_id, snapshot_time, cluster)")
    return rows


def resolve_snapshots(args: list[str], manifest: str | None = None) -> list[Snapshot]:
    """Expand local globs; URIs (``hdfs://``, ``s3://``...) are taken as they are."""
    rows: list[dict] = read_manifest(manifest) if manifest else []
    for a in args:
        if "://" in a or not any(ch in a for ch in "*?["):
            rows.append({"path": a})
        else:
            rows += [{"path": p} for p in sorted(glob.glob(a))]
    given = Counter(str(r["snapshot_id"]) for r in rows if r.get("snapshot_id"))
    dup = sorted(i for i, n in given.items() if n > 1)
    if dup:
        raise InputError(f"snapshot ids given twice: {', '.join(dup[:5])}")
    taken: set[str] = set(given)
    out = []
    for i, r in enumerate(rows, 1):
        spec = str(r["path"])
        bid = _broker_id(r.get("broker_id"), f"{manifest or 'snapshot'} row {i} ({spec})")
        sid = str(r["snapshot_id"]) if r.get("snapshot_id") else _id(spec, taken)
        out.append(Snapshot(spec, sid, bid, _text(r.get("snapshot_time")), _text(r.get("cluster"))))
    return out


def _text(v: object) -> str | None:
    return None if v is None or v == "" else str(v)


def parse_metadata(specs: list[str]) -> list[str | tuple[str, str]]:
    """``--metadata`` values: ``PATH``, or ``(CLUSTER, PATH)`` for ``CLUSTER=PATH`` (a value that names an
    existing path, or whose ``=`` comes after a URI scheme, is a path)."""
    out: list[str | tuple[str, str]] = []
    for spec in specs:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)=(.+)", spec)
        out.append(spec if m is None or os.path.exists(spec) else (m.group(1), m.group(2)))
    return out
