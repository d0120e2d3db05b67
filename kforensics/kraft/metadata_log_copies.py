"""The copies of the metadata log on disk, surveyed with their witnesses and resolved as Raft resolves them.

Each ``__cluster_metadata-0`` dir given is one node's copy.  Its batch headers give the Raft epoch at each
offset (every batch of the metadata log carries the epoch of the leader that wrote it); its own witnesses
are its ``leader-epoch-checkpoint``, its ``quorum-state``, its snapshots and the node id of its log dir's
``meta.properties``; control batches give the voter sets (``VotersRecord``, KIP-853).  The copies are resolved by
:func:`kforensics.kraft.quorum.resolve` (reference lineage, divergence, committed bound; the rules and their
sources are there and in ``docs/metadata-quorum.md``), and the one log the timeline replays is every copy's
records below the point where it diverges from the reference lineage, merged by offset: a deposed leader's
tail is read (what is wrong in it is still reported) but never replayed.

Memory is each copy's epoch changes (at most ``MAX_EPOCH_CHANGES``), the last ``MAX_VOTER_SETS`` voter sets
and one record per copy at a time.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ..findings import finding
from ..formats.record_batch import CONTROL_BIT
from ..log.file_kinds import classify_name, is_metadata_dir, parse_partition_dir_name, snapshot_id
from ..log.metadata_log import MetadataEntry, MetadataSources
from ..log.partition import open_partition
from ..log.records import EntryRecords
from ..log.segment_reader import SegmentReader
from ..log.side_files import read_side_file
from ..severity import Severity
from .metadata_log_records import read_records
from .quorum import LogCopy, QuorumView, resolve
from .timeline_model import Timeline

#: (offset, voters) of a VotersRecord
Voters = tuple[int, tuple[int, ...]]
#: Raft epoch changes kept per copy
MAX_EPOCH_CHANGES = 100_000
#: VotersRecords kept (the latest)
MAX_VOTER_SETS = 1_000


def _dir_of(src: MetadataSources, label: str) -> Any:
    """The path object of a metadata dir (from its first segment or snapshot), None when it has neither."""
    segs = src.logs.get(label) or []
    if segs:
        return segs[0].parent
    return next((p.parent for p in src.snapshots if str(p.parent) == label), None)


def _witnesses(d: Any) -> dict[str, Any]:
    """The copy's own witnesses: its leader-epoch checkpoint, quorum-state and node id (each only when readable)."""
    out: dict[str, Any] = {}
    name = parse_partition_dir_name(d.name) if d is not None and is_metadata_dir(d.name) else None
    if name is None:
        return out
    pd = open_partition(d, name, [])
    cp = pd.read_leader_epoch_checkpoint()
    if cp is not None and cp.value is not None:
        out["checkpoint"] = tuple((e.epoch, e.start_offset) for e in cp.value.entries)
    qs = pd.read_quorum_state()
    if qs is not None and qs.value is not None:
        out["quorum_epoch"] = qs.value.leader_epoch
        out["quorum_leader"] = qs.value.leader_id
        voters = qs.value.raw.get("currentVoters")
        if isinstance(voters, list) and voters:
            ids = [v.get("voterId") for v in voters if isinstance(v, dict)]
            if all(isinstance(i, int) for i in ids):
                out["voters"] = tuple(sorted(ids))
    parent = d.parent
    if parent is not None:
        mp_path = parent / "meta.properties"
        if mp_path.exists():
            mp = read_side_file(mp_path, "meta_properties")
            if mp.value is not None:
                out["node_id"] = mp.value.node_id
    return out


