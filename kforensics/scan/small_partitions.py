"""Fleets of small partitions: many partition dirs of one small segment each, scanned together.

A partition dir whose listing is plain (one segment of at most
:data:`~kforensics.log.small_segments.SMALL_SEGMENT` bytes, nothing Kafka does not keep, no leftover, not an internal
topic nor the metadata log) is read with the other plain ones of its log dir and walked in one kernel pass
(:func:`~kforensics.log.small_segments.walk_small_segments`).  The per-chunk checks of
:func:`~kforensics.scan.partition.scan_partition` then run once over the combined rows with a partition column, and a
partition whose rows pass every one of them (framed, v2 only, offsets contiguous and not below the segment's name,
known codecs, no transactional or control batch) becomes its :class:`PartitionScan` from the aggregates: those
checks would have found nothing in it.  What follows the walk (log bounds, watermarks, the leader-epoch cache, the
producer snapshots, the recovery plan) is the per-partition path's own code.  Every other partition dir is scanned by
:func:`~kforensics.scan.partition.scan_partition`, which reports what is wrong with it; the results are the same
either way, finding for finding and row for row (``tests/scan/test_small_partitions.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..checks.index import IndexCheck, missing_index
from ..epoch.versions import LATEST, KafkaVersion
from ..findings import FindingLog
from ..formats.record_batch import COMPRESSION_MASK, CONTROL_BIT, MAGIC, TRANSACTIONAL_BIT
from ..log.batch_table import COL, BatchTable
from ..log.partition import PartitionLog
from ..log.segment import LogSegment
from ..log.side_files import FileRecord, read_side_files
from ..log.small_segments import SMALL_ROUND, SMALL_SEGMENT, walk_small_segments
from .model import PartitionContext, PartitionScan, SegmentFacts
from .partition import SideFiles, _conclude, _open_scan, _side, _Walk

#: the largest codec id of magic 2 (zstd); a larger one is an INVALID_ATTRIBUTES finding
_MAX_CODEC = 4


@dataclass
class WalkedPartition:
    """A partition dir scanned with others: its scan, and its batch rows for the scan's sink."""

    scan: PartitionScan
    segment: LogSegment
    table: BatchTable


def plain_segment(pd: PartitionLog) -> LogSegment | None:
    """The one segment of a partition dir whose listing holds nothing but Kafka's files of one segment and its
    side files (None: the dir is scanned on its own).  Lists the dir if it was not yet."""
    if pd.name.suffix is not None or pd.is_metadata_log or pd.topic.startswith("__"):
        return None
    if not isinstance(pd.path, Path) or pd.unlisted is not None or len(pd.segments) != 1:
        return None
    if pd.leftovers or pd.unknown or pd.not_regular or pd.out_of_range or pd.kraft_snapshots:
        return None
    if pd.quorum_state is not None or pd.orphan_indexes.count:
        return None
    seg = next(iter(pd.segments.values()))
    if seg.log is None or seg.leftovers:
        return None
    return seg


def scan_small_partitions(items: Sequence[tuple[PartitionLog, PartitionContext, LogSegment]], *,
                          kafka_version: KafkaVersion = LATEST) -> list[WalkedPartition | None]:
    """Scan plain partition dirs together (see the module); None for each one that needs the per-partition path."""
    walked = walk_small_segments([seg.log for _, _, seg in items], SMALL_SEGMENT)
    rows = walked.rows
    n = len(items)
    clean = walked.framed & _clean(rows, walked.first, walked.count, np.array([s.base_offset for _, _, s in items]))
    out: list[WalkedPartition | None] = [None] * n
    if not clean.any():
        return out
    agg: dict[str, list[Any]] = {**_aggregates(rows, walked.first, walked.count)}
    chosen = np.flatnonzero(clean).tolist()
    agg.update(_lists(rows, walked.first, walked.count, chosen))
    sides = _side_files([items[i][0] for i in chosen])
    for i, side in zip(chosen, sides):
        pd, ctx, seg = items[i]
        lo, k = int(walked.first[i]), int(walked.count[i])
        table = BatchTable(rows[lo:lo + k])
        scan = _scan_walked(pd, ctx, seg, table, {name: col[i] for name, col in agg.items()}, walked.size[i],
                            walked.sha256[i], kafka_version, side)
        out[i] = WalkedPartition(scan, seg, table)
    return out


