"""``kforensics salvage`` on the command line: its JSON against the published schema, the two record files, the
refusal of outputs in the evidence, dry runs, the ledger and the client settings file."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
from click.testing import CliRunner

from kforensics.cli import main
from kforensics.salvage.produce import client_config, read_ledger, read_properties
from tests.conftest import ROOT

SCENARIO = ROOT / "fixtures" / "scenarios" / "unclean-leader-election"
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "salvage.schema.json").read_text(encoding="utf-8"))


def run(*args: str):
    return CliRunner().invoke(main, ["salvage", *args], catch_exceptions=False)


def test_json_follows_the_schema_and_the_files_hold_the_same_records(tmp_path):
    r = run("--scenario", str(SCENARIO), "--out", str(tmp_path), "--format", "json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.output)
    jsonschema.validate(doc, SCHEMA)
    assert doc["summary"]["records"] == 3 and doc["produce"] is None
    lines = [json.loads(x) for x in (tmp_path / "salvaged.jsonl").read_text(encoding="utf-8").splitlines()]
    table = pq.read_table(tmp_path / "salvaged.parquet").to_pylist()
    assert [x["offset"] for x in lines] == [x["offset"] for x in table] == [2, 3, 4]
    for env, row in zip(lines, table):
        # kcat -J's envelope: these members, with these types
        assert set(env) >= {"topic", "partition", "offset", "tstype", "ts", "broker", "key", "payload"}
        assert env["tstype"] == "create" and env["key"] == row["key"].decode()
        assert env["payload"] == row["value"].decode()
        assert env["broker"] == 1 and row["brokers"] == [1, 2] and row["verdict"] == "LOSS_COMMITTED"


def test_an_output_inside_the_evidence_is_refused(tmp_path):
    r = CliRunner().invoke(main, ["salvage", "--scenario", str(SCENARIO), "--out", str(SCENARIO / "broker-1" / "x")])
    assert r.exit_code == 2
    assert not (SCENARIO / "broker-1" / "x").exists()


def test_dry_run_says_what_would_be_sent_and_skips_what_the_ledger_holds(tmp_path):
    r = run("--scenario", str(SCENARIO), "--out", str(tmp_path), "--produce", "localhost:1", "--format", "json",
            "--topic-map", "orders=orders-back")
    plan = json.loads(r.output)["produce"]
    assert plan["dry_run"] and plan["to_send"] == {"orders-back-0": 3} and plan["sent"] == 0
    first = json.loads((tmp_path / "salvaged.jsonl").read_text(encoding="utf-8").splitlines()[0])
    (tmp_path / "produce-ledger.jsonl").write_text(json.dumps(
        {"topic": "orders", "partition": 0, "offset": 2, "digest": first["kforensics"]["digest"]}) + "\nnot json\n",
        encoding="utf-8")
    r = run("--scenario", str(SCENARIO), "--out", str(tmp_path), "--produce", "localhost:1", "--format", "json")
    doc = json.loads(r.output)
    jsonschema.validate(doc, SCHEMA)
    assert doc["produce"]["already_sent"] == 1 and doc["produce"]["to_send"] == {"orders-0": 2}
    assert [f["code"] for f in doc["findings"]] == ["SALVAGE_LEDGER_DAMAGED"]
    assert "would send 2 records" in run("--scenario", str(SCENARIO), "--out", str(tmp_path), "--produce",
                                          "localhost:1").output


def test_command_config_is_read_as_java_properties(tmp_path):
    cfg = tmp_path / "client.properties"
    cfg.write_text("# comment\n! also a comment\nsecurity.protocol=SASL_SSL\nsasl.mechanism : SCRAM-SHA-512\n"
                   "ssl.ca.location /etc/ca.pem\n"
                   'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n'
                   '    username="alice" password="s3cr=t";\n', encoding="utf-8")
    props = read_properties(cfg)
    assert props["security.protocol"] == "SASL_SSL" and props["sasl.mechanism"] == "SCRAM-SHA-512"
    assert props["ssl.ca.location"] == "/etc/ca.pem"
    conf = client_config(props, "b:9092")
    assert conf["sasl.username"] == "alice" and conf["sasl.password"] == "s3cr=t"
    assert "sasl.jaas.config" not in conf
    assert conf["enable.idempotence"] is True and conf["acks"] == "all" and conf["bootstrap.servers"] == "b:9092"


def test_ledger_lines_that_do_not_parse_are_findings(tmp_path: Path):
    p = tmp_path / "produce-ledger.jsonl"
    p.write_text('{"topic": "t", "partition": 0, "offset": 1, "digest": "ab"}\n{"topic": 1}\n', encoding="utf-8")
    findings: list = []
    ledger = read_ledger(p, findings)
    assert len(ledger) == 1 and [f.line for f in findings] == [2]
    from kforensics.salvage.model import SalvagedRecord

    def rec(topic, offset, digest):
        return SalvagedRecord(None, topic, 0, offset, 0, 0, "CreateTime", None, None, [], -1, -1, -1, "none",
                              "FORK", {}, [], [], 0, digest)

    assert rec("t", 1, b"\xab") in ledger
    assert rec("t", 2, b"\xab") not in ledger and rec("u", 1, b"\xab") not in ledger and rec("t", 1, b"") not in ledger


def test_envelope_headers_are_kcats_array_and_the_record_comes_back_from_it_byte_for_byte():
    from kforensics.salvage.export import kcat_envelope, record_from_envelope
    from kforensics.salvage.model import SalvagedRecord

    rec = SalvagedRecord("c", "t", 3, 17, 2, 1700000000000, "LogAppendTime", b"\xffk", None,
                         [("a", b"1"), ("b", None), ("a", b"\xfe")], 9, 1, 4, "open", "FORK", {2: "FORK"}, [2],
                         ["g"], 40, bytes(range(16)))
    env = json.loads(json.dumps(kcat_envelope(rec)))
    assert env["headers"] == ["a", "1", "b", None, "a", "/g=="]  # kcat's json.c: name, value, name, value ...
    assert env["tstype"] == "logappend" and env["payload"] is None and env["key"] == "/2s="
    back = record_from_envelope(env)
    assert (back.key, back.value, back.headers, back.digest) == (rec.key, rec.value, rec.headers, rec.digest)
    assert (back.producer_id, back.producer_epoch, back.sequence, back.transactional) == (9, 1, 4, "open")


def test_a_cluster_that_never_takes_a_record_stops_the_send(tmp_path, monkeypatch):
    """A producer queue that stays full (nothing drains) ends the send with a usage error, not a loop."""
    import pytest

    from kforensics.errors import InputError
    from kforensics.salvage import produce as prod
    from kforensics.salvage.model import SalvagedRecord

    class Full:
        polls = 0

        def produce(self, *a, **kw):
            raise BufferError("queue full")

        def poll(self, timeout):
            Full.polls += 1

    monkeypatch.setattr(prod, "FULL_QUEUE_POLLS", 5)
    sender = prod.Sender.__new__(prod.Sender)
    sender.producer, sender.topic_map = Full(), {}
    rec = SalvagedRecord(None, "t", 0, 7, 0, 0, "CreateTime", b"k", b"v", [], -1, -1, -1, "none", "LOSS_COMMITTED",
                         {1: "LOSS_COMMITTED"}, [1])
    with pytest.raises(InputError, match="took no record"):
        sender.send(rec)
    assert Full.polls == 5