def _survey_segments(segs: list[Any], voters: list[Voters]) -> tuple[list[tuple[int, int]], int]:
    """(epoch, first offset) at each change of Raft epoch and the log end, from the batch headers of valid batches;
    VotersRecords found in control batches are added to ``voters``."""
    epochs: list[tuple[int, int]] = []
    end = 0
    for seg in segs:
        # a segment is named after its base offset: an empty one (a log truncated fully to start at a snapshot,
        # KafkaMetadataLog.truncateToLatestSnapshot) still says the log reaches that offset
        end = max(end, classify_name(seg.name).base_offset or 0)
        reader = SegmentReader(seg)
        try:
            for b in reader.batches():
                if not b.is_valid:
                    continue  # reported when the records are read; its header cannot be trusted
                # Raft epochs only rise along a log: a lower one (a damaged or hostile copy) starts no new run,
                # and past MAX_EPOCH_CHANGES the runs are not kept (memory is bounded by it, not by the file)
                if not epochs or (b.partition_leader_epoch > epochs[-1][0] and len(epochs) < MAX_EPOCH_CHANGES):
                    epochs.append((b.partition_leader_epoch, b.base_offset))
                end = max(end, b.last_offset + 1)
                if b.attributes & CONTROL_BIT:
                    for r in EntryRecords(b, with_data=True, file=reader.label):
                        if r.control and r.control.get("type") == "KRAFT_VOTERS":
                            voters.append((r.offset, tuple(sorted(r.control.get("voters") or []))))
                            del voters[:-MAX_VOTER_SETS]  # the latest are the ones the committed bound needs
        except OSError:
            continue  # reported when the records are read
    return epochs, end


def survey_copies(src: MetadataSources, tl: Timeline) -> tuple[list[LogCopy], list[Voters]]:
    """One :class:`LogCopy` per metadata dir given, and the voter sets its control records and snapshots name."""
    copies: list[LogCopy] = []
    voters: list[Voters] = []
    for label, segs in src.logs.items():
        epochs, end = _survey_segments(segs, voters)
        snaps = tuple(sorted((snapshot_id(p.name) or (0, 0))[0] for p in src.snapshots if str(p.parent) == label))
        if not segs:  # no segment at all: nothing shows where its log ended, its snapshots are all it holds
            end = max(snaps, default=0)
        w = _witnesses(_dir_of(src, label))
        copies.append(LogCopy(label, tuple(epochs), end, node_id=w.get("node_id"),
                              checkpoint=w.get("checkpoint", ()), snapshot_ends=snaps,
                              quorum_epoch=w.get("quorum_epoch"), voters=w.get("voters"),
                              quorum_leader=w.get("quorum_leader")))
    if src.snapshots:  # the latest snapshot's voters (KIP-853 snapshots carry a VotersRecord)
        last = src.snapshots[-1]
        controls: dict[str, Any] = {}
        for _ in read_records(last, tl, controls, data=False, report=False):
            pass
        v = controls.get("KRAFT_VOTERS")
        if v and v.get("voters"):
            voters.append(((snapshot_id(last.name) or (0, 0))[0] - 1, tuple(sorted(v["voters"]))))
    return copies, voters


def resolve_copies(copies: list[LogCopy], voters: list[Voters]) -> QuorumView:
    """Raft's resolution of the copies; the voters at an offset are the last VotersRecord's before it (copies
    repeat the same records: each kept once), else quorum-state's."""
    return resolve(copies, voter_history=sorted(set(voters)))


def resolved_records(src: MetadataSources, tl: Timeline, view: QuorumView) -> Iterator[MetadataEntry]:
    """One record per offset from every copy's part that agrees with the reference lineage, in offset order.

    Each copy is read to its end (what is wrong in its deposed tail is still reported), but only its records below
    the point of divergence are replayed.  Copies of one lineage hold the same record at one offset (Raft's log
    matching); one that does not is reported (METADATA_REPLICAS_DIVERGE) and the first copy's record is kept."""
    valid = {v.label: v.valid_end for v in view.copies}

    def copy(d: str) -> Iterator[MetadataEntry]:
        end = valid.get(d)
        for seg in src.logs[d]:
            for r in read_records(seg, tl, {}):
                if end is None or r.offset < end:
                    yield r

    differ: Counter[tuple[str, str]] = Counter()
    kept: MetadataEntry | None = None
    for r in heapq.merge(*(copy(d) for d in src.logs), key=lambda r: r.offset):
        if kept is not None and r.offset == kept.offset:
            if kept.value != r.value:
                differ[(kept.file, r.file)] += 1
            continue
        if kept is not None:
            yield kept
        kept = r
    if kept is not None:
        yield kept
    for (a, b), n in sorted(differ.items()):
        tl.log.add(finding("METADATA_REPLICAS_DIVERGE", f"{n} offset(s) hold different records in {a} and {b} in the "
                           "same Raft epoch, which Raft's log matching rules out (a damaged copy, or copies of two "
                           f"clusters); {a}'s record is replayed", file=b, other=a, offsets=n))


