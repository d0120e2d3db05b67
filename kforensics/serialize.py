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
from collections.abc import Callable
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
    t = type(obj)
    if t is str or t is int or obj is None or t is bool or t is float:
        return obj
    conv = _CONVERTERS.get(t)
    if conv is None:
        conv = _CONVERTERS[t] = _converter(t)
    return conv(obj)


#: per type, the function that makes its values JSON-able: chosen once per type, not per value (a replay of
#: thousands of partitions serialises millions of values)
_CONVERTERS: dict[type, Callable[[Any], Any]] = {}


def _converter(t: type) -> Callable[[Any], Any]:
    """How values of type ``t`` become JSON-able (the conventions of this module's docstring)."""
    if issubclass(t, enum.Enum):
        return _enum
    if dataclasses.is_dataclass(t):
        if getattr(t, "__json__", None) is not None:
            return lambda o: to_jsonable(o.__json__())
        return _dataclass_converter(public_fields(t))
    if issubclass(t, (str, bool, int, float)):  # subclasses (numpy.float64 is one): JSON takes them as they are
        return _same
    if issubclass(t, dict):
        return lambda o: {str(k): to_jsonable(v) for k, v in o.items()}
    if issubclass(t, (list, tuple)):
        return lambda o: [to_jsonable(v) for v in o]
    if issubclass(t, (set, frozenset)):
        return lambda o: [to_jsonable(v) for v in sorted(o)]
    if issubclass(t, (bytes, bytearray, memoryview)):
        return payload
    if issubclass(t, os.PathLike):
        return os.fspath
    return _other


def _dataclass_converter(names: tuple[str, ...]) -> Callable[[Any], Any]:
    def convert(o: Any) -> dict[str, Any]:
        out = {}
        for n in names:
            v = getattr(o, n)
            t = type(v)
            # plain values inline: most fields are, and a call per field is most of the cost
            out[n] = v if (t is str or t is int or v is None or t is bool or t is float) else to_jsonable(v)
        return out
    return convert


def public_fields(obj: Any) -> tuple[str, ...]:
    """The fields of a dataclass value that its JSON object holds, in order (those not starting with ``_``)."""
    return tuple(f.name for f in dataclasses.fields(obj) if not f.name.startswith("_"))


def _same(o: Any) -> Any:
    return o


def _other(obj: Any) -> Any:
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
