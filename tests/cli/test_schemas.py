"""The published JSON Schemas (docs/schemas/<command>.schema.json) against real output: the bundled fixtures, every
scenario, the oracle segments and the real broker dirs; and strict enough to refuse a wrong type or a missing field."""

from __future__ import annotations

import copy
import json

import pytest

from tests.cli.json_samples import documents
from tests.conftest import ROOT
from kforensics.cli.json_out import SCHEMA_VERSIONS

jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = ROOT / "docs" / "schemas"
COMMANDS = ["dump", "scan", "replay", "timeline"]


def schema(command: str) -> dict:
    return json.loads((SCHEMAS / f"{command}.schema.json").read_text(encoding="utf-8"))


def validator(command: str):
    s = schema(command)
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s, format_checker=jsonschema.FormatChecker())


def errors(v, doc) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_schema_is_draft_2020_12_with_the_commands_schema_version(command):
    s = schema(command)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["x-schema-version"] == SCHEMA_VERSIONS[command]
    assert s["$id"] == f"urn:kforensics:schema:{command}:{SCHEMA_VERSIONS[command]}"
    if command != "dump":  # dump writes NDJSON objects, which carry no version
        assert s["properties"]["schema_version"] == {"const": SCHEMA_VERSIONS[command]}
        assert "schema_version" in s["required"]
    validator(command)


@pytest.mark.parametrize("command", COMMANDS)
def test_real_output_validates(command):
    v = validator(command)
    seen = 0
    kinds = set()
    for label, doc in documents(command):
        found = errors(v, doc)
        assert not found, (label, found[:5])
        seen += 1
        if command == "dump":
            kinds.add(doc["kind"])
    assert seen
    if command == "dump":  # every kind of object the fixtures hold was checked
        assert kinds >= {"batch", "record", "summary", "finding", "offset_index", "offset_index_entry", "time_index",
                         "time_index_entry", "txn_index", "txn_index_entry", "leader_epoch_checkpoint",
                         "producer_snapshot", "meta_properties", "partition_metadata", "clean_shutdown",
                         "replication_offset_checkpoint", "recovery_point_offset_checkpoint",
                         "log_start_offset_checkpoint", "cleaner_offset_checkpoint"}


def _first(command: str) -> dict:
    return next(doc for _, doc in documents(command))


def _mutations(command: str) -> list[tuple[str, callable]]:
    """(what, change) pairs that each make a real document invalid."""
    def drop(*path):
        def f(d):
            for k in path[:-1]:
                d = d[k]
            del d[path[-1]]
        return f

    def set_(value, *path):
        def f(d):
            for k in path[:-1]:
                d = d[k]
            d[path[-1]] = value
        return f

    common = [("schema_version missing", drop("schema_version")), ("schema_version wrong", set_(99, "schema_version")),
              ("tool missing", drop("tool"))]
    if command == "scan":
        return common + [
            ("partitions not a list", set_({}, "partitions")),
            ("a partition without its LEO", drop("partitions", 0, "log_end_offset")),
            ("an LEO as text", set_("24", "partitions", 0, "log_end_offset")),
            ("recovery without lost_records", drop("partitions", 0, "recovery", "lost_records")),
            ("a segment without its path", drop("partitions", 0, "segments", 0, "path")),
            ("an unknown severity", set_("severe", "partitions", 0, "worst_severity")),
            ("a file without sha256", drop("files", 0, "sha256")),
            ("broker without node_id", drop("broker", "node_id")),
        ]
    if command == "replay":
        return common + [
            ("a replica without verdicts", drop("partitions", 0, "replicas", 0, "verdicts")),
            ("an unknown verdict", set_("LOST", "partitions", 0, "replicas", 0, "verdicts", 0, "code")),
            ("a leader as text", set_("1", "partitions", 0, "leader")),
            ("divergence brokers not a pair", set_([1], "partitions", 0, "divergence", 0, "brokers")),
            ("committed_offsets missing", drop("committed_offsets")),
        ]
    if command == "timeline":
        return common + [
            ("an entry without its leader epoch", drop("partitions", 0, "entries", 0, "leader_epoch")),
            ("an ISR of text", set_(["1"], "partitions", 0, "entries", 0, "isr")),
            ("records as text", set_("3", "records")),
        ]
    return []


@pytest.mark.parametrize("command", ["scan", "replay", "timeline"])
def test_the_schemas_refuse_a_wrong_type_or_a_missing_field(command):
    v = validator(command)
    doc = _first(command)
    assert not errors(v, doc)
    for what, change in _mutations(command):
        bad = copy.deepcopy(doc)
        change(bad)
        assert errors(v, bad), what


@pytest.mark.parametrize("obj,what", [
    ({"kind": "batch"}, "a batch without its fields"),
    ({"kind": "nosuch"}, "an unknown kind"),
    ({"file": "x"}, "no kind"),
])
def test_the_dump_schema_refuses_objects_that_are_not_a_dumps(obj, what):
    assert errors(validator("dump"), obj), what


def test_the_dump_schema_refuses_a_wrong_field_of_each_kind():
    v = validator("dump")
    firsts = {}
    for _, doc in documents("dump"):
        firsts.setdefault(doc["kind"], doc)
    for kind, doc in firsts.items():
        for key in [k for k in doc if k != "kind"]:
            bad = copy.deepcopy(doc)
            required = key in schema("dump")["$defs"].get(kind, {}).get("required", [])
            if required:
                del bad[key]
                assert errors(v, bad), (kind, key, "missing")
        # a key or value whose representation is not {"encoding", "data"}
        if kind == "record" and doc.get("value") is not None:
            bad = copy.deepcopy(doc)
            bad["value"] = {"hex": "00"}
            assert errors(v, bad), "value as hex"
        if kind == "batch":
            bad = copy.deepcopy(doc)
            bad["last_offset"] = "5"
            assert errors(v, bad), "last_offset as text"
