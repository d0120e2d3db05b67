"""Replay over many partitions and brokers: one typed report (rendered by the front ends)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..epoch.versions import LATEST, KafkaVersion
from ..errors import InputError, UsageError
from ..findings import Finding
from ..kraft.cluster_state import ClusterState
from ..kraft.controller_choice import RestartEvidence, check_restart_order, marker_epochs
from ..log.file_kinds import METADATA_TOPIC, parse_partition_dir_name
from ..scan.broker import REMOTE_LOG_METADATA
from ..tiered.coverage import tiered_topics
from ..tiered.evidence import TieredEvidence, read_tiered_evidence, tier_replicas
from .engine import PartitionReplay
from .group import replay_group
from .inputs import LoadedBrokers, batch_digests, load_replicas
from .not_replayed import not_replayed_findings


@dataclass
class BrokerInput:
    """One broker whose log dirs were read."""

    broker_id: int | None
    log_dirs: list[str]
    cluster_id: str | None = None


@dataclass
class ReplayReport:
    """Every partition replayed, with the brokers they came from."""

    kafka_version: str
    brokers: list[BrokerInput]
    partitions: list[PartitionReplay]
    findings: list[Finding] = field(default_factory=list)  # from the metadata log, when one was read
    # what the replay read, for the analyses that read more of the same evidence (consumer offsets, transactions):
    # per broker id its resolved log dirs (path objects: directories, archive members, remote files), and the
    # controller's election timeline (None without a metadata log); private: not part of the JSON
    _log_dirs: dict[int | None, list[Any]] = field(default_factory=dict, repr=False)
    _timeline: Any = field(default=None, repr=False)
    # min.insync.replicas given for the acknowledgement classes (None: each topic's config in the metadata log)
    min_insync_replicas: int | None = None

    @property
    def log_dirs(self) -> dict[int | None, list[Any]]:
        """Broker id -> the log dirs read for it (openable paths, also inside archives)."""
        return self._log_dirs or {b.broker_id: list(b.log_dirs) for b in self.brokers}

    @property
    def timeline(self) -> Any:
        """The controller's election timeline the replay followed (None without a KRaft metadata log)."""
        return self._timeline


def _metadata_inputs(loaded: LoadedBrokers, metadata: list[Any] | None) -> list[Any]:
    """The KRaft metadata logs among the inputs: those named, then the log dirs holding one."""
    from ..log.log_dir import open_log_dir

    inputs = list(metadata or [])
    if not _scanned(loaded, METADATA_TOPIC, suffixed=True):
        return inputs  # the scans listed every partition dir of these log dirs: none is a metadata log's
    for dirs in loaded.log_dirs:
        for d in dirs:
            ld = open_log_dir(d)
            if any(pd.is_metadata_log for pd in ld.partitions):
                inputs.append(ld)
    return inputs


def _scanned(loaded: LoadedBrokers, topic: str, *, suffixed: bool) -> bool:
    """Whether the scans read a partition dir of ``topic`` by its name (``suffixed``: ``-delete``/``-stray``/``-future``
    dirs count too), in any log dir of any broker: each scan lists every partition dir of its log dirs, so the
    answer needs no second listing."""
    prefix = topic + "-"
    for scans in loaded.scans:
        for p in scans:
            if p.dir_name.startswith(prefix):
                name = parse_partition_dir_name(p.dir_name)
                if name is not None and name.topic == topic and (suffixed or name.suffix is None):
                    return True
    return False


def restart_evidence(loaded: LoadedBrokers, cluster: ClusterState, kafka_version: KafkaVersion,
                     alive: tuple[int, ...] | None, running: tuple[int, ...] = (),
                     order: tuple[int, ...] | None = None) -> RestartEvidence:
    """What the controller's choice at the restart reads: the cluster state of the metadata log (the timeline's),
    the brokers given, those that come back (``alive``, else every broker given) and their clean-shutdown
    markers."""
    ids = tuple(b for b in loaded.broker_ids if b is not None)
    return RestartEvidence(cluster, ids, alive,
                           {b: marker_epochs(dirs) for b, dirs in zip(loaded.broker_ids, loaded.log_dirs)
                            if b is not None}, kafka_version.release, running, order)