def scan_plain(dirs: Sequence[tuple[PartitionLog, PartitionContext]], *, kafka_version: KafkaVersion = LATEST
               ) -> list[WalkedPartition | None]:
    """Each dir's scan when it is plain (:func:`plain_segment`) and its segment walked cleanly with the others'
    (:func:`scan_small_partitions`); None for each one the per-partition scan must read.  The one batching rule of
    ``scan`` and the Spark scan tasks."""
    out: list[WalkedPartition | None] = [None] * len(dirs)
    plain = [(i, seg) for i, (pd, _) in enumerate(dirs) if (seg := plain_segment(pd)) is not None]
    for lo in range(0, len(plain), SMALL_ROUND):
        part = plain[lo:lo + SMALL_ROUND]
        got = scan_small_partitions([(dirs[i][0], dirs[i][1], seg) for i, seg in part], kafka_version=kafka_version)
        for (i, _), w in zip(part, got):
            out[i] = w
    return out


def _side_files(pds: list[PartitionLog]) -> list[SideFiles]:
    """Each partition dir's ``partition.metadata`` and leader-epoch checkpoint, read kind by kind in one loop."""
    out: list[SideFiles] = [{} for _ in pds]
    for kind in ("partition_metadata", "leader_epoch_checkpoint"):
        have = [(i, getattr(pd, kind)) for i, pd in enumerate(pds) if getattr(pd, kind) is not None]
        for (i, _), sf in zip(have, read_side_files([p for _, p in have], kind)):
            out[i][kind] = sf
    return out


