"""The parallel campaign without Java: the schedule does not depend on N, results are collected whatever order
workers end in, stopping works, and concurrent clusters cannot share a port or a subnet."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kflab import campaign as cp
from kflab import netns, ports

VERSIONS = ["4.4.0", "3.9.1", "2.8.2"]
NAMES = ["controller-kill", "leader-crash", "network-partition", "torn-tail"]

# A stand-in worker: sleeps a little (so workers end out of order) and writes a result.json as kflab run does.
FAKE = """
import json, pathlib, sys, time, random
scenario, seed, version, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], pathlib.Path(sys.argv[4])
time.sleep(float(sys.argv[5]) if len(sys.argv) > 5 else random.Random(seed).uniform(0, 0.3))
d = out / f"{scenario}-{version}-s{seed}"
d.mkdir(parents=True, exist_ok=True)
check = {"check": "leader", "topic": "orders", "partition": 0, "broker": None, "predicted": 1,
         "observed": 1 + seed % 2, "agree": seed % 2 == 0}
(d / "result.json").write_text(json.dumps({"scenario": scenario, "version": version, "seed": seed,
    "run_dir": str(d), "status": "compared", "comparison": {"checks": [check]}}))
"""


def _fake(sleep: float | None = None):
    def argv(item: cp.Item, out: Path) -> list[str]:
        tail = [str(sleep)] if sleep is not None else []
        return [sys.executable, "-c", FAKE, item.scenario, str(item.seed), item.version, str(out), *tail]

    return argv


def test_schedule_is_the_serial_campaigns_draws():
    # the serial campaign (kflab campaign before --parallel) drew version round-robin, then choice, then randrange
    rng = random.Random(11)
    serial = [(VERSIONS[i % 3], rng.choice(NAMES), rng.randrange(1 << 30)) for i in range(30)]
    assert [(x.version, x.scenario, x.seed) for x in cp.schedule(30, 11, VERSIONS, NAMES)] == serial
    assert cp.schedule(10, 11, VERSIONS, NAMES) == cp.schedule(30, 11, VERSIONS, NAMES)[:10]


@pytest.mark.parametrize("n", [1, 3])
def test_same_incidents_whatever_n(tmp_path, n):
    items = cp.schedule(7, 5, VERSIONS, NAMES)
    c = cp.Campaign(tmp_path / f"n{n}", items, parallel=n, argv=_fake(), print_fn=lambda s: None)
    s = c.run()
    got = {i: (r["version"], r["scenario"], r["seed"], r["status"]) for i, r in c.results.items()}
    assert got == {x.index: (x.version, x.scenario, x.seed, "compared") for x in items}
    assert s["runs"] == 7
    on_disk = json.loads((tmp_path / f"n{n}" / "summary.json").read_text())
    assert on_disk["runs"] == 7 and len(on_disk["disagreements"]) == sum(x.seed % 2 for x in items)


def test_parallel_runs_at_once(tmp_path):
    items = cp.schedule(4, 2, VERSIONS, NAMES)
    c = cp.Campaign(tmp_path, items, parallel=4, argv=_fake(1.5), print_fn=lambda s: None)
    t = time.monotonic()
    c.run()
    assert len(c.results) == 4
    assert time.monotonic() - t < 4 * 1.5  # serially it would take at least 6 s


def test_stop_file_stops_starting(tmp_path):
    (tmp_path / "STOP").write_text("")
    c = cp.Campaign(tmp_path, cp.schedule(5, 1, VERSIONS, NAMES), parallel=2, argv=_fake(), print_fn=lambda s: None)
    assert c.run()["runs"] == 0


def test_stop_all_ends_every_worker(tmp_path):
    c = cp.Campaign(tmp_path, cp.schedule(2, 1, VERSIONS, NAMES), parallel=2, argv=_fake(60), print_fn=print)
    for item in c.items:
        c.start(item)
    pids = [p.pid for _i, p, _t in c.running.values()]
    c.stop_all()
    assert not c.running
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert {r["status"] for r in c.results.values()} == {"interrupted"}


def test_worker_without_result_is_a_harness_error(tmp_path):
    c = cp.Campaign(
        tmp_path,
        cp.schedule(1, 1, VERSIONS, NAMES),
        argv=lambda item, out: [sys.executable, "-c", "raise SystemExit(1)"],
        print_fn=lambda s: None,
    )
    c.run()
    assert c.results[0]["status"] == "harness-error"


def test_reserved_ports_are_disjoint_across_processes(tmp_path):
    f = tmp_path / "ports.json"
    # each child reserves, says which, and holds them (it lives) until its stdin closes
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[2]); from kflab import ports; "
        "print(json.dumps(ports.reserve(20, sys.argv[1])), flush=True); sys.stdin.read()"
    )
    lab = str(Path(cp.__file__).resolve().parents[1])
    held = ports.reserve(4, f)
    kids = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(f), lab], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    try:
        got = [json.loads(k.stdout.readline()) for k in kids]
    finally:
        for k in kids:
            k.communicate(timeout=30)
    flat = held + [x for g in got for x in g]
    assert len(set(flat)) == len(flat) == 84
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert all(p < low for p in flat)


def test_reservation_of_a_live_process_is_kept_and_a_dead_ones_dropped(tmp_path):
    f = tmp_path / "ports.json"
    mine = ports.reserve(3, f)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    table = json.loads(f.read_text())
    table["25000"] = {"pid": dead.pid, "t": time.time()}
    f.write_text(json.dumps(table))
    ports.reserve(1, f)
    after = json.loads(f.read_text())
    assert all(str(p) in after for p in mine)
    assert "25000" not in after or after["25000"]["pid"] == os.getpid()
    ports.release(mine, f)
    assert not any(str(p) in json.loads(f.read_text()) for p in mine)


def test_subnet_moves_off_a_used_one_and_keeps_the_seeded_draw():
    assert netns.pick_subnet(7, set()) == 7
    assert netns.pick_subnet(7, {7, 8}) == 9
    assert netns.pick_subnet(249, {249}) == 1
    assert netns.pick_subnet(3, set(netns.SUBNETS)) is None
    # the draw is over the whole range (the serial harness drew from the free ones, all of them when alone)
    assert random.Random("x").choice(netns.SUBNETS) == random.Random("x").choice(sorted(set(range(1, 250))))


def test_disagreement_classes_split_by_the_leader_kafka_elected():
    from kflab.report import disagreement_classes

    def c(check, part, agree, broker=None):
        return {"check": check, "topic": "orders", "partition": part, "broker": broker, "agree": agree}

    r = {
        "version": "4.4.0",
        "comparison": {
            "checks": [
                c("leader", 0, False),
                c("leader_epoch", 0, False),
                c("truncation_point", 0, False, 1),
                c("leader", 1, True),
                c("truncation_point", 1, False, 2),
                c("truncation_point", 1, True, 3),
                {"check": "converged", "topic": None, "partition": None, "broker": None, "agree": False},
            ]
        },
    }
    assert disagreement_classes([r]) == {
        "4.4.0 converged -": 1,
        "4.4.0 leader -": 1,
        "4.4.0 leader_epoch -": 1,
        "4.4.0 truncation_point leader named": 1,
        "4.4.0 truncation_point other leader": 1,
    }