def check_event_brokers(events: list[dict[str, Any]] | None, brokers: list[int],
                        groups: Mapping[tuple[str, int], list[Any]] | None = None) -> None:
    """Refuse events (a scenario's) that name a broker none of the inputs is (a scenario dir missing one of its
    brokers' dirs), or, of ``groups`` (the partitions to replay: their replicas), one that holds no replica of a
    partition: the replay has no replica to apply them to."""
    named = _named(events)
    missing = sorted(named - set(brokers), key=str)
    if missing:
        raise InputError(f"the events name {_brokers(missing)}, which no log dir given is (brokers: "
                         f"{', '.join(map(str, brokers))}): give every broker the events name")
    if not named or not groups:
        return
    check_group_events({tp: events or [] for tp in groups},
                       {tp: {r.broker_id for r in replicas} for tp, replicas in groups.items()},
                       lambda tp: f"{tp[0]}-{tp[1]}",
                       ": the events are one partition's (replay and salvage take --topic and --partition)")


def check_group_events(events: Mapping[Any, list[dict[str, Any]]], held: Mapping[Any, set[Any]],
                       name: Callable[[Any], str], advice: str = "") -> None:
    """Refuse the events of a partition group (by its key in ``held``: the brokers holding a replica of it) that
    name a broker holding none: the engine would have no replica to apply them to.  ``name``: a key as the
    message names the partition; ``advice``: what the message ends with.  The one rule of ``replay`` (a scenario's
    events) and the Spark job (events per group); the events of a group no input holds are not looked at."""
    lacking = [(key, sorted(_named(evs) - held[key], key=str)) for key, evs in events.items() if key in held]
    lacking = sorted(((key, absent) for key, absent in lacking if absent), key=lambda x: name(x[0]))
    if not lacking:
        return
    key, absent = lacking[0]
    more = f" (and {len(lacking) - 1} other partition{'s' if len(lacking) > 2 else ''})" if len(lacking) > 1 else ""
    raise InputError(f"the events name {_brokers(absent)}, which hold{'s' if len(absent) == 1 else ''} no replica "
                     f"of {name(key)}{more} (its replicas: {', '.join(map(str, sorted(held[key], key=str)))})"
                     f"{advice}")


def _named(events: list[dict[str, Any]] | None) -> set[Any]:
    """The brokers events name (as the broker or the leader of an event)."""
    return {ev.get(k) for ev in events or [] for k in ("broker", "leader")} - {None}


def _brokers(ids: list[Any]) -> str:
    return f"broker{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}"


def _chosen(t: str, p: int, replicas: list[Any], topic: str | None, partition: int | None, leader: int | None) -> bool:
    """Whether the partition group is replayed, of ``--topic``, ``--partition`` and ``--leader``."""
    return ((topic is None or t == topic) and (partition is None or p == partition)
            and (leader is None or leader in [r.broker_id for r in replicas]))


