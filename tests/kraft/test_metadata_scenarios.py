"""The metadata-log scenarios (fixtures/scenarios/metadata-*): several controllers' copies resolved as Raft resolves
them, and a copy that lost its tail.  The expected results are in each scenario.json (``expected_quorum``, with the
derivation and the Kafka sources cited); docs/metadata-quorum.md states the rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kforensics.kraft.grants import check_replica_epochs
from kforensics.kraft.timeline import build_timeline
from kforensics.log.segment_reader import SegmentReader
from kforensics.log.side_files import read_side_file
from kforensics.scenario import load_scenario
from tests.conftest import ROOT

SCENARIOS = ROOT / "fixtures" / "scenarios"
NAMES = ["metadata-deposed-tail", "metadata-log-incomplete"]


def _dir(label: str) -> str:
    return Path(label).parent.name


@pytest.mark.parametrize("name", NAMES)
def test_the_timeline_resolves_the_copies_as_raft_does(name):
    sc = load_scenario(SCENARIOS / name)
    exp = sc.doc["expected_quorum"]
    tl = build_timeline(sc.metadata)
    q = tl.quorum
    assert _dir(q.reference) == exp["reference"]
    got = {_dir(c.label): {"log_end": c.log_end, "last_epoch": c.last_epoch, "valid_end": c.valid_end,
                           "deposed": list(c.deposed) if c.deposed else None,
                           **({"diverged_epoch": c.diverged_epoch, "reference_epoch": c.reference_epoch}
                              if c.deposed else {})} for c in q.copies}
    assert got == exp["copies"]
    assert (tl.committed_end, tl.complete, tl.tail_missing) == (exp["committed_end"], exp["complete"],
                                                               exp["tail_missing"])
    if "trusted_end" in exp:
        assert tl.trusted_end == exp["trusted_end"]
    assert [f.code for f in tl.findings] == exp["findings"]
    entries = tl.partitions[(sc.topic, sc.partition)]
    assert [[e.leader, e.leader_epoch, e.unclean, e.committed] for e in entries] == exp["entries"]
    assert not any(e.unclean for e in entries)  # the deposed tail's unclean election of broker 3 is never replayed


def _replica_epochs(broker_dir: Path, topic: str, partition: int) -> tuple[list[tuple[int, int]], list[int]]:
    pd = broker_dir / f"{topic}-{partition}"
    cp = read_side_file(pd / "leader-epoch-checkpoint", "leader_epoch_checkpoint").value.epochs()
    seen = sorted({b.partition_leader_epoch for b in SegmentReader(pd / "00000000000000000000.log").batches()})
    return cp, seen


def _grant_codes(sc, tl) -> dict[int, list[tuple[str, int | None]]]:
    out = {}
    for broker, (d, *_rest) in sorted(sc.brokers.items()):
        cp, seen = _replica_epochs(d, sc.topic, sc.partition)
        out[broker] = [(f.code, f.facts.get("epoch")) for f in check_replica_epochs(
            tl, topic=sc.topic, partition=sc.partition, broker_id=broker, checkpoint=cp, batch_epochs=seen)]
    return out


def test_no_grant_finding_is_drawn_from_epochs_past_a_log_that_lost_its_tail(tmp_path):
    sc = load_scenario(SCENARIOS / "metadata-log-incomplete")
    tl = build_timeline(sc.metadata)
    assert tl.tail_missing and tl.trusted_end == 5
    # the brokers hold leader epochs 1 and 2, granted at offsets 5 and 7 of the lost tail: nothing is said of them
    assert _grant_codes(sc, tl) == {1: [], 2: [], 3: []}
    # a finding drawn from the last registration the log holds is only a note: it may have changed in the lost part
    (f,) = check_replica_epochs(tl, topic=sc.topic, partition=sc.partition, broker_id=7, checkpoint=[(0, 0)])
    assert (f.code, f.severity.name) == ("REPLICA_NOT_ASSIGNED", "INFO") and "lost its tail after offset 5" in f.message
    # the same log without the checkpoint that shows its lost tail: the timeline vouches for its end, and the epochs
    # past its last grant are EPOCH_NOT_GRANTED (what every replica got before the witness was read)
    copy = tmp_path / "controller-101"
    shutil.copytree(sc.metadata[0].parent, copy)
    (copy / "__cluster_metadata-0" / "leader-epoch-checkpoint").unlink()
    blind = build_timeline([copy / "__cluster_metadata-0"])
    assert not blind.tail_missing and blind.complete and [f.code for f in blind.findings] == []
    codes = _grant_codes(sc, blind)  # brokers 1-3: their own copies are not among those given (only 101's is)
    assert codes[3] == [("EPOCH_NOT_GRANTED", 1), ("EPOCH_NOT_GRANTED", 2)]


def test_the_scenarios_json_carries_the_derivation_and_sources():
    for name in NAMES:
        doc = json.loads((SCENARIOS / name / "scenario.json").read_text())
        assert "quorum" in doc["derivation"] and any("@3.8.0" in s for s in doc["sources"])


def test_the_timeline_command_shows_the_quorum_view_and_a_lost_tail():
    from click.testing import CliRunner

    from kforensics.cli import main
    from tests.cli.test_schemas import errors, validator

    deposed = SCENARIOS / "metadata-deposed-tail"
    args = ["timeline", str(deposed / "controller-101"), str(deposed / "controller-102")]
    r = CliRunner().invoke(main, args)
    lines = r.stdout.splitlines()
    assert lines[0] == "answer: no unclean election (1 partition, 3 entries)" and r.exit_code == 1  # LOW finding
    assert lines[1].startswith("metadata quorum: 2 copies, voters [101, 102, 103], committed bound unknown")
    assert lines[1].endswith("controller-102/__cluster_metadata-0")  # the survivor with the committed metadata
    assert "diverges at offset 5 (epoch 1; the reference has epoch 2 there): 5-7 a deposed leader's tail" in lines[2]
    doc = json.loads(CliRunner().invoke(main, [*args, "--format", "json"]).stdout)
    assert not errors(validator("timeline"), doc)
    assert [c["deposed"] for c in doc["quorum"]["copies"]] == [[5, 8], None]

    lost = SCENARIOS / "metadata-log-incomplete" / "controller-101"
    r = CliRunner().invoke(main, ["timeline", str(lost)])
    assert r.stdout.startswith("answer: the metadata log given lost its tail (it holds offsets below 5; on disk: ")
    assert "LOST ITS TAIL: its leader-epoch-checkpoint starts epoch 3 at offset 6, after its log end 5" in r.stdout
    doc = json.loads(CliRunner().invoke(main, ["timeline", str(lost), "--format", "json"]).stdout)
    assert not errors(validator("timeline"), doc)
    assert (doc["complete"], doc["tail_missing"], doc["trusted_end"], doc["committed_end"]) == (False, True, 5, 5)
    assert doc["partitions"][0]["entries"][0]["committed"] is True


def test_scan_of_a_combined_node_whose_metadata_log_lost_its_tail(tmp_path):
    # the case: a node (broker and controller in one log dir) whose metadata log ends before the grants of the
    # epochs its own replica holds; scan raised EPOCH_NOT_GRANTED (HIGH) for each and said nothing of the log
    from kforensics.scan.broker import scan_log_dirs

    sdir = SCENARIOS / "metadata-log-incomplete"
    node = tmp_path / "node-1"
    shutil.copytree(sdir / "controller-101", node)
    shutil.copytree(sdir / "broker-1" / "orders-0", node / "orders-0")
    codes = [f.code for f in scan_log_dirs([node]).all_findings()]
    assert "METADATA_LOG_INCOMPLETE" in codes and "EPOCH_NOT_GRANTED" not in codes
    # without the metadata log's checkpoint the partition's own epochs are the witness: node 1 (node.id 101) took
    # leader epoch 2 of orders-0 from its own copy of the metadata log (BrokerMetadataPublisher -> ReplicaManager.
    # applyDelta, 3.8.0), which no longer holds that grant: the copy lost it, and no EPOCH_NOT_GRANTED is drawn
    (node / "__cluster_metadata-0" / "leader-epoch-checkpoint").unlink()
    (f,) = [f for f in scan_log_dirs([node]).all_findings() if f.code in ("METADATA_LOG_INCOMPLETE",
                                                                         "EPOCH_NOT_GRANTED")]
    assert f.code == "METADATA_LOG_INCOMPLETE" and (f.facts["epoch"], f.facts["last_granted"]) == (2, 0)
    # (a replica whose broker's own copy is not given: EPOCH_NOT_GRANTED as before, the end of the test above)
