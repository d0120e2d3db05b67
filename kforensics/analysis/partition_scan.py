"""One partition directory as evidence: its facts and the checks that turn anomalies into findings.

Reads every segment with the streaming reader (shallow: headers and CRCs),
the indexes, the producer snapshots and the leader-epoch checkpoint, and
computes what Kafka's log loading would do at startup — without doing it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..findings import Finding, Severity
from ..formats import checkpoint, offset_index, partition_metadata, producer_snapshot, time_index, txn_index
from ..formats.record_batch import COMPRESSION_MASK, CONTROL_BIT, TRANSACTIONAL_BIT
from ..log.log_dir import PartitionDir, SegmentFiles
from ..log.segment_reader import SegmentReader
from ..log.sources import open_binary
from .epoch_cache import LeaderEpochCache, diff_caches, parse_kafka_version, rebuild_from_batches

MAX_SIDE_FILE = 64 << 20
SCAN_WINDOW = 4 << 20
SCAN_ROWS = 1 << 14


@dataclass
class FileRecord:
    """An input file that was read: for the report's chain of custody."""

    path: str
    kind: str
    size: int
    sha256: str | None


@dataclass
class SegmentFacts:
    base_offset: int
    path: str | None
    size: int = 0
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    kafka_valid_bytes: int = 0
    first_invalid_position: int | None = None  # first CRC-invalid batch or framing error
    has_index: bool = False
    has_time_index: bool = False
    has_txn_index: bool = False
    magics: list[int] = field(default_factory=list)
    codecs: list[int] = field(default_factory=list)


@dataclass
class PartitionScan:
    """Facts about one partition directory (the `partitions` row) plus its tables."""

    log_dir: str
    dir_name: str
    topic: str
    partition: int
    suffix: str | None = None
    topic_id: str | None = None
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    recovery_point: int | None = None
    cleaner_offset: int | None = None
    batch_count: int = 0
    record_count: int = 0
    bytes: int = 0
    epochs_seen: list[int] = field(default_factory=list)
    epoch_cache_written: list[tuple[int, int]] | None = None
    epoch_cache_rebuilt: list[tuple[int, int]] = field(default_factory=list)
    producer_ids: list[int] = field(default_factory=list)
    open_transactions: list[dict] = field(default_factory=list)
    segments: list[SegmentFacts] = field(default_factory=list)
    batch_tables: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (segment path, BatchTable data)
    recovery: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    files: list[FileRecord] = field(default_factory=list)
    code_counts: dict[str, int] = field(default_factory=dict)

    @property
    def uncommitted(self) -> int | None:
        if self.log_end_offset is None or self.high_watermark is None:
            return None
        return self.log_end_offset - self.high_watermark

    def to_dict(self) -> dict[str, Any]:
        return {
            "log_dir": self.log_dir,
            "dir_name": self.dir_name,
            "topic": self.topic,
            "partition": self.partition,
            "suffix": self.suffix,
            "topic_id": self.topic_id,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "recovery_point": self.recovery_point,
            "cleaner_offset": self.cleaner_offset,
            "uncommitted": self.uncommitted,
            "segment_count": len(self.segments),
            "batch_count": self.batch_count,
            "record_count": self.record_count,
            "bytes": self.bytes,
            "epochs_seen": self.epochs_seen,
            "epoch_cache_written": None if self.epoch_cache_written is None else [list(e) for e in self.epoch_cache_written],
            "epoch_cache_rebuilt": [list(e) for e in self.epoch_cache_rebuilt],
            "producer_ids": self.producer_ids,
            "open_transactions": self.open_transactions,
            "recovery": self.recovery,
            "segments": [s.__dict__ for s in self.segments],
        }