def replay_all(brokers: dict[int, list[Any]] | list[Any], *, kafka_version: KafkaVersion = LATEST,
               topic: str | None = None, partition: int | None = None,
               leader: int | None = None, what_if: bool = False, events: list[dict[str, Any]] | None = None,
               digests: bool = False, metadata: list[Any] | None = None,
               alive: tuple[int, ...] | None = None, running: tuple[int, ...] = (),
               min_insync_replicas: int | None = None, order: tuple[int, ...] | None = None,
               zookeeper: list[Any] | None = None, jobs: int | None = 1) -> ReplayReport:
    """Replay every partition found on the brokers (filtered).  ``alive``: the brokers that come back before the
    controller elects (default: every broker given); the others rejoin later as followers.  ``running``: brokers
    that never stopped (active throughout the restart).  ``order``: the order the brokers restart in (the ones it
    does not name after it, in id order).  ``min_insync_replicas``: given, it overrides the metadata
    log's config for the acknowledgement classes.  ``zookeeper``: ZooKeeper data dirs of a ZooKeeper-mode cluster
    (those among the log dirs are found too), whose controller state names the leaders (:mod:`kforensics.zookeeper`).
    ``jobs``: brokers loaded by worker processes at once (:func:`.inputs.load_replicas`; None: one per core; 1: no
    worker); the same report whatever it is."""
    from ..zookeeper.inputs import split_zookeeper_dirs

    brokers, found = split_zookeeper_dirs(brokers)
    zk_dirs = [*(zookeeper or []), *found]
    loaded = load_replicas(brokers, kafka_version=kafka_version, slim=True, jobs=jobs)
    topics = {t for t, _ in loaded.groups}
    if topic is not None and topic not in topics:
        raise InputError(f"no partition of topic {topic!r} on these brokers (topics: {', '.join(sorted(topics))})")
    if partition is not None and not any(p == partition and (topic is None or t == topic) for t, p in loaded.groups):
        raise InputError(f"no partition {partition}" + (f" of topic {topic!r}" if topic else "") + " on these brokers")
    if leader is not None and leader not in loaded.broker_ids:
        raise UsageError(f"--leader {leader} is not one of the brokers given "
                         f"({', '.join(map(str, loaded.broker_ids))})")
    check_restart_order(order, (b for b in loaded.broker_ids if b is not None), alive, running)
    check_event_brokers(events, loaded.broker_ids, {tp: replicas for tp, replicas in loaded.groups.items()
                                                    if _chosen(*tp, replicas, topic, partition, leader)}
                        if events else None)
    inputs = _metadata_inputs(loaded, metadata)
    tl = None
    restart = None
    if inputs:
        from ..kraft.timeline import build_timeline

        tl = build_timeline(inputs)
        restart = restart_evidence(loaded, tl.cluster, kafka_version, alive, running, order)
    zk_findings: list[Finding] = []
    if zk_dirs:
        from ..zookeeper.election import with_zookeeper
        from ..zookeeper.inputs import read_zookeeper_inputs, refuse_both

        refuse_both(inputs, zk_dirs)
        zk = read_zookeeper_inputs(zk_dirs)
        restart = with_zookeeper(restart_evidence(loaded, zk.configs, kafka_version, alive, running, order), zk)
        zk_findings = zk.findings
    tiered = _tiered_evidence(loaded, inputs, restart)
    scans = {s.path: s for kept in loaded.scans for s in kept} if tiered is not None else {}
    report = ReplayReport(kafka_version.label, [BrokerInput(b, r.broker.log_dirs, r.broker.cluster_id)
                                          for b, r in zip(loaded.broker_ids, loaded.reports)], [],
                          list(tl.findings) if tl is not None else [],
                          dict(zip(loaded.broker_ids, (list(d) for d in loaded.log_dirs))), tl)
    # each group's replicas and summaries are let go once it is replayed: a fleet's results take their place
    for t, p in sorted(loaded.groups):
        replicas = loaded.groups.pop((t, p))
        summaries = loaded.summaries.pop((t, p), None)
        if not _chosen(t, p, replicas, topic, partition, leader):
            continue
        if tiered is not None:
            tier_replicas(tiered, t, p, replicas, scans)
        report.partitions.append(replay_group(t, p, replicas, kafka_version=kafka_version, leader=leader,
                                              events=events, timeline=tl, what_if=what_if,
                                              digests=batch_digests if digests else None,
                                              summaries=summaries, restart=restart,
                                              min_insync_replicas=min_insync_replicas))
    report.findings += zk_findings + (tiered.findings if tiered is not None else [])
    report.min_insync_replicas = min_insync_replicas
    report.findings += not_replayed_findings([o for o in loaded.left_out if topic is None or o.topic == topic])
    report.findings += archive_findings(loaded, metadata or [])
    return report


def _tiered_evidence(loaded: LoadedBrokers, inputs: list[Any], restart: RestartEvidence | None
                     ) -> TieredEvidence | None:
    """Tiered storage in the evidence: ``__remote_log_metadata`` in any broker's log dirs, and the topics the
    metadata log configures with ``remote.storage.enable`` (None when neither)."""
    cluster = restart.cluster if restart is not None else None
    if not _scanned(loaded, REMOTE_LOG_METADATA, suffixed=False):
        # no __remote_log_metadata partition dir was scanned: the remote log metadata is None without listing again
        topics = tiered_topics(cluster)
        return TieredEvidence(topics, None) if topics else None
    ev = read_tiered_evidence(dict(zip(loaded.broker_ids, loaded.log_dirs)), None, cluster)
    return ev if ev.topics or ev.remote is not None else None


def archive_findings(loaded: Any, metadata: list[Any]) -> list[Finding]:
    """What the archives among the inputs hold besides log dirs (truncation, damage, duplicate or ignored members),
    from the archives the scan read: the replay would otherwise say nothing of what an archive lost."""
    from ..log.sources import ARCHIVE_SUFFIXES, TarArchive
    from ..scan.broker import archives_of

    out: list[Finding] = []
    for archive in archives_of(d for dirs in loaded.log_dirs for d in dirs):
        out += archive.findings()
    for spec in dict.fromkeys(str(m) for m in metadata):
        if spec.endswith(ARCHIVE_SUFFIXES) and "://" not in spec:
            try:
                out += TarArchive(spec).findings()  # a metadata archive: its index, read once more
            except OSError:
                pass  # the timeline has read it already: an archive that cannot be opened stopped it there
    return out
