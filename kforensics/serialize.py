"""The one JSON serializer: typed results (dataclasses) to JSON-ready values.

Every front end that writes JSON goes through :func:`to_jsonable`, so a
result has one JSON shape wherever it appears.  Conventions:

* dataclasses become objects of their fields, in declaration order; fields
  whose name starts with ``_`` are private and left out;
* enums become their name in lower case for :class:`~kforensics.findings.Severity`,
  their value otherwise;
* bytes become ``{"encoding": "utf-8", "data": text}`` when they are valid
  UTF-8 and ``{"encoding": "base64", "data": ...}`` otherwise, so keys and
  payloads have one representation;
* numpy scalars become Python numbers, tuples and sets become lists.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import os
from typing import Any

from .severity import Severity


def payload(data: bytes | bytearray | memoryview | None) -> dict[str, str] | None:
    """The JSON form of a key or payload."""
    if data is None:
        return None
    raw = bytes(data)
    try:
        return {"encoding": "utf-8", "data": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"encoding": "base64", "data": base64.b64encode(raw).decode("ascii")}


def to_jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON values (dict, list, str, int, float, bool, None)."""
    if obj is None or isinstance(obj, (str, bool, int, float)):
        if isinstance(obj, enum.Enum):
            return _enum(obj)
        return obj
    if isinstance(obj, enum.Enum):
        return _enum(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        to_json = getattr(obj, "__json__", None)
        if to_json is not None:
            return to_jsonable(to_json())
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)
                if not f.name.startswith("_")}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj) if isinstance(obj, (set, frozenset)) else obj
        return [to_jsonable(v) for v in items]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return payload(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    item = getattr(obj, "item", None)  # numpy scalars
    if item is not None and callable(item):
        return to_jsonable(item())
    tolist = getattr(obj, "tolist", None)  # numpy arrays
    if tolist is not None and callable(tolist):
        return to_jsonable(tolist())
    return str(obj)


def _enum(e: enum.Enum) -> Any:
    if isinstance(e, Severity):
        return str(e)
    return e.value


def dumps(obj: Any, **kw: Any) -> str:
    """JSON text of ``obj`` (one line unless ``indent`` is given)."""
    return json.dumps(to_jsonable(obj), ensure_ascii=False, **kw)
