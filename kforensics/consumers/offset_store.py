"""The committed offsets of a ``__consumer_offsets`` copy held as columns: a few machine words a group, no objects.

A partition of a million groups held one slotted ``CommittedOffset``, a key
tuple, several integer objects and a dict slot per group (about 440 bytes a
group, 580 MB for 1 M groups).  Here each (group, topic, partition) is one
``bytes`` key (its strings escaped so that byte order is the order of the
``(group, topic, partition)`` tuples) mapped to a row of ``array`` columns;
a row is a commit or the tombstone that deleted the key.  Strings that repeat
(files, topics, the brokers holding a commit) are stored once and referred
to by number.  ``CommittedOffset`` objects are made on demand, a row at a
time (:class:`OffsetView`), for the slices a writer or a check asks for.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterator, Sequence
from typing import Any, overload

from .offset_commit import CommittedOffset

#: nullable integer columns: "no value" (every value these columns hold is far from it: epochs and broker ids are
#: int32, expire timestamps below 0 and byte positions below 0 are not kept)
NONE = -(1 << 63)
_SEP = b"\x00\x00"  # between the escaped strings of a key (an escaped string holds 0x00 only before 0xff)
_PARTITION = struct.Struct(">Q")
_COLUMNS = ("offset", "leader_epoch", "commit_timestamp", "expire_timestamp", "value_version", "producer_id",
            "coordinator_partition", "log_offset", "position", "broker_id")


def _escape(text: str) -> bytes:
    # UTF-8 byte order is code point order (surrogatepass keeps any str); NUL becomes 0x00 0xff (0xff is never
    # UTF-8), so a string that is a prefix of another sorts first, as in a tuple
    return text.encode("utf-8", "surrogatepass").replace(b"\x00", b"\x00\xff")


def _unescape(raw: bytes) -> str:
    return raw.replace(b"\x00\xff", b"\x00").decode("utf-8", "surrogatepass")


def key_bytes(group: str, topic: str, partition: int) -> bytes:
    """The key of (group, topic, partition): bytes that sort as the tuple does."""
    return _escape(group) + _SEP + _escape(topic) + _SEP + _PARTITION.pack((partition + (1 << 63)) & ((1 << 64) - 1))


def key_of(raw: bytes) -> tuple[str, str, int]:
    """(group, topic, partition) of a key made by :func:`key_bytes`."""
    g = raw.index(_SEP)
    t = raw.index(_SEP, g + 2)
    return _unescape(raw[:g]), _unescape(raw[g + 2 : t]), _PARTITION.unpack_from(raw, t + 2)[0] - (1 << 63)


def _nullable(v: int | None) -> int:
    return NONE if v is None else v


def _value(v: int) -> int | None:
    return None if v == NONE else v


class OffsetStore:
    """Per key the latest commit (a row of columns) or the log offset of the tombstone that deleted it."""

    def __init__(self) -> None:
        self.index: dict[bytes, int] = {}  # key -> row
        self.cols: dict[str, array[int]] = {c: array("q") for c in _COLUMNS}
        self.deleted = array("b")  # 1: the row is a tombstone (its log_offset), not a commit
        self.metadata: list[str] = []
        self.file = array("i")  # number of the row's file in ``files``
        self.copies = array("i")  # number of the row's brokers in ``copy_sets``
        self.files: list[str | None] = []
        self._file_no: dict[str | None, int] = {}
        self.copy_sets: list[tuple[int | None, ...]] = []
        self._copies_no: dict[tuple[int | None, ...], int] = {}
        self._topics: dict[bytes, str] = {}  # one str per topic, for the offsets made on demand

    def __len__(self) -> int:
        return len(self.index)

    def _row(self, key: bytes) -> int:
        row = self.index.get(key)
        if row is None:
            row = self.index[key] = len(self.deleted)
            for col in self.cols.values():
                col.append(0)
            self.deleted.append(0)
            self.metadata.append("")
            self.file.append(0)
            self.copies.append(0)
        return row

    def _number(self, table: dict[Any, int], values: list[Any], value: Any) -> int:
        n = table.get(value)
        if n is None:
            n = table[value] = len(values)
            values.append(value)
        return n

    def put(self, key: bytes, co: CommittedOffset) -> None:
        """Hold ``co`` as the key's commit (replacing what the key held)."""
        row = self._row(key)
        c = self.cols
        c["offset"][row] = co.offset
        c["leader_epoch"][row] = _nullable(co.leader_epoch)
        c["commit_timestamp"][row] = co.commit_timestamp
        c["expire_timestamp"][row] = _nullable(co.expire_timestamp)
        c["value_version"][row] = _nullable(co.value_version)
        c["producer_id"][row] = co.producer_id
        c["coordinator_partition"][row] = _nullable(co.coordinator_partition)
        c["log_offset"][row] = co.log_offset
        c["position"][row] = _nullable(co.position)
        c["broker_id"][row] = _nullable(co.broker_id)
        self.deleted[row] = 0
        self.metadata[row] = co.metadata
        self.file[row] = self._number(self._file_no, self.files, co.file)
        self.copies[row] = self._number(self._copies_no, self.copy_sets, tuple(co.copies))

    def delete(self, key: bytes, log_offset: int) -> None:
        """The key was deleted by a tombstone at ``log_offset``."""
        row = self._row(key)
        self.deleted[row] = 1
        self.cols["log_offset"][row] = log_offset
        self.metadata[row] = ""

    def loaded(self, key: bytes) -> int | None:
        """The row of the key's commit (None: no commit, or deleted)."""
        row = self.index.get(key)
        return None if row is None or self.deleted[row] else row

    def log_offset(self, row: int) -> int:
        return self.cols["log_offset"][row]

    def rows(self) -> Iterator[tuple[bytes, int, bool]]:
        """(key, row, deleted) of every key, in the order keys were first seen."""
        for key, row in self.index.items():
            yield key, row, bool(self.deleted[row])

    def set_copies(self, row: int, copies: tuple[int | None, ...]) -> None:
        self.copies[row] = self._number(self._copies_no, self.copy_sets, copies)

    def held_by(self, copies: tuple[int | None, ...]) -> None:
        """Every commit is held by the brokers ``copies`` (one copy of a partition: all its commits alike)."""
        self.copy_sets, self._copies_no = [copies], {copies: 0}
        self.copies = array("i", [0]) * len(self.deleted)

    def offset(self, key: bytes, row: int) -> CommittedOffset:
        """The commit of ``row`` (whose key is ``key``) as a ``CommittedOffset``."""
        group, topic, partition = key_of(key)
        c = self.cols
        topic = self._topics.setdefault(topic.encode("utf-8", "surrogatepass"), topic)
        return CommittedOffset(group, topic, partition, c["offset"][row], _value(c["leader_epoch"][row]),
                               self.metadata[row], c["commit_timestamp"][row], _value(c["expire_timestamp"][row]),
                               _value(c["value_version"][row]), c["producer_id"][row],
                               _value(c["coordinator_partition"][row]), c["log_offset"][row],
                               self.files[self.file[row]], _value(c["position"][row]), _value(c["broker_id"][row]),
                               self.copy_sets[self.copies[row]])


