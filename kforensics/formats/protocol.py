"""Kafka's protocol-message encodings as Construct building blocks.

Flexible versions (KRaft control and metadata records, and the flexible
versions of every other message): strings, bytes and arrays are *compact*
(``uvarint(n + 1)``, 0 meaning null), and every struct ends with a
tagged-field section (``uvarint count``, then per field ``uvarint tag,
uvarint size, bytes``).  Unknown tags are kept as raw bytes so that
``build(parse(x)) == x``.

Non-flexible ("classic") versions: strings have an INT16 length, bytes an
INT32 length and arrays an INT32 count, -1 meaning null; structs have no
tagged-field section (:class:`ClassicString`, :class:`ClassicBytes`,
:class:`ClassicArray`).

Array counts are checked against the bytes left before any element is read:
every element takes at least one byte, so a larger count is damage, and is
refused without looping or allocating.
"""

from __future__ import annotations

import base64
from typing import IO, Any

from construct import (
    Adapter,
    Bytes,
    Construct,
    Container,
    ExplicitError,
    Int16sb,
    Int32sb,
    ListContainer,
    Struct,
    stream_read,
    stream_write,
)

from .varint import UVarInt


def remaining(stream: IO[bytes]) -> int | None:
    """Bytes left in a seekable stream (None when it cannot tell)."""
    try:
        here = stream.tell()
        end = stream.seek(0, 2)
        stream.seek(here)
    except (AttributeError, OSError, ValueError):
        return None
    return end - here


def _check_count(count: int, stream: IO[bytes], path: str) -> None:
    left = remaining(stream)
    if left is not None and count > left:
        # every element is at least one byte: refuse before looping
        raise ExplicitError(f"array of {count} elements in {left} remaining bytes", path=path)


class CompactBytes(Construct):
    """``uvarint(len + 1)`` then the bytes; ``None`` for null (0)."""

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> bytes | None:
        n = UVarInt._parsereport(stream, context, path)
        return None if n == 0 else stream_read(stream, n - 1, path)

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        if obj is None:
            UVarInt._build(0, stream, context, path)
            return obj
        data = bytes(obj)
        UVarInt._build(len(data) + 1, stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class CompactString(Adapter):
    """A compact UTF-8 string (``None`` for null)."""

    def __init__(self) -> None:
        super().__init__(CompactBytes())

    def _decode(self, obj: bytes | None, context: Container, path: str) -> str | None:
        return None if obj is None else obj.decode("utf-8", errors="replace")

    def _encode(self, obj: str | None, context: Container, path: str) -> bytes | None:
        return None if obj is None else obj.encode("utf-8")


class CompactArray(Construct):
    """``uvarint(count + 1)`` then the elements; ``None`` for null (0)."""

    def __init__(self, subcon: Construct):
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> ListContainer | None:
        n = UVarInt._parsereport(stream, context, path)
        if n == 0:
            return None
        _check_count(n - 1, stream, path)
        return ListContainer(self.subcon._parsereport(stream, context, path) for _ in range(n - 1))

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        if obj is None:
            UVarInt._build(0, stream, context, path)
            return obj
        UVarInt._build(len(obj) + 1, stream, context, path)
        for item in obj:
            self.subcon._build(item, stream, context, path)
        return obj


class ClassicBytes(Construct):
    """Non-flexible bytes: ``int32 length`` then the bytes; ``None`` for null (-1)."""

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> bytes | None:
        n = Int32sb._parsereport(stream, context, path)
        if n < 0:
            if n != -1:
                raise ExplicitError(f"negative bytes length {n}", path=path)
            return None
        return stream_read(stream, n, path)

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        if obj is None:
            Int32sb._build(-1, stream, context, path)
            return obj
        data = bytes(obj)
        Int32sb._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class ClassicString(Construct):
    """Non-flexible UTF-8 string: ``int16 length`` then the bytes; ``None`` for null (-1)."""

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> str | None:
        n = Int16sb._parsereport(stream, context, path)
        if n < 0:
            if n != -1:
                raise ExplicitError(f"negative string length {n}", path=path)
            return None
        return stream_read(stream, n, path).decode("utf-8", errors="replace")

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        if obj is None:
            Int16sb._build(-1, stream, context, path)
            return obj
        data = obj.encode("utf-8")
        if len(data) > 0x7FFF:
            raise ExplicitError(f"string of {len(data)} bytes does not fit an int16 length", path=path)
        Int16sb._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class ClassicArray(Construct):
    """Non-flexible array: ``int32 count`` then the elements; ``None`` for null (-1)."""

    def __init__(self, subcon: Construct):
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> ListContainer | None:
        n = Int32sb._parsereport(stream, context, path)
        if n < 0:
            if n != -1:
                raise ExplicitError(f"negative array count {n}", path=path)
            return None
        _check_count(n, stream, path)
        return ListContainer(self.subcon._parsereport(stream, context, path) for _ in range(n))

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        if obj is None:
            Int32sb._build(-1, stream, context, path)
            return obj
        Int32sb._build(len(obj), stream, context, path)
        for item in obj:
            self.subcon._build(item, stream, context, path)
        return obj


class TaggedFields(Construct):
    """The tagged-field section closing a flexible struct: ``{tag: raw bytes}`` in ascending tag order."""

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> dict[int, bytes]:
        count = UVarInt._parsereport(stream, context, path)
        fields = {}
        last = -1
        for _ in range(count):
            tag = UVarInt._parsereport(stream, context, path)
            if tag <= last:
                raise ExplicitError(f"tagged fields out of order ({tag} after {last})", path=path)
            last = tag
            size = UVarInt._parsereport(stream, context, path)
            fields[tag] = stream_read(stream, size, path)
        return fields

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        obj = obj or {}
        UVarInt._build(len(obj), stream, context, path)
        for tag in sorted(obj):
            UVarInt._build(tag, stream, context, path)
            UVarInt._build(len(obj[tag]), stream, context, path)
            stream_write(stream, obj[tag], len(obj[tag]), path)
        return obj


def uuid_to_str(raw: bytes) -> str:
    """Kafka's text form of a Uuid: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def str_to_uuid(text: str) -> bytes:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return raw


class Uuid(Adapter):
    """16 bytes, shown in Kafka's base64 text form."""

    def __init__(self) -> None:
        super().__init__(Bytes(16))

    def _decode(self, obj: bytes, context: Container, path: str) -> str:
        return uuid_to_str(obj)

    def _encode(self, obj: str, context: Container, path: str) -> bytes:
        return str_to_uuid(obj)


def flexible(*fields: Construct) -> Struct:
    """A flexible-version struct: the given fields followed by the tagged-field section."""
    return Struct(*fields, "_tagged" / TaggedFields())