@dataclass
class PartitionContext:
    """What the log dir knows about a partition (from its root checkpoints)."""

    high_watermark: int | None = None
    recovery_point: int | None = None
    log_start_offset: int | None = None
    cleaner_offset: int | None = None
    clean_shutdown: bool = False
    hw_checkpoint_present: bool = False
    # the log dir has no meta.properties or root checkpoints (not a whole broker dir, e.g. a copy of
    # partition dirs): per-partition absences are then reported once at the log-dir level
    bare: bool = False


def _read_small(path: Path, scan: PartitionScan, kind: str) -> bytes | None:
    try:
        size = path.stat().st_size
        if size > MAX_SIDE_FILE:
            scan.findings.append(Finding("FILE_TOO_LARGE", Severity.MEDIUM, f"{size} bytes: implausible for a {kind}",
                                         file=str(path)))
            return None
        with open_binary(path) as fh:
            data = fh.read()
    except OSError as e:
        scan.findings.append(Finding("UNREADABLE_FILE", Severity.HIGH, f"cannot read: {e}", file=str(path)))
        return None
    scan.files.append(FileRecord(str(path), kind, len(data), hashlib.sha256(data).hexdigest()))
    return data


def _distinct(a: np.ndarray) -> list[int]:
    """Distinct values; cheap for the usual case of a single value per chunk."""
    if not len(a):
        return []
    lo, hi = a.min(), a.max()
    return [int(lo)] if lo == hi else np.unique(a).tolist()


MAX_PER_CODE = 100  # per partition; the rest are counted, not listed


def _add(scan: PartitionScan, code: str, sev: Severity, msg: str, file=None, position=None, line=None, **facts):
    n = scan.code_counts.get(code, 0) + 1
    scan.code_counts[code] = n
    if n > MAX_PER_CODE:
        return
    scan.findings.append(Finding(code, sev, msg, file=None if file is None else str(file), position=position,
                                 line=line, facts=facts))


