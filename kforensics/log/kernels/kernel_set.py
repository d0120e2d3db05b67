"""The ``Kernels`` type: one set of compiled kernels, whichever form they take.

A set is either numba's dispatchers (:mod:`.numba_kernels`) or the native
library's entry points (:mod:`.native`); both take the same arguments and
give the same answers, so callers never ask which they hold (``native`` says
it, for reports and tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: a compiled kernel: a numba dispatcher or a native library's entry point, called with arrays and integers
Kernel = Callable[..., Any]


class Kernels:
    """The compiled kernels (see :func:`kforensics.log.kernels.get`): ``walk``, ``resync``, ``decode_records``,
    ``decode_records_many``, ``decode_records_columns``, ``inflate`` and ``records_plain``, with the record
    table's columns."""

    def __init__(self, walk: Kernel, resync: Kernel, records: Kernel, records_many: Kernel,
                 record_columns: tuple[str, ...], records_columns: Kernel, inflate: Kernel, records_plain: Kernel):
        self.walk = walk
        self.resync = resync
        self.decode_records = records
        self.decode_records_many = records_many
        self.decode_records_columns = records_columns
        self.inflate = inflate
        self.records_plain = records_plain
        self.RECORD_COLUMNS = record_columns
        self.RCOL = {name: i for i, name in enumerate(record_columns)}
        #: path of the native library these kernels run from, None for numba's
        self.native: str | None = None

    def new_record_table(self, cap: int) -> np.ndarray:
        """An empty output table for :meth:`decode_records` (at least one row)."""
        return np.empty((max(cap, 1), len(self.RECORD_COLUMNS)), dtype=np.int64)
