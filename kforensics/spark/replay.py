"""The replay stage, on the executors: each (cluster, topic, partition) group replayed as ``kforensics replay``
replays it.

A group's replicas come as sketches (:mod:`kforensics.spark.window`): the
replay starts from the window their summaries give and reads lower only when
it reaches lower (:func:`kforensics.replay.summary.replay_window`, the rule
``replay_group`` windows with).  Each group goes through
:func:`kforensics.replay.group.replay_group` with its cluster's timeline, then
:func:`kforensics.consumers.replay_impact.partition_replay_impact` (consumer
groups and transactions), as ``kforensics replay`` does.  The replay's
findings that the scan stage reported already (the replicas' epochs against
the controller's grants, checked by ``scan`` too when a snapshot holds the
metadata log) are left out: each finding once.  A group whose replay fails
becomes a ``REPLAY_FAILED`` finding; the others go on.
"""

from __future__ import annotations

import json
import pickle
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypedDict

import pandas as pd
import pyarrow as pa

from ..collector import tune as tune_collector
from ..consumers.committed_offsets import CommittedOffset
from ..consumers.replay_impact import partition_replay_impact
from ..epoch.versions import LATEST, KafkaVersion
from ..errors import InternalError
from ..findings import Finding, finding
from ..kraft.controller_choice import RestartEvidence
from ..log.file_kinds import METADATA_TOPIC
from ..log.partition import PartitionLog
from ..log.sources import split_uri
from ..replay.engine import PartitionReplay
from ..replay.group import replay_group
from ..replay.not_replayed import LeftOut, not_replayed_findings
from ..replay.replica import Replica
from ..replay.summary import ReplicaSummary, replay_window
from ..scan.broker import finding_key
from ..tables.impact_tables import consumer_impact_table, reopened_rows
from ..tables.impact_tables import table as table_of
from ..tables.replay_tables import (
    divergence_rows,
    divergence_table,
    findings_rows_table,
    partition_path,
    replica_rows,
    replicas_from_frames,
    verdict_rows,
    verdicts_table,
)
from ..tables.schemas import fit
from ..tiered.evidence import TieredEvidence, tier_replicas
from ..verdict_rules import affects_consumers
from . import table_files
from .files import Context, FileSystem, cluster_context
from .impact import Copy, cluster_coordinator
from .names import from_hex, group_part, present, relative, spark_task_part
from .plan import Plan
from .scan_task import open_dir, root_of
from .schemas import GROUP_COLUMNS, GroupKey
from .window import Sketch, group_replicas

if TYPE_CHECKING:
    from ..kraft.timeline import Timeline

#: rows of replay output gathered before a task writes them
FLUSH_ROWS = 200_000
#: groups per replay task below which fewer tasks are started (each task costs Spark a few tenths of a second)
GROUPS_PER_TASK = 64


class GroupReplay(TypedDict):
    """One group's replay as :func:`replay_rows` gives it."""

    verdicts: list[dict[str, Any]]  # rows of the verdicts table
    divergence: list[dict[str, Any]]  # rows of the divergence table
    findings: list[tuple[Context, list[Finding]]]
    consumer_impact: pa.Table | None
    transactions: pa.Table | None
    affected: bool  # whether the replay leaves records the new leader does not serve


@dataclass
class Shared:
    """What every replay task reads (broadcast once): per cluster its KRaft timeline, its committed offsets by
    (topic, partition), its ``__transaction_state`` copies and the keys of the findings its scan stage reported;
    the snapshots' specs and the raw names of dirs whose names are not UTF-8 (see :func:`raw_names`); the events
    to replay per group (a hypothesis: what happens next, as ``kforensics replay --scenario`` replays them); per
    cluster what the controller's choice of leader reads (:mod:`.restart`)."""

    kafka_version: KafkaVersion = LATEST
    timelines: dict[str | None, Timeline] = field(default_factory=dict)
    commits: dict[str | None, dict[tuple[str, int], list[CommittedOffset]]] = field(default_factory=dict)
    transaction_state: dict[str | None, list[Copy]] = field(default_factory=dict)
    reported: dict[str | None, set[tuple]] = field(default_factory=dict)
    specs: dict[str, str] | None = None
    raw_names: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    events: dict[GroupKey, list[dict[str, object]]] = field(default_factory=dict)
    restart: dict[str | None, RestartEvidence] = field(default_factory=dict)
    min_insync_replicas: int | None = None  # --min-insync-replicas: overrides the metadata log's configs
    #: per cluster the tiered topics of its record and its ``__remote_log_metadata`` fold (:mod:`.tiered`)
    tiered: dict[str | None, TieredEvidence] = field(default_factory=dict)

    @classmethod
    def of(cls, value: object) -> Shared:
        """A :class:`Shared`, from itself or a Spark broadcast of one (None: nothing shared)."""
        value = getattr(value, "value", value)
        return value if isinstance(value, Shared) else cls()


