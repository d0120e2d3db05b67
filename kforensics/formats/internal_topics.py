"""Decoders for Kafka's internal topics, and the registry choosing one by topic name.

* ``__consumer_offsets``: ``--offsets-decoder``, :mod:`.group_coordinator`
* ``__transaction_state``: ``--transaction-log-decoder``, :mod:`.transaction_log`
* ``__share_group_state``: ``--share-group-state-decoder``, :mod:`.share_coordinator`
* ``__remote_log_metadata``: ``--remote-log-metadata-decoder``, :mod:`.remote_log_metadata`

Every decoder has ``decode(key, value) -> CoordinatorRecord`` and never
raises: an unknown record type or version, bytes that do not decode or leave
bytes behind, a null key... each becomes a :class:`~kforensics.findings.Finding`
in the result, positioned relative to the start of the key or the value
(``facts["part"]`` says which); the log layer shifts it into the file.

Coordinator framing (``CoordinatorRecordSerde``; the three coordinators)
------------------------------------------------------------------------
* key: ``int16 type`` (the key schema's apiKey; brokers before 4.0 called it
  the key version), then the key body, always non-flexible;
* value: ``int16 version``, then the value body in that version's encoding,
  or a null value: a tombstone, the deletion of the key's state.

What kafka-dump-log 4.x prints (``DumpLogSegments``, ``CoordinatorRecordMessageParser``)
---------------------------------------------------------------------------------------
With a coordinator decoder each data record line ends with
``" key: " + KEY + " payload: " + PAYLOAD`` (after the record metadata; with
``--skip-record-metadata`` the line is ``"| key: ... payload: ..."``), where::

    KEY     = {"type":"<type id as a string>","data":<key JSON>}
    PAYLOAD = {"version":"<value version as a string>","data":<value JSON>}
            | <DELETE>                                  (a tombstone)

JSON is Jackson's compact form of Kafka's generated JSON converters: camelCase
field names in schema order, tagged fields only when not equal to their
default, ``uuid`` as Kafka's base64 text, ``bytes`` as base64.  For a
``GroupMetadataValue`` whose ``protocolType`` is ``consumer`` each member's
``subscription`` and ``assignment`` are replaced by the decoded
``ConsumerProtocolSubscription``/``Assignment`` JSON (left as base64 when they
do not decode).  Example (an offset commit, value version 3; one line)::

    | offset: 7 CreateTime: 1612345678901 keySize: 18 valueSize: 24 sequence: -1 headerKeys: [] key: {"type":"1","data":{"group":"g1","topic":"orders","partition":0}} payload: {"version":"3","data":{"offset":42,"leaderEpoch":0,"metadata":"","commitTimestamp":1612345678901}}

Failures replace the key text and print no payload: ``key: Unknown record type
<type> at offset <o>, skipping.`` or ``key: Error at offset <o>, skipping.
<message>``; a null key aborts the tool (``Failed to decode message at offset
<o> using the specified decoder (message had a missing key)``).
:meth:`CoordinatorRecord.kafka_key` and :meth:`CoordinatorRecord.kafka_payload`
give the two JSON objects (``kafka_payload`` is ``"<DELETE>"`` for a
tombstone); front ends render them with ``json.dumps(obj, separators=(",",
":"), ensure_ascii=False)``.

``--remote-log-metadata-decoder`` prints no key and ``payload: `` followed by
the Java ``toString`` of the decoded metadata (see :mod:`.remote_log_metadata`).
"""  # noqa: E501 - the example line is kafka-dump-log's output, verbatim

from __future__ import annotations

import struct as _struct
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from construct import Construct

