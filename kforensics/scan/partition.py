"""One partition directory as evidence: its facts, and the checks that turn anomalies into findings.

Reads every segment with the streaming reader (shallow: headers and CRCs),
its indexes, the producer snapshots and the leader-epoch checkpoint through
the log layer, and computes what Kafka's log loading would do at startup,
without doing it.  Batch headers are handed to an optional sink chunk by
chunk (the Parquet writer, the replay's replica) and never kept here.

The same pass feeds the transaction tracker
(:class:`~kforensics.transactions.producer_state.TransactionTracker`): open
and hanging transactions, markers, the last stable offset, aborted ranges
against each segment's ``.txnindex``; where the transaction coordinator's
log (``__transaction_state``) is known, open transactions and last markers
are checked against it (:func:`transaction_coordinator`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ..checks.files import check_listing
from ..checks.index import IndexCheck, missing_index
from ..checks.offsets import OffsetCheck, check_attributes
from ..checks.producer_state import check_snapshot
from ..checks.watermarks import check_recovery, check_watermarks
from ..epoch.cache import LeaderEpochCache
from ..epoch.diff import diff_caches
from ..epoch.rebuild import epoch_transitions, rebuild_from_batches
from ..epoch.versions import LATEST, KafkaVersion
from ..findings import Finding, FindingLog, Severity, finding
from ..formats.record_batch import COMPRESSION_MASK, MAGIC
from ..log.batch_table import FLAG_RECOVERED, BatchTable
from ..log.file_kinds import classify_name
from ..log.partition import ORPHANS_KEPT, PartitionLog
from ..log.segment import LogSegment
from ..log.segment_reader import ReadSummary
from ..log.side_files import FileRecord, SideFile
from ..log.sources import NotRegularFile
from ..recovery.plan import SegmentExtent, plan_recovery
from ..transactions.producer_state import TransactionTracker
from .model import PartitionContext, PartitionScan, SegmentFacts

if TYPE_CHECKING:
    from ..transactions.coordinator import CoordinatorView

SCAN_WINDOW = 4 << 20
SCAN_ROWS = 1 << 14

#: a partition dir's side files read before its scan, by kind (a kind absent: the dir has no such file)
SideFiles = dict[str, SideFile]

#: ``sink(partition, segment, table)``: receives every chunk of batch headers, in file order
BatchSink = Callable[[PartitionLog, LogSegment, BatchTable], None]

#: the transaction coordinator's view scans check against when not given one: a ``CoordinatorView``, or a callable
#: giving one (or None), called only when a partition has transactions (see :func:`transaction_coordinator`)
COORDINATOR: contextvars.ContextVar[Any] = contextvars.ContextVar("kforensics_transaction_coordinator",
                                                                   default=None)


class CoordinatorSource:
    """The coordinator's view of ``__transaction_state`` in some brokers' log dirs, read on first use, once
    (``log_dirs``: broker id -> log dirs, as :func:`~kforensics.transactions.coordinator.coordinator_view` takes).

    ``view`` is None until read, and stays None when no ``__transaction_state`` partition is there."""

    def __init__(self, log_dirs: dict[int | None, list[Any]]):
        self.log_dirs = log_dirs
        self.read = False
        self.view: CoordinatorView | None = None

    def __call__(self) -> CoordinatorView | None:
        if not self.read:
            from ..transactions.coordinator import coordinator_view

            self.read = True
            self.view = coordinator_view(self.log_dirs)
        return self.view


@contextlib.contextmanager
def transaction_coordinator(source: Any) -> Iterator[Any]:
    """Scans inside the block check their partitions' transactions against ``source`` (a ``CoordinatorView``, a
    :class:`CoordinatorSource` or any callable giving one), unless :func:`scan_partition` is given one."""
    token = COORDINATOR.set(source)
    try:
        yield source
    finally:
        COORDINATOR.reset(token)


def _distinct(a: np.ndarray) -> list[int]:
    """Distinct values; cheap for the usual case of a single value per chunk."""
    if not len(a):
        return []
    lo, hi = a.min(), a.max()
    return [int(lo)] if lo == hi else np.unique(a).tolist()


class _Walk:
    """The per-partition state carried across segments and chunks."""

    def __init__(self, scan: PartitionScan, log: FindingLog, ctx: PartitionContext):
        self.scan, self.log, self.ctx = scan, log, ctx
        self.offsets = OffsetCheck(log.add, ctx.cleaner_offset)
        self.epoch_rows: list[tuple[int, int, int]] = []
        self.epoch_key = -3
        self.pids: set[int] = set()
        self.txn = TransactionTracker(scan.topic, scan.partition, high_watermark=ctx.high_watermark)
        self.magics: set[int] = set()

    def chunk(self, t: BatchTable, facts: SegmentFacts, file: str) -> None:
        n = len(t)
        known_base = self.offsets.feed(t, file)
        check_attributes(t, file, self.log.add)
        last, magic, attrs = t["last_offset"], t["magic"], t["attributes"]
        if n:
            if facts.first_offset is None:
                facts.first_offset = int(known_base[0])
            top = int(last.max())
            facts.last_offset = top if facts.last_offset is None else max(facts.last_offset, top)
        rc = t["records_count"]
        counts = np.where(rc >= 0, rc, 1)
        facts.batches += n
        facts.records += int(counts.sum())
        self._cut(t, facts, known_base, counts)
        ple = t["partition_leader_epoch"]
        rows, self.epoch_key = epoch_transitions(ple, known_base, magic, self.epoch_key)
        self.epoch_rows += rows
        seen = _distinct(magic)
        self.magics.update(seen)
        facts.magics = sorted(set(facts.magics) | set(seen))
        facts.codecs = sorted(set(facts.codecs) | set(_distinct(attrs & COMPRESSION_MASK)))
        v2 = magic == MAGIC
        pid = t["producer_id"]
        self.pids.update(_distinct(pid[v2 & (pid >= 0)]))

    def _cut(self, t: BatchTable, facts: SegmentFacts, known_base: np.ndarray, counts: np.ndarray) -> None:
        """Track where recovery would cut this segment: at its first CRC-invalid or resynchronised entry."""
        bad = ~t.crc_valid() | ((t["flags"] & FLAG_RECOVERED) != 0)
        if facts.first_invalid_position is None:
            hits = np.flatnonzero(bad)
            k = int(hits[0]) if len(hits) else len(t)
            if k:
                end = int(t["last_offset"][:k].max()) + 1
                facts.valid_end_offset = end if facts.valid_end_offset is None else max(facts.valid_end_offset, end)
                facts.valid_records += int(counts[:k].sum())
            if len(hits):
                facts.first_invalid_position = int(t["position"][k])
            after = slice(k, None)
        else:
            after = slice(0, None)
        hw = self.ctx.high_watermark
        if hw is not None:
            below = known_base[after] < hw
            facts.cut_records_below_hw += int(counts[after][below].sum())


def scan_partition(pd: PartitionLog, ctx: PartitionContext, *, kafka_version: KafkaVersion = LATEST,
                   batch_sink: BatchSink | None = None, progress: Callable[[int], None] | None = None,
                   coordinator: Any = None) -> PartitionScan:
    """Scan one partition directory; never writes anything.

    ``coordinator``: the transaction coordinator's view to check the partition's transactions against (a
    ``CoordinatorView`` or a callable giving one, called only when the partition has transactions); None: the
    one :func:`transaction_coordinator` set, if any.
    """
    scan, log = _open_scan(pd, ctx)
    walk = _Walk(scan, log, ctx)
    if pd.unlisted is not None:
        scan.complete = False
    _walk_segments(scan, pd, walk, ctx, log, batch_sink, progress)
    return _conclude(scan, pd, ctx, walk, log, kafka_version, coordinator)


def _open_scan(pd: PartitionLog, ctx: PartitionContext, side: SideFiles | None = None
               ) -> tuple[PartitionScan, FindingLog]:
    """A partition's scan before its segments are read: its row, and the findings of its files but the segments'.
    ``side``: its ``partition.metadata`` and leader-epoch checkpoint as read already (None: read them here)."""
    scan = PartitionScan(str(pd.path.parent), pd.dir_name, pd.topic, pd.partition, pd.name.suffix,
                         high_watermark=ctx.high_watermark, recovery_point=ctx.recovery_point,
                         cleaner_offset=ctx.cleaner_offset)
    log = FindingLog()
    _partition_files(scan, pd, log, side)
    return scan, log


def _conclude(scan: PartitionScan, pd: PartitionLog, ctx: PartitionContext, walk: _Walk, log: FindingLog,
              mode: KafkaVersion, coordinator: Any, side: SideFiles | None = None) -> PartitionScan:
    """What follows the walk of a partition's segments: log bounds, watermarks, epoch cache, producer state, and
    what loading does at the next start."""
    path = str(pd.path)
    _log_bounds(scan, pd, ctx, walk, log)
    log.extend(check_watermarks(path=path, log_start=scan.log_start_offset, log_end=scan.log_end_offset,
                                high_watermark=ctx.high_watermark, recovery_point=ctx.recovery_point,
                                complete=scan.complete, hw_checkpoint_present=ctx.hw_checkpoint_present,
                                is_metadata_log=pd.is_metadata_log))
    cp = _epoch_cache(scan, pd, ctx, walk, log, mode, side)
    _producer_state(scan, pd, walk, log, coordinator)

    # ---- what loading does at the next start
    scan.recovery = plan_recovery(list[SegmentExtent](scan.segments), clean_shutdown=ctx.clean_shutdown,
                                  recovery_point=ctx.recovery_point, log_end_offset=scan.log_end_offset,
                                  deleting=pd.name.suffix == "delete",
                                  epoch_checkpoint_unreadable=_kafka_refuses(cp) and not pd.is_metadata_log)
    log.extend(check_recovery(scan.recovery, high_watermark=ctx.high_watermark,
                              epoch_checkpoint=str(cp.path) if cp is not None else None,
                              log_start_offset=scan.log_start_offset, segments=scan.segments))
    scan.recovery.unknown = _unread(scan, pd)
    scan.findings = log.findings()
    return scan


def _unread(scan: PartitionScan, pd: PartitionLog) -> str | None:
    """Why what the next start does is unknown: evidence that was there but could not be read (None: all read)."""
    if pd.unlisted is not None:
        return f"the partition directory could not be listed ({pd.unlisted})"
    unread = [s.path.rsplit("/", 1)[-1] for s in scan.segments if s.path and not s.readable]
    if unread:
        return f"{len(unread)} segment(s) could not be read ({', '.join(unread[:3])}{', …' if len(unread) > 3 else ''})"
    if not scan.complete:
        return "a segment .log could not be opened"
    return None


def _kafka_refuses(cp: Any) -> bool:
    """Whether Kafka cannot load this leader-epoch checkpoint.  Only a file that was read can say so: one left
    unread (over kforensics' cap, or unreadable here) says nothing of what Kafka does with it."""
    return cp is not None and cp.record is not None and (cp.value is None or cp.value.kafka_refuses)


def _partition_files(scan: PartitionScan, pd: PartitionLog, log: FindingLog, side: SideFiles | None) -> None:
    """The partition's ``partition.metadata``, its listing (leftovers, unknown and irregular files), KRaft files."""
    pm = pd.read_partition_metadata() if side is None else side.get("partition_metadata")
    if pm is not None:
        log.extend(pm.findings)
        scan.files += [pm.record] if pm.record else []
        if pm.value is not None:
            scan.topic_id = pm.value.topic_id
    log.extend(check_listing(leftovers=pd.leftovers, unknown=pd.unknown, not_regular=pd.not_regular,
                             where="partition directory", out_of_range=pd.out_of_range))
    _kraft_files(scan, pd, log)


def _walk_segments(scan: PartitionScan, pd: PartitionLog, walk: _Walk, ctx: PartitionContext, log: FindingLog,
                   batch_sink: BatchSink | None, progress: Callable[[int], None] | None) -> None:
    """Every segment in offset order; indexes whose ``.log`` is missing are findings."""
    # a segment .log that is there but cannot be opened (a FIFO, a dangling link, a directory): the log's end is
    # then unknown, and its indexes are not "without a log"
    unopened = {k.base_offset for k in (classify_name(getattr(p, "name", None) or str(p).rsplit("/", 1)[-1])
                                        for p in [*pd.unknown, *(p for p, _ in pd.not_regular)])
                if k.kind == "log" and k.base_offset is not None and not k.leftover}
    if unopened:
        scan.complete = False
    orphans = _orphan_findings(pd)
    for seg in pd.sorted_segments():
        while orphans and orphans[0][0] < seg.base_offset:
            log.add(orphans.pop(0)[1])
        if seg.log is None:
            if seg.base_offset in unopened:
                continue
            for p in (seg.offset_index, seg.time_index, seg.txn_index):
                if p is not None:
                    log.add(_index_without_log(p, seg.base_offset))
            continue
        _scan_segment(scan, pd, seg, walk, ctx, batch_sink, progress)
    log.extend(f for _, f in orphans)


def _index_without_log(file: Any, base_offset: int) -> Finding:
    return finding("INDEX_WITHOUT_LOG", "index file whose segment .log is missing; Kafka deletes it at startup",
                   file=file, base_offset=base_offset)


def _orphan_findings(pd: PartitionLog) -> list[tuple[int, Finding]]:
    """The INDEX_WITHOUT_LOG findings of the partition's orphan indexes, by base offset: one a file up to
    :data:`~kforensics.log.partition.ORPHANS_KEPT` of them, else one that counts them all with the first as example
    (a directory of 400 000 orphans is one fact, not 400 000 lines)."""
    o = pd.orphan_indexes
    if o.count <= ORPHANS_KEPT:
        return [(k.base_offset or 0, _index_without_log(p, k.base_offset or 0)) for p, k in o.kept]
    p, k = o.kept[0]
    return [(k.base_offset or 0, finding(
        "INDEX_WITHOUT_LOG", f"{o.count} index files whose segment .log is missing (base offsets {o.lowest} to "
        f"{o.highest}; this one the first by name); Kafka deletes them at startup", file=p,
        base_offset=k.base_offset, count=o.count, lowest_base_offset=o.lowest, highest_base_offset=o.highest))]


def _log_bounds(scan: PartitionScan, pd: PartitionLog, ctx: PartitionContext, walk: _Walk, log: FindingLog) -> None:
    """The log's start and end offsets, and what the walk says of the log as a whole (no segment, legacy format)."""
    path = str(pd.path)
    named = pd.named_offsets()  # orphan indexes' offsets included, as when each was a segment of its own
    first_seg = named[0] if named else None
    ends = [s.last_offset for s in scan.segments if s.last_offset is not None]
    if ends:
        scan.log_end_offset = max(ends) + 1
    elif first_seg is not None:
        scan.log_end_offset = named[-1]
    elif pd.producer_snapshots:
        scan.log_end_offset = max(pd.producer_snapshots)
    starts = [x for x in (ctx.log_start_offset, first_seg) if x is not None]
    firsts = [s.first_offset for s in scan.segments if s.first_offset is not None]
    scan.log_start_offset = max(starts) if starts else (firsts[0] if firsts else None)
    # a dir that could not be listed holds unknown files, not no segment: its UNREADABLE_DIR finding says so
    if not any(s.path for s in scan.segments) and pd.unlisted is None:
        log.add(finding("NO_SEGMENTS", "partition directory holds no segment (retention removed the log; producer "
                                       "state may remain)", file=path, snapshots=sorted(pd.producer_snapshots)))
    if walk.magics & {0, 1}:
        log.add(finding("LEGACY_FORMAT", f"message format v{min(walk.magics)} batches: no leader epochs, so Kafka "
                                         "falls back to high-watermark truncation", file=path,
                        magics=sorted(walk.magics)))


def _epoch_cache(scan: PartitionScan, pd: PartitionLog, ctx: PartitionContext, walk: _Walk, log: FindingLog,
                 mode: KafkaVersion, side: SideFiles | None = None) -> Any:
    """The leader-epoch cache as written against the one rebuilt from the batches.  Returns the checkpoint read
    (a side-file read, or None when there is no checkpoint)."""
    path = str(pd.path)
    rebuilt, notes = _rebuilt(walk.epoch_rows, mode)
    scan.epoch_cache_rebuilt = rebuilt.entries
    scan.epochs_seen = sorted({e for e, _, m in walk.epoch_rows if m == MAGIC and e >= 0})
    log.extend(f.at(path) for f in notes)
    cp = pd.read_leader_epoch_checkpoint() if side is None else side.get("leader_epoch_checkpoint")
    if cp is not None:
        log.extend(cp.findings)
        scan.files += [cp.record] if cp.record else []
        if cp.value is not None:
            scan.epoch_cache_written = cp.value.epochs()
            # batches that could not be read carry epochs we never saw: a comparison would blame the checkpoint
            if scan.complete:
                log.extend(f.at(cp.path) for f in _differences(scan.epoch_cache_written, rebuilt,
                                                               scan.log_end_offset, scan.log_start_offset, mode))
    elif scan.epochs_seen and not pd.is_metadata_log:
        log.add(finding("NO_EPOCH_CHECKPOINT", "v2 batches with leader epochs but no leader-epoch-checkpoint; Kafka "
                                               "starts with an empty cache",
                        severity=Severity.INFO if ctx.bare else None, file=path, epochs=scan.epochs_seen))
    return cp


#: epoch histories up to this long are worked out once per process (a fleet's small partitions repeat a few)
_MEMO_ROWS = 16


@functools.lru_cache(maxsize=1 << 12)
def _rebuilt_memo(rows: tuple[tuple[int, int, int], ...], mode: KafkaVersion
                  ) -> tuple[LeaderEpochCache, tuple[Finding, ...]]:
    rebuilt, notes = rebuild_from_batches(rows, mode)
    return rebuilt, tuple(notes)


def _rebuilt(rows: list[tuple[int, int, int]], mode: KafkaVersion) -> tuple[LeaderEpochCache, list[Finding]]:
    """:func:`~kforensics.epoch.rebuild.rebuild_from_batches` of these rows: a pure function, so a short history
    seen before is answered from memory (a copy of the cache: the caller may change it)."""
    if len(rows) > _MEMO_ROWS:
        return rebuild_from_batches(rows, mode)
    rebuilt, notes = _rebuilt_memo(tuple(rows), mode)
    return rebuilt.copy(), list(notes)


@functools.lru_cache(maxsize=1 << 12)
def _differences_memo(written: tuple[tuple[int, int], ...], rebuilt: tuple[tuple[int, int], ...],
                      log_end: int | None, log_start: int | None, mode: KafkaVersion) -> tuple[Finding, ...]:
    return tuple(diff_caches(LeaderEpochCache(written, mode=mode), LeaderEpochCache(rebuilt, mode=mode), log_end,
                             log_start_offset=log_start))


def _differences(written: list[tuple[int, int]], rebuilt: LeaderEpochCache, log_end: int | None,
                 log_start: int | None, mode: KafkaVersion) -> tuple[Finding, ...] | list[Finding]:
    """:func:`~kforensics.epoch.diff.diff_caches` of the checkpoint as written (read with ``mode``'s rules) and the
    rebuilt cache: pure, so short caches seen before are answered from memory."""
    if len(written) > _MEMO_ROWS or len(rebuilt) > _MEMO_ROWS:
        return diff_caches(LeaderEpochCache(written, mode=mode), rebuilt, log_end, log_start_offset=log_start)
    return _differences_memo(tuple(written), tuple(rebuilt.entries), log_end, log_start, mode)


def _producer_state(scan: PartitionScan, pd: PartitionLog, walk: _Walk, log: FindingLog, coordinator: Any) -> None:
    """The producers and transactions the walk saw (checked against the coordinator), and the snapshots."""
    scan.producer_ids = sorted(walk.pids)
    scan.transactions = walk.txn.finish(coordinator=_coordinator(walk.txn, coordinator))
    log.extend(scan.transactions.findings)
    scan.open_transactions = scan.transactions.open
    for off in sorted(pd.producer_snapshots):
        sf = pd.read_producer_snapshot(off)
        log.extend(sf.findings)
        scan.files += [sf.record] if sf.record else []
        if sf.value is not None:
            log.extend(check_snapshot(sf.value, path=sf.path, snapshot_offset=off, log_end=scan.log_end_offset,
                                      has_segments=any(s.path for s in scan.segments)))


def _scan_segment(scan: PartitionScan, pd: PartitionLog, seg: LogSegment, walk: _Walk, ctx: PartitionContext,
                  batch_sink: BatchSink | None, progress: Callable[[int], None] | None) -> None:
    log = walk.log
    file = str(seg.log)
    facts = SegmentFacts(seg.base_offset, file, has_index=seg.offset_index is not None,
                         has_time_index=seg.time_index is not None, has_txn_index=seg.txn_index is not None)
    scan.segments.append(facts)
    index = _side(scan, log, seg.read_offset_index())
    if index is not None and len(index.positions):
        # with the marker, Kafka finds the log end by reading on from the last index entry
        facts.index_last_position = int(index.positions[-1])
    timeindex = _side(scan, log, seg.read_time_index())
    txn_index = _side(scan, log, seg.read_txn_index())
    ix = IndexCheck(index, timeindex, str(seg.offset_index), str(seg.time_index))
    # aborts against the .txnindex: a segment without one has no entries (Kafka creates it at the first abort); an
    # index that cannot be read is its own finding, not a comparison
    walk.txn.begin_segment(file, txn_index, compare=seg.txn_index is None or txn_index is not None)
    # larger chunks than the reader's default: the per-chunk checks cost Python time per chunk
    reader = seg.reader(sha256=True, window=SCAN_WINDOW, rows=SCAN_ROWS)
    try:
        for t in reader.tables():
            walk.chunk(t, facts, file)
            walk.txn.feed(t, reader, file)
            ix.feed(t)
            if batch_sink is not None:
                batch_sink(pd, seg, t)
            if progress:
                progress(int(t["size_in_bytes"].sum()))
    except OSError as e:
        code = "NOT_A_REGULAR_FILE" if isinstance(e, NotRegularFile) else "UNREADABLE_FILE"
        log.add(finding(code, f"cannot read: {e.strerror or e}", file=file))
        facts.readable = False
        scan.complete = False
        return
    s = reader.summary
    if s.short_read_at is not None:
        facts.readable = False  # the file ended before the size it had when opened: what lies past is unknown
    facts.size = s.size
    facts.kafka_valid_bytes = s.kafka_valid_bytes
    facts.kafka_stop = s.kafka_stop_kind
    facts.partial_offsets = s.partial_offsets
    if s.kafka_stop is not None and (facts.first_invalid_position is None
                                     or s.kafka_valid_bytes < facts.first_invalid_position):
        facts.first_invalid_position = s.kafka_valid_bytes
    scan.files.append(_record(file, s))
    log.extend(s.findings)
    scan.batch_count += facts.batches
    scan.record_count += facts.records
    scan.bytes += s.size
    if facts.first_offset is not None and facts.first_offset < seg.base_offset:
        log.add(finding("SEGMENT_BELOW_NAME", f"first batch starts at offset {facts.first_offset}, below the "
                                              f"segment's name {seg.base_offset}", file=file, position=0,
                        first_offset=facts.first_offset, base_offset=seg.base_offset))
    log.extend(ix.finish())
    log.extend(missing_index(file, seg.base_offset, facts.batches, ctx.bare) if seg.offset_index is None else [])


def _coordinator(tracker: TransactionTracker, given: Any) -> Any:
    """The coordinator's view to check this partition against: only when it has open transactions or markers."""
    if not tracker.ongoing and not tracker.last_marker:
        return None
    source = given if given is not None else COORDINATOR.get()
    return source() if callable(source) else source


def _kraft_files(scan: PartitionScan, pd: PartitionLog, log: FindingLog) -> None:
    """The KRaft files of a partition dir: quorum-state and every snapshot, read whole (bounded, streaming) so that
    their damage is reported where it is and they are in the chain of custody like every other file.

    Their metadata records are decoded by the election timeline, which reads every snapshot of the metadata log
    (the scan reports its findings once), so here the batches and records are read, not the metadata values.
    """
    _side(scan, log, pd.read_quorum_state())
    for p, kind in pd.kraft_snapshots:
        if kind.leftover:
            continue  # reported as a leftover; Kafka deletes it
        from ..log.metadata_log import read_metadata_file  # KRaft's files only: the deep reader, imported here

        read = read_metadata_file(p, decode=False)
        log.extend(read.findings)
        if read.record is not None:
            scan.files.append(read.record)


def _side(scan: PartitionScan, log: FindingLog, sf: SideFile | None) -> Any:
    """Record a side file's findings and custody; its decoded value (None when absent or unreadable)."""
    if sf is None:
        return None
    log.extend(sf.findings)
    if sf.record is not None:
        scan.files.append(sf.record)
    return sf.value


def _record(file: str, summary: ReadSummary) -> FileRecord:
    return FileRecord(file, "log", summary.size, summary.sha256)
