"""Arrow columns made from their buffers: numpy arrays and lists of Python values of the tables' types.

``pa.array`` imports pandas on its first call, whatever it is given (about 45 MB and 0.3 s of a ``scan --out``
that never uses pandas: pyarrow asks whether it was handed a pandas object).  The tables' columns are integers,
booleans, strings and lists of integers; each is laid out here as Arrow lays it out (a validity bitmap, values,
offsets) and handed over with ``Array.from_buffers``.  Any other type goes through ``pa.array``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

#: the numpy type of each integer column type
_INTS: dict[pa.DataType, type[np.signedinteger[Any]]] = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64}
_INT64 = pa.int64()
#: string offsets are int32: a column of more text than this goes through pa.array (never in one row group)
_MAX_TEXT = 2**31 - 1


def _bitmap(bits: np.ndarray) -> pa.Buffer:
    """Arrow's bitmap of a boolean array (least significant bit first)."""
    return pa.py_buffer(np.packbits(bits, bitorder="little"))


def _validity(valid: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    """The validity bitmap (None: every value present) and the null count."""
    if valid is None or valid.all():
        return None, 0
    return _bitmap(valid), int(len(valid) - np.count_nonzero(valid))


def ints(data: np.ndarray, typ: pa.DataType = _INT64, valid: np.ndarray | None = None) -> pa.Array:
    """An integer column of ``data`` (cast to ``typ``'s width; ``valid``: False where the value is null)."""
    values = np.ascontiguousarray(data, dtype=_INTS[typ])
    bitmap, nulls = _validity(valid)
    return pa.Array.from_buffers(typ, len(values), [bitmap, pa.py_buffer(values)], null_count=nulls)


def bools(data: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A boolean column of ``data``."""
    bits = np.ascontiguousarray(data, dtype=bool)
    bitmap, nulls = _validity(valid)
    return pa.Array.from_buffers(pa.bool_(), len(bits), [bitmap, _bitmap(bits)], null_count=nulls)


def _present(values: Sequence[Any]) -> np.ndarray | None:
    valid = np.fromiter((v is not None for v in values), bool, len(values))
    return None if valid.all() else valid


def _int_values(values: Sequence[int | None], typ: pa.DataType) -> pa.Array:
    data = np.fromiter((0 if v is None else v for v in values), _INTS[typ], len(values))
    return ints(data, typ, _present(values))


def _text_values(values: Sequence[str | None]) -> pa.Array | None:
    data = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = np.zeros(len(data) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, data), np.int64, len(data)), out=offsets[1:])
    if offsets[-1] > _MAX_TEXT:
        return None
    bitmap, nulls = _validity(_present(values))
    return pa.Array.from_buffers(pa.string(), len(data), [bitmap, pa.py_buffer(offsets.astype(np.int32)),
                                                          pa.py_buffer(b"".join(data))], null_count=nulls)


def _list_values(values: Sequence[Sequence[int | None] | None], typ: pa.DataType) -> pa.Array | None:
    item = typ.value_type
    if item not in _INTS:
        return None
    flat = [x for v in values if v is not None for x in v]
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(np.fromiter((0 if v is None else len(v) for v in values), np.int64, len(values)), out=offsets[1:])
    if offsets[-1] > _MAX_TEXT:
        return None
    bitmap, nulls = _validity(_present(values))
    return pa.Array.from_buffers(typ, len(values), [bitmap, pa.py_buffer(offsets.astype(np.int32))], null_count=nulls,
                                 children=[_int_values(flat, item)])


def column(values: Sequence[Any], typ: pa.DataType) -> pa.Array:
    """A column of ``typ`` holding ``values``, each already made to fit it (``schemas.fit``): None is null."""
    made: pa.Array | None = None
    if typ in _INTS:
        made = _int_values(values, typ)
    elif pa.types.is_boolean(typ):
        made = bools(np.fromiter((bool(v) for v in values), bool, len(values)), _present(values))
    elif pa.types.is_string(typ):
        made = _text_values(values)
    elif pa.types.is_list(typ):
        made = _list_values(values, typ)
    return made if made is not None else pa.array(values, typ)