class OffsetView(Sequence["CommittedOffset"]):
    """The commits of an :class:`OffsetStore` sorted by (group, topic, partition), each made when asked for."""

    def __init__(self, store: OffsetStore) -> None:
        self.store = store
        self.keys = sorted(k for k, row in store.index.items() if not store.deleted[row])

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, i: int) -> CommittedOffset: ...

    @overload
    def __getitem__(self, i: slice) -> list[CommittedOffset]: ...

    def __getitem__(self, i: int | slice) -> CommittedOffset | list[CommittedOffset]:
        if isinstance(i, slice):
            return [self._at(k) for k in self.keys[i]]
        return self._at(self.keys[i])

    def _at(self, key: bytes) -> CommittedOffset:
        return self.store.offset(key, self.store.index[key])

    def __iter__(self) -> Iterator[CommittedOffset]:
        for k in self.keys:
            yield self._at(k)

    def for_partition(self, topic: str, partition: int) -> list[CommittedOffset]:
        """The commits for one partition, in group order (the others are not made: a key ends with its topic and
        partition, and an escaped string never holds the separator)."""
        suffix = key_bytes("", topic, partition)
        return [self._at(k) for k in self.keys if k.endswith(suffix)]

    def tolist(self) -> list[CommittedOffset]:
        """Every commit, made now (the serializer's hook for sequences it does not know, as numpy's)."""
        return list(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OffsetView({len(self)} committed offsets)"