from ..findings import Finding, finding
from .message_schema import Decl, RecordType, camel, flat, kafka_json, parse_exact


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One internal-topic record, decoded as far as its bytes allow."""

    decoder: str  # the decoder's name, e.g. "offsets"
    key_type: str | None = None  # key schema name, e.g. "OffsetCommitKey" (the record type for remote metadata)
    type_id: int | None = None  # the key's int16 type (the frame's apiKey for remote metadata)
    key: dict[str, Any] | None = None
    value_type: str | None = None  # value schema name, e.g. "OffsetCommitValue"
    value_version: int | None = None
    value: dict[str, Any] | None = None
    tombstone: bool = False
    findings: list[Finding] = field(default_factory=list)
    # the compiled schemas of key and value, for kafka_key/kafka_payload (not part of the record's identity)
    _key_layout: Construct | None = field(default=None, repr=False, compare=False)
    _value_layout: Construct | None = field(default=None, repr=False, compare=False)

    def kafka_key(self) -> dict[str, Any] | None:
        """``{"type": "<id>", "data": {...}}`` as kafka-dump-log prints the key (None if it did not decode)."""
        if self.key is None or self.type_id is None:
            return None
        return {"type": str(self.type_id), "data": kafka_json(self._key_layout, self.key)}

    def kafka_payload(self) -> dict[str, Any] | str | None:
        """``{"version": "<v>", "data": {...}}``, ``"<DELETE>"`` for a tombstone, None if it did not decode."""
        if self.tombstone:
            return "<DELETE>"
        if self.value is None or self.value_version is None:
            return None
        return {"version": str(self.value_version), "data": kafka_json(self._value_layout, self.value)}


@dataclass(frozen=True)
class RecordPair:
    """A coordinator record type: its key schema (apiKey = type id) and value schema (None: key only)."""

    key: RecordType
    value: RecordType | None


def key_type(api_key: int, name: str, *fields: Decl) -> RecordType:
    """A coordinator key schema: version 0 only, never flexible."""
    return RecordType(api_key, name, 0, tuple(fields), flexible_from=None)


def value_type(api_key: int, name: str, max_version: int, *fields: Decl, flexible_from: int | None = 0,
               min_version: int = 0) -> RecordType:
    return RecordType(api_key, name, max_version, tuple(fields), min_version=min_version, flexible_from=flexible_from)


#: hooks: after_decode(value_type_name, value_dict, value_bytes, findings) and before_encode(name, value_dict)
AfterDecode = Callable[[str, dict[str, Any], bytes, list[Finding]], None]
BeforeEncode = Callable[[str, dict[str, Any]], dict[str, Any]]


class CoordinatorSerde:
    """Decode and encode the records of one coordinator's topic (int16 type keys, int16 versioned values)."""

    def __init__(self, name: str, flag: str, pairs: list[RecordPair], *, after_decode: AfterDecode | None = None,
                 before_encode: BeforeEncode | None = None) -> None:
        self.name = name
        self.flag = flag
        self.pairs = list(pairs)
        self.by_id = {p.key.api_key: p for p in self.pairs}
        self.by_name = {p.key.name: p for p in self.pairs}
        self.by_name.update({p.value.name: p for p in self.pairs if p.value is not None and p.value.name
                             not in self.by_name})
        self.after_decode = after_decode
        self.before_encode = before_encode

    def _finding(self, code: str, message: str, position: int | None, part: str, **facts: Any) -> Finding:
        return finding(code, message, position=position, part=part, decoder=self.name, **facts)

    def decode(self, key: bytes | None, value: bytes | None) -> CoordinatorRecord:
        """The decoded record; never raises (problems are findings)."""
        fs: list[Finding] = []
        out: dict[str, Any] = {"decoder": self.name, "findings": fs}
        try:
            self._decode(None if key is None else bytes(key), None if value is None else bytes(value), out, fs)
        except Exception as e:  # noqa: BLE001 - a decoder never raises; this is a bug, reported as a finding
            fs.append(self._finding("INTERNAL_RECORD_DECODE_ERROR", f"decoder failure: {flat(e)}", None, "value"))
        return CoordinatorRecord(**out)

    def _decode(self, key: bytes | None, value: bytes | None, out: dict[str, Any], fs: list[Finding]) -> None:
        if key is None:
            fs.append(self._finding("INTERNAL_RECORD_MISSING_KEY", "record with a null key", 0, "key"))
            return
        if len(key) < 2:
            fs.append(self._finding("INTERNAL_RECORD_DECODE_ERROR",
                                    f"key of {len(key)} byte(s) has no 2-byte record type", 0, "key"))
            return
        type_id = _struct.unpack_from(">h", key)[0]
        out["type_id"] = type_id
        pair = self.by_id.get(type_id)
        if pair is None:
            fs.append(self._finding("INTERNAL_RECORD_UNKNOWN_TYPE", f"unknown record type {type_id}", 0, "key",
                                    type_id=type_id))
            return
        out["key_type"] = pair.key.name
        layout = pair.key.layout(0)
        out["_key_layout"] = layout
        data, end, err = parse_exact(layout, key, 2)
        if err is not None:
            fs.append(self._finding("INTERNAL_RECORD_DECODE_ERROR", f"{pair.key.name} does not decode: {err}", end,
                                    "key", type=pair.key.name))
        else:
            out["key"] = data
            if end != len(key):
                fs.append(self._finding("INTERNAL_RECORD_TRAILING_BYTES",
                                        f"{len(key) - end} byte(s) left after {pair.key.name}", end, "key"))
        if value is None:
            out["tombstone"] = True
            return
        vt = pair.value
        if vt is None:  # a key-only record type carrying a value
            fs.append(self._finding("INTERNAL_RECORD_DECODE_ERROR", f"{pair.key.name} takes no value", 0, "value"))
            return
        out["value_type"] = vt.name
        if len(value) < 2:
            fs.append(self._finding("INTERNAL_RECORD_DECODE_ERROR",
                                    f"value of {len(value)} byte(s) has no 2-byte version", 0, "value"))
            return
        version = _struct.unpack_from(">h", value)[0]
        out["value_version"] = version
        if version not in vt.versions:
            fs.append(self._finding("INTERNAL_RECORD_UNKNOWN_VERSION",
                                    f"{vt.name} version {version} unknown (known {vt.min_version}-{vt.max_version})",
                                    0, "value", type=vt.name, version=version))
            return
        layout = vt.layout(version)
        out["_value_layout"] = layout
        data, end, err = parse_exact(layout, value, 2)
        if err is not None:
            fs.append(self._finding("INTERNAL_RECORD_DECODE_ERROR", f"{vt.name} v{version} does not decode: {err}",
                                    end, "value", type=vt.name, version=version))
            return
        if end != len(value):
            fs.append(self._finding("INTERNAL_RECORD_TRAILING_BYTES",
                                    f"{len(value) - end} byte(s) left after {vt.name} v{version}", end, "value"))
        if self.after_decode is not None:
            self.after_decode(vt.name, data, value, fs)
        out["value"] = data

    def encode(self, type_name: str, version: int | None, key: dict[str, Any],
               value: dict[str, Any] | None) -> tuple[bytes, bytes | None]:
        """Key and value bytes of one record; ``value`` None makes a tombstone.

        ``type_name`` is the key or value schema name.  Field names may be in
        the schema files' PascalCase.  Raises ``ValueError`` for an unknown
        type or version or fields that do not fit (a caller's mistake).
        """
        pair = self.by_name.get(type_name)
        if pair is None:
            raise ValueError(f"{self.name}: no record type {type_name}")
        try:
            kb = _struct.pack(">h", pair.key.api_key) + pair.key.layout(0).build(camel(key))
        except Exception as e:  # noqa: BLE001 - caller data of any shape
            raise ValueError(f"{pair.key.name}: {flat(e)}") from None
        if value is None:
            return kb, None
        vt = pair.value
        if vt is None or version is None or version not in vt.versions:
            raise ValueError(f"{self.name}: no value {vt.name if vt else type_name} v{version}")
        data = camel(value)
        if self.before_encode is not None:
            data = self.before_encode(vt.name, data)
        try:
            vb = _struct.pack(">h", version) + vt.layout(version).build(data)
        except Exception as e:  # noqa: BLE001 - caller data of any shape
            raise ValueError(f"{vt.name} v{version}: {flat(e)}") from None
        return kb, vb


