"""The Spark job: the stages in order, each the same analysis as the command line's.

1. **plan** (driver, before Spark starts: :mod:`.plan`): the output and the
   inputs are checked and refused as ``scan`` and ``replay`` refuse theirs;
   each snapshot's listing and root files are read with ``scan``'s
   :func:`~kforensics.scan.broker.plan_log_dir`; one KRaft timeline per
   cluster is built from the metadata logs among the snapshots and the
   ``metadata`` inputs, as ``replay`` builds it.  Once nothing is left to
   refuse, the session starts while the plan's rest (the task rows, the root
   files' tables) is built beside it (``start_s``).
2. **scan** (executors: :mod:`.scan_task`): every partition dir scanned by
   ``scan``'s :func:`~kforensics.scan.partition.scan_partition`, writing the
   tables ``scan --out`` writes.
3. **broker checks** (driver: :mod:`.broker_checks`): what ``scan`` checks
   over a whole broker; the committed offsets merged (:mod:`.impact`).
4. **replay** (executors: :mod:`.replay`): each (cluster, topic, partition)
   group through ``replay``'s :func:`~kforensics.replay.group.replay_group`
   and its consumer and transaction impact.
5. **summary** (:mod:`.summary`) and **publish** (:mod:`.publish`).

Output (``out``): :data:`~kforensics.spark.schemas.TABLES`, each written by
pyarrow part by part, with ``kforensics.schema_version`` in its metadata,
under a staging directory moved into place at the end.  A task that fails
becomes a ``SCAN_FAILED`` finding and a group whose replay fails a
``REPLAY_FAILED`` one; the job goes on, and its summary counts them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from ..epoch.versions import LATEST, KafkaVersion, parse_kafka_version
from ..findings import Finding
from ..kraft.controller_choice import RestartEvidence
from ..replay.report import check_group_events
from . import table_files
from .broker_checks import broker_checks
from .impact import committed_offsets, transaction_state_copies
from .inputs import Located, Snapshot, locate
from .names import present
from .output import MetadataInputs, check_output
from .plan import Plan, build_timelines, finish, metadata_by_cluster, plan, replica_brokers, write_timeline_findings
from .publish import Staging, complete, publish, staged
from .replay import Shared, raw_names, replay_partitions, replay_tasks, write_not_replayed
from .restart import restart_evidence
from .scan_task import scan_tasks
from .schemas import (
    COLLECTED,
    GROUP_SCHEMA,
    KEYS,
    REPLAY_INPUT,
    STATUS_SCHEMA,
    TABLES,
    TASK_COLUMNS,
    TASK_SCHEMA,
    WORK_BATCHES,
    GroupKey,
    parse_tables,
)
from .session import session  # noqa: F401 - tests/conftest.py, the notebook and the benchmark start it from here
from .summary import Outcome, finding_counts, summarize, verdict_counts, verdict_summary
from .tiered import TieredDriver, read_tiered, write_tiered_findings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..kraft.timeline import Timeline
    from .report import Summary


@dataclass
class JobOptions:
    """How a run goes: the Kafka rules replayed, whether an earlier run's tables are replaced, tasks per core,
    KRaft metadata logs besides those among the snapshots (see :func:`kforensics.spark.plan.metadata_by_cluster`),
    the manifest the snapshots came from (an input: never written), what happens next per group (``events``,
    replayed as ``kforensics replay --scenario`` replays a scenario's: a hypothesis, not evidence), and the tables
    to write (all by default; the replay reads the batch rows either way)."""

    kafka_version: KafkaVersion = LATEST
    overwrite: bool = False
    tasks_per_partition: int = 4
    metadata: MetadataInputs = None
    manifest: str | None = None
    events: dict[GroupKey, list[dict[str, object]]] | None = None
    tables: tuple[str, ...] = TABLES
    alive: tuple[int, ...] | None = None  # brokers that come back before the controller elects (None: every one)
    running: tuple[int, ...] = ()  # brokers that never stopped: active throughout the restart
    restart_order: tuple[int, ...] | None = None  # the order the brokers restart in (None: every order tried)
    min_insync_replicas: int | None = None  # given: the acknowledgement classes' setting for every topic
    zookeeper: tuple[str, ...] = ()  # ZooKeeper data dirs of a ZooKeeper-mode cluster: its controller's record

    def __post_init__(self) -> None:
        # parsed once: a caller of the library may give the version and the tables as text (a notebook, a test)
        self.kafka_version = parse_kafka_version(self.kafka_version)
        self.tables = parse_tables(self.tables)


@dataclass
class _Driver:
    """What the driver holds between the stages."""

    plan: Plan
    timelines: dict[str | None, Timeline] = field(default_factory=dict)
    timeline_findings: dict[str | None, list[Finding]] = field(default_factory=dict)
    restart: dict[str | None, RestartEvidence] = field(default_factory=dict)
    tiered: TieredDriver = field(default_factory=TieredDriver)
    cleanup: list = field(default_factory=list)  # broadcasts and persisted frames to release at the end


def _plan_stage(located: list[Located], options: JobOptions, st: Staging) -> _Driver:
    planned = plan(located, st.path, st.filesystem, defer=True)
    if options.events:
        # refused as replay refuses a scenario's: events naming a broker that holds no replica of their group
        check_group_events(options.events, replica_brokers(planned), _group_name)
    explicit = metadata_by_cluster(options.metadata, {c["cluster"] for c in planned.contexts.values()})
    timelines, found = build_timelines(planned, explicit)
    restart = restart_evidence(planned, timelines, options.kafka_version, options.alive, options.running,
                               options.restart_order)
    if options.zookeeper:
        from ..zookeeper.inputs import refuse_both
        from .restart import zookeeper_restart_evidence

        refuse_both(list(timelines), list(options.zookeeper))
        restart, zk_findings = zookeeper_restart_evidence(planned, list(options.zookeeper), options.kafka_version,
                                                          options.alive, options.running, options.restart_order)
        for cluster in restart:
            found[cluster] = found.get(cluster, []) + zk_findings
    # tiered storage: per snapshot in its info (before the scan stage broadcasts it), per cluster for the replay
    return _Driver(planned, timelines, found, restart, read_tiered(planned, timelines, restart))


def _group_name(key: GroupKey) -> str:
    cluster, topic, partition = key
    return f"{topic}-{partition}" + (f" of cluster {cluster}" if cluster is not None else "")


def _scan_stage(spark: SparkSession, d: _Driver, options: JobOptions, st: Staging) -> tuple[DataFrame | None,
                                                                                             list[dict]]:
    """The scan tasks over the executors; their status rows (the frame stays persisted for the replay)."""
    from pyspark import StorageLevel

    tasks = d.plan.tasks
    if not len(tasks):
        return None, []
    sc = spark.sparkContext
    # the tasks go to the JVM as an Arrow frame (a list of rows would be pickled through Python workers started for
    # it: 1.7 s of a cold job's first stage); missing values as nulls, broker ids as nullable ints
    frame = pd.DataFrame({c: [present(v) for v in tasks[c]] for c in TASK_COLUMNS}, columns=TASK_COLUMNS)
    frame = frame.astype({"broker_id": "Int32", "partition": "Int32"})
    snapinfo = sc.broadcast(d.plan.snapshots)
    d.cleanup.append(snapinfo)
    n = _scan_task_count(len(tasks), sc.defaultParallelism, options)
    batches = "batches" if "batches" in options.tables else WORK_BATCHES
    # each task a range of (cluster, topic, partition) keys, every replica of a partition in one task: a task writes
    # a file per table and topic it meets (the published layout), so tasks of a few topics write a few files each
    # (tasks of every topic wrote 5 226 small files for 3 x 10 000 dirs of 100 topics, about 2 ms of CPU each), and
    # the replay stage finds each group's replicas in one partition already (no shuffle)
    scanned = spark.createDataFrame(frame, schema=TASK_SCHEMA).repartitionByRange(n, *KEYS).mapInPandas(
        scan_tasks(st.uri, options.kafka_version, snapinfo, batches), schema=STATUS_SCHEMA
    ).persist(StorageLevel.MEMORY_AND_DISK)
    d.cleanup.append(scanned)
    return scanned, [r.asDict() for r in scanned.select(*COLLECTED).collect()]


def _scan_task_count(dirs: int, parallelism: int, options: JobOptions) -> int:
    """How many scan tasks the dirs are shared out to: ``tasks_per_partition`` per core, never more than dirs."""
    return max(1, min(dirs, parallelism * options.tasks_per_partition))


def _replay_stage(spark: SparkSession, d: _Driver, scanned: DataFrame | None, statuses: list[dict],
                  shared: Shared, options: JobOptions, st: Staging) -> list[dict]:
    """The partition groups replayed over the executors from the replicas' sketches (partition row, summary, a
    small replica whole), where the scan tasks left them (no shuffle); each group reads its window's batch rows from
    the replicas' files."""
    if scanned is None:
        return []
    sc = spark.sparkContext
    broadcast = sc.broadcast(shared)
    d.cleanup.append(broadcast)
    sketches = scanned.where("sketch IS NOT NULL").select(*REPLAY_INPUT)
    m = replay_tasks(statuses, sc.defaultParallelism, options.tasks_per_partition)
    # the scan tasks took their dirs by range of the group keys: each group's sketches are in one partition, and
    # fewer tasks (few groups) merge neighbouring partitions whole, without a shuffle
    if m < _scan_task_count(len(d.plan.tasks), sc.defaultParallelism, options):
        sketches = sketches.coalesce(m)
    return [r.asDict() for r in sketches.sortWithinPartitions(*KEYS).mapInPandas(
        replay_partitions(broadcast, st.uri), schema=GROUP_SCHEMA).collect()]