def scan_partition(pd: PartitionDir, ctx: PartitionContext, *, kafka_version: str = "latest",
                   keep_batches: bool = False, progress=None) -> PartitionScan:
    """Scan one partition directory; never writes anything."""
    scan = PartitionScan(str(pd.path.parent), pd.path.name, pd.topic, pd.partition, pd.name.suffix)
    scan.high_watermark = ctx.high_watermark
    scan.recovery_point = ctx.recovery_point
    scan.cleaner_offset = ctx.cleaner_offset
    mode = parse_kafka_version(kafka_version)

    if pd.partition_metadata is not None:
        data = _read_small(pd.partition_metadata, scan, "partition_metadata")
        if data is not None:
            pm = partition_metadata.decode(data)
            scan.topic_id = pm.topic_id
            scan.findings += [f.at(str(pd.partition_metadata)) for f in pm.findings]

    for p, kind in pd.leftovers:
        _add(scan, "LEFTOVER_FILE", Severity.LOW,
             f"{kind.leftover} file left by an interrupted operation; Kafka {_leftover_fate(kind.leftover)} at startup",
             p, leftover=kind.leftover, kind=kind.kind)
    for p in pd.unknown:
        _add(scan, "UNKNOWN_FILE", Severity.LOW, "file Kafka does not write in a partition directory", p)

    # ---- segments: headers, CRCs, offsets
    epoch_batches: list[tuple[int, int, int]] = []
    last_epoch_key = -3
    prev_last: int | None = None
    pids: set[int] = set()
    txn_open: dict[int, int] = {}
    magics_all: set[int] = set()
    for seg in pd.sorted_segments():
        if seg.log is None:
            for p in (seg.offset_index, seg.time_index, seg.txn_index):
                if p is not None:
                    _add(scan, "INDEX_WITHOUT_LOG", Severity.LOW,
                         "index file whose segment .log is missing; Kafka deletes it at startup", p,
                         base_offset=seg.base_offset)
            continue
        facts = SegmentFacts(seg.base_offset, str(seg.log))
        scan.segments.append(facts)
        # larger chunks than the reader's default: the per-chunk checks below cost Python time per chunk
        reader = SegmentReader(seg.log, sha256=True, window=SCAN_WINDOW, rows=SCAN_ROWS)
        ix = _IndexCheck(scan, seg)
        try:
            for t in reader.tables():
                n = len(t)
                base = t["base_offset"]
                last = t["last_offset"]
                magic = t["magic"]
                attrs = t["attributes"]
                # offsets must increase batch after batch (and across segments); a legacy wrapper's
                # first offset is unknown without decompressing it, so only its last offset is checked
                starts = np.concatenate(([prev_last if prev_last is not None else -1], last[:-1]))
                known_base = np.where(base >= 0, base, np.where(starts >= 0, np.minimum(last, starts + 1), last))
                bad = np.nonzero((known_base <= starts) | (last <= starts))[0]
                for i in bad[: MAX_PER_CODE + 1]:
                    if prev_last is None and i == 0:
                        continue
                    _add(scan, "OFFSET_NOT_INCREASING", Severity.HIGH,
                         f"batch at offsets {int(known_base[i])}..{int(last[i])} does not follow offset {int(starts[i])}",
                         seg.log, int(t["position"][i]), previous_last_offset=int(starts[i]),
                         base_offset=int(known_base[i]))
                gaps = np.nonzero(known_base > starts + 1)[0]
                for i in gaps[: MAX_PER_CODE + 1]:
                    if starts[i] < 0:
                        continue
                    # Kafka assigns offsets contiguously; only compaction removes some. Without a
                    # cleaner checkpoint we cannot tell, so the gap is information, not an anomaly.
                    compacted = ctx.cleaner_offset is None or int(known_base[i]) <= ctx.cleaner_offset
                    _add(scan, "OFFSET_GAP", Severity.INFO if compacted else Severity.LOW,
                         f"offsets {int(starts[i]) + 1}..{int(known_base[i]) - 1} absent"
                         + (" (consistent with compaction)" if compacted else " (above the cleaner offset)"),
                         seg.log, int(t["position"][i]), gap_from=int(starts[i]) + 1, gap_to=int(known_base[i]) - 1,
                         compacted=compacted)
                if n:
                    prev_last = int(last[-1]) if prev_last is None else max(prev_last, int(last.max()))
                    if facts.first_offset is None:
                        facts.first_offset = int(known_base[0])
                    facts.last_offset = int(last.max()) if facts.last_offset is None else max(facts.last_offset, int(last.max()))
                facts.batches += n
                rc = t["records_count"]
                facts.records += int(np.where(rc >= 0, rc, 1).sum())
                v2 = magic == 2
                # only rows where the epoch (or legacy-ness) changes can change the cache: same-epoch
                # batches at later offsets are no-ops for assign, so keep the transitions alone
                ple = t["partition_leader_epoch"]
                key = np.where(magic < 2, -2, ple)
                prev_key = np.concatenate(([last_epoch_key], key[:-1]))
                keep = np.nonzero(key != prev_key)[0]
                epoch_batches += zip(ple[keep].tolist(), known_base[keep].tolist(), magic[keep].tolist())
                last_epoch_key = int(key[-1]) if n else last_epoch_key
                seen_magics = _distinct(magic)
                magics_all.update(seen_magics)
                facts.magics = sorted(set(facts.magics) | set(seen_magics))
                facts.codecs = sorted(set(facts.codecs) | set(_distinct(attrs & COMPRESSION_MASK)))
                pid = t["producer_id"]
                pids.update(_distinct(pid[v2 & (pid >= 0)]))
                # transactions: data batches open one, a control batch (marker) closes it
                tx = np.nonzero(v2 & ((attrs & TRANSACTIONAL_BIT) != 0))[0]
                for i in tx.tolist():
                    p_ = int(pid[i])
                    if attrs[i] & CONTROL_BIT:
                        txn_open.pop(p_, None)
                    else:
                        txn_open.setdefault(p_, int(known_base[i]))
                # codec ids 5-7 do not exist (zstd needs magic 2): Kafka cannot read such a batch
                codec = attrs & COMPRESSION_MASK
                weird = np.nonzero(t.crc_valid() & (codec > np.where(v2, 4, 3)))[0]
                for i in weird[: MAX_PER_CODE + 1]:
                    _add(scan, "INVALID_ATTRIBUTES", Severity.HIGH,
                         f"batch with a valid CRC declares unknown compression codec {int(codec[i])} for magic "
                         f"{int(magic[i])}", seg.log, int(t["position"][i]), attributes=int(attrs[i]))
                invalid = np.nonzero(~t.crc_valid())[0]
                if len(invalid) and facts.first_invalid_position is None:
                    facts.first_invalid_position = int(t["position"][invalid[0]])
                ix.feed(t["position"], last)
                if keep_batches:
                    scan.batch_tables.append((str(seg.log), t.data))
                if progress:
                    progress(int(t["size_in_bytes"].sum()))
        except OSError as e:
            _add(scan, "UNREADABLE_FILE", Severity.HIGH, f"cannot read: {e}", seg.log)
            continue
        s = reader.summary
        facts.size = s.size
        facts.kafka_valid_bytes = s.kafka_valid_bytes
        if s.kafka_stop is not None and (facts.first_invalid_position is None
                                         or s.kafka_valid_bytes < facts.first_invalid_position):
            facts.first_invalid_position = s.kafka_valid_bytes
        scan.files.append(FileRecord(str(seg.log), "log", s.size, s.sha256))
        scan.findings += s.findings
        scan.batch_count += facts.batches
        scan.record_count += facts.records
        scan.bytes += s.size
        if facts.first_offset is not None and facts.first_offset < seg.base_offset:
            _add(scan, "SEGMENT_BELOW_NAME", Severity.MEDIUM,
                 f"first batch starts at offset {facts.first_offset}, below the segment's name {seg.base_offset}",
                 seg.log, 0, first_offset=facts.first_offset, base_offset=seg.base_offset)
        ix.finish(facts, ctx.bare)

    # ---- log start / end
    bases = [s.first_offset for s in scan.segments if s.first_offset is not None]
    first_seg = min(pd.segments) if pd.segments else None
    scan.log_end_offset = (prev_last + 1) if prev_last is not None else (
        max(pd.segments) if pd.segments else (max(pd.producer_snapshots) if pd.producer_snapshots else None))
    lso_candidates = [x for x in (ctx.log_start_offset, first_seg) if x is not None]
    scan.log_start_offset = max(lso_candidates) if lso_candidates else (bases[0] if bases else None)
    if not any(s.path for s in scan.segments):
        _add(scan, "NO_SEGMENTS", Severity.INFO,
             "partition directory holds no segment (retention removed the log; producer state may remain)", pd.path,
             snapshots=sorted(pd.producer_snapshots))
    if magics_all & {0, 1}:
        _add(scan, "LEGACY_FORMAT", Severity.INFO,
             f"message format v{min(magics_all)} batches: no leader epochs, so Kafka falls back to high-watermark truncation",
             pd.path, magics=sorted(magics_all))

    # ---- checkpoints vs the log
    _check_watermarks(scan, pd, ctx)

    # ---- leader-epoch cache: as written vs rebuilt from the batches
    rebuilt, notes = rebuild_from_batches(epoch_batches, mode)
    scan.epoch_cache_rebuilt = list(rebuilt.entries)
    scan.epochs_seen = sorted({e for e, _, m in epoch_batches if m == 2 and e >= 0})  # transitions cover all epochs
    for note in notes:
        _add(scan, note.code, Severity.MEDIUM, note.message, pd.path, **note.facts)
    if pd.leader_epoch_checkpoint is not None:
        data = _read_small(pd.leader_epoch_checkpoint, scan, "leader_epoch_checkpoint")
        if data is not None:
            cp = checkpoint.decode(data, "leader_epoch_checkpoint")
            scan.findings += [f.at(str(pd.leader_epoch_checkpoint)) for f in cp.findings]
            scan.epoch_cache_written = cp.epochs()
            written = LeaderEpochCache(cp.epochs(), mode=mode)
            for d in diff_caches(written, rebuilt, scan.log_end_offset, log_start_offset=scan.log_start_offset):
                sev = {"EPOCH_EMPTY_AT_LEO": Severity.INFO, "EPOCH_CHECKPOINT_NOT_MONOTONIC": Severity.MEDIUM}.get(
                    d.code, Severity.LOW)
                _add(scan, d.code, sev, d.message, pd.leader_epoch_checkpoint, **d.facts)
    elif scan.epochs_seen and not pd.is_metadata_log:
        _add(scan, "NO_EPOCH_CHECKPOINT", Severity.INFO if ctx.bare else Severity.LOW,
             "v2 batches with leader epochs but no leader-epoch-checkpoint; Kafka starts with an empty cache",
             pd.path, epochs=scan.epochs_seen)

    # ---- producer state
    scan.producer_ids = sorted(pids)
    scan.open_transactions = [{"producer_id": p, "first_offset": o} for p, o in sorted(txn_open.items())]
    _check_snapshots(scan, pd)
    scan.recovery = _recovery_plan(scan, pd, ctx)
    for code, n in sorted(scan.code_counts.items()):
        if n > MAX_PER_CODE:
            scan.findings.append(Finding("MORE_FINDINGS", Severity.INFO,
                                         f"{n - MAX_PER_CODE} more {code} findings in this partition not listed",
                                         file=str(pd.path), facts={"code": code, "total": n}))
    return scan


