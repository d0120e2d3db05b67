"""The transaction state a partition's log implies, rebuilt in one streaming pass over its batch headers.

What Kafka's ``ProducerStateManager`` keeps of transactions, derived from the
log alone (sources: ``ProducerAppendInfo.appendDataBatch`` / ``appendEndTxnMarker``
/ ``checkProducerEpoch`` / ``checkCoordinatorEpoch``, ``ProducerStateManager.
lastStableOffset`` / ``firstUnstableOffset``, ``UnifiedLog.append`` →
``LogSegment.updateTxnIndex``; apache/kafka trunk ``1eb7644`` and 3.8.0):

* a transactional data batch of a producer with no transaction open begins one
  at the batch's base offset; later batches of that producer extend it;
* a control batch (COMMIT or ABORT marker) of the producer ends it, whatever the
  epochs; a marker with no open transaction is an empty transaction (no
  ``CompletedTxn``, no index entry);
* the leader refuses a batch or marker whose producer epoch is below the
  producer's last epoch (``InvalidProducerEpochException``) and a marker whose
  coordinator epoch is below the last one seen (``TransactionCoordinatorFencedException``);
  a follower only logs them.  A marker one epoch above its data is normal:
  transactions v2 (KIP-890) bump the epoch at every commit or abort
  (``TransactionMetadata.prepareAbortOrCommit``), and under v1 the coordinator
  does the same when it fences a producer whose transaction timed out;
* an ABORT of a non-empty transaction is indexed in the ``.txnindex`` of the
  segment holding the marker as ``AbortedTxn(producer id, first offset, marker
  offset, last stable offset)``, the last stable offset being the first offset
  of the earliest other open transaction, else the marker's offset + 1;
* the last stable offset (LSO) is the first offset of the earliest transaction
  that is open, or completed by a marker not yet below the high watermark,
  bounded by the high watermark;
* the coordinator aborts an ``Ongoing`` transaction once its start plus its
  timeout has passed (``TransactionStateManager.timedOutTransactions``, 3.8.0),
  and no timeout exceeds ``transaction.max.timeout.ms`` (15 min by default).
  The coordinator's start precedes the transaction's first batch, so a
  transaction whose first batch is older than that maximum by the partition's
  newest timestamp has outlived any coordinator that was running: hanging.
  (``kafka-transactions.sh find-hanging`` measures from the producer's last
  write instead, a stricter test for a live cluster.)

Memory holds the open transactions, one entry per transactional producer and
the aborts of the current segment; the markers and aborted ranges listed are
the last :data:`~.model.MAX_LISTED` (where truncation strikes) plus the
markers in watched ranges; counts cover all.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..findings import FindingLog, finding
from ..formats.record_batch import CONTROL_BIT, MAGIC, TRANSACTIONAL_BIT
from ..formats.txn_index import TxnIndex
from ..log.batch_table import COL, BatchTable
from .model import (
    MAX_LISTED,
    MAX_TRANSACTION_TIMEOUT_MS,
    AbortedRange,
    OpenTransaction,
    PartitionTransactions,
    TransactionMarker,
)
from .transaction_version import count, from_coordinator, from_epochs, open_version, settle_by_next_transaction

if TYPE_CHECKING:
    from .coordinator import CoordinatorView

#: control record types of the markers (``ControlRecordType``)
MARKER_TYPES = {0: "ABORT", 1: "COMMIT"}


def control_record(row: list[int], raw: memoryview | None) -> tuple[str, int | None]:
    """``(COMMIT | ABORT | UNKNOWN, coordinator epoch)`` of one control batch, from its bytes (any codec)."""
    if raw is None:
        return "UNKNOWN", None
    from ..log.records import EntryRecords
    from ..log.segment_reader import Batch

    for rec in EntryRecords(Batch(row, raw)):
        c = rec.control or {}
        t = c.get("type")
        return (t if t in ("COMMIT", "ABORT") else "UNKNOWN"), c.get("coordinatorEpoch")
    return "UNKNOWN", None


def marker_types(t: BatchTable, rows: np.ndarray, reader: Any) -> tuple[list[str], list[int | None]]:
    """The type (COMMIT / ABORT / UNKNOWN) and coordinator epoch of the control batches ``rows`` of chunk ``t``.

    Uncompressed markers held in the reader's window (all of them, as brokers
    write them) are decoded in one compiled call over the held bytes (the
    record kernel the deep decoder uses), reading the ``ControlRecordKey``
    (``int16 version, int16 type``) and the ``EndTxnMarker`` value (``int16
    version, int32 coordinator epoch``) at the positions it returns; any other
    is decoded through :class:`~kforensics.log.records.EntryRecords`.
    """
    n = len(rows)
    types: list[str] = ["UNKNOWN"] * n
    epochs: list[int | None] = [None] * n
    if not n or reader is None:
        return types, epochs
    held = reader.held() if hasattr(reader, "held") else None
    done = np.zeros(n, dtype=bool)
    if held is not None:
        from ..formats.record_batch import COMPRESSION_MASK, HEADER_SIZE
        from ..log import kernels

        pos, size = t["position"][rows], t["size_in_bytes"][rows]
        count = t["records_count"][rows]
        fits = (((t["attributes"][rows] & COMPRESSION_MASK) == 0) & (pos >= held.file_pos)
                & (pos + size <= held.end) & (count == 1) & (size > HEADER_SIZE))
        sel = np.flatnonzero(fits)
        if len(sel):
            K = kernels.get()
            out = K.new_record_table(len(sel))
            where = np.empty(len(sel), dtype=np.int64)
            status = np.zeros(len(sel), dtype=np.int64)
            starts = pos[sel] - held.file_pos + HEADER_SIZE
            _, k = K.decode_records_many(held.buf, starts, pos[sel] - held.file_pos + size[sel],
                                         np.ones(len(sel), dtype=np.int64), out, where, status)
            rc, buf = K.RCOL, held.buf
            for r in range(k):
                b = int(where[r])
                if status[b] != kernels.RS_OK:
                    continue
                kp, kl = int(out[r, rc["key_pos"]]), int(out[r, rc["key_len"]])
                vp, vl = int(out[r, rc["value_pos"]]), int(out[r, rc["value_len"]])
                if kl < 4 or vl < 6:
                    continue
                version = int.from_bytes(bytes(buf[kp:kp + 2]), "big", signed=True)
                if version < 0:
                    continue
                i = int(sel[b])
                types[i] = MARKER_TYPES.get(int.from_bytes(bytes(buf[kp + 2:kp + 4]), "big", signed=True),
                                            "UNKNOWN")
                epochs[i] = int.from_bytes(bytes(buf[vp + 2:vp + 6]), "big", signed=True)
                done[i] = True
    entry_bytes = getattr(reader, "entry_bytes", None)
    for i in np.flatnonzero(~done).tolist():
        row = t.data[rows[i]].tolist()
        raw = entry_bytes(row[COL["position"]], row[COL["size_in_bytes"]]) if entry_bytes is not None else None
        types[i], epochs[i] = control_record(row, raw)
    return types, epochs


class TransactionTracker:
    """Feed it batch-header chunks in log order (:meth:`feed`), segment by segment; :meth:`finish` gives the
    :class:`~.model.PartitionTransactions`.

    ``high_watermark`` bounds the last stable offset; ``end_offset`` ignores
    batches starting at or after it (a log as its broker's recovery leaves
    it); markers at offsets inside ``watch`` ranges are listed whatever the
    cap (the replay's truncated ranges).
    """

    def __init__(self, topic: str, partition: int, *, broker_id: int | None = None,
                 high_watermark: int | None = None, end_offset: int | None = None,
                 watch: Sequence[tuple[int, int]] = (), max_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS):
        self.out = PartitionTransactions(topic, partition, broker_id, high_watermark=high_watermark)
        self.end_offset = end_offset
        self.watch = sorted(watch)
        self.max_timeout_ms = max_timeout_ms
        self.log = FindingLog()
        self.ongoing: dict[int, OpenTransaction] = {}
        self.epochs: dict[int, int] = {}  # producer id -> last producer epoch seen
        self.coordinator_epochs: dict[int, int] = {}
        self.last_marker: dict[int, TransactionMarker] = {}  # producer id -> its last marker
        self.unreplicated: list[int] = []  # first offsets of transactions whose marker is at or above the HW
        self._file: str | None = None
        self._index: TxnIndex | None = None
        self._compare = False
        self._seg_aborts: list[AbortedRange] = []
        self._seg_abort_markers: set[tuple[int, int]] = set()
        self._recent: deque[TransactionMarker] = deque(maxlen=MAX_LISTED)  # the last markers
        self._watched: list[TransactionMarker] = []  # markers inside the watched ranges
        self._aborted: deque[AbortedRange] = deque(maxlen=MAX_LISTED)

    # ------------------------------------------------------------------ segments
    def begin_segment(self, file: str | None, txn_index: TxnIndex | None = None, *, compare: bool = False) -> None:
        """A new segment: its file, and its decoded ``.txnindex`` (``compare``: check the aborts against it;
        a segment without a ``.txnindex`` file has none, as Kafka creates it at the first aborted transaction)."""
        self.end_segment()
        self._file, self._index, self._compare = file, txn_index, compare

    def end_segment(self) -> None:
        # without aborts nor a .txnindex there is nothing to compare (no finding): most segments of a fleet
        if self._compare and (self._seg_aborts or self._index is not None):
            from .txn_index import compare_txn_index

            for f in compare_txn_index(self._seg_aborts, self._seg_abort_markers, self._index, self._file,
                                       self.end_offset):
                self.log.add(f)
        if self._seg_aborts or self._seg_abort_markers:
            self._seg_aborts, self._seg_abort_markers = [], set()
        self._compare = False

    # ------------------------------------------------------------------ batches
    def feed(self, t: BatchTable, reader: Any = None, file: str | None = None) -> None:
        """One chunk of batch headers, in log order.  ``reader`` is the segment reader the chunk came from
        (its held bytes give the markers' types; without it a marker's type is UNKNOWN).

        Vectorised per chunk: the epoch checks and each transaction's data
        aggregates are numpy operations over the chunk's transactional rows
        grouped by producer; Python runs once per transaction opened and once
        per marker, in log order (the order the last stable offsets of aborts
        depend on).
        """
        if file is not None:
            self._file = file
        if not len(t):
            return
        base = t.first_offsets()
        keep = t.crc_valid()  # a header whose CRC fails may hold anything
        if self.end_offset is not None:
            keep &= base < self.end_offset
        if not keep.any():
            return
        o = self.out
        last = t["last_offset"][keep]
        first = int(base[keep][0])
        o.log_start_offset = first if o.log_start_offset is None else min(o.log_start_offset, first)
        end = int(last.max()) + 1
        o.log_end_offset = end if o.log_end_offset is None else max(o.log_end_offset, end)
        ts = int(t["max_timestamp"][keep].max())
        o.max_timestamp = ts if o.max_timestamp is None else max(o.max_timestamp, ts)
        attrs = t["attributes"]
        idx = np.flatnonzero(keep & (t["magic"] == MAGIC) & ((attrs & TRANSACTIONAL_BIT) != 0)
                             & (t["producer_id"] >= 0))
        if len(idx):
            self._transactional(t, idx, reader)

    def _transactional(self, t: BatchTable, idx: np.ndarray, reader: Any) -> None:
        c = COL
        rows = t.data[idx]
        n = len(rows)
        pid, ep = rows[:, c["producer_id"]], rows[:, c["producer_epoch"]]
        ctrl = (rows[:, c["attributes"]] & CONTROL_BIT) != 0
        uniq, inv = np.unique(pid, return_inverse=True)
        inv = inv.ravel()
        pids = uniq.tolist()
        order = np.argsort(inv, kind="stable")  # rows grouped by producer, in log order within each
        g = inv[order]
        gstart = np.r_[True, g[1:] != g[:-1]]
        # epochs: each batch or marker against the highest epoch its producer wrote before it
        stored = np.array([self.epochs.get(p, -(1 << 15)) for p in pids], dtype=np.int64)
        e = ep[order]
        span = 1 << 17
        run = np.maximum.accumulate(g * span + (e + (1 << 15))) - g * span - (1 << 15)
        before = np.maximum(np.where(gstart, -(1 << 15), np.r_[-(1 << 15), run[:-1]]), stored[g])
        if (e < before).any():  # rare: reported in log order
            seen = np.empty(n, dtype=np.int64)
            seen[order] = before
            for k in np.sort(order[e < before]).tolist():
                self._epoch_backwards(rows[k].tolist(), int(seen[k]), bool(ctrl[k]))
        top = np.full(len(pids), -(1 << 15), dtype=np.int64)
        np.maximum.at(top, inv, ep)
        for j, p in enumerate(pids):
            self.epochs[p] = max(self.epochs.get(p, -(1 << 15)), int(top[j]))
        # a producer's marker closes its data rows before it: segment = markers of the producer before the row
        cs = np.cumsum(ctrl[order].astype(np.int64))
        excl = cs - ctrl[order]
        seg = np.empty(n, dtype=np.int64)
        seg[order] = excl - excl[np.flatnonzero(gstart)][g]
        data = np.flatnonzero(~ctrl)
        events: list[tuple[int, int]] = []  # (row, transaction segment j or -1 for a marker)
        aggs: tuple[list[int], ...] | None = None
        if len(data):
            self.out.transactional_batches += len(data)
            keys, first, dinv = np.unique(inv[data] * (n + 1) + seg[data], return_index=True, return_inverse=True)
            dinv = dinv.ravel()
            m = len(keys)
            last_row = np.zeros(m, dtype=np.int64)
            np.maximum.at(last_row, dinv, data)
            max_ts = np.full(m, np.iinfo(np.int64).min, dtype=np.int64)
            np.maximum.at(max_ts, dinv, rows[data, c["max_timestamp"]])
            top_ep = np.full(m, -(1 << 15), dtype=np.int64)
            np.maximum.at(top_ep, dinv, ep[data])
            records = np.zeros(m, dtype=np.int64)
            np.add.at(records, dinv, np.clip(rows[data, c["records_count"]], 0, None))
            size = np.zeros(m, dtype=np.int64)
            np.add.at(size, dinv, rows[data, c["size_in_bytes"]])
            batches = np.bincount(dinv, minlength=m)
            aggs = (data[first].tolist(), last_row.tolist(), max_ts.tolist(), top_ep.tolist(), records.tolist(),
                    size.tolist(), batches.tolist())
            events += [(r, j) for j, r in enumerate(aggs[0])]
        mk = np.flatnonzero(ctrl)
        types, cepochs = marker_types(t, idx[mk], reader)
        events += [(r, -1 - k) for k, r in enumerate(mk.tolist())]
        events.sort()
        for r, j in events:
            if j < 0:
                self._marker(rows[r].tolist(), types[-1 - j], cepochs[-1 - j], check_epoch=False)
                continue
            assert aggs is not None  # a transaction segment j >= 0 exists only when there are data rows
            first_row, last_r, mts, tep, nrec, nbytes, nb = (a[j] for a in aggs)
            row = rows[first_row]
            p = int(row[c["producer_id"]])
            txn = self.ongoing.get(p)
            if txn is None:
                settle_by_next_transaction(self.last_marker.get(p), int(row[c["producer_epoch"]]))
                txn = self.ongoing[p] = OpenTransaction(
                    p, int(row[c["producer_epoch"]]), int(row[c["base_offset"]]), 0, 0, 0, 0,
                    int(row[c["base_timestamp"]]), None, self._file, int(row[c["position"]]))
            txn.producer_epoch = max(txn.producer_epoch, tep)
            txn.last_offset = int(rows[last_r, c["last_offset"]])
            txn.batches += nb
            txn.records += nrec
            txn.bytes += nbytes
            txn.last_timestamp = max(txn.last_timestamp if txn.last_timestamp is not None else -1, mts)

    def _epoch_backwards(self, row: list[int], seen: int, marker: bool) -> None:
        pid, epoch, offset = row[COL["producer_id"]], row[COL["producer_epoch"]], row[COL["base_offset"]]
        what = "a marker" if marker else "a transactional batch"
        self.log.add(finding(
            "TXN_PRODUCER_EPOCH_WENT_BACKWARDS",
            f"{what} of producer {pid} at offset {offset} has epoch {epoch}, below the epoch {seen} it already "
            "wrote: Kafka's leader refuses it (InvalidProducerEpochException)",
            file=self._file, position=row[COL["position"]], producer_id=pid, producer_epoch=epoch, last_epoch=seen,
            offset=offset))

    def _marker(self, row: list[int], control_type: str, coordinator_epoch: int | None, *,
                check_epoch: bool = True) -> None:
        o = self.out
        o.transactional_batches += 1
        pid, epoch, offset = row[COL["producer_id"]], row[COL["producer_epoch"]], row[COL["base_offset"]]
        pos = row[COL["position"]]
        if check_epoch:
            seen = self.epochs.get(pid)
            if seen is not None and epoch < seen:
                self._epoch_backwards(row, seen, True)
            else:
                self.epochs[pid] = epoch
        if coordinator_epoch is not None:
            seen = self.coordinator_epochs.get(pid)
            if seen is not None and coordinator_epoch < seen:
                self.log.add(finding(
                    "TXN_COORDINATOR_EPOCH_WENT_BACKWARDS",
                    f"{control_type} marker of producer {pid} at offset {offset} has coordinator epoch "
                    f"{coordinator_epoch}, below {seen} on an earlier marker: a zombie coordinator's marker, which "
                    "Kafka's leader refuses (TransactionCoordinatorFencedException)",
                    file=self._file, position=pos, producer_id=pid, coordinator_epoch=coordinator_epoch,
                    last_coordinator_epoch=seen, offset=offset))
            else:
                self.coordinator_epochs[pid] = coordinator_epoch
        txn = self.ongoing.pop(pid, None)
        m = TransactionMarker(offset, pid, epoch, control_type, coordinator_epoch, row[COL["max_timestamp"]],
                              self._file, pos)
        if txn is None:
            o.empty_markers += 1
        else:
            m.first_offset, m.data_epoch, m.records = txn.first_offset, txn.producer_epoch, txn.records
            hw = o.high_watermark
            if hw is not None and offset >= hw:
                self.unreplicated.append(txn.first_offset)
        m.transaction_version, m.transaction_version_basis = from_epochs(control_type, m.epoch_bump)
        if control_type == "COMMIT":
            o.commits += 1
        elif control_type == "ABORT":
            o.aborts += 1
            self._seg_abort_markers.add((pid, offset))
            if txn is not None:
                lso = min((t.first_offset for t in self.ongoing.values()), default=offset + 1)
                ar = AbortedRange(pid, txn.first_offset, offset, lso, self._file)
                self._seg_aborts.append(ar)
                self._aborted.append(ar)
        if any(a <= offset <= b for a, b in self.watch):
            self._watched.append(m)
        else:
            self._recent.append(m)
        self.last_marker[pid] = m

    # ------------------------------------------------------------------ result
    def finish(self, coordinator: CoordinatorView | None = None) -> PartitionTransactions:
        """The partition's transactions; with ``coordinator`` (a :class:`~.coordinator.CoordinatorView` of
        ``__transaction_state``) the open transactions and last markers are checked against its view."""
        self.end_segment()
        o = self.out
        o.producers = len(self.epochs)
        # (the empty cases apart: most partitions of a fleet hold no transaction)
        o.markers = sorted([*self._watched, *self._recent], key=lambda m: m.offset) if (
            self._watched or self._recent) else []
        o.aborted = list(self._aborted) if self._aborted else []
        bound = o.high_watermark if o.high_watermark is not None else o.log_end_offset
        firsts = [t.first_offset for t in self.ongoing.values()] + self.unreplicated if (
            self.ongoing or self.unreplicated) else []
        if firsts:
            o.last_stable_offset = min(firsts + ([bound] if bound is not None else []))
        elif bound is not None:
            o.last_stable_offset = bound
        for t in sorted(self.ongoing.values(), key=lambda t: t.first_offset) if self.ongoing else ():
            if o.max_timestamp is not None and t.first_timestamp is not None and t.first_timestamp >= 0:
                t.age_ms = o.max_timestamp - t.first_timestamp
            if t.age_ms is not None and t.age_ms > self.max_timeout_ms:
                t.hanging = True
                t.why = (f"open for {t.age_ms} ms of the partition's own time, longer than the maximum transaction "
                         f"timeout ({self.max_timeout_ms} ms): the coordinator would have aborted it")
            else:
                t.why = ("open at the end of the log, within the maximum transaction timeout: the coordinator "
                         "ends it (or aborts it when it times out)")
            o.open.append(t)
        if coordinator is not None:
            from .coordinator import cross_check

            by_pid = coordinator.by_producer()
            for m in o.markers:  # the epochs decide when they can; else the coordinator's record of the id
                st = by_pid.get(m.producer_id)
                if m.transaction_version is None and st is not None:
                    m.transaction_version, m.transaction_version_basis = from_coordinator(st)
            for f in cross_check(o, self.last_marker, coordinator):
                self.log.add(f)
        by_pid = coordinator.by_producer() if coordinator is not None else {}
        for t in o.open:
            open_version(t, self.last_marker.get(t.producer_id), by_pid.get(t.producer_id))
            if t.hanging:  # nobody will write its marker, a restart included
                t.at_restart, t.coordinator_timeout_at = "stays open", None
            code = "TXN_HANGING" if t.hanging else "TXN_OPEN"
            self.log.add(finding(
                code, f"transaction of producer {t.producer_id} (epoch {t.producer_epoch}) open from offset "
                      f"{t.first_offset} to the log end: {t.why}; read_committed consumers stop at offset "
                      f"{t.first_offset}", file=t.file, position=t.position, producer_id=t.producer_id,
                producer_epoch=t.producer_epoch, first_offset=t.first_offset, age_ms=t.age_ms,
                coordinator_state=t.coordinator_state))
        o.transaction_versions = count(o.markers) if o.markers else {}
        o.findings = self.log.findings()
        return o