def _release(cleanup: list) -> None:
    for b in cleanup:
        try:
            b.unpersist()
        except Exception:  # noqa: BLE001 - the session may be gone
            pass


def _stages(spark: SparkSession | Callable[[], SparkSession], located: list[Located], options: JobOptions,
            st: Staging) -> Outcome:
    """Every stage but publishing; what they returned."""
    t0 = time.perf_counter()
    d = _plan_stage(located, options, st)
    o = Outcome(d.plan, timelines=d.timelines)
    o.timings["plan_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    started = _start_beside(spark, d.plan)  # only now: everything that can be refused has been
    o.timings["start_s"] = time.perf_counter() - t
    try:
        t = time.perf_counter()
        scanned, o.statuses = _scan_stage(started, d, options, st)
        o.timings["scan_s"] = time.perf_counter() - t
        t = time.perf_counter()
        checks = broker_checks(d.plan, st.uri, st.filesystem, o.statuses)
        o.corrected = checks.corrected
        write_timeline_findings(d.timeline_findings, checks.reported, st.path, st.filesystem)
        write_not_replayed(o.statuses, st.path, st.filesystem)
        write_tiered_findings(d.plan, d.tiered, st.path, st.filesystem)
        commits = committed_offsets(d.plan, o.statuses, st.path, st.filesystem)
        o.timings["checks_s"] = time.perf_counter() - t
        t = time.perf_counter()
        table_files.write("brokers", table_files.table_of_rows("brokers", d.plan.brokers), st.path, "brokers",
                          st.filesystem)
        shared = Shared(options.kafka_version, d.timelines, {c: cc.commits for c, cc in commits.items()},
                        transaction_state_copies(d.plan), checks.reported,
                        {sid: str(info["spec"]) for sid, info in d.plan.snapshots.items()}, raw_names(d.plan),
                        dict(options.events or {}), d.restart, options.min_insync_replicas, d.tiered.clusters)
        o.groups = _replay_stage(started, d, scanned, o.statuses, shared, options, st)
        o.timings["replay_s"] = time.perf_counter() - t
    finally:
        _release(d.cleanup)
    return o


def _start_beside(spark: SparkSession | Callable[[], SparkSession], plan_: Plan) -> SparkSession:
    """The session (:func:`_started`) and the rest of the plan (:func:`~kforensics.spark.plan.finish`: the task rows,
    the root files' tables), built on a helper thread while a JVM starts: the start is mostly waiting on the new
    process, and the plan's rest a few seconds of Python on a fleet of small partitions."""
    if not callable(spark) or hasattr(spark, "sparkContext"):
        finish(plan_)
        return _started(spark)
    with ThreadPoolExecutor(1, thread_name_prefix="kforensics-plan") as pool:
        rest = pool.submit(finish, plan_)
        # a session that fails to start is the error said, once the pool has waited for the plan's rest
        started = _started(spark)
        rest.result()
    return started


def _started(spark: SparkSession | Callable[[], SparkSession]) -> SparkSession:
    """The session: ``spark``, or the one it starts when it is a callable that starts one."""
    if not callable(spark):
        return spark
    if hasattr(spark, "sparkContext"):  # a callable stand-in for a session (a test's mock) is one
        return cast("SparkSession", spark)
    return spark()


def run(spark: SparkSession | Callable[[], SparkSession], snapshots: list[Snapshot] | list[Located], out: str,
        options: JobOptions | None = None, /, **given: Any) -> Summary:
    """Run the whole pipeline; returns a summary dict (counts per cluster, findings by severity, verdicts by
    code, failed tasks and groups: see :func:`kforensics.spark.summary.summarize`).

    ``snapshots``: as given, or already :func:`~kforensics.spark.inputs.locate`-d (a front end that refused what
    it must first).  ``options`` (or its fields as keywords, ``given``: any value, checked by
    :class:`JobOptions`).  ``spark``: a SparkSession, or a callable that starts one (called once the output and the
    inputs are checked and the snapshots planned, so that nothing that can be refused starts a JVM).
    """
    options = options if options is not None else JobOptions(**given)
    given_located = [s for s in snapshots if isinstance(s, Located)]
    plain = [s for s in snapshots if isinstance(s, Snapshot)]
    check_output(out, [s.snapshot for s in given_located] or plain, options.overwrite, options.metadata,
                 options.manifest)
    located = given_located if len(given_located) == len(snapshots) else locate(plain)
    with staged(out) as st:
        o = _stages(spark, located, options, st)
        t = time.perf_counter()
        summary_rows = verdict_summary(o.groups)
        if summary_rows:
            table_files.write("summary", table_files.table_of_rows("summary", summary_rows), st.path, "summary",
                              st.filesystem)
        complete(st)
        o.findings = finding_counts(o.statuses, o.groups, st.path, st.filesystem)
        o.verdicts = verdict_counts(summary_rows)
        o.timings["summary_s"] = time.perf_counter() - t
        t = time.perf_counter()
        publish(st, out, options.tables)
        o.timings["publish_s"] = time.perf_counter() - t
    return summarize(o, out)

