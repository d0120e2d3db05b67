"""The Spark job starts its session once nothing is left to refuse, and builds the rest of its plan (the task rows,
the root files' tables) on a helper thread meanwhile: starting a JVM is mostly waiting on the new process, and the
plan's rest is a few seconds of Python on a fleet of small partitions (#26)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from kforensics.spark import job
from kforensics.spark.inputs import Snapshot
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))


def _fleet(root: Path) -> list[Path]:
    from bench_spark import build

    root.mkdir(parents=True)
    return build(root, "fleet", 2, 12, 3, topics=3)


def test_the_plans_rest_is_built_while_the_session_starts(spark, tmp_path, monkeypatch):
    dirs = _fleet(tmp_path / "fleet")
    starting = threading.Event()
    seen: dict[str, object] = {}
    finish = job.finish

    def rest(plan_):
        seen["tasks before"] = len(plan_.tasks)  # deferred: none yet
        seen["beside the start"] = starting.wait(20)  # the session is being started meanwhile
        seen["on a helper thread"] = threading.current_thread() is not threading.main_thread()
        return finish(plan_)

    def begin():
        starting.set()
        seen["session in the main thread"] = threading.current_thread() is threading.main_thread()
        return spark

    monkeypatch.setattr(job, "finish", rest)
    summary = job.run(begin, [Snapshot(str(d), d.name) for d in dirs], str(tmp_path / "out"), tables=("verdicts",))
    assert seen == {"tasks before": 0, "beside the start": True, "on a helper thread": True,
                    "session in the main thread": True}
    assert summary["partitions"] == 2 * 12 and summary["timings"]["start_s"] >= 0


def test_a_session_that_cannot_start_is_the_error_once_the_plans_rest_is_done(tmp_path, monkeypatch):
    dirs = _fleet(tmp_path / "fleet")
    done = []
    finish = job.finish

    def rest(plan_):
        out = finish(plan_)
        done.append(len(out.tasks))
        return out

    def begin():
        raise RuntimeError("no Java here")

    monkeypatch.setattr(job, "finish", rest)
    with pytest.raises(RuntimeError, match="no Java here"):
        job.run(begin, [Snapshot(str(d), d.name) for d in dirs], str(tmp_path / "out"))
    assert done == [2 * 12]  # waited for, not left running
    assert not any(t.name.startswith("kforensics-plan") for t in threading.enumerate())
    assert not (tmp_path / "out").exists()


def test_a_session_given_gets_the_whole_plan_first(spark, tmp_path, monkeypatch):
    """A running session (a notebook's): nothing to start, the plan is finished on the caller's thread."""
    dirs = _fleet(tmp_path / "fleet")
    threads = []
    finish = job.finish

    def rest(plan_):
        threads.append(threading.current_thread() is threading.main_thread())
        return finish(plan_)

    monkeypatch.setattr(job, "finish", rest)
    summary = job.run(spark, [Snapshot(str(d), d.name) for d in dirs], str(tmp_path / "out"), tables=("verdicts",))
    assert threads == [True] and summary["partitions"] == 2 * 12
