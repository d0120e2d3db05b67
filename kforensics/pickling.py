"""How results travel between processes: dataclasses pickled as their values, without their field names.

The Spark job moves a sketch per partition dir from its scan stage to its
replay stage (a partition row, the replica's summary, a small replica whole,
its recovery plan): 30 000 of them for a fleet of 10 000 partitions on
three brokers.  Pickled the default way each object carries its attributes'
names, made again as strings on every load; a class that takes
:class:`ByFields` is pickled as its class and a tuple of its fields' values
instead, in declaration order (about half the bytes and the time).  An
object holding anything besides its fields (an attribute set later) is
pickled the default way, and a field it does not hold stays unheld: nothing
is lost or added.
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: per class, its dataclass fields' names in declaration order
_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


class _Absent:
    """The value of a field an object does not hold (one with a class default its ``__init__`` does not set)."""

    def __reduce__(self) -> str:
        return "ABSENT"  # pickled by name: one object in every process


ABSENT = _Absent()


def _by_fields(cls: Any, values: tuple[Any, ...]) -> Any:
    """The object :meth:`ByFields.__reduce__` pickled (its ``__init__`` is not run again, as for any unpickling)."""
    obj = cls.__new__(cls)
    if any(v is ABSENT for v in values):  # by identity: a field may hold an array, which == would compare
        obj.__dict__.update((n, v) for n, v in zip(_names(cls), values) if v is not ABSENT)
    else:
        obj.__dict__.update(zip(_names(cls), values))
    return obj


def _by_name(cls: Any, state: dict[str, Any]) -> Any:
    """An object pickled with its attributes by name (one holding more than its fields)."""
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


class ByFields:
    """A dataclass pickled as its fields' values (see the module)."""

    def __reduce__(self) -> tuple[Any, ...]:
        state = self.__dict__
        names = _names(type(self))
        if len(state) <= len(names) and all(n in names for n in state):
            return _by_fields, (type(self), tuple(state.get(n, ABSENT) for n in names))
        # something besides its fields: its attributes by name, as pickle keeps an object's by default
        return _by_name, (type(self), dict(state))
