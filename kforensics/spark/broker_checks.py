"""The checks ``scan`` runs over a whole broker, on the driver, per snapshot, with ``scan``'s own functions.

Topic names of ``-delete``/``-stray`` dirs are corrected from the topic ids
of live dirs (:func:`kforensics.scan.broker.name_truncated_topics`), and the
replicas' epochs are checked against the snapshot's own KRaft metadata log
(:func:`kforensics.scan.broker.check_against_timeline`).  They read the
partition rows the scan tasks sent back (small: one per partition dir).
What the scan stage reported of the snapshots checked here is gathered by
cluster (:attr:`BrokerChecks.reported`), so that the replay stage and the
clusters' timelines report each finding once.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..findings import Finding, FindingLog
from ..log.sources import split_uri
from ..scan.broker import check_against_timeline, finding_key, name_truncated_topics
from ..scan.model import BrokerIdentity
from ..tables.schemas import fit
from . import files, table_files
from .files import FileSystem
from .names import from_hex, present, safe
from .plan import Plan
from .schemas import CHECK_COLUMNS, NAMED_TABLES, PENDING


@dataclass
class PartitionRow:
    """A ``partitions`` table row as :func:`kforensics.scan.broker.name_truncated_topics` and
    :func:`~kforensics.scan.broker.check_against_timeline` read it (the attributes of a ``PartitionScan``)."""

    log_dir: str
    dir_name: str
    topic: str
    partition: int
    suffix: str | None
    topic_id: str | None
    epoch_cache_written: list[tuple[int, int]] | None
    epochs_seen: list[int]
    findings: list[Finding] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{self.log_dir.rstrip('/')}/{self.dir_name}"


@dataclass
class BrokerChecks:
    """What the broker checks did: topic names corrected, and per cluster the :func:`finding_key` of every finding
    the scan stage reported about the snapshots checked (those that hold a metadata log)."""

    corrected: int = 0
    reported: dict[str | None, set[tuple]] = field(default_factory=dict)


def _rows(frame: pd.DataFrame) -> list[PartitionRow]:
    out = []
    for r in frame.itertuples(index=False):
        cache = present(r.epoch_cache_written)
        cache = None if cache is None else [tuple(e) for e in json.loads(cache)]
        seen = [] if present(r.epochs_seen) is None else [int(e) for e in r.epochs_seen if present(e) is not None]
        partition = present(r.partition)
        out.append(PartitionRow(r.log_dir, r.dir_name, r.topic, -1 if partition is None else int(partition),
                                present(r.suffix), present(r.topic_id), cache, seen))
    return out


def finding_keys(rows: Iterable[SimpleNamespace]) -> set[tuple]:
    """The :func:`kforensics.scan.broker.finding_key` of each row of a findings table (rows with its columns as
    attributes: a frame's ``itertuples()``, or namespaces)."""

    def frozen(v: object) -> object:
        return tuple(frozen(x) for x in v) if isinstance(v, list) else v

    keys = set()
    for r in rows:
        facts = json.loads(r.facts) if isinstance(r.facts, str) else {}
        facts = {k: frozen(v) for k, v in facts.items()} if isinstance(facts, dict) else {}
        keys.add(finding_key(SimpleNamespace(code=r.code, file=present(r.file), facts=facts,
                                             position=None if present(r.position) is None else int(r.position),
                                             line=None if present(r.line) is None else int(r.line))))
    return keys


def _checked(plan_: Plan, statuses: list[dict]) -> dict[str, list[tuple[int, list[dict], set[tuple]]]]:
    """Per snapshot the partition rows and finding keys its tasks sent back, in the plan's order (as scan reads
    them)."""
    order = {(t.snapshot_id, t.dir_name): i for i, t in enumerate(plan_.tasks.itertuples(index=False))}
    checked: dict[str, list[tuple[int, list[dict], set[tuple]]]] = {}
    for st in statuses:
        if st.get("check") is not None:
            rows, keys = pickle.loads(st["check"])
            checked.setdefault(st["snapshot_id"], []).append((order.get((st["snapshot_id"], st["dir_name"]), 0),
                                                              rows, keys))
    return {sid: sorted(items, key=lambda x: x[0]) for sid, items in checked.items()}


def _check_snapshot(plan_: Plan, sid: str, items: list[tuple[int, list[dict], set[tuple]]]
                    ) -> tuple[list[PartitionRow], list[Finding], set[tuple]]:
    """``scan``'s broker checks of one snapshot: its partition rows (topics corrected), the new findings, and the
    keys of everything the scan stage reported about it."""
    from ..kraft.timeline import build_timeline

    context = plan_.contexts[sid]
    rows = _rows(pd.DataFrame([r for _, rs, _ in items for r in rs], columns=CHECK_COLUMNS))
    findings = FindingLog()
    name_truncated_topics(rows, findings)
    timeline = None
    if sid in plan_.snapshot_metadata:
        timeline = build_timeline(plan_.snapshot_metadata[sid])
        check_against_timeline(rows, BrokerIdentity(node_id=context["broker_id"], cluster_id=context["cluster"]),
                               findings, timeline)
    new = findings.findings() + [f for r in rows for f in r.findings]
    seen = set(plan_.reported.get(sid, set())) | {finding_key(f) for f in new}
    for _, _, keys in items:
        seen |= keys
    if timeline is not None:
        # the timeline reads the metadata segments and snapshots the scan has read: each finding once
        extra = [f for f in timeline.findings if finding_key(f) not in seen]
        seen |= {finding_key(f) for f in extra}
        new += extra
    return rows, new, seen


def broker_checks(plan_: Plan, staging: str, filesystem: FileSystem = None, statuses: list[dict] | None = None
                  ) -> BrokerChecks:
    """What ``scan`` checks over a whole broker, per snapshot that needs it (one with ``-delete``/``-stray`` dirs
    or its own metadata log), with the same functions; the timeline's findings reported where the scan of the
    snapshot has not reported them already (as :func:`~kforensics.scan.broker.scan_log_dirs` does).  Then lays
    out the scan tables of ``-delete``/``-stray`` dirs (:data:`PENDING`) by their corrected topic."""
    _, staging_path = split_uri(staging)
    checked = _checked(plan_, statuses or [])
    out = BrokerChecks()
    renamed: dict[str, str] = {}
    for sid in sorted(s for s, info in plan_.snapshots.items() if info.get("checks")):
        rows, new, seen = _check_snapshot(plan_, sid, checked.get(sid, []))
        context = plan_.contexts[sid]
        table_files.write_findings(new, staging_path, f"c-{safe(sid)}", context, filesystem)
        if sid in plan_.snapshot_metadata:
            out.reported.setdefault(context["cluster"], set()).update(seen)
        part_of = {fit(from_hex(json.loads(t.raw)[1]), pa.string()): t.part
                   for t in plan_.tasks.itertuples(index=False) if t.snapshot_id == sid}
        before = {r["dir_name"]: r["topic"] for _, rs, _ in checked.get(sid, []) for r in rs}
        for r in rows:
            if r.topic != before[r.dir_name]:
                renamed[part_of[r.dir_name]] = r.topic
    place_pending(staging_path, renamed, filesystem)
    out.corrected = len(renamed)
    return out


def place_pending(staging: str, renamed: dict[str, str], filesystem: FileSystem = None) -> None:
    """The scan tables kept apart (:data:`PENDING`), their topic corrected where ``renamed`` (part -> topic)
    says, laid out by cluster and topic."""
    for name in NAMED_TABLES:
        d = f"{staging.rstrip('/')}/{PENDING}/{name}"
        for f in files.listdir(filesystem, d):
            if not f.endswith(".parquet"):
                continue
            part = f[:-len(".parquet")]
            t = pq.read_table(f"{d}/{f}", filesystem=filesystem)
            if part in renamed:
                i = t.schema.get_field_index("topic")
                t = t.set_column(i, t.schema.field(i), pa.array([renamed[part]] * len(t), pa.string()))
            table_files.write(name, t, staging, part, filesystem)
    files.rmtree(filesystem, f"{staging.rstrip('/')}/{PENDING}")
