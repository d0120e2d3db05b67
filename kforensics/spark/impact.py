"""What the consumer and transaction impact of the replay needs, gathered on the driver: committed offsets and
the coordinators' copies.

The executors read each ``__consumer_offsets`` copy
(:func:`kforensics.consumers.committed_offsets.read_copy`); the driver merges
them with :func:`~kforensics.consumers.committed_offsets.merge_copies`: per
snapshot into the ``committed_offsets`` table (what ``scan --out`` writes for
the broker), per cluster (each broker's latest snapshot, as the replay takes
a broker's latest) into the commits each replayed partition's impact reads.
The impact itself is computed per partition group by the replay stage with
:func:`kforensics.consumers.replay_impact.partition_replay_impact`, as
``kforensics replay`` computes it.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field

from ..consumers.committed_offsets import CommittedOffset, merge_copies
from ..formats.transaction_log import TOPIC as TRANSACTION_STATE_TOPIC
from ..log.file_kinds import parse_partition_dir_name
from ..tables.impact_tables import committed_offsets_table
from ..transactions.coordinator import CoordinatorView
from . import table_files
from .files import FileSystem
from .names import from_hex, snapshot_part, to_hex
from .plan import Plan
from .scan_task import open_dir

#: a ``__transaction_state`` copy as the replay stage opens it: (broker id, snapshot spec, log dir, dir name as hex)
Copy = tuple[int | None, str, str, str]
#: the clusters' coordinator views read in this executor process
_COORDINATORS: dict[tuple, CoordinatorView] = {}


def _latest_per_broker(items: list[dict]) -> list[dict]:
    """Per (cluster, partition dir, broker) the copy of the latest snapshot, as the replay takes a broker's latest
    snapshot (:func:`kforensics.tables.replay_tables.replica_rows`); copies of no known broker all count."""
    best: dict[tuple, dict] = {}
    out = []
    for it in items:
        if it["broker_id"] is None:
            out.append(it)
            continue
        key = (it["cluster"], it["dir_name"], it["broker_id"])
        rank = (it["snapshot_time"] is not None, it["snapshot_time"] or "", it["snapshot_id"])
        if key not in best or rank > best[key]["rank"]:
            best[key] = {**it, "rank": rank}
    return out + list(best.values())


def _by_partition_then_broker(c: dict) -> tuple:
    # the order coordinator_copies gives the copies to the CLI (by partition, then broker): among copies that hold
    # a commit at the same log offset, the first is the one named
    return c["partition"], -1 if c["broker_id"] is None else c["broker_id"], c["snapshot_id"]


@dataclass
class ClusterCommits:
    """A cluster's committed offsets (each broker's latest copy of each ``__consumer_offsets`` partition, merged)
    by (topic, partition)."""

    commits: dict[tuple[str, int], list[CommittedOffset]] = field(default_factory=dict)


def committed_offsets(plan_: Plan, statuses: list[dict], staging: str, filesystem: FileSystem = None
                      ) -> dict[str | None, ClusterCommits]:
    """Merge the ``__consumer_offsets`` copies the executors read: per snapshot the ``committed_offsets`` table,
    per cluster the commits by (topic, partition) the replay's consumer impact reads.

    The findings of reading the copies are the scan stage's (each copy's, in its snapshot's findings, as
    ``scan --out`` reports them): they are not reported again here.
    """
    copies = []
    for s in statuses:
        if s["payload"] is not None:
            ctx = plan_.contexts[s["snapshot_id"]]
            name = parse_partition_dir_name(s["dir_name"])
            copies.append({"snapshot_id": s["snapshot_id"], "dir_name": s["dir_name"], "payload": s["payload"],
                           "cluster": ctx["cluster"], "broker_id": ctx["broker_id"],
                           "snapshot_time": ctx["snapshot_time"], "partition": name.partition if name else -1})
    copies.sort(key=_by_partition_then_broker)
    by_snapshot: dict[str, list[bytes]] = {}
    for c in copies:
        by_snapshot.setdefault(c["snapshot_id"], []).append(c["payload"])
    for sid, payloads in sorted(by_snapshot.items()):
        merged = merge_copies(pickle.loads(p) for p in payloads)
        table_files.write("committed_offsets", committed_offsets_table(merged, plan_.contexts[sid]), staging,
                    snapshot_part(sid), filesystem)
    by_cluster: dict[str | None, list[bytes]] = {}
    for c in sorted(_latest_per_broker(copies), key=_by_partition_then_broker):
        by_cluster.setdefault(c["cluster"], []).append(c["payload"])
    out: dict[str | None, ClusterCommits] = {}
    for cluster, payloads in by_cluster.items():
        cc = out[cluster] = ClusterCommits()
        for co in merge_copies(pickle.loads(p) for p in payloads).offsets:
            cc.commits.setdefault((co.topic, co.partition), []).append(co)
    return out


def transaction_state_copies(plan_: Plan) -> dict[str | None, list[Copy]]:
    """Per cluster the ``__transaction_state`` copies (each broker's latest snapshot) the replay's coordinator
    view reads."""
    items = []
    for t in plan_.tasks.itertuples(index=False):
        log_dir, dir_name = (from_hex(x) for x in json.loads(t.raw))
        name = parse_partition_dir_name(dir_name)
        if name is not None and name.topic == TRANSACTION_STATE_TOPIC and name.suffix is None:
            ctx = plan_.contexts[t.snapshot_id]
            spec = str(plan_.snapshots[t.snapshot_id]["spec"])
            items.append({"cluster": ctx["cluster"], "dir_name": dir_name, "broker_id": ctx["broker_id"],
                          "snapshot_time": ctx["snapshot_time"], "snapshot_id": t.snapshot_id,
                          "partition": name.partition, "copy": (ctx["broker_id"], spec, to_hex(log_dir),
                                                                to_hex(dir_name))})
    out: dict[str | None, list[Copy]] = {}
    for it in sorted(_latest_per_broker(items), key=lambda x: (x["partition"], -1 if x["broker_id"] is None
                                                               else x["broker_id"])):
        out.setdefault(it["cluster"], []).append(it["copy"])
    return out


def cluster_coordinator(cluster: str | None, copies: list[Copy] | None) -> CoordinatorView | None:
    """The transaction coordinator's view of a cluster (its brokers' ``__transaction_state``), read on first use,
    once per executor process, as ``kforensics replay`` reads it; None without any."""
    from ..transactions.coordinator import read_transaction_state

    if not copies:
        return None
    key = (cluster, tuple(copies))
    if key not in _COORDINATORS:
        _COORDINATORS[key] = read_transaction_state(
            [(bid, open_dir(spec, from_hex(ld), from_hex(d))) for bid, spec, ld, d in copies])
    return _COORDINATORS[key]
