"""ZooKeeper's jute encoding and the records its data dir shares (``zookeeper.jute``, modules ``data`` and
``persistence``).

Read as ``BinaryInputArchive`` reads them (``zookeeper-jute``, ZooKeeper 3.5.9 for Kafka 2.8.2 and 3.8.4 for
Kafka 3.9.1; the two releases agree on every type below): big-endian ``int`` (4 bytes) and ``long`` (8),
``boolean`` one byte (non-zero is true), ``ustring`` and ``buffer`` an ``int`` length then that many bytes
(-1: null; a length above ``jute.maxbuffer`` — 0xfffff, plus the 1024 bytes of ``extraMaxBuffer`` from 3.5.8 on —
is refused as "Unreasonable length", ``BinaryInputArchive.checkLength``), ``vector<T>`` an ``int`` count (-1:
null) then the elements.

Records (``zookeeper-jute/src/main/resources/zookeeper.jute`` at tags release-3.5.9 and release-3.8.4)::

    class Id { ustring scheme; ustring id; }
    class ACL { int perms; Id id; }
    class StatPersisted { long czxid; long mzxid; long ctime; long mtime; int version; int cversion;
                          int aversion; long ephemeralOwner; long pzxid; }
    class FileHeader { int magic; int version; long dbid; }
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Protocol

from construct import Adapter, Array, Bytes, Check, CheckError, Flag, If, Int32sb, Int64sb, StreamError, Struct, this

#: ``jute.maxbuffer``'s default (0xfffff) plus ``extraMaxBuffer`` (1024): the longest buffer a reader accepts
MAX_BUFFER = 0xFFFFF + 1024


def _length_ok(ctx: Any) -> bool:
    return bool(-1 <= ctx.length <= MAX_BUFFER)


class _Nullable(Adapter):
    """A length-prefixed value whose length -1 is null; the value alone is handed out."""

    def _decode(self, obj: Any, context: Any, path: Any) -> Any:
        return None if obj.length < 0 else obj.data

    def _encode(self, obj: Any, context: Any, path: Any) -> Any:
        return {"length": -1, "data": None} if obj is None else {"length": len(obj), "data": obj}


class _Text(Adapter):
    """``ustring``: UTF-8 (Java's decoder replaces what does not decode)."""

    def _decode(self, obj: Any, context: Any, path: Any) -> Any:
        return None if obj is None else bytes(obj).decode("utf-8", errors="replace")

    def _encode(self, obj: Any, context: Any, path: Any) -> Any:
        return None if obj is None else obj.encode("utf-8")


def _prefixed(body: Any) -> Any:
    """The jute frame of a ``buffer``, ``ustring`` or ``vector``: an ``int`` length (or count), -1 for null."""
    return Struct("length" / Int32sb, Check(_length_ok), "data" / If(this.length >= 0, body))


#: ``buffer``: bytes, or None
Buffer = _Nullable(_prefixed(Bytes(this.length)))
#: ``ustring``: text, or None
UString = _Text(Buffer)


class _Vector(_Nullable):
    """``vector<element>``: a list, or None (its element kept for :func:`reader_of`)."""

    def __init__(self, element: Any):
        super().__init__(_prefixed(Array(this.length, element)))
        self.element = element


def Vector(element: Any) -> Any:  # noqa: N802 - a construct macro, named as construct names its own
    """``vector<element>``: a list, or None."""
    return _Vector(element)


Id = Struct("scheme" / UString, "id" / UString)
ACL = Struct("perms" / Int32sb, "id" / Id)
STAT_PERSISTED = Struct(
    "czxid" / Int64sb,
    "mzxid" / Int64sb,
    "ctime" / Int64sb,
    "mtime" / Int64sb,
    "version" / Int32sb,
    "cversion" / Int32sb,
    "aversion" / Int32sb,
    "ephemeral_owner" / Int64sb,
    "pzxid" / Int64sb,
)
FILE_HEADER = Struct("magic" / Bytes(4), "version" / Int32sb, "dbid" / Int64sb)
FILE_HEADER_SIZE = FILE_HEADER.sizeof()
#: jute ``boolean``
Boolean = Flag


# ----------------------------------------------------------------------------- the fast path
class Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


_INT, _LONG = struct.Struct(">i"), struct.Struct(">q")


class JuteReader:
    """``BinaryInputArchive`` over a stream: what :func:`reader_of` derives from the declarations reads through it
    (construct's own parser is the reference, and far slower: a test holds the two equal)."""

    def __init__(self, stream: Readable):
        self.stream = stream

    def take(self, n: int) -> bytes:
        b = self.stream.read(n)
        if len(b) < n:
            raise StreamError(f"stream read less than specified amount, expected {n}, found {len(b)}")
        return b

    def read_int(self) -> int:
        return int(_INT.unpack(self.take(4))[0])

    def read_long(self) -> int:
        return int(_LONG.unpack(self.take(8))[0])

    def read_boolean(self) -> bool:
        return self.take(1) != b"\x00"

    def read_length(self) -> int:
        n = self.read_int()
        if not -1 <= n <= MAX_BUFFER:
            raise CheckError(f"unreasonable length {n}")
        return n

    def read_buffer(self) -> bytes | None:
        n = self.read_length()
        return None if n < 0 else self.take(n)

    def read_ustring(self) -> str | None:
        b = self.read_buffer()
        return None if b is None else b.decode("utf-8", errors="replace")

    def read_vector(self, element: Callable[[JuteReader], Any]) -> list[Any] | None:
        n = self.read_length()
        return None if n < 0 else [element(self) for _ in range(n)]


def reader_of(decl: Any) -> Callable[[JuteReader], Any]:
    """The fast reader of a declaration built from this module's types (a Struct of them gives a dict)."""
    simple: dict[int, Callable[[JuteReader], Any]] = {
        id(Int32sb): JuteReader.read_int, id(Int64sb): JuteReader.read_long, id(Flag): JuteReader.read_boolean,
        id(Buffer): JuteReader.read_buffer, id(UString): JuteReader.read_ustring}
    if id(decl) in simple:
        return simple[id(decl)]
    if isinstance(decl, _Vector):
        element = reader_of(decl.element)
        return lambda r: r.read_vector(element)
    if isinstance(decl, Struct):
        fields = [(sc.name, reader_of(getattr(sc, "subcon", None))) for sc in decl.subcons if sc.name is not None]
        return lambda r: {name: read(r) for name, read in fields}
    inner = getattr(decl, "subcon", None)
    if isinstance(inner, Struct) and decl.name is None:
        return reader_of(inner)
    raise TypeError(f"no jute reader for {decl!r}")
