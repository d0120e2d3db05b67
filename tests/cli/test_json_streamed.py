"""``replay --format json`` writes its document a partition at a time (#26: on 3 x 10 000 partitions the whole
document's values and its 35 MB text were held at once, and replay peaked at 331 MB); the bytes are those of the
document written whole."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest

from kforensics.cli.json_out import document, dumps, write_streamed
from kforensics.cli.replay_inputs import replay_document
from kforensics.consumers.replay_impact import replay_impact
from kforensics.replay.report import replay_all
from kforensics.scenario import load_scenario
from tests.conftest import ROOT

SCENARIOS = ["unclean-leader-election", "transaction-marker-lost", "consumer-group-skips-forked-records",
             "damaged-batches-leader-zero-unclean", "healthy-3-brokers"]


def streamed_text(doc: dict) -> str:
    out = io.StringIO()
    write_streamed(doc, out)
    return out.getvalue()


@pytest.mark.parametrize("name", SCENARIOS)
def test_streamed_replay_document_is_the_whole_ones_bytes(name):
    sc = load_scenario(ROOT / "fixtures" / "scenarios" / name)
    rep = replay_all(sc.brokers, events=sc.events, metadata=sc.metadata)
    impact = replay_impact(rep, sc.log_dirs)
    whole = dumps(replay_document(rep, impact)) + "\n"
    assert streamed_text(replay_document(rep, impact, streamed=True)) == whole
    assert '"partitions": [{' in whole  # partitions were there to stream


@dataclass
class _Result:
    name: str
    partitions: list = field(default_factory=list)
    findings: list = field(default_factory=list)
    _private: int = 0


@pytest.mark.parametrize("parts", [[], [{"a": 1}], [{"a": "\udcff\u00e9"}, b"\xff\x00", (1, 2)]])
def test_streamed_lists_empty_one_and_undecodable_names(parts):
    """No partition, one, and values the evidence may hold: an undecodable file name (surrogate escape), bytes,
    a tuple: the same text as written whole."""
    r = _Result("x\udc80", parts, [1])
    assert streamed_text(document("replay", r, ("partitions",))) == dumps(document("replay", r)) + "\n"
