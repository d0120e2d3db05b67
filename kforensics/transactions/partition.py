"""One partition directory's transactions, read end to end (segments in order, each with its ``.txnindex``).

The scan feeds the same :class:`~.producer_state.TransactionTracker` from its
own pass; this reads a partition on its own (the CLI's replay, tests, the
lost-marker check of :mod:`kforensics.consumers.read_committed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..log.partition import PartitionLog
from .model import MAX_TRANSACTION_TIMEOUT_MS, PartitionTransactions
from .producer_state import TransactionTracker

if TYPE_CHECKING:
    from .coordinator import CoordinatorView


def read_partition_transactions(pd: PartitionLog, *, broker_id: int | None = None,
                                high_watermark: int | None = None, end_offset: int | None = None,
                                watch: Sequence[tuple[int, int]] = (), check_txn_index: bool = True,
                                coordinator: CoordinatorView | None = None,
                                max_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS) -> PartitionTransactions:
    """The transactions of ``pd``'s log (see :class:`~.producer_state.TransactionTracker` for the arguments);
    ``check_txn_index`` compares each segment's aborts with its ``.txnindex`` (a missing file has no entries)."""
    tr = TransactionTracker(pd.topic, pd.partition, broker_id=broker_id, high_watermark=high_watermark,
                            end_offset=end_offset, watch=watch, max_timeout_ms=max_timeout_ms)
    for seg in pd.sorted_segments():
        if seg.log is None:
            continue
        index, compare = None, check_txn_index
        if check_txn_index and seg.txn_index is not None:
            sf = seg.read_txn_index()
            index = sf.value if sf is not None else None
            compare = index is not None  # an index that cannot be read is the scan's finding, not a comparison
        file = str(seg.log)
        tr.begin_segment(file, index, compare=compare)
        reader = seg.reader()
        try:
            for t in reader.tables():
                tr.feed(t, reader, file)
        except OSError:
            continue  # the scan reports unreadable files
    return tr.finish(coordinator)
