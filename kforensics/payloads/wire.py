"""The Confluent Schema Registry wire format: magic byte 0, the schema id (4 bytes, big-endian), the payload.

As Confluent documents it ("Wire format", Schema Registry serializers and
deserializers): byte 0 is the magic byte ``0``, bytes 1-4 the schema id the
registry assigned, then the data in the schema's format (Avro binary
encoding; JSON Schema: the JSON text; Protobuf: message indexes, then the
message).  Pure: bytes in, values out.
"""

from __future__ import annotations

MAGIC = 0
HEADER = 5


def framed(data: bytes | None) -> tuple[int, bytes] | None:
    """``(schema id, payload)`` of a framed key or value, None when the bytes carry no frame."""
    if data is None or len(data) < HEADER or data[0] != MAGIC:
        return None
    return int.from_bytes(data[1:HEADER], "big", signed=True), bytes(data[HEADER:])


def frame(schema_id: int, payload: bytes) -> bytes:
    """The framed bytes of ``payload`` under ``schema_id`` (what a registry-aware serializer writes)."""
    return bytes([MAGIC]) + schema_id.to_bytes(4, "big", signed=True) + payload