def raw_names(plan_: Plan) -> dict[tuple[str, str], tuple[str, str]]:
    """(snapshot id, dir name as the tables hold it) -> (log dir, dir name) as hex, for the names that are not
    valid UTF-8 on disk (the tables hold them escaped)."""
    out = {}
    for t in plan_.tasks.itertuples(index=False):
        log_dir, dir_name = json.loads(t.raw)
        if fit(from_hex(dir_name), pa.string()) != from_hex(dir_name) or fit(from_hex(log_dir), pa.string()) != \
                from_hex(log_dir):
            out[(t.snapshot_id, t.dir_name)] = (log_dir, dir_name)
    return out


def replay_tasks(statuses: list[dict], parallelism: int, tasks_per_partition: int) -> int:
    """How many tasks the replay stage runs: ``tasks_per_partition`` per core for many groups (they balance
    groups of unequal cost), fewer when there are few groups to share out, never fewer than the cores."""
    groups = len({(s.get("cluster"), s.get("topic"), s.get("partition")) for s in statuses
                  if s.get("status") == "ok" and s.get("topic") is not None})
    wanted = -(-groups // GROUPS_PER_TASK)
    return max(1, min(groups or 1, max(parallelism, min(parallelism * tasks_per_partition, wanted))))


def write_not_replayed(statuses: list[dict], staging: str, filesystem: FileSystem = None) -> None:
    """The partition dirs the replay leaves out (the metadata log, ``-delete``/``-future``/``-stray`` dirs), per
    cluster, said as ``replay`` says them (:func:`kforensics.replay.not_replayed.not_replayed_findings`).  A
    controller's snapshot (nothing but the metadata log) is no broker: its log is the controller's record, as
    ``replay --metadata`` takes it, and no replica left out."""
    brokers = {s["snapshot_id"] for s in statuses if s.get("topic") not in (None, METADATA_TOPIC)}
    by_cluster: dict[str | None, list[LeftOut]] = {}
    for s in statuses:
        if s.get("left_out") is not None and s["snapshot_id"] in brokers:
            by_cluster.setdefault(s["cluster"], []).append(pickle.loads(s["left_out"]))
    for i, cluster in enumerate(sorted(by_cluster, key=lambda c: (c is not None, str(c)))):
        outs = sorted(by_cluster[cluster], key=lambda o: (o.broker_id, o.path))
        table_files.write_findings(not_replayed_findings(outs), staging, f"n-{i}", cluster_context(cluster),
                                   filesystem)


# ----------------------------------------------------------------------------- one group
def _logs(key: GroupKey, rows: list[dict], replicas: list[Replica], shared: Shared
          ) -> dict[tuple[int | None, str, int], PartitionLog]:
    """The replicas' partition dirs, reopened from their snapshots (what the transactions after the replay read)."""
    _, topic, partition = key
    logs: dict[tuple[int | None, str, int], PartitionLog] = {}
    for rep, row in zip(replicas, rows):
        spec = (shared.specs or {}).get(row["snapshot_id"])
        if spec is not None:
            raw = shared.raw_names.get((row["snapshot_id"], row["dir_name"]))
            log_dir, dir_name = (from_hex(raw[0]), from_hex(raw[1])) if raw else (
                relative(root_of(spec), row["log_dir"]), row["dir_name"])
            logs[(rep.broker_id, topic, partition)] = open_dir(spec, log_dir, dir_name)
    return logs


def replay_rows(key: GroupKey, rows: list[dict], shared: Shared, replicas: list[Replica] | None = None,
                summaries: list[ReplicaSummary] | None = None, load: Callable[[int], list[Replica]] | None = None,
                reported: frozenset[tuple] = frozenset(), tier: dict[str, Any] | None = None) -> GroupReplay:
    """One group replayed: :func:`kforensics.replay.group.replay_group`, the same replay as ``kforensics replay``,
    then what it does to consumer groups and transactions.

    ``rows``: the partition rows of the replicas, in replica order; ``replicas``: the replicas whole, or None with
    their ``summaries`` and ``load(floor)`` (the replicas windowed at ``floor``).  Returns the ``verdicts`` and
    ``divergence`` rows, the findings as (context, findings) pairs, the ``consumer_impact`` and ``transactions``
    tables, and ``affected``: whether the replay leaves records the new leader does not serve.  Findings whose
    :func:`~kforensics.scan.broker.finding_key` the scan stage reported (``reported``, and the cluster's in
    ``shared``) are left out: each finding once.  ``tier``: each replica's
    :func:`~kforensics.tiered.evidence.scan_view` by its partition dir (a tiered partition's replicas are joined
    with the cluster's remote metadata as ``replay`` joins them)."""
    cluster, topic, partition = key
    reload = None
    load, replicas = _tiered(key, shared, tier or {}, load, replicas)
    if replicas is None:
        if load is None:
            raise InternalError("a group replayed from its summaries needs their load")
        replicas, reload = replay_window(summaries or [], shared.kafka_version, load)
    paths = {partition_path(SimpleNamespace(**r)): r["snapshot_id"] for r in rows}
    snapshots = {rep.broker_id: None if rep.source is None else paths.get(rep.source) for rep in replicas}
    rp = replay_group(topic, partition, replicas, kafka_version=shared.kafka_version,
                      timeline=shared.timelines.get(cluster), events=shared.events.get(key), reload=reload,
                      restart=shared.restart.get(cluster), min_insync_replicas=shared.min_insync_replicas)
    affected = affects_consumers(rp)
    logs = _logs(key, rows, replicas, shared) if affected and shared.specs is not None else None
    impact = partition_replay_impact(rp, shared.commits.get(cluster, {}).get((topic, partition)), logs,
                                     coordinator=cluster_coordinator(cluster, shared.transaction_state.get(cluster))
                                     if logs is not None else None)
    said = shared.reported.get(cluster, set())
    rp.findings = [f for f in list(rp.findings) + impact.findings
                   if finding_key(f) not in said and finding_key(f) not in reported]
    reopened = [r for a in impact.transactions for r in reopened_rows(a, {"cluster": cluster})]
    return GroupReplay(verdicts=verdict_rows(rp, cluster, snapshots), divergence=divergence_rows(rp, cluster),
                       findings=replay_findings(rp, cluster),
                       consumer_impact=consumer_impact_table(impact.consumer_impact, cluster)
                       if impact.consumer_impact else None,
                       transactions=table_of("transactions", reopened) if reopened else None, affected=affected)


def _tiered(key: GroupKey, shared: Shared, views: dict[str, Any], load: Callable[[int], list[Replica]] | None,
            replicas: list[Replica] | None) -> tuple[Callable[[int], list[Replica]] | None, list[Replica] | None]:
    """``load`` and ``replicas`` with ``replay``'s tiered-storage hook applied to every replica they give (each
    load makes new replicas: each gets it)."""
    cluster, topic, partition = key
    ev = shared.tiered.get(cluster)
    if ev is None or not ev.is_tiered(topic, partition):
        return load, replicas

    def tiered(reps: list[Replica]) -> list[Replica]:
        tier_replicas(ev, topic, partition, reps, views)
        return reps

    return (None if load is None else (lambda floor: tiered(load(floor)))), \
        (None if replicas is None else tiered(replicas))


def replay_findings(rp: PartitionReplay, cluster: str | None) -> list[tuple[Context, list[Finding]]]:
    """A replay's findings by the broker each is about, as (context, findings) (see
    :func:`kforensics.tables.replay_tables.replay_findings_table`)."""
    by_broker: dict[int | None, list[Finding]] = {}
    for f in rp.findings:
        bid = f.facts.get("broker_id")
        by_broker.setdefault(bid if isinstance(bid, int) and not isinstance(bid, bool) else None, []).append(f)
    return [({**cluster_context(cluster), "broker_id": bid}, fs) for bid, fs in by_broker.items()]


def finding_severities(items: list[tuple[Context, list[Finding]]]) -> str | None:
    """Findings of (context, findings) pairs per severity, as JSON (what the summary counts)."""
    counts: dict[str, int] = {}
    for _, fs in items:
        for f in fs:
            counts[str(f.severity)] = counts.get(str(f.severity), 0) + 1
    return json.dumps(counts) if counts else None


def verdict_summary_of(rows: list[dict]) -> str | None:
    """A group's verdict rows reduced to the ``summary`` table's keys and sums: [topic, broker id, verdict,
    records, bytes] per row, as JSON."""
    return json.dumps([[r["topic"], r["broker_id"], r["verdict"], r["records"], r["bytes"]] for r in rows]) \
        if rows else None


def _failed(key: GroupKey, brokers: list[int], e: Exception) -> Finding:
    """The finding a group whose replay failed becomes."""
    _, topic, partition = key
    return finding("REPLAY_FAILED", f"internal error replaying {topic}-{partition}: {type(e).__name__}: {e}",
                   topic=topic, partition=partition, brokers=brokers, traceback=traceback.format_exc()[-2000:])


def _findings_table(items: list[tuple[Context, list[Finding]]]) -> pa.Table:
    """Findings of several contexts as one ``findings`` table (contexts in order; consecutive ones merged)."""
    runs: list[tuple[Context, list[Finding]]] = []
    for ctx, fs in items:
        if runs and runs[-1][0] == ctx:
            runs[-1][1].extend(fs)
        else:
            runs.append((ctx, list(fs)))
    return pa.concat_tables([findings_rows_table(fs, ctx) for ctx, fs in runs])


# ----------------------------------------------------------------------------- groups from table rows
def replay_groups(shared: object = None, staging: str | None = None
                  ) -> Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame]:
    """The cogroup function over a group's ``batches`` and ``partitions`` rows (the replicas whole, as
    :func:`kforensics.tables.replay_tables.replicas_from_frames` builds them): replay it and write its table parts
    under ``staging``; one status row (:data:`GROUP_COLUMNS`).  ``shared``: a :class:`Shared` (or a broadcast)."""
    sh = Shared.of(shared)

    def fn(batches: pd.DataFrame, partitions: pd.DataFrame) -> pd.DataFrame:
        if partitions.empty:
            return pd.DataFrame(columns=GROUP_COLUMNS)
        first = partitions.iloc[0]
        key = (present(first["cluster"]), first["topic"], int(first["partition"]))
        filesystem, staging_path = split_uri(staging) if staging else (None, None)
        out = _Outputs(staging_path, filesystem, group_part(*key))
        try:
            rows = [r._asdict() for r in replica_rows(partitions).itertuples(index=False)]
            result = replay_rows(key, rows, sh, replicas_from_frames(batches, partitions))
            status = out.add(key, result)
        except Exception as e:  # noqa: BLE001 - one group's failure is a finding; the other groups go on
            status = out.failed(key, _failed(key, sorted({int(b) for b in partitions["broker_id"].dropna()}), e), e)
        out.flush(numbered=False)
        return pd.DataFrame([status], columns=GROUP_COLUMNS)

    return fn