def _leftover_fate(suffix: str | None) -> str:
    return {
        ".deleted": "deletes it",
        ".cleaned": "deletes it",
        ".swap": "renames it into place or deletes it",
        ".tmp": "ignores it (an interrupted checkpoint write)",
    }.get(suffix or "", "leaves it")


class _IndexCheck:
    """Checks a segment's .index/.timeindex/.txnindex against its batches as they stream past.

    The index is decoded first (at most ``segment.index.bytes``); each chunk of
    batch headers then confirms the entries whose positions/offsets it holds,
    so no per-batch list of the whole segment is ever kept.
    """

    def __init__(self, scan: PartitionScan, seg: SegmentFiles):
        self.scan, self.seg = scan, seg
        self.idx_off = self.idx_pos = self.tidx_off = None
        self.idx_matched = self.idx_same = self.tidx_found = None
        if seg.offset_index is not None:
            data = _read_small(seg.offset_index, scan, "offset_index")
            if data is not None:
                idx = offset_index.decode(data, seg.base_offset)
                scan.findings += [f.at(str(seg.offset_index)) for f in idx.findings]
                arr = np.array(idx.entries, dtype=np.int64).reshape(-1, 2)
                self.idx_off, self.idx_pos = arr[:, 0], arr[:, 1]
                self.idx_matched = np.zeros(len(arr), bool)
                self.idx_same = np.zeros(len(arr), bool)
        if seg.time_index is not None:
            data = _read_small(seg.time_index, scan, "time_index")
            if data is not None:
                tidx = time_index.decode(data, seg.base_offset)
                scan.findings += [f.at(str(seg.time_index)) for f in tidx.findings]
                self.tidx_off = np.array([o for _t, o in tidx.entries], dtype=np.int64)
                self.tidx_found = np.zeros(len(self.tidx_off), bool)
        if seg.txn_index is not None:
            data = _read_small(seg.txn_index, scan, "txn_index")
            if data is not None:
                tx = txn_index.decode(data, seg.base_offset)
                scan.findings += [f.at(str(seg.txn_index)) for f in tx.findings]

    def feed(self, positions: np.ndarray, lasts: np.ndarray) -> None:
        if not len(positions):
            return
        if self.idx_pos is not None and len(self.idx_pos):
            j = np.searchsorted(positions, self.idx_pos)
            j = np.clip(j, 0, len(positions) - 1)
            hit = positions[j] == self.idx_pos
            self.idx_matched |= hit
            self.idx_same |= hit & (lasts[j] == self.idx_off)
        if self.tidx_off is not None and len(self.tidx_off):
            order = np.argsort(lasts, kind="stable")
            sl = lasts[order]
            j = np.clip(np.searchsorted(sl, self.tidx_off), 0, len(sl) - 1)
            self.tidx_found |= sl[j] == self.tidx_off

    def finish(self, facts: SegmentFacts, bare: bool) -> None:
        scan, seg = self.scan, self.seg
        facts.has_index = seg.offset_index is not None
        facts.has_time_index = seg.time_index is not None
        facts.has_txn_index = seg.txn_index is not None
        if seg.offset_index is None and facts.batches:
            _add(scan, "INDEX_MISSING", Severity.INFO if bare else Severity.LOW,
                 "segment without .index: Kafka recovers (re-reads) it at startup", seg.log, base_offset=seg.base_offset)
        if self.idx_pos is not None and len(self.idx_pos):
            beyond = self.idx_off > facts.last_offset if facts.last_offset is not None else np.ones(len(self.idx_off), bool)
            wrong = np.nonzero(~self.idx_matched | beyond)[0]
            mismatch = np.nonzero(self.idx_matched & ~self.idx_same & ~beyond)[0]
            if len(wrong):
                i = int(wrong[0])
                o, p = int(self.idx_off[i]), int(self.idx_pos[i])
                _add(scan, "INDEX_POINTS_WRONG", Severity.MEDIUM,
                     f"{len(wrong)} index entries point to no batch start or past the log (first: offset {o} -> "
                     f"position {p}); Kafka's lookups go wrong until the index is rebuilt",
                     seg.offset_index, i * offset_index.ENTRY_SIZE, count=len(wrong), offset=o, log_position=p)
            if len(mismatch):
                i = int(mismatch[0])
                _add(scan, "INDEX_OFFSET_MISMATCH", Severity.INFO,
                     f"{len(mismatch)} index entries name an offset other than their batch's last offset (first: "
                     f"entry offset {int(self.idx_off[i])} at position {int(self.idx_pos[i])}); normal for follower "
                     "appends before KAFKA-806",
                     seg.offset_index, i * offset_index.ENTRY_SIZE, count=len(mismatch))
        if self.tidx_off is not None and len(self.tidx_off) and facts.batches:
            missing = np.nonzero(~self.tidx_found)[0]
            if len(missing):
                i = int(missing[0])
                _add(scan, "TIMEINDEX_POINTS_WRONG", Severity.LOW,
                     f"{len(missing)} time-index entries name offsets that are no batch's last offset "
                     f"(first: {int(self.tidx_off[i])})",
                     seg.time_index, i * time_index.ENTRY_SIZE, count=len(missing))


