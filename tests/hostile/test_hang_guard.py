"""The hang guard (#22): every command on every hostile input ends within a time limit, in a child process.

The inputs are the ones that never finished or grew without bound
(:mod:`tests.hostile.builders`, at small sizes); a regression fails here on
the timeout instead of hanging the suite.  Peak RSS at the issue's sizes is
measured by ``scripts/hostile_rss.py``.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.hostile import builders
from tests.hostile.helpers import run_process

LIMIT = 120  # seconds per command; each takes a few at these sizes


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return builders.all_inputs(tmp_path_factory.mktemp("hostile"))


def commands(name: str, path) -> dict[str, list]:
    seg = path
    if name == "groups":
        seg = path / "__consumer_offsets-0" / "00000000000000000000.log"
    elif name.endswith((".tgz", ".tar")):
        seg = None  # dump reads files, not archives: its segment case is covered by zstd-batch and groups
    out = {"scan": ["scan", path, "--format", "json"], "replay": ["replay", path, "--format", "json"],
           "timeline": ["timeline", path, "--format", "json"]}
    if seg is not None:
        out["dump"] = ["dump", "--deep", "--format", "json", seg]
    return out


CASES = [(name, command) for name in ("cut.tgz", "cut.tar", "padded-reversed.tgz", "many-members.tgz", "groups",
                                      "zstd-batch") for command in ("scan", "replay", "timeline", "dump")]


@pytest.mark.parametrize("name,command", CASES)
def test_every_command_ends_on_every_hostile_input(inputs, name, command):
    path = inputs[name]
    if name == "zstd-batch":
        path = path if command == "dump" else path.parent.parent
    argv = commands(name, path).get(command)
    if argv is None:
        pytest.skip(f"{command} takes no {name}")
    t = time.monotonic()
    try:
        r = run_process(*argv, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"kforensics {command} on {name} did not end in {LIMIT} s")
    assert r.returncode in (0, 1, 2), (r.returncode, r.stderr[-2000:])
    if r.returncode != 2 and command != "dump":
        json.loads(r.stdout)
    assert time.monotonic() - t < LIMIT


def test_a_cut_archive_says_where_each_member_ends(inputs):
    r = run_process("scan", inputs["cut.tgz"], "--format", "json", timeout=LIMIT)
    doc = json.loads(r.stdout)
    short = [f for f in doc["findings"] if f["code"] == "SHORT_READ"]
    assert r.returncode == 1 and len(short) == 1
    assert short[0]["file"].endswith("!/kafka-logs/zz-0/00000000000000000000.log") and short[0]["position"] > 0
    assert "ARCHIVE_TRUNCATED" in {f["code"] for f in doc["findings"]}