# ----------------------------------------------------------------------------- the stage
class _Outputs:
    """The replay stage's rows of one task, written a file per table when enough have gathered (never a file per
    group)."""

    def __init__(self, staging_path: str | None, filesystem: FileSystem, part: str):
        self.staging_path, self.filesystem, self.part = staging_path, filesystem, part
        self.rows: dict[str, list[dict]] = {"verdicts": [], "divergence": []}
        self.findings: list[tuple[Context, list[Finding]]] = []
        self.tables: dict[str, list[pa.Table]] = {"consumer_impact": [], "transactions": []}
        self.held = 0
        self.flushes = 0

    def add(self, key: GroupKey, out: GroupReplay) -> tuple:
        """A group's replay; its status row."""
        self.rows["verdicts"] += out["verdicts"]
        self.rows["divergence"] += out["divergence"]
        self.held += len(out["verdicts"]) + len(out["divergence"])
        self.findings += out["findings"]
        self.held += sum(len(fs) for _, fs in out["findings"])
        for name, t in (("consumer_impact", out["consumer_impact"]), ("transactions", out["transactions"])):
            if t is not None and len(t):
                self.tables[name].append(t)
        if self.held >= FLUSH_ROWS:
            self.flush()
        return (*key, "ok", None, len(out["verdicts"]), out["affected"], finding_severities(out["findings"]),
                verdict_summary_of(out["verdicts"]))

    def failed(self, key: GroupKey, f: Finding, e: Exception) -> tuple:
        """A group whose replay failed: its finding; its status row."""
        context = cluster_context(key[0])
        self.findings.append((context, [f]))
        self.held += 1
        return (*key, "failed", f"{type(e).__name__}: {e}", 0, False, finding_severities([(context, [f])]), None)

    def flush(self, numbered: bool = True) -> None:
        if self.staging_path is None:
            return
        part = f"{self.part}-{self.flushes}" if numbered else self.part
        tables = {"verdicts": verdicts_table(self.rows["verdicts"]),
                  "divergence": divergence_table(self.rows["divergence"])}
        if self.findings:
            tables["findings"] = _findings_table(self.findings)
        for name, ts in self.tables.items():
            if ts:
                tables[name] = pa.concat_tables(ts)
        for name, t in tables.items():
            table_files.write(name, t, self.staging_path, part, self.filesystem)
        self.rows = {k: [] for k in self.rows}
        self.findings = []
        self.tables = {k: [] for k in self.tables}
        self.held = 0
        self.flushes += 1


