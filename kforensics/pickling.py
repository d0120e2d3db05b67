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

#: per class, its dataclass fields' names in declaration order, and as a set
_NAMES: dict[type, tuple[tuple[str, ...], frozenset[str]]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, ...], frozenset[str]]:
    got = _NAMES.get(cls)
    if got is None:
        names = tuple(f.name for f in dataclasses.fields(cls))
        got = _NAMES[cls] = (names, frozenset(names))
    return got


def _names(cls: type) -> tuple[str, ...]:
    return _fields_of(cls)[0]


def _by_fields(cls: Any, values: tuple[Any, ...], absent: tuple[str, ...] = ()) -> Any:
    """The object :meth:`ByFields.__reduce__` pickled (its ``__init__`` is not run again, as for any unpickling);
    ``absent``: the fields it did not hold (their places in ``values`` hold None)."""
    obj = cls.__new__(cls)
    state = obj.__dict__
    state.update(zip(_names(cls), values))
    for name in absent:
        del state[name]
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
        names, held = _fields_of(type(self))
        keys = state.keys()
        if keys == held:
            return _by_fields, (type(self), tuple([state[n] for n in names]))
        if keys <= held:  # a field it does not hold (a class default its __init__ does not set)
            return _by_fields, (type(self), tuple([state.get(n) for n in names]),
                                tuple(n for n in names if n not in state))
        # something besides its fields: its attributes by name, as pickle keeps an object's by default
        return _by_name, (type(self), dict(state))