# --------------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class InternalTopic:
    """An internal topic and how kafka-dump-log is told to decode it."""

    topic: str
    flag: str
    module: str  # the kforensics.formats module holding its decode/encode


INTERNAL_TOPICS: list[InternalTopic] = [
    InternalTopic("__consumer_offsets", "--offsets-decoder", "group_coordinator"),
    InternalTopic("__transaction_state", "--transaction-log-decoder", "transaction_log"),
    InternalTopic("__share_group_state", "--share-group-state-decoder", "share_coordinator"),
    InternalTopic("__remote_log_metadata", "--remote-log-metadata-decoder", "remote_log_metadata"),
]
BY_TOPIC = {t.topic: t for t in INTERNAL_TOPICS}
BY_FLAG = {t.flag: t for t in INTERNAL_TOPICS}


def _module(t: InternalTopic) -> ModuleType:
    import importlib

    # imported on use: the decoder modules import this one for CoordinatorSerde
    return importlib.import_module(f"{__package__}.{t.module}")


def decoder_for_topic(topic: str) -> ModuleType | None:
    """The decoder module of an internal topic (``decode``/``encode``), or None for any other topic."""
    t = BY_TOPIC.get(topic)
    return None if t is None else _module(t)


def decoder_for_flag(flag: str) -> ModuleType:
    """The decoder module kafka-dump-log's flag names (``--offsets-decoder`` ...); KeyError if unknown."""
    return _module(BY_FLAG[flag])


def decode(topic: str, key: bytes | None, value: bytes | None) -> CoordinatorRecord | None:
    """Decode one record of ``topic`` (None when the topic is not an internal topic kforensics decodes)."""
    mod = decoder_for_topic(topic)
    return None if mod is None else mod.decode(key, value)