def _sketch_groups(frames: Iterator[pd.DataFrame]) -> Iterator[tuple[GroupKey, list[bytes]]]:
    """The pickled sketches of each group, from rows sorted by group."""
    key: GroupKey | None = None
    held: list[bytes] = []
    for frame in frames:
        for c, t, p, b in zip(frame["cluster"], frame["topic"], frame["partition"], frame["sketch"]):
            k = (present(c), t, int(p))
            if k != key and key is not None and held:
                yield key, held
                held = []
            key = k
            held.append(b)
    if key is not None and held:
        yield key, held


def _replay_sketches(key: GroupKey, items: list[Sketch], shared: Shared, outputs: _Outputs,
                     filesystem: FileSystem) -> tuple | None:
    """Replay one group from its sketches; its status row (None for a group without replicas)."""
    try:
        rows, summaries, load = group_replicas(items, filesystem)
        if not rows:
            return None
        reported = frozenset().union(*(it.reported for it in items))
        tier = {partition_path(SimpleNamespace(**it.row)): it.tier for it in items if it.tier is not None}
        return outputs.add(key, replay_rows(key, rows, shared, summaries=summaries, load=load, reported=reported,
                                            tier=tier))
    except Exception as e:  # noqa: BLE001 - one group's failure is a finding; the other groups go on
        brokers = sorted({int(it.row["broker_id"]) for it in items if it.row.get("broker_id") is not None})
        return outputs.failed(key, _failed(key, brokers, e), e)


def replay_partitions(shared: object = None, staging: str | None = None
                      ) -> Callable[[Iterator[pd.DataFrame]], Iterator[pd.DataFrame]]:
    """The replay stage's mapInPandas function over replica sketches (:data:`~kforensics.spark.schemas.
    REPLAY_INPUT`, rows of one group together: repartitioned and sorted by group): each group replayed from the
    window its replicas' summaries give, its batch rows read from the replicas' ``batches`` files
    (:mod:`kforensics.spark.window`); the task's rows written a few files per table; one status row per group
    (:data:`GROUP_COLUMNS`).  ``shared``: a :class:`Shared` (or a broadcast)."""

    def fn(frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        tune_collector()  # a Python worker of this executor: it holds the group's replicas
        sh = Shared.of(shared)
        filesystem, staging_path = split_uri(staging) if staging else (None, None)
        outputs = _Outputs(staging_path, filesystem, spark_task_part("r"))
        status = []
        for key, sketches in _sketch_groups(frames):
            row = _replay_sketches(key, [pickle.loads(b) for b in sketches], sh, outputs, filesystem)
            if row is not None:
                status.append(row)
        outputs.flush()
        yield pd.DataFrame(status, columns=GROUP_COLUMNS)

    return fn

