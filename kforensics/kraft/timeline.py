"""The election timeline of every partition, replayed from a KRaft metadata log and its snapshots.

The controller records each leader change in a PartitionChangeRecord, which
carries no epoch: the epochs follow from replaying the records in log order
(reference §6.2).  A PartitionRecord sets leader, leader epoch and partition
epoch; each PartitionChangeRecord adds one to the partition epoch, and one to
the leader epoch when its Leader field is present (≠ −2), even when it names
the same leader; every other field is replaced only when present.  A
ClearElrRecord empties the ELRs of a topic (of every topic when its name is
empty), which adds one to the partition epoch of each partition it changes.

An election is marked unclean when the new leader was in neither the previous
ISR nor the previous ELR (replicas in the ELR are safe to elect, KIP-966), or
when the leader recovery state becomes RECOVERING (1).

Inputs are log dirs, ``__cluster_metadata-*`` dirs, their segments and
snapshots (``<endOffset>-<epoch>.checkpoint``, ``bootstrap.checkpoint``).
Several copies of the metadata log (one per node) are resolved as Raft
resolves them (:mod:`.metadata_log_copies`, docs/metadata-quorum.md): the
part of each copy that agrees with the reference lineage is replayed, a
deposed leader's tail never is; the copies' witnesses say how far the
timeline can vouch (``trusted_end``, ``tail_missing``) and which entries are
committed.  Snapshots and log are replayed in offset order: a snapshot that the log
reaches without a gap is checked against the replayed state; one that follows
a gap (older segments deleted) becomes the new starting state, and the
partitions it shows changed get an entry of their own.  Records after a gap
that a later snapshot covers are left to that snapshot.

Records are streamed: each copy's batch headers are read once to survey it, then its records one at a time,
merged with the other copies' by offset as they are read; a snapshot is read once for its control records and
once more to replay it.  Memory is the replayed state and one batch's bytes, whatever number of records the files
hold or claim.  Inputs that are not a metadata log are refused (:mod:`kforensics.kraft.metadata_inputs`).

Split by what each part models: :mod:`.timeline_model` (the timeline as data), :mod:`.metadata_log_records` (reading
a file's records), :mod:`.metadata_log_copies` (the copies resolved as Raft does), :mod:`.timeline_registrations`
(the record fold), :mod:`.timeline_snapshots` and :mod:`.timeline_replay`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from ..log.metadata_log import MetadataEntry as _Rec
from ..log.metadata_log import MetadataSources, find_metadata_sources
from .cluster_state import ClusterState
from .metadata_inputs import loose_segments, refuse_if_no_metadata
from .metadata_log_copies import mark_committed, report_copies, resolve_copies, resolved_records, survey_copies
from .metadata_log_records import one_cluster, read_records
from .timeline_model import (
    LEADER_RECOVERY_STATES,
    MAX_TXN_RECORDS,
    NO_LEADER,
    NO_LEADER_CHANGE,
    RECOVERED,
    RECOVERING,
    Timeline,
    TimelineEntry,
)
from .timeline_replay import LogReplay

__all__ = ["LEADER_RECOVERY_STATES", "MAX_TXN_RECORDS", "NO_LEADER", "NO_LEADER_CHANGE", "RECOVERED", "RECOVERING",
           "Timeline", "TimelineEntry", "build_timeline"]


def build_timeline(inputs: Any) -> Timeline:
    """Replay the metadata log copies and snapshots in ``inputs`` into per-partition timelines.

    ``inputs`` is what :func:`~kforensics.log.metadata_log.find_metadata_sources` takes (paths on any source,
    log-dir or partition objects; one or a list), or a :class:`~kforensics.log.metadata_log.MetadataSources`.  Raises
    ``FileNotFoundError`` for a path that does not exist; everything wrong
    inside the files becomes a finding; inputs that are not a metadata log raise ``InputError``.
    """
    items = [] if isinstance(inputs, MetadataSources) else list(inputs) if isinstance(inputs, (list, tuple)) \
        else [inputs]
    loose = loose_segments(items)  # refuses another topic's segment
    src = inputs if isinstance(inputs, MetadataSources) else find_metadata_sources(items)
    tl = Timeline()
    tl.log.extend(src.findings)
    one_cluster(src, tl)
    snapshots = list(src.snapshots)
    copies, voters = survey_copies(src, tl)
    view = resolve_copies(copies, voters)
    merged = resolved_records(src, tl, view)
    first = next(merged, None)
    if first is None and not snapshots and src.bootstraps:
        # a bootstrap file holds the records a new cluster starts from, at offsets 0..
        log: Iterable[_Rec] = read_records(src.bootstraps[0], tl, {})
    else:
        log = itertools.chain([first], merged) if first is not None else ()
    replay = LogReplay(tl, snapshots)
    for rec in log:
        replay.apply(rec)
    replay.finish()
    tl.cluster = replay.state.cluster
    if copies:
        report_copies(tl, view, copies)
        mark_committed(tl)
    tl.complete = tl.complete and not tl.tail_missing
    tl.findings = tl.log.findings()
    refuse_if_no_metadata(loose, len(items), tl.records)
    return tl


def read_cluster_state(inputs: Any) -> ClusterState:
    """The cluster state (brokers, features, configs) the metadata log in ``inputs`` ends with, folded by the
    timeline's replay of the resolved records.  A caller that builds the timeline anyway takes
    ``Timeline.cluster`` instead of reading the log again."""
    return build_timeline(inputs).cluster
