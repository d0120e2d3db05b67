"""Forked helpers (kforensics.forked) give what this process alone gives: the same results in the same order, the
same exception, nothing left running.

The expected answer is the builtin ``map``'s (or the work done in this process); each test also checks that a
helper did part of the work, so a helped run that quietly fell back to this process would fail it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kforensics import forked
from tests.conftest import ROOT, all_reaped


def _where(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@pytest.mark.parametrize("n,run", [(0, 3), (1, 3), (3, 3), (4, 3), (6, 3), (17, 3), (10, 1)])
def test_helped_map_gives_maps_results_in_order(n, run, forks):
    got = list(forked.helped_map(_where, list(range(n)), run))
    assert [v for v, _ in got] == [x * x for x in range(n)]
    helped = {x for x, (_, pid) in zip(range(n), got) if pid != os.getpid()}
    # every other run of ``run`` items is the helper's
    assert helped == {x for x in range(n) if (x // run) % 2 == 1}
    assert (len(forks) == 1 and all_reaped(forks)) if n > run else forks == []


def test_a_helper_that_dies_leaves_its_runs_to_this_process(forks):
    main = os.getpid()

    def dies_at_six(x):
        if x == 6 and os.getpid() != main:
            os.kill(os.getpid(), signal.SIGKILL)
        return _where(x)

    got = list(forked.helped_map(dies_at_six, list(range(12)), 2))
    assert [v for v, _ in got] == [x * x for x in range(12)]
    # the helper's run 2, 3 came back; from its run holding 6 on, this process did every item
    assert {x for x, (_, pid) in zip(range(12), got) if pid != main} == {2, 3}
    assert all_reaped(forks)


def test_results_that_do_not_pickle_are_made_here(forks):
    main = os.getpid()
    got = list(forked.helped_map(lambda x: (lambda: x) if x == 7 else _where(x), list(range(10)), 2))
    assert got[7]() == 7  # a function made in this process: the helper could not hand it back
    assert [got[x][0] for x in range(10) if x != 7] == [x * x for x in range(10) if x != 7]
    # the helper's first run came back; its run holding 7 and the rest were made here
    assert {x for x in range(10) if x != 7 and got[x][1] != main} == {2, 3}
    assert all_reaped(forks)


@pytest.mark.parametrize("fails", [(7,), (2, 7), (3, 6)])
def test_the_first_failure_in_order_is_raised_as_map_raises_it(fails, forks):
    def fn(x):
        if x in fails:
            raise ValueError(x)
        return x

    with pytest.raises(ValueError) as serial:
        list(map(fn, range(12)))
    with pytest.raises(ValueError) as helped:
        list(forked.helped_map(fn, list(range(12)), 2))
    assert helped.value.args == serial.value.args
    assert len(forks) == 1 and all_reaped(forks)


def test_a_map_ended_early_ends_its_helper(forks):
    it = forked.helped_map(_where, list(range(100)), 5)
    assert next(it)[0] == 0
    it.close()
    assert len(forks) == 1 and all_reaped(forks)


def test_work_beside_a_body_comes_back_when_the_body_ends(tmp_path, forks):
    out = tmp_path / "written"
    with forked.beside(lambda: out.write_text(str(os.getpid())), fork=True):
        pass
    assert int(out.read_text()) != os.getpid() and len(forks) == 1 and all_reaped(forks)


def test_a_failure_beside_is_raised_when_the_body_ends(forks):
    def fails():
        raise OSError(28, "No space left on device")

    done = []
    with pytest.raises(OSError, match="No space left"):
        with forked.beside(fails, fork=True):
            done.append(True)
    assert done == [True] and all_reaped(forks)  # the body ran whole first


def test_a_body_that_fails_ends_the_helper(forks):
    with pytest.raises(KeyboardInterrupt):
        with forked.beside(lambda: time.sleep(20), fork=True):
            raise KeyboardInterrupt
    assert len(forks) == 1 and all_reaped(forks)


def test_without_fork_the_work_is_done_before_the_body(forks):
    order = []
    with forked.beside(lambda: order.append("work"), fork=False):
        order.append("body")
    assert order == ["work", "body"] and forks == []


def test_a_helper_only_where_it_is_safe(monkeypatch):
    monkeypatch.setattr(forked, "other_threads", lambda: False)
    monkeypatch.setattr(forked, "cores", lambda: 2)
    assert forked.may_fork(None) and forked.may_fork(2) and not forked.may_fork(1)
    monkeypatch.setattr(forked, "cores", lambda: 1)
    assert not forked.may_fork(None) and forked.may_fork(3)
    monkeypatch.setattr(forked, "other_threads", lambda: True)
    assert not forked.may_fork(8)  # a threaded process is not forked


def test_an_interrupt_while_the_result_is_awaited_ends_the_helper(forks):
    """Ctrl-C while this process waits for the helper's result (the body done first): the helper is ended and
    reaped, not left to finish on its own after this process is gone."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)  # a forked process inherits no timer
        with pytest.raises(KeyboardInterrupt):
            with forked.beside(lambda: time.sleep(20), fork=True):
                pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert len(forks) == 1 and all_reaped(forks)


#: a map ended early while its helper writes, its pipe closed half a second before it is killed (ending a helper
#: closes the pipe first), so the helper meets the closed pipe; in a process of its own: a helper forked from pytest
#: writes to pytest's own capture, which it never flushes
_ENDED_EARLY = """
import os, sys, time
from kforensics import forked

kill = os.kill
os.kill = lambda pid, sig: (time.sleep(0.5), kill(pid, sig))
it = forked.helped_map(lambda x: "x" * 100_000, list(range(40)), 2)
next(it)
time.sleep(0.3)  # the helper's first run is made, and waits in the pipe
it.close()
print("ended", file=sys.stderr)
"""


def test_a_helper_whose_results_are_no_longer_read_ends_quietly():
    """It then ends without a word on the command's stderr (it printed a traceback: its stream of results caught
    the generator's close and yielded again)."""
    got = subprocess.run([sys.executable, "-c", _ENDED_EARLY], capture_output=True, text=True, timeout=60,
                         cwd=ROOT)
    assert got.returncode == 0 and got.stderr == "ended\n", got.stderr
