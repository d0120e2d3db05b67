"""The collector's thresholds: tuned once per process by the front ends, never over a caller's own choice."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kforensics import collector
from kforensics.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "brokers"


@pytest.fixture
def default_thresholds():
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


def test_tune_raises_the_default_thresholds(default_thresholds):
    collector.tune()
    assert gc.get_threshold() == collector.THRESHOLDS
    assert collector.THRESHOLDS[0] > 700


def test_tune_leaves_a_callers_choice(default_thresholds):
    gc.set_threshold(1234, 5, 6)
    collector.tune()
    assert gc.get_threshold() == (1234, 5, 6)


def test_tune_leaves_a_disabled_collector(default_thresholds):
    gc.disable()
    try:
        collector.tune()
        assert gc.get_threshold() == (700, 10, 10) and not gc.isenabled()
    finally:
        gc.enable()


def test_the_command_line_tunes_it(default_thresholds):
    broker = sorted(p for p in FIXTURES.iterdir() if p.is_dir())[0]
    got = CliRunner().invoke(main, ["scan", str(broker)])
    assert got.exit_code in (0, 1), got.output
    assert gc.get_threshold() == collector.THRESHOLDS


#: in a fresh interpreter: the collector tuned as the command line tunes it, then a replay of the fleet given, in
#: this process (``jobs=1``); prints how many collections came during the replay
_COUNT_COLLECTIONS = """
import gc, sys
from pathlib import Path
from kforensics.collector import tune
from kforensics.replay.report import replay_all
tune()
came = []
gc.callbacks.append(lambda phase, info: came.append(info["generation"]) if phase == "start" else None)
report = replay_all([Path(p) for p in sys.argv[1:]], jobs=1)
print(len(report.partitions), len(came))
"""


def test_a_fleets_replay_is_never_walked_by_the_collector(tmp_path):
    """A replay keeps nearly everything it makes: below the tuned threshold no collection walks it (with the
    earlier 50 000, a replay of 3 x 1 000 small partitions met three)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from bench_spark import build

    dirs = build(tmp_path, "fleet", 3, 1000, 10, topics=8)
    got = subprocess.run([sys.executable, "-c", _COUNT_COLLECTIONS, *map(str, dirs)], capture_output=True,
                         text=True, timeout=300, check=True)
    partitions, collections = map(int, got.stdout.split())
    assert partitions == 1000
    assert collections == 0
