"""A key's or value's text in a record's line and its object in the dump's NDJSON, for bytes that are there (the
per-record path's :func:`~kforensics.cli.common.payload_text` and ``serialize.payload``, with their common case
first); shared by the chunked and the columnar renderers."""

from __future__ import annotations

import base64
import json

from .common import payload_text


def value_text(data: bytes | bytearray) -> str:
    """:func:`payload_text` of bytes that are there, with its common case (printable UTF-8) first."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return payload_text(bytes(data))
    return text if text.isprintable() else payload_text(bytes(data))


def json_payload(data: bytes | bytearray) -> str:
    """``serialize.payload`` of bytes that are there, as the JSON text the dump's serializer writes."""
    try:
        return '{"encoding": "utf-8", "data": ' + json.dumps(data.decode("utf-8"), ensure_ascii=False) + "}"
    except UnicodeDecodeError:
        return '{"encoding": "base64", "data": "' + base64.b64encode(data).decode("ascii") + '"}'