def _check_watermarks(scan: PartitionScan, pd: PartitionDir, ctx: PartitionContext) -> None:
    leo, lso, hw, rp = scan.log_end_offset, scan.log_start_offset, ctx.high_watermark, ctx.recovery_point
    if leo is None:
        return
    if hw is not None:
        if hw > leo:
            _add(scan, "HW_ABOVE_LEO", Severity.HIGH,
                 f"checkpointed high watermark {hw} is above the log end offset {leo}: committed records are missing "
                 "from this replica", pd.path, high_watermark=hw, log_end_offset=leo, missing=hw - leo)
        if lso is not None and hw < lso:
            _add(scan, "HW_BELOW_LOG_START", Severity.MEDIUM,
                 f"high watermark {hw} is below the log start offset {lso}; Kafka clamps it", pd.path,
                 high_watermark=hw, log_start_offset=lso)
    elif not pd.is_metadata_log and ctx.hw_checkpoint_present:
        _add(scan, "NO_HW_ENTRY", Severity.LOW,
             "no replication-offset-checkpoint entry for this partition (Kafka starts it at HW 0)", pd.path)
    if rp is not None and rp > leo:
        _add(scan, "RECOVERY_POINT_ABOVE_LEO", Severity.MEDIUM,
             f"recovery point {rp} is above the log end offset {leo}: flushed records are gone", pd.path,
             recovery_point=rp, log_end_offset=leo)


