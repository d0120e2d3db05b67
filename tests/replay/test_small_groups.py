"""Groups of small replicas replayed whole, without a summary (issue 26), against the summarised, windowed path.

A replica whose log ends in the first digest range puts its group's window at offset 0 whatever the summaries
say (``window_floor`` keeps the last batches of the shortest log), so ``replay`` no longer digests such replicas.
The answer must be the one of the per-partition path that summarises every replica: here in ranges of 8 offsets,
so that logs of tens of offsets can be windowed above 0 (the power losses of ``test_summary``, whose restarts reach
only the last range) and widened on demand.  Damaged, diverging, empty, transactional and healthy groups alike.
"""

from __future__ import annotations

import json

from kforensics.replay import group as group_module
from kforensics.replay import inputs as inputs_module
from kforensics.replay import summary as summary_module
from kforensics.replay.report import replay_all
from kforensics.scenario.loading import load_scenario
from kforensics.serialize import to_jsonable
from tests.conftest import ROOT

SCENARIOS = ["healthy-3-brokers", "damaged-batches-follower-crc-unclean", "damaged-batches-leader-torn-marker",
             "kip101-s2-two-hard-failures", "unclean-leader-election", "lagging-follower", "three-round-truncation",
             "compaction-differs", "transaction-marker-lost"]
RANGE = 8


class _Ranges(summary_module.SummaryBuilder):
    def __init__(self, chunk_offsets: int = RANGE) -> None:
        super().__init__(chunk_offsets)


def _document(sc) -> str:
    report = replay_all(sc.brokers, events=sc.events or None, metadata=sc.metadata)
    return json.dumps(to_jsonable(report.partitions), sort_keys=True)


def test_a_small_group_replayed_whole_is_the_windowed_replay(monkeypatch, tmp_path):
    from tests.replay.test_summary import power_loss

    windows: dict[str, list[int]] = {}
    real_window = summary_module.window_floor
    lost = {f"power-loss-{rp}-{split}": power_loss(tmp_path / f"{rp}-{split}", rp, split)
            for rp, split in ((None, None), (9, 4), (13, None))}
    for name in SCENARIOS + list(lost):
        sc = load_scenario(lost.get(name) or ROOT / "fixtures" / "scenarios" / name)
        whole = _document(sc)

        seen = windows.setdefault(name, [])

        def floor(summaries, mode, seen=seen):
            seen.append(real_window(summaries, mode))
            return seen[-1]

        with monkeypatch.context() as m:
            m.setattr(inputs_module, "SummaryBuilder", _Ranges)
            m.setattr(inputs_module, "needs_summaries", lambda r: True)
            m.setattr(group_module, "needs_summaries", lambda r: True)
            m.setattr(summary_module, "window_floor", floor)
            windowed = _document(sc)
        assert windows[name], name
        assert windowed == whole, name
    # the scenarios' logs are a few ranges long, most restarts reach offset 0: the power losses are windowed above it
    assert all(any(w > 0 for w in windows[name]) for name in lost), windows


def test_only_replicas_past_the_first_range_are_summarised():
    from kforensics.replay.replica import BatchLog, Replica

    def replica(n: int) -> Replica:
        rows = [[o, o, 0, o, 1, 100, -1, 2] for o in range(n)]
        return Replica(1, BatchLog.from_rows(rows), high_watermark=n)

    assert not summary_module.needs_summaries(replica(10))
    assert not summary_module.needs_summaries(replica(summary_module.CHUNK_OFFSETS))
    assert summary_module.needs_summaries(replica(summary_module.CHUNK_OFFSETS + 1))
