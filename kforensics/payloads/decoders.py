"""Decoding framed payloads with their registered schema, for display (never to change what is exported).

Built in: Avro (``fastavro``'s schemaless reader over the registry's
schema) and JSON Schema (the payload is the JSON text).  Any other schema
type goes to a plug-in: an entry point in the group
``kforensics.payload_decoders`` whose name is the schema type (``PROTOBUF``,
...) and whose object is a callable ``(schema: str, payload: bytes) ->
JSON-able value``; it may raise to say the payload does not decode.  A
payload that does not decode stays bytes: the decoder returns the reason,
and :meth:`PayloadDecoder.findings` gives one ``PAYLOAD_UNDECODABLE`` per
topic, schema id and reason, with a count.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

from ..findings import Finding, finding
from .registry import RegisteredSchema, SchemaRegistry
from .wire import framed

ENTRY_POINT_GROUP = "kforensics.payload_decoders"
Plugin = Callable[[str, bytes], Any]


def _json_default(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (decimal.Decimal, uuid.UUID)):
        return str(v)
    raise TypeError(f"{type(v).__name__} is not JSON-able")


def plugins() -> dict[str, Plugin]:
    """The installed decoders by schema type (entry points; none unless a package registers one)."""
    from importlib.metadata import entry_points

    out: dict[str, Plugin] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        out[ep.name.upper()] = ep.load()
    return out


class PayloadDecoder:
    """Decodes keys and values framed for the registry whose schemas the evidence holds."""

    def __init__(self, registry: SchemaRegistry, extra: dict[str, Plugin] | None = None):
        self.registry = registry
        self.extra = plugins() if extra is None else extra
        self._avro: dict[int, Any] = {}
        self._failures: dict[tuple[str, int | None, str], int] = {}

    def __call__(self, topic: str, is_key: bool, data: bytes | None) -> tuple[str | None, int | None, str | None]:
        """``(JSON text, schema id, None)`` when the bytes decode, ``(None, id, reason)`` when framed but not
        decodable, ``(None, None, None)`` when not framed for the registry (nothing to say)."""
        f = framed(data)
        if f is None:
            return None, None, None
        schema_id, body = f
        schema = self.registry.get(schema_id)
        if schema is None:
            return self._fail(topic, schema_id, f"schema id {schema_id} is not in the registry topic")
        try:
            value = self._decode(schema, body)
            return json.dumps(value, default=_json_default, ensure_ascii=False), schema_id, None
        except Exception as e:  # noqa: BLE001 - any failure of a decoder (or a plug-in) leaves the bytes as they are
            return self._fail(topic, schema_id, f"{schema.schema_type} payload does not decode with schema "
                                                f"{schema_id}: {type(e).__name__}: {e}")

    def _decode(self, schema: RegisteredSchema, body: bytes) -> Any:
        kind = schema.schema_type.upper()
        if kind == "AVRO":
            import fastavro

            parsed = self._avro.get(schema.schema_id)
            if parsed is None:
                parsed = self._avro[schema.schema_id] = fastavro.parse_schema(json.loads(schema.schema))
            buf = io.BytesIO(body)
            value = fastavro.schemaless_reader(buf, parsed, None)
            if buf.tell() != len(body):
                raise ValueError(f"{len(body) - buf.tell()} bytes after the record")
            return value
        if kind == "JSON":
            return json.loads(body)
        plugin = self.extra.get(kind)
        if plugin is None:
            raise LookupError(f"no decoder for schema type {kind} (install one under the entry point group "
                              f"{ENTRY_POINT_GROUP})")
        return plugin(schema.schema, body)

    def _fail(self, topic: str, schema_id: int | None, reason: str) -> tuple[None, int | None, str]:
        k = (topic, schema_id, reason)
        self._failures[k] = self._failures.get(k, 0) + 1
        return None, schema_id, reason

    def findings(self) -> list[Finding]:
        """One PAYLOAD_UNDECODABLE per topic, schema id and reason, with the number of payloads."""
        return [finding("PAYLOAD_UNDECODABLE", f"topic {t}: {n} payload(s) stay bytes: {reason}", topic=t,
                        schema_id=sid, payloads=n) for (t, sid, reason), n in self._failures.items()]
