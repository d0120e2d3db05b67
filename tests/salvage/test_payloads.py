"""Schema Registry payloads: the ``_schemas`` topic read from a log dir, framed keys and values decoded.

The frame is Confluent's documented wire format (magic byte 0, the schema id
as 4 big-endian bytes, then the data: Avro binary encoding, or the JSON text
for JSON Schema); the registry's records are as the Schema Registry writes
them to its topic (key ``{"keytype": "SCHEMA", "subject", "version",
"magic": 1}``, value ``{"subject", "version", "id", "schema", "schemaType"}``,
``schemaType`` absent for Avro).  The Avro bytes are written with fastavro,
independently of the decoder under test.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
from click.testing import CliRunner

from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.payloads.decoders import PayloadDecoder
from kforensics.payloads.registry import read_registry
from kforensics.payloads.wire import frame, framed
from kforensics.scenario.writer import LogDirWriter

PAYMENT = {"type": "record", "name": "Payment", "namespace": "shop",
           "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "double"},
                      {"name": "note", "type": ["null", "string"], "default": None}]}
T0 = 1_700_000_000_000


def avro(value: dict) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(PAYMENT), value)
    return buf.getvalue()


def schema_records() -> list[tuple[bytes, bytes | None]]:
    def key(subject, version, kind="SCHEMA"):
        return json.dumps({"keytype": kind, "subject": subject, "version": version, "magic": 1}).encode()

    return [
        (json.dumps({"keytype": "NOOP", "magic": 0}).encode(), None),
        (key("payments-value", 1), json.dumps({"subject": "payments-value", "version": 1, "id": 1,
                                               "schema": json.dumps(PAYMENT), "deleted": False}).encode()),
        (key("audit-value", 1), json.dumps({"subject": "audit-value", "version": 1, "id": 2, "schemaType": "JSON",
                                            "schema": '{"type": "object"}'}).encode()),
        (key("odd-value", 1), json.dumps({"subject": "odd-value", "version": 1, "id": 3, "schemaType": "PROTOBUF",
                                          "schema": "syntax = \"proto3\"; message M {}"}).encode()),
        (key("x", 1), b"{not json"),
        (json.dumps({"keytype": "CONFIG", "subject": None, "magic": 0}).encode(), b'{"compatibilityLevel":"FULL"}'),
    ]


def values() -> list[bytes]:
    return [frame(1, avro({"id": "p-0", "amount": 1.5, "note": None})),
            frame(1, avro({"id": "p-1", "amount": 2.0, "note": "late"})),
            frame(2, b'{"who": "alice"}'),
            frame(1, avro({"id": "p-3", "amount": 4.25, "note": None})),
            frame(9, b"\x02x"),  # no schema 9 in the registry
            frame(1, b"\x01"),  # too short for a Payment
            b"plain text"]


def broker(root: Path, node: int, n_payments: int, hw: int) -> Path:
    w = LogDirWriter(root / f"b{node}", node_id=node, cluster_id="payload-cluster")
    reg = w.partition("_schemas", 0)
    for i, (k, v) in enumerate(schema_records()):
        reg.append(build_batch([RecordData(i, T0 + i, k, v)], partition_leader_epoch=0))
    pay = w.partition("payments", 0)
    for i, v in enumerate(values()[:n_payments]):
        pay.append(build_batch([RecordData(i, T0 + i, f"k{i}".encode(), v)], partition_leader_epoch=0))
    w.high_watermarks = {("payments", 0): hw, ("_schemas", 0): len(schema_records())}
    w.recovery_points = {("payments", 0): n_payments, ("_schemas", 0): len(schema_records())}
    w.clean_shutdown = True
    return w.write()


def test_frame_is_magic_zero_and_a_big_endian_schema_id():
    assert frame(258, b"x") == b"\x00\x00\x00\x01\x02x"
    assert framed(b"\x00\x00\x00\x01\x02x") == (258, b"x")
    assert framed(b"\x01\x00\x00\x00\x01x") is None and framed(b"\x00\x00") is None and framed(None) is None


def test_registry_topic_gives_schemas_by_id_and_odd_records_are_findings(tmp_path):
    reg = read_registry([broker(tmp_path, 1, 1, 1)])
    assert sorted(reg.schemas) == [1, 2, 3]
    assert reg.schemas[1].schema_type == "AVRO" and reg.schemas[1].subject == "payments-value"
    assert reg.schemas[2].schema_type == "JSON"
    assert [f.code for f in reg.findings] == ["SCHEMA_UNREADABLE"]


def test_avro_and_json_decode_and_what_does_not_decode_stays_bytes_with_a_finding(tmp_path):
    reg = read_registry([broker(tmp_path, 1, 1, 1)])
    dec = PayloadDecoder(reg, extra={})
    vs = values()
    assert json.loads(dec("payments", False, vs[1])[0]) == {"id": "p-1", "amount": 2.0, "note": "late"}
    assert dec("payments", False, vs[1])[1] == 1
    assert json.loads(dec("payments", False, vs[2])[0]) == {"who": "alice"}
    for v in (vs[4], vs[5], frame(3, b"\x00")):
        text, _sid, error = dec("payments", False, v)
        assert text is None and error
    assert dec("payments", False, vs[6]) == (None, None, None)  # not framed: nothing to say
    codes = [(f.code, f.facts["schema_id"]) for f in dec.findings()]
    assert sorted(codes) == [("PAYLOAD_UNDECODABLE", 1), ("PAYLOAD_UNDECODABLE", 3), ("PAYLOAD_UNDECODABLE", 9)]


def test_a_plugin_decodes_another_schema_type(tmp_path):
    reg = read_registry([broker(tmp_path, 1, 1, 1)])
    dec = PayloadDecoder(reg, extra={"PROTOBUF": lambda schema, body: {"bytes": len(body), "proto": "M" in schema}})
    assert json.loads(dec("odd", True, frame(3, b"\x00\x08\x01"))[0]) == {"bytes": 3, "proto": True}


def test_salvage_shows_lost_avro_values_decoded_in_the_envelope(tmp_path):
    from kforensics.cli import main

    b1, b2 = broker(tmp_path, 1, 7, 7), broker(tmp_path, 2, 2, 2)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["salvage", "--broker", f"1={b1}", "--broker", f"2={b2}", "--leader", "2",
                                  "--out", str(out), "--format", "json"], catch_exceptions=False)
    assert r.exit_code == 1, r.output
    envs = [json.loads(x) for x in (out / "salvaged.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["offset"] for e in envs] == [2, 3, 4, 5, 6]
    assert envs[0]["payload"] == {"who": "alice"} and envs[0]["value_schema_id"] == 2
    assert envs[1]["payload"] == {"id": "p-3", "amount": 4.25, "note": None} and envs[1]["value_schema_id"] == 1
    assert "payload_error" in envs[2] and "payload_error" in envs[3]
    assert envs[4]["payload"] == "plain text" and "payload_error" not in envs[4]
    assert envs[1]["kforensics"]["value_base64"]  # the bytes as they were, always
    codes = [f["code"] for f in json.loads(r.output)["findings"]]
    assert codes.count("PAYLOAD_UNDECODABLE") == 2 and "SCHEMA_UNREADABLE" in codes


def test_dump_print_data_decodes_with_the_schemas_of_a_log_dir(tmp_path):
    from kforensics.cli import main

    b1 = broker(tmp_path, 1, 3, 3)
    seg = str(b1 / "payments-0" / "00000000000000000000.log")
    r = CliRunner().invoke(main, ["dump", "--print-data", "--schemas", str(b1), seg], catch_exceptions=False)
    lines = [x for x in r.output.splitlines() if x.startswith("| offset:")]
    assert 'payload: {"id": "p-0", "amount": 1.5, "note": null}' in lines[0]
    assert 'payload: {"who": "alice"}' in lines[2]
    plain = CliRunner().invoke(main, ["dump", "--print-data", seg], catch_exceptions=False).output
    assert '"p-0"' not in plain  # without --schemas: kafka-dump-log's bytes
    r = CliRunner().invoke(main, ["dump", "--print-data", "--format", "json", "--schemas", str(b1), seg],
                           catch_exceptions=False)
    recs = [json.loads(x) for x in r.output.splitlines() if '"kind": "record"' in x]
    assert recs[1]["value_decoded"] == {"id": "p-1", "amount": 2.0, "note": "late"} and "key_decoded" not in recs[1]