def _check_snapshots(scan: PartitionScan, pd: PartitionDir) -> None:
    leo = scan.log_end_offset
    for off, path in sorted(pd.producer_snapshots.items()):
        data = _read_small(path, scan, "producer_snapshot")
        if data is None:
            continue
        snap = producer_snapshot.decode(data)
        scan.findings += [f.at(str(path)) for f in snap.findings]
        if leo is not None and off > leo and any(s.path for s in scan.segments):
            _add(scan, "SNAPSHOT_BEYOND_LEO", Severity.MEDIUM,
                 f"producer snapshot taken at offset {off}, beyond the log end offset {leo}; Kafka deletes it",
                 path, snapshot_offset=off, log_end_offset=leo)
        beyond = [e for e in snap.entries if leo is not None and e["last_offset"] >= max(leo, off)]
        if beyond:
            _add(scan, "SNAPSHOT_ENTRY_BEYOND_LOG", Severity.MEDIUM,
                 f"{len(beyond)} producer entries name a last offset at or beyond the snapshot/log end",
                 path, producer_ids=[e["producer_id"] for e in beyond][:20])


def _recovery_plan(scan: PartitionScan, pd: PartitionDir, ctx: PartitionContext) -> dict[str, Any]:
    """What Kafka's LogLoader would do with this partition at the next startup (computed, never done)."""
    plan: dict[str, Any] = {"recovers": False, "truncate_at": None, "bytes_dropped": 0, "segments_deleted": [],
                            "rebuilds_indexes": []}
    if pd.name.suffix == "delete":
        plan["note"] = "-delete directory: loaded without recovery and deleted"
        return plan
    rp = ctx.recovery_point if ctx.recovery_point is not None else 0
    segs = [s for s in scan.segments if s.path]
    for s in segs:
        if not s.has_index and s.batches:
            plan["rebuilds_indexes"].append(s.path)
    if ctx.clean_shutdown:
        bad = [s for s in segs if s.first_invalid_position is not None]
        if bad:
            s = bad[0]
            _add(scan, "CORRUPTION_NOT_RECOVERED", Severity.HIGH,
                 "clean-shutdown marker present, so Kafka skips recovery and serves the damaged segment as is",
                 s.path, s.first_invalid_position)
        return plan
    # unclean: recover from the segment holding the recovery point
    start = 0
    for i, s in enumerate(segs):
        if s.base_offset <= rp:
            start = i
    for i, s in enumerate(segs[start:], start):
        plan["recovers"] = True
        if s.first_invalid_position is not None:
            dropped = s.size - s.first_invalid_position
            later = [x.path for x in segs[i + 1 :]]
            plan.update(truncate_at={"segment": s.path, "position": s.first_invalid_position},
                        bytes_dropped=dropped + sum(x.size for x in segs[i + 1 :]), segments_deleted=later)
            _add(scan, "RECOVERY_WOULD_TRUNCATE", Severity.HIGH,
                 f"unclean shutdown: Kafka's recovery truncates this segment at byte {s.first_invalid_position} "
                 f"(dropping {dropped} bytes) and deletes {len(later)} later segment(s)",
                 s.path, s.first_invalid_position, bytes_dropped=plan["bytes_dropped"], segments_deleted=later)
            break
    return plan
