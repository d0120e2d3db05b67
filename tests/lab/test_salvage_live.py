"""Salvage end to end with real Kafka (newest 4.x): an unclean election loses acks=1 writes; salvage from the frozen
evidence; the cluster restarts on a copy; ``--produce`` puts the lost records back.

Kafka is the judge of what was lost: the ids acknowledged to the acks=1 producer that the restarted cluster no longer
serves.  After ``salvage --produce --send`` each of them is in the topic exactly once, in its original order, with
the ``kforensics-salvaged-from`` header naming where it was found; a second run sends nothing (the ledger).
Skips (with the reason) when Java, Maven, Maven Central or confluent-kafka is unavailable.  One incident, about a
minute.  The restart is the one salvage is told of (``--alive``): a cold controller (every session it holds has
expired), then the unclean leader alone, then the others; the test checks that the controller registered the
brokers in that order (a restart whose brokers race would make whichever JVM is up first the leader).
Set KFLAB_KEEP=DIR to keep the run (evidence, logs, story, salvage output).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("confluent_kafka", reason="confluent-kafka (PyPI) is needed for the live lab")

from kflab import cluster as cl
from kflab import jars, procs
from kflab.compare import contents
from kflab.incidents import EVENTS, unclean_election
from kflab.observe import _converged, _writable, registration_order, start_in_order
from kflab.runner import freeze_evidence, wait_brokers
from kflab.workload import Workload, client_conf

ORIGIN = "kforensics-salvaged-from"


def _setup_or_skip():
    from tests.lab.live_helpers import live_lab_or_skip

    live_lab_or_skip()


def _read_all(bootstrap: str, topic: str) -> list[tuple[int, bytes, dict]]:
    """Every record of ``topic``-0 up to its end: (offset, value, headers)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(client_conf(bootstrap, **{"group.id": f"salvage-check-{time.time_ns()}", "enable.auto.commit": False,
                                           "isolation.level": "read_uncommitted"}))
    try:
        _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        out: list[tuple[int, bytes, dict]] = []
        deadline = time.monotonic() + 60
        while (not out or out[-1][0] < high - 1) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append((m.offset(), m.value(), dict(m.headers() or [])))
        return out
    finally:
        c.close()


def _rid(value: bytes) -> str:
    return b"|".join(value.split(b"|", 4)[:4]).decode()


def _salvage(evidence: Path, out: Path, first: int, *extra: str) -> dict:
    """salvage on the frozen evidence, with the restart this test makes: ``first`` back alone before the controller
    elects (``--alive``), the others later."""
    argv = [sys.executable, "-m", "kforensics", "salvage", *[str(evidence / cl.node_name(b)) for b in cl.BROKERS],
            "--alive", str(first),
            "--metadata", str(evidence / cl.node_name(cl.CONTROLLER) / "__cluster_metadata-0"), "--out", str(out),
            "--topic", "events", "--format", "json", *extra]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    return json.loads(r.stdout)


def test_unclean_election_losses_are_salvaged_and_put_back_exactly_once(tmp_path):
    _setup_or_skip()
    if os.environ.get("KFLAB_KEEP"):
        tmp_path = Path(os.environ["KFLAB_KEEP"]) / f"salvage-live-{int(time.time())}"
    run_dir = tmp_path / "run"
    t0 = time.monotonic()
    try:
        c = cl.new_cluster(run_dir, jars.NEWEST)
        c.start_all()
        w = Workload(c.bootstrap(), f"salv{int(time.time()) % 100000}")
        wait_brokers(c, w)
        w.create_topics([EVENTS])
        w.produce("events", "all", 5, partition=0)
        story: dict = {}
        unclean_election(c, w, random.Random(25), story)
        new_leader = next(st["leader"] for st in story["steps"] if st["what"] == "new leader")
        (run_dir / "story.json").write_text(json.dumps(story, indent=1))
        w.close(5)
        written = set(w.log.acked) | set(w.log.failed)
        acked = {rid for rid, (topic, _p, _o) in w.log.acked.items() if topic == "events"}
        evidence = freeze_evidence(c, run_dir)
        out = tmp_path / "salvage"
        first = _salvage(evidence, out, new_leader)
        assert first["summary"]["records"] > 0, first

        # Kafka decides what was lost: restart on a copy of the evidence, read what it serves
        data = run_dir / "restart"
        for node in (cl.CONTROLLER,) + cl.BROKERS:
            cl.copy_tree(evidence / cl.node_name(node), data / cl.node_name(node))
        _writable(data)
        c2 = cl.Cluster(run_dir, jars.NEWEST, data, tag="restart")
        c2.configure()
        # the unclean leader back first and alone (--alive), once the controller has fenced the brokers whose
        # sessions it held: it elects that leader again.  Another broker first would be elected instead (the
        # replay says so when told); brokers started at once race, and the first JVM up wins
        restart = start_in_order(c2, [new_leader] + [b for b in cl.BROKERS if b != new_leader], serial=1)
        (run_dir / "restart.json").write_text(json.dumps(restart, indent=1))
        order = registration_order(c2.log_text(cl.CONTROLLER))
        assert order[:1] == [new_leader], f"the controller registered {order}, salvage was told {new_leader} first"
        w2 = Workload(c2.bootstrap(), "observe")
        procs.wait_for("events converged", lambda: _converged(w2, ["events"]), 120, 1.0)
        before = _read_all(c2.bootstrap(), "events")
        served = {_rid(v) for _o, v, _h in before}
        # the lost ids salvage can give back are those the evidence holds: an acknowledged record no replica's
        # files hold (acks=1 answers before any follower has it; a power loss would drop the page cache) is not
        # there to salvage.  Here the brokers are killed, not powered off, so the files hold every written record
        held = {v for parts in contents(evidence).values() for pc in parts.values() for v in pc["records"].values()}
        lost = sorted(((acked & held) - served), key=lambda r: int(r.rsplit("|", 1)[1]))
        (run_dir / "lost.json").write_text(json.dumps({"lost": lost, "acked_not_held": sorted(acked - held),
                                                       "acked": w.log.to_json()}, indent=1))
        assert lost, "the incident lost no acknowledged record"

        sent = _salvage(evidence, out, new_leader, "--produce", c2.bootstrap(), "--send")
        assert sent["produce"]["failed"] == 0 and sent["produce"]["sent"] > 0, sent["produce"]
        after = _read_all(c2.bootstrap(), "events")
        counts = Counter(_rid(v) for _o, v, _h in after)
        assert all(counts[rid] == 1 for rid in lost), {rid: counts[rid] for rid in lost}
        assert max(counts.values()) == 1, "a record is in the topic twice"
        back = [(o, _rid(v), json.loads(h[ORIGIN])) for o, v, h in after if ORIGIN in h]
        assert {rid for _o, rid, _h in back} >= set(lost) and {rid for _o, rid, _h in back} <= written
        origins = [h["offset"] for _o, _r, h in back]
        assert origins == sorted(origins), "put back out of their original order"
        assert all(h["topic"] == "events" and h["partition"] == 0 and h["brokers"] for _o, _r, h in back)

        again = _salvage(evidence, out, new_leader, "--produce", c2.bootstrap(), "--send")
        assert again["produce"]["sent"] == 0 and again["produce"]["already_sent"] == len(back), again["produce"]
        assert len(_read_all(c2.bootstrap(), "events")) == len(after)
        c2.stop_clean()
    finally:
        procs.kill_all()
    print(f"salvage live: {time.monotonic() - t0:.0f}s, {len(lost)} lost ids put back")
