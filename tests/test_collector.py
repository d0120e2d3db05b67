"""The collector's thresholds: tuned once per process by the front ends, never over a caller's own choice."""

from __future__ import annotations

import gc
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