def _clean(rows: np.ndarray, first: np.ndarray, count: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Per segment: every row passes the checks of the per-partition walk without a finding (v2, offsets in
    range and contiguous, the first not below the segment's name, a known codec, no transactional or control
    batch)."""
    n = len(first)
    if not len(rows):
        return np.zeros(n, dtype=bool)
    owner = np.repeat(np.arange(n), count)
    base, last = rows[:, COL["base_offset"]], rows[:, COL["last_offset"]]
    attrs = rows[:, COL["attributes"]]
    first_row = np.zeros(len(rows), dtype=bool)
    first_row[first[count > 0]] = True
    prev_last = np.concatenate(([-1], last[:-1]))
    bad = ((rows[:, COL["magic"]] != MAGIC) | (base < 0) | (last < base)
           | ((attrs & COMPRESSION_MASK) > _MAX_CODEC) | ((attrs & (TRANSACTIONAL_BIT | CONTROL_BIT)) != 0)
           | (~first_row & (base != prev_last + 1)) | (first_row & (base < names[owner])))
    clean: np.ndarray = np.bincount(owner[bad], minlength=n)[:n] == 0
    return clean


def _aggregates(rows: np.ndarray, first: np.ndarray, count: np.ndarray) -> dict[str, list[int]]:
    """Per segment (0 where it has no rows): what the per-partition walk's chunk computes of its rows."""
    n = len(first)
    has = count > 0
    at = first[has]
    rc = rows[:, COL["records_count"]]
    counts = np.where(rc >= 0, rc, 1)
    last = rows[:, COL["last_offset"]]
    out: dict[str, list[int]] = {}
    for name, col, fn in (("records", counts, np.add), ("top", last, np.maximum),
                          ("max_ts", rows[:, COL["max_timestamp"]], np.maximum)):
        v = np.zeros(n, dtype=np.int64)
        if len(at):
            v[has] = fn.reduceat(col, at)
        out[name] = v.tolist()
    base = np.zeros(n, dtype=np.int64)
    base[has] = rows[at, COL["base_offset"]]
    out["base"] = base.tolist()
    return out


#: the sorted bits of every codec mask (``1 << codec`` or-ed over a segment's rows; codecs are three bits)
_CODECS = [[c for c in range(8) if m >> c & 1] for m in range(256)]


def _lists(rows: np.ndarray, first: np.ndarray, count: np.ndarray, chosen: list[int]) -> dict[str, list[Any]]:
    """Per segment (only those ``chosen`` filled): its distinct codecs, its producer ids (>= 0) and its epoch
    transitions (``(epoch, base offset, magic)`` where the epoch changes, the first row included), as the
    per-partition walk finds them, computed for the round's rows at once."""
    n = len(first)
    out: dict[str, list[Any]] = {"codecs": [[]] * n, "pids": [[]] * n, "epoch_rows": [[]] * n}
    has = count > 0
    at = first[has]
    if not len(at):
        return out
    attrs = rows[:, COL["attributes"]]
    masks = np.zeros(n, dtype=np.int64)
    masks[has] = np.bitwise_or.reduceat(np.left_shift(1, attrs & COMPRESSION_MASK), at)
    pid = rows[:, COL["producer_id"]]
    top = np.full(n, -1, dtype=np.int64)
    top[has] = np.maximum.reduceat(pid, at)
    ple, base = rows[:, COL["partition_leader_epoch"]], rows[:, COL["base_offset"]]
    change = np.ones(len(rows), dtype=bool)
    change[1:] = ple[1:] != ple[:-1]
    change[at] = True
    where = np.flatnonzero(change)
    bounds = np.searchsorted(where, np.concatenate((first, [len(rows)]))).tolist()
    epochs, bases = ple[where].tolist(), base[where].tolist()
    mask_list, top_list, lo_list, n_list = masks.tolist(), top.tolist(), first.tolist(), count.tolist()
    for i in chosen:
        out["codecs"][i] = _CODECS[mask_list[i]]
        lo, k = lo_list[i], n_list[i]
        out["pids"][i] = [] if top_list[i] < 0 else _distinct(pid[lo:lo + k][pid[lo:lo + k] >= 0])
        out["epoch_rows"][i] = [(e, b, MAGIC) for e, b in zip(epochs[bounds[i]:bounds[i + 1]],
                                                               bases[bounds[i]:bounds[i + 1]])]
    return out


def _distinct(a: np.ndarray) -> list[int]:
    if not len(a):
        return []
    lo, hi = a.min(), a.max()
    return [int(lo)] if lo == hi else np.unique(a).tolist()


def _scan_walked(pd: PartitionLog, ctx: PartitionContext, seg: LogSegment, t: BatchTable, a: dict[str, Any], size: int,
                 sha256: str | None, kafka_version: KafkaVersion, side: SideFiles) -> PartitionScan:
    """:func:`~kforensics.scan.partition.scan_partition` of a plain partition dir whose one segment was walked with
    others and passed every per-chunk check: the segment's facts from the aggregates, the rest as that path does."""
    scan, log = _open_scan(pd, ctx, side)
    walk = _Walk(scan, log, ctx)
    file = str(seg.log)
    facts = SegmentFacts(seg.base_offset, file, has_index=seg.offset_index is not None,
                         has_time_index=seg.time_index is not None, has_txn_index=seg.txn_index is not None)
    scan.segments.append(facts)
    ix = _indexes(scan, log, seg, facts, walk)
    n = len(t)
    facts.first_offset, facts.last_offset = a["base"], a["top"]
    facts.batches, facts.records = n, a["records"]
    facts.valid_end_offset, facts.valid_records = a["top"] + 1, a["records"]
    facts.magics = [MAGIC]
    facts.codecs = list(a["codecs"])
    walk.magics.add(MAGIC)
    walk.epoch_rows = a["epoch_rows"]
    walk.pids.update(a["pids"])
    # what the transaction tracker's feed keeps of batches that are neither transactional nor control
    o = walk.txn.out
    o.log_start_offset, o.log_end_offset, o.max_timestamp = a["base"], a["top"] + 1, a["max_ts"]
    if ix is not None:
        ix.feed(t)
    facts.size = facts.kafka_valid_bytes = size
    scan.files.append(FileRecord(file, "log", size, sha256))
    scan.batch_count += n
    scan.record_count += facts.records
    scan.bytes += size
    if ix is not None:
        log.extend(ix.finish())
    log.extend(missing_index(file, seg.base_offset, n, ctx.bare) if seg.offset_index is None else [])
    return _conclude(scan, pd, ctx, walk, log, kafka_version, None, side)


def _indexes(scan: PartitionScan, log: FindingLog, seg: LogSegment, facts: SegmentFacts, walk: _Walk
             ) -> IndexCheck | None:
    """The segment's index files read as the per-partition path reads them (None: it has none)."""
    if seg.offset_index is None and seg.time_index is None and seg.txn_index is None:
        walk.txn.begin_segment(str(seg.log), None, compare=True)
        return None
    index = _side(scan, log, seg.read_offset_index())
    if index is not None and len(index.positions):
        facts.index_last_position = int(index.positions[-1])
    timeindex = _side(scan, log, seg.read_time_index())
    txn_index = _side(scan, log, seg.read_txn_index())
    walk.txn.begin_segment(str(seg.log), txn_index, compare=seg.txn_index is None or txn_index is not None)
    return IndexCheck(index, timeindex, str(seg.offset_index), str(seg.time_index))
