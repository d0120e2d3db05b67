"""The schemas a Schema Registry kept in its Kafka topic (``_schemas`` by default), read from the evidence.

The registry stores each registered schema as a record whose key is JSON
``{"keytype": "SCHEMA", "subject": ..., "version": ..., "magic": 1}`` and
whose value is JSON ``{"subject", "version", "id", "schema", "schemaType"
(absent for Avro), "deleted", "references"}`` (Confluent's
``SchemaRegistryKey``/``SchemaValue``).  Other key types (CONFIG, MODE,
NOOP, DELETE_SUBJECT, CLEAR_SUBJECT) say nothing of schema ids and are
skipped; a soft-deleted schema still decodes the data written with it, so
it is kept.  Every broker's copy is read and the first record of an id
wins (ids are never reused).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding, finding
from ..log.log_dir import topic_partitions
from ..log.records import EntryRecords

#: the registry's topic unless ``kafkastore.topic`` says otherwise
TOPIC = "_schemas"


@dataclass(frozen=True)
class RegisteredSchema:
    """One schema the registry assigned an id to."""

    schema_id: int
    schema_type: str  # AVRO, JSON, PROTOBUF, or what a plug-in registered
    schema: str
    subject: str
    version: int


@dataclass
class SchemaRegistry:
    """Schema id -> schema, as the evidence's registry topic holds them."""

    schemas: dict[int, RegisteredSchema] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    records_read: int = 0

    def get(self, schema_id: int) -> RegisteredSchema | None:
        return self.schemas.get(schema_id)

    def add_record(self, key: bytes | None, value: bytes | None, *, file: str | None = None,
                   offset: int | None = None) -> None:
        """Take one record of the registry topic (tombstones and other key types change nothing here)."""
        self.records_read += 1
        if key is None or value is None:
            return
        try:
            k = json.loads(key)
            if not isinstance(k, dict) or k.get("keytype") != "SCHEMA":
                return
            v = json.loads(value)
            s = RegisteredSchema(int(v["id"]), str(v.get("schemaType") or "AVRO"), str(v["schema"]),
                                 str(v.get("subject", k.get("subject", ""))), int(v.get("version", 0)))
        except (ValueError, KeyError, TypeError) as e:
            self.findings.append(finding("SCHEMA_UNREADABLE", f"registry record at offset {offset} does not parse "
                                         f"as a schema: {e}", file=file, offset=offset))
            return
        self.schemas.setdefault(s.schema_id, s)


def read_registry(log_dirs: Iterable[Any], topic: str = TOPIC) -> SchemaRegistry:
    """Every schema in the registry topic's partitions among ``log_dirs`` (each broker's copy)."""
    reg = SchemaRegistry()
    for d in log_dirs:
        for pd in topic_partitions(d, topic):
            for seg in pd.sorted_segments():
                if seg.log is None:
                    continue
                for b in seg.reader().batches():
                    entry = EntryRecords(b, with_data=True, file=str(seg.log))
                    for r in entry:
                        if r.control is None:
                            reg.add_record(r.key, r.value, file=str(seg.log), offset=r.offset)
    return reg
