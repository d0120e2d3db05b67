"""Snapshot inputs: paths, globs or a manifest (CSV/JSON) of archived broker log dirs."""

from __future__ import annotations

import csv
import glob
import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InputError
from ..scan.model import BrokerIdentity

if TYPE_CHECKING:
    from pathlib import Path

    from ..log.sources import ArrowPath, TarPath


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


@dataclass
class Located:
    """A snapshot found to be one broker's log dirs."""

    snapshot: Snapshot
    root: Path | TarPath | ArrowPath
    log_dirs: list[Path | TarPath | ArrowPath]
    identity: BrokerIdentity

    @property
    def broker_id(self) -> int | None:
        return self.snapshot.broker_id if self.snapshot.broker_id is not None else self.identity.node_id

    @property
    def cluster(self) -> str | None:
        return self.snapshot.cluster or self.identity.cluster_id


def locate(snapshots: list[Snapshot]) -> list[Located]:
    """Each snapshot's log dirs, refused as ``scan`` and ``replay`` refuse their inputs
    (:class:`~kforensics.errors.InputError`; nothing is read but listings and meta.properties).  An I/O error
    (``OSError``) goes through, as it does from ``scan``: exit 2."""
    out = [_locate(s) for s in snapshots]
    _refuse_one_broker_twice(out)
    return out


def _locate(snap: Snapshot) -> Located:
    # imported here: reading a manifest needs none of the log layer
    from ..log.object_store import check_exists, is_store_uri
    from ..log.sources import resolve, split_uri
    from ..scan.broker import broker_identity, resolve_log_dirs

    spec = snap.spec
    if is_store_uri(spec):
        check_exists(spec)  # no such bucket, no such key or prefix, refused credentials: said as scan says them
    elif split_uri(spec)[0] is None and not os.path.lexists(spec):
        raise InputError(f"Path {spec!r} does not exist.")  # as click says it for scan's and replay's paths
    root = resolve(spec)
    try:
        dirs = resolve_log_dirs([root])  # scan's and replay's check: no log dir, or several brokers' log dirs
    except InputError as e:
        # the sentence names the root as resolved ("x.tgz!/"); scan's names the path as the user gave it
        text, named = str(e), str(root)
        raise InputError(spec + text[len(named):] if text.startswith(named) else text) from None
    return Located(snap, root, dirs, broker_identity(dirs))


def _refuse_one_broker_twice(located: list[Located]) -> None:
    """Two snapshots of one broker (cluster and broker id) taken at one time (or at no time said) are refused as
    ``replay`` refuses two log dirs of one broker.  Snapshots of one broker at different ``snapshot_time``s are a
    history: the latest is replayed."""
    from ..replay.inputs import same_broker

    seen: dict[tuple[str | None, int, str | None], Located] = {}
    for loc in located:
        if loc.broker_id is None:
            continue  # no meta.properties and none given: a replica of its own
        key = (loc.cluster, loc.broker_id, loc.snapshot.snapshot_time)
        if key in seen:
            raise same_broker(loc.broker_id, _dirs(seen[key]), _dirs(loc),
                              remedy="give each snapshot its broker_id (and snapshot_time, for snapshots of one "
                                     "broker at different times) in a --manifest")
        seen[key] = loc


def _dirs(loc: Located) -> str:
    return ", ".join(str(getattr(d, "path", d)) for d in loc.log_dirs)  # as replay names a broker's log dirs
