"""``salvage --min-insync-replicas``: replay's option, passed to the replay salvage runs and said as replay says it."""

from __future__ import annotations

from click.testing import CliRunner

import kforensics.replay.report as replay_report
from kforensics.cli import main
from tests.conftest import ROOT

SCENARIO = ROOT / "fixtures" / "scenarios" / "unclean-leader-election"
SAID = "min.insync.replicas 2 given:"


def test_the_setting_reaches_the_replay_and_the_summary_says_it_as_replay_does(tmp_path, monkeypatch):
    seen = []
    real = replay_report.replay_all

    def spy(*a, **kw):
        report = real(*a, **kw)
        seen.append((kw.get("min_insync_replicas"), report.min_insync_replicas))
        return report

    monkeypatch.setattr(replay_report, "replay_all", spy)
    r = CliRunner().invoke(main, ["salvage", "--scenario", str(SCENARIO), "--out", str(tmp_path / "s"),
                                  "--min-insync-replicas", "2"], catch_exceptions=False)
    assert r.exit_code == 1, r.output
    assert seen == [(2, 2)]
    replayed = CliRunner().invoke(main, ["replay", "--scenario", str(SCENARIO), "--min-insync-replicas", "2"])
    line = [x for x in replayed.output.splitlines() if x.startswith(SAID)]
    assert line and line == [x for x in r.output.splitlines() if x.startswith(SAID)], (replayed.output, r.output)


def test_without_it_nothing_is_said_and_zero_is_refused(tmp_path):
    r = CliRunner().invoke(main, ["salvage", "--scenario", str(SCENARIO), "--out", str(tmp_path / "s")])
    assert r.exit_code == 1 and "min.insync.replicas" not in r.output
    r = CliRunner().invoke(main, ["salvage", "--scenario", str(SCENARIO), "--out", str(tmp_path / "t"),
                                  "--min-insync-replicas", "0"])
    assert r.exit_code == 2
