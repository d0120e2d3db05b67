"""The lab's acknowledgement check (lab/kflab/acks_check.py): kforensics' classes of lost records against what the
workload's producers were told, read from a run dir laid out as the lab keeps one."""

from __future__ import annotations

import json
from pathlib import Path

from kflab.acks_check import lost_records
from kforensics.formats.record_batch import RecordData, build_batch

RUN = "r1|events"


def _run_dir(tmp: Path, acked: list[str], classes: dict[str, list[list[int]]]) -> Path:
    d = tmp / "run"
    pdir = d / "evidence" / "broker-2" / "events-0"
    pdir.mkdir(parents=True)
    ids = [f"{RUN}|all|0", f"{RUN}|all|1", f"{RUN}|one|0", f"{RUN}|one|1"]
    recs = [RecordData(10 + i, 1000 + i, None, f"{rid}|padding".encode()) for i, rid in enumerate(ids)]
    (pdir / "00000000000000000000.log").write_bytes(build_batch(recs, partition_leader_epoch=0))
    (d / "result.json").write_text(json.dumps({"version": "4.4.0", "story": {"acks": {
        "acked": {rid: ["events", 0, 10 + i] for i, rid in enumerate(ids) if rid in acked}, "failed": {}}}}))
    verdict = {"code": "DISCARD_UNCOMMITTED", "facts": {"acknowledged_offsets": classes}}
    (d / "predictions").mkdir()
    (d / "predictions" / "replay.json").write_text(json.dumps({"partitions": [
        {"topic": "events", "partition": 0, "replicas": [{"broker_id": 2, "verdicts": [verdict]}]}]}))
    return d


def test_each_lost_record_is_judged_by_what_its_producer_was_told(tmp_path):
    acked = [f"{RUN}|all|0", f"{RUN}|one|0"]
    # offsets 10-11: the acks=all records (10 told, 11 not); 12-13: the acks=1 records (12 told, 13 not)
    rows = lost_records(_run_dir(tmp_path, acked, {"acked-all": [[10, 11]], "acked-leader-only": [],
                                                    "never-acked": [[12, 13]]}))
    got = {r["offset"]: (r["kind"], r["told"], r["class"], r["agree"]) for r in rows}
    assert got == {
        10: ("all", True, "acked-all", True),
        11: ("all", False, "acked-all", False),  # classed as told committed, but the producer never heard so
        12: ("one", True, "never-acked", False),  # an acks=1 producer was told at append
        13: ("one", False, "never-acked", None),  # its answer was lost with the broker: not judged
    }
