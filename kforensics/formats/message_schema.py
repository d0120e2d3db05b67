"""One way to declare Kafka's protocol-message schemas: field tables compiled to Construct per version.

Every Kafka message that kforensics decodes (KRaft metadata records, the
records of the internal topics, the embedded consumer protocol) is declared
once as a :class:`RecordType`: its fields in wire order, each present from
(and until) some version, tagged fields marked with their tag.  For one
version the table compiles to a Construct declaration:

* in a *flexible* version (``flexibleVersions``), a :class:`Flexible` struct:
  compact strings, bytes and arrays, and a tagged-field section closing every
  struct; tags the table does not know are kept as hex under
  ``_unknownTaggedFields`` so that a record re-encodes byte for byte;
* in a *non-flexible* version, a :class:`NonFlexible` struct: INT16-length
  strings, INT32-length bytes, INT32-count arrays, no tagged fields.

Field types are either plain Construct types (``Int32sb``, ``Uuid()``, ...,
the same in both encodings) or the encoding-dependent types below
(:data:`STRING`, :func:`array`, :func:`struct`, ...), which the compiler
resolves for the version's encoding.  Decoded values use the camelCase names
of Kafka's JSON converters; ``uuid`` is Kafka's base64 text and ``bytes``
standard base64.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar, cast, overload

from construct import (
    Adapter,
    Construct,
    Container,
    ExplicitError,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int64sb,
    ListContainer,
    Renamed,
    SizeofError,
    stream_read,
    stream_write,
)

from .protocol import ClassicArray, ClassicBytes, ClassicString, CompactArray, CompactBytes, CompactString, Uuid
from .varint import UVarInt

#: key of a decoded struct holding tagged fields the schema does not know: ``{tag: hex}``
UNKNOWN_TAGS = "_unknownTaggedFields"

_T = TypeVar("_T")


# --------------------------------------------------------------------------- building blocks
class NotNull(Adapter):
    """A string/bytes/array/struct that the schema declares non-nullable: null on the wire is an error."""

    def _decode(self, obj: _T | None, context: Container, path: str) -> _T:
        if obj is None:
            # Kafka's generated readers refuse a null in a non-nullable field
            raise ExplicitError("null in a non-nullable field", path=path)
        return obj

    def _encode(self, obj: _T | None, context: Container, path: str) -> _T:
        if obj is None:
            raise ExplicitError("None for a non-nullable field", path=path)
        return obj


class Base64Bytes(Adapter):
    """``bytes`` shown as standard base64 text (how Kafka's JSON form writes them).

    By default non-nullable and compact (the flexible encoding); ``classic``
    selects the INT32-length form, ``nullable`` lets null through as None.
    """

    def __init__(self, *, classic: bool = False, nullable: bool = False) -> None:
        raw = ClassicBytes() if classic else CompactBytes()
        super().__init__(raw if nullable else NotNull(raw))
        self.nullable = nullable

    def _decode(self, obj: bytes | None, context: Container, path: str) -> str | None:
        return None if obj is None else base64.b64encode(obj).decode("ascii")

    def _encode(self, obj: Any, context: Container, path: str) -> bytes | None:
        # obj is whatever the caller handed to build(): None, bytes-like, base64 text, or something refused below
        if obj is None or isinstance(obj, (bytes, bytearray, memoryview)):
            return None if obj is None else bytes(obj)
        try:
            return base64.b64decode(obj, validate=True)
        except (binascii.Error, TypeError, ValueError) as e:
            raise ExplicitError(f"not base64: {obj!r} ({e})", path=path) from None


class NullableStruct(Construct):
    """A nullable struct field: ``int8`` marker (-1 null, otherwise present) then the struct."""

    def __init__(self, subcon: Construct) -> None:
        super().__init__()
        self.subcon = subcon

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> Any:
        # Kafka reads any negative marker as null and writes -1 / 1
        if Int8sb._parsereport(stream, context, path) < 0:
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        if obj is None:
            Int8sb._build(-1, stream, context, path)
            return obj
        Int8sb._build(1, stream, context, path)
        return self.subcon._build(obj, stream, context, path)


def _check_keys(struct: NonFlexible | Flexible, obj: object, path: str) -> None:
    if not isinstance(obj, dict):
        raise ExplicitError(f"a struct needs a dict, got {type(obj).__name__}", path=path)
    extra = sorted(set(obj) - struct.names)
    if extra:
        raise ExplicitError(f"no such field(s) in this record version: {', '.join(extra)}", path=path)


class NonFlexible(Construct):
    """A non-flexible struct: ``fields`` in order and nothing else."""

    def __init__(self, *fields: Renamed) -> None:
        super().__init__()
        self.fields = list(fields)
        self.names = {f.name for f in self.fields}

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> dict[str, Any]:
        return {f.name: f._parsereport(stream, context, f"{path} -> {f.name}") for f in self.fields}

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        _check_keys(self, obj, path)
        for f in self.fields:
            if f.name not in obj:
                raise ExplicitError(f"missing field {f.name}", path=path)
            f._build(obj[f.name], stream, context, f"{path} -> {f.name}")
        return obj

    def _sizeof(self, context: Container, path: str) -> int:
        raise SizeofError("message structs have no fixed size", path=path)


class Flexible(Construct):
    """A flexible-version struct: ``fields`` in order, then the tagged-field section.

    ``tagged`` maps tag numbers to named fields; each is decoded from its tag's
    bytes (which it must fill exactly).  Unknown tags end up in
    ``_unknownTaggedFields`` as ``{tag: hex}``.  Building writes a tagged field
    when its name is a key of the object, and refuses keys the struct does not
    have (a misspelt field would otherwise vanish silently).  ``order``, when
    given, is the schema's declaration order of all field names: decoded
    dicts follow it (Kafka's JSON form interleaves tagged fields that way).
    ``defaults`` holds the schema default of each tagged field.
    """

    def __init__(self, *fields: Renamed, tagged: dict[int, Renamed] | None = None,
                 order: list[str] | None = None, defaults: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.fields = list(fields)
        self.tagged = dict(sorted((tagged or {}).items()))
        self.names = {f.name for f in self.fields} | {f.name for f in self.tagged.values()} | {UNKNOWN_TAGS}
        self.order = order
        self.defaults = dict(defaults or {})

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for f in self.fields:
            obj[f.name] = f._parsereport(stream, context, f"{path} -> {f.name}")
        count = UVarInt._parsereport(stream, context, path)
        last = -1
        unknown: dict[int, str] = {}
        for _ in range(count):
            tag = UVarInt._parsereport(stream, context, path)
            if tag <= last:
                # the writer sorts tags and writes each once; anything else is damage
                raise ExplicitError(f"tagged fields out of order ({tag} after {last})", path=path)
            last = tag
            size = UVarInt._parsereport(stream, context, path)
            raw = stream_read(stream, size, path)
            tf = self.tagged.get(tag)
            if tf is None:
                unknown[tag] = raw.hex()
                continue
            sub = io.BytesIO(raw)
            obj[tf.name] = tf._parsereport(sub, context, f"{path} -> {tf.name}")
            if sub.tell() != size:
                raise ExplicitError(f"tagged field {tf.name} (tag {tag}) leaves {size - sub.tell()} of {size} bytes",
                                    path=path)
        if self.order:
            obj = {name: obj[name] for name in self.order if name in obj}
        if unknown:
            obj[UNKNOWN_TAGS] = unknown
        return obj

    def _build(self, obj: Any, stream: IO[bytes], context: Container, path: str) -> Any:
        _check_keys(self, obj, path)
        for f in self.fields:
            if f.name not in obj:
                raise ExplicitError(f"missing field {f.name}", path=path)
            f._build(obj[f.name], stream, context, f"{path} -> {f.name}")
        entries: dict[int, bytes] = {}
        for tag, f in self.tagged.items():
            if f.name in obj:
                entries[tag] = f.build(obj[f.name])
        for tag, raw in (obj.get(UNKNOWN_TAGS) or {}).items():
            tag = int(tag)
            if tag in self.tagged or tag in entries:
                raise ExplicitError(f"unknown tagged field {tag} is a known tag of this record", path=path)
            entries[tag] = bytes.fromhex(raw) if isinstance(raw, str) else bytes(raw)
        UVarInt._build(len(entries), stream, context, path)
        for tag in sorted(entries):
            UVarInt._build(tag, stream, context, path)
            UVarInt._build(len(entries[tag]), stream, context, path)
            stream_write(stream, entries[tag], len(entries[tag]), path)
        return obj

    def _sizeof(self, context: Container, path: str) -> int:
        raise SizeofError("flexible structs have no fixed size", path=path)


# --------------------------------------------------------------------------- declarations
@dataclass(frozen=True)
class Since:
    """A field that exists from record version ``version`` on (and up to ``until`` when given)."""

    version: int
    field: Renamed | Tagged
    until: int | None = None

    def present(self, version: int) -> bool:
        return version >= self.version and (self.until is None or version <= self.until)


def since(version: int, sub: Renamed | Tagged, until: int | None = None) -> Since:
    return Since(version, sub, until)


def only(low: int, high: int, sub: Renamed | Tagged) -> Since:
    """A field of versions ``low`` to ``high`` only (the schema's ``"versions": "1"`` or ``"0-3"``)."""
    return Since(low, sub, high)


@dataclass(frozen=True)
class Tagged:
    """A tagged field declared in place (as the schema files do): ``tag``, the named field, its default."""

    tag: int
    field: Renamed
    default: Any = None  # the schema's default: any JSON value


def tagged(tag: int, sub: Renamed, default: Any = None) -> Tagged:
    return Tagged(tag, sub, default)


#: one entry of a field table: a named field, a field of some versions only, or a tagged field
Decl = Renamed | Since | Tagged


class Spec(Construct):
    """A field type whose wire form depends on the encoding; compiled away before use."""

    def resolve(self, version: int, flexible: bool) -> Construct:
        raise NotImplementedError

    def _parse(self, stream: IO[bytes], context: Container, path: str) -> Any:
        raise ExplicitError("an uncompiled schema type was used directly", path=path)

    # NB: _build is _parse, so building an uncompiled type fails with a TypeError (one argument too many),
    # not the ExplicitError above; kept as it is (typing only)
    _build = _parse  # type: ignore[assignment]


class _Str(Spec):
    def __init__(self, nullable: bool) -> None:
        super().__init__()
        self.nullable = nullable

    def resolve(self, version: int, flexible: bool) -> Construct:
        con = CompactString() if flexible else ClassicString()
        return con if self.nullable else NotNull(con)


class _Bytes(Spec):
    def __init__(self, nullable: bool) -> None:
        super().__init__()
        self.nullable = nullable

    def resolve(self, version: int, flexible: bool) -> Construct:
        return Base64Bytes(classic=not flexible, nullable=self.nullable)


class _Array(Spec):
    def __init__(self, element: Construct, nullable: bool) -> None:
        super().__init__()
        self.element = element
        self.nullable = nullable

    def resolve(self, version: int, flexible: bool) -> Construct:
        el = resolve(self.element, version, flexible)
        con = CompactArray(el) if flexible else ClassicArray(el)
        return con if self.nullable else NotNull(con)


class StructSpec(Spec):
    """A (nested or top-level) struct: its field table."""

    def __init__(self, *fields: Decl, tagged: dict[int, Renamed | Since] | None = None,
                 nullable: bool = False) -> None:
        super().__init__()
        self.decls = list(fields)
        self.extra_tagged = dict(tagged or {})  # the metadata-record style: tags given apart
        self.nullable = nullable

    def resolve(self, version: int, flexible: bool) -> Construct:
        def present(d: Decl) -> bool:
            return not isinstance(d, Since) or d.present(version)

        def unwrap(d: Decl) -> Renamed | Tagged:
            return d.field if isinstance(d, Since) else d

        regular: list[Renamed] = []
        tags: dict[int, Renamed] = {}
        order: list[str] = []
        defaults: dict[str, Any] = {}
        for d in self.decls:
            if not present(d):
                continue
            d = unwrap(d)
            if isinstance(d, Tagged):
                if flexible:  # tagged fields exist in flexible versions only
                    f = resolve(d.field, version, True)
                    tags[d.tag] = f
                    order.append(f.name)
                    defaults[f.name] = d.default
                continue
            f = resolve(d, version, flexible)
            regular.append(f)
            order.append(f.name)
        if flexible:
            for tag, d in self.extra_tagged.items():
                if present(d):
                    # the tags given apart are named fields (a Tagged here would declare its tag twice)
                    tags[tag] = resolve(cast(Renamed, unwrap(d)), version, True)
            inline = bool(order) and len(order) != len(regular)
            con: Flexible | NonFlexible = Flexible(*regular, tagged=tags, order=order if inline else None,
                                                   defaults=defaults)
        else:
            con = NonFlexible(*regular)
        return NullableStruct(con) if self.nullable else con


@overload
def resolve(con: Renamed, version: int, flexible: bool) -> Renamed: ...
@overload
def resolve(con: Construct, version: int, flexible: bool) -> Construct: ...
def resolve(con: Construct, version: int, flexible: bool) -> Construct:
    """The concrete Construct of a declared field or type for one version and encoding."""
    if isinstance(con, Renamed):
        return Renamed(resolve(con.subcon, version, flexible), newname=con.name)
    if isinstance(con, Spec):
        return con.resolve(version, flexible)
    return con


# field types, named after the schema's type strings
INT8, INT16, INT32, INT64, UINT16, FLOAT64, BOOL = Int8sb, Int16sb, Int32sb, Int64sb, Int16ub, Float64b, Flag
UUID = Uuid()
STRING = _Str(False)
NULLABLE_STRING = _Str(True)
BYTES = _Bytes(False)
NULLABLE_BYTES = _Bytes(True)


def array(element: Construct) -> Spec:
    """``[]element``, non-nullable."""
    return _Array(element, False)


def nullable_array(element: Construct) -> Spec:
    return _Array(element, True)


def struct(*fields: Decl, tagged: dict[int, Renamed | Since] | None = None) -> StructSpec:
    """A nested struct type (its fields declared as at the top level)."""
    return StructSpec(*fields, tagged=tagged)


def nullable_struct(*fields: Decl) -> StructSpec:
    return StructSpec(*fields, nullable=True)


# --------------------------------------------------------------------------- record types
@dataclass(frozen=True)
class RecordType:
    """One message type: its apiKey, name, valid versions and fields (some only in some versions).

    ``flexible_from`` is the first flexible version (None: never flexible).
    ``tagged`` gives tagged fields apart from ``fields`` (the metadata records'
    style); :func:`tagged` declares them in place instead.
    """

    api_key: int
    name: str
    max_version: int
    fields: tuple[Decl, ...] = ()
    tagged: dict[int, Renamed | Since] = field(default_factory=dict)
    min_version: int = 0
    flexible_from: int | None = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "_layouts", {})

    @property
    def versions(self) -> range:
        return range(self.min_version, self.max_version + 1)

    def flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def layout(self, version: int) -> Construct:
        """The Construct declaration of this record at ``version`` (compiled once)."""
        cache: dict[int, Construct] = self._layouts  # type: ignore[attr-defined]
        if version not in cache:
            if version not in self.versions:
                raise KeyError(f"{self.name} has no version {version}")
            cache[version] = StructSpec(*self.fields, tagged=self.tagged).resolve(version, self.flexible(version))
        return cache[version]


# --------------------------------------------------------------------------- helpers for decoders
def plain(obj: Any) -> Any:
    """Construct's ListContainers and Containers as plain lists and dicts."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, ListContainer)):
        return [plain(v) for v in obj]
    return obj


def flat(e: Exception) -> str:
    """An exception's message on one line."""
    return str(e).replace("\n", " ").strip() or type(e).__name__


def camel(obj: Any) -> Any:
    """Field names of the schema files (PascalCase) as Kafka's JSON form spells them (camelCase)."""
    if isinstance(obj, dict):
        return {(k[0].lower() + k[1:] if isinstance(k, str) and k and k[0].isupper() else k):
                (v if k == UNKNOWN_TAGS else camel(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [camel(v) for v in obj]
    return obj


def parse_exact(con: Construct, data: bytes, start: int = 0) -> tuple[Any, int, str | None]:
    """Parse ``data[start:]`` with ``con``: ``(value, end, error)``.

    Never raises: ``error`` is the one-line reason the bytes do not decode and
    ``end`` the byte position reached (where the failure was seen); on
    success ``end`` is where the value ended (callers judge trailing bytes).
    """
    s = io.BytesIO(data)
    s.seek(start)
    try:
        value = con.parse_stream(s)
    except Exception as e:  # noqa: BLE001 - hostile bytes: every failure to decode is a decode error
        return None, s.tell(), flat(e)
    return plain(value), s.tell(), None


def kafka_json(con: Construct | None, obj: Any) -> Any:
    """A decoded value as Kafka's JSON converters show it.

    Drops what kforensics keeps only for byte-exact re-encoding: unknown
    tagged fields, keys starting with ``_`` (e.g. an embedded message's
    ``_version``), and tagged fields equal to their schema default (Kafka
    writes a tagged field only when it differs from the default).
    """
    while isinstance(con, (Renamed, NotNull)):
        con = con.subcon
    if obj is None:
        return None
    if isinstance(con, NullableStruct):
        return kafka_json(con.subcon, obj)
    if isinstance(con, (Flexible, NonFlexible)) and isinstance(obj, dict):
        subs = {f.name: f.subcon for f in con.fields}
        if isinstance(con, Flexible):
            subs.update({f.name: f.subcon for f in con.tagged.values()})
            skip = {n for n, d in con.defaults.items() if n in obj and obj[n] == d}
        else:
            skip = set()
        return {k: kafka_json(subs[k], v) if k in subs else v for k, v in obj.items()
                if not k.startswith("_") and k not in skip}
    if isinstance(con, (CompactArray, ClassicArray)) and isinstance(obj, list):
        return [kafka_json(con.subcon, v) for v in obj]
    if isinstance(obj, dict):  # an embedded message decoded in place of its bytes
        return {k: v for k, v in obj.items() if not k.startswith("_")}
    return obj


__all__ = [
    "UNKNOWN_TAGS", "NotNull", "Base64Bytes", "NullableStruct", "NonFlexible", "Flexible", "Since", "since", "only",
    "Tagged", "tagged", "Spec", "StructSpec", "resolve", "RecordType", "INT8", "INT16", "INT32", "INT64", "UINT16",
    "FLOAT64", "BOOL", "UUID", "STRING", "NULLABLE_STRING", "BYTES", "NULLABLE_BYTES", "array", "nullable_array",
    "struct", "nullable_struct", "plain", "flat", "camel", "parse_exact", "kafka_json",
]