def report_copies(tl: Timeline, view: QuorumView, copies: list[LogCopy]) -> None:
    """Findings for the deposed tails and the copies that lost their tail; the timeline's trusted end."""
    by_label = {c.label: c for c in copies}
    ref = by_label.get(view.reference or "")
    snap_end = max((c_end for c in copies for c_end in c.snapshot_ends), default=0)
    trusted = max(ref.end_offset if ref else 0, snap_end)
    ref_last = ref.last_epoch if ref else -1
    tl.trusted_end = trusted if copies else None
    for v in view.copies:
        if v.deposed:
            first, end = v.deposed
            where = (f"the reference {view.reference} holds epoch {v.reference_epoch} there" if v.reference_epoch
                     is not None else f"the reference {view.reference} ends there")
            tl.log.add(finding("METADATA_TAIL_DEPOSED", f"offsets {first}-{end - 1} of this copy (Raft epoch "
                               f"{v.diverged_epoch} from {first}) diverge from the reference lineage: {where}. Raft "
                               "truncates them when the node next fetches (KafkaRaftClient, diverging epoch); they "
                               "were never committed and are not replayed", file=v.label,
                               first=first, end=end, epoch=v.diverged_epoch, reference=view.reference,
                               reference_epoch=v.reference_epoch))
        c = by_label[v.label]
        lost = [(e, s) for e, s in c.checkpoint if s > trusted or (s == trusted and e > ref_last)]
        if v.missing:
            covered = not lost
            tl.log.add(finding("METADATA_LOG_INCOMPLETE", f"this copy ends at offset {c.end_offset} (last Raft epoch "
                               f"{c.last_epoch}) but {'; '.join(v.missing)}"
                               + ("; a snapshot or another copy holds what it lacks" if covered else
                                  f"; no copy given holds it: the timeline vouches only for offsets below {trusted}"),
                               severity=Severity.LOW if covered else None, file=v.label,
                               log_end=c.end_offset, last_epoch=c.last_epoch, witnesses=list(v.missing),
                               covered_by_another_copy=covered))
        for e, s in lost:
            tl.missing.append(f"{v.label}: Raft epoch {e} from offset {s}")
    tl.quorum = view


def mark_committed(tl: Timeline) -> None:
    """Mark each entry committed or not against the committed bound; say which replayed offsets it leaves out."""
    end = tl.committed_end
    if end is None:
        return
    past = 0
    for es in tl.partitions.values():
        for e in es:
            e.committed = e.source == "snapshot" or e.offset < end
            past += not e.committed
    log_end = tl.log_end
    # without a voter set the bound is only the last snapshot's: the finding would be said of every log past it
    if log_end is not None and log_end > end and tl.quorum is not None and tl.quorum.voters:
        tl.log.add(finding("METADATA_UNCOMMITTED", f"metadata offsets {end}-{log_end - 1} are not shown committed (the "
                           f"bound, {end}, comes from the {tl.quorum.committed_by}); the {past} partition "
                           "entries from them are marked committed: false. Brokers apply only committed metadata",
                           committed_end=end, log_end=log_end, committed_by=tl.quorum.committed_by, entries=past))
