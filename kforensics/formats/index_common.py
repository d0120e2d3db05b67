"""Shared decoding of Kafka's fixed-entry index files (``.index``, ``.timeindex``, ``.txnindex``).

Entries are decoded in bulk through a numpy dtype derived from the entry's
Construct declaration (field order, widths and big-endianness come from it).
"""

from __future__ import annotations

import numpy as np
from construct import Struct

from .layout import fixed_layout


def entry_dtype(declaration: Struct) -> np.dtype:
    """A big-endian numpy structured dtype with the declaration's fields."""
    layout = fixed_layout(declaration)
    return np.dtype([(f.name, f">{'i' if f.signed else 'u'}{f.size}") for f in layout.fields])


def decode_entries(data: bytes, declaration: Struct) -> tuple[np.ndarray, int]:
    """All whole entries in ``data`` and the number of trailing bytes that do not make one."""
    dt = entry_dtype(declaration)
    whole = len(data) // dt.itemsize
    return np.frombuffer(data, dtype=dt, count=whole), len(data) - whole * dt.itemsize
