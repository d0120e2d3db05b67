"""Brokers loaded side by side: each broker's scan in a worker process, its replicas handed back in order.

A replay reads every broker's log dirs, one broker after another, and most of a fleet's replay is that reading (three
brokers of 10 000 small partitions: more than half).  The brokers are independent until their replicas are
grouped, so each can be scanned by a process of its own, as Kafka recovers its log dirs with
``num.recovery.threads.per.data.dir`` threads.  This process loads the last broker itself while the workers load the
others; the loads are then taken in the brokers' order, so the groups, the unnamed brokers' numbers and every refusal
are those of one broker after another.

Workers are forked: they start with this process's modules and the resolved log dirs, and only read.  They are used
only where that is safe and pays: local log dirs (an archive or a remote source keeps open handles that do not
cross processes), more than one broker, and no other thread in this process (a notebook's kernel has several; a
forked copy of a lock another thread held would never be released).  A worker that dies (killed, out of memory)
leaves its brokers to this process, which loads them as it would have.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

#: a broker to load (:class:`~.inputs.BrokerTask`) and its load (:class:`~.inputs.BrokerLoad`)
Task = TypeVar("Task")
Load = TypeVar("Load")


def cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def other_threads() -> bool:
    """Whether this process runs threads besides this one (then it is not forked)."""
    return threading.active_count() > 1


#: a local directory's path type (an archive member's or a remote object's is another)
_LOCAL = type(Path())


def worker_count(jobs: int | None, log_dirs: list[list[Any]]) -> int:
    """How many worker processes load the brokers of ``log_dirs`` (each broker's) beside this one: none for
    ``jobs`` 1, one broker, log dirs that are not local directories or a process with other threads; else up to
    ``jobs`` (None: :func:`cores`), never more than the brokers left once this process has taken one."""
    want = cores() if jobs is None else jobs
    if want <= 1 or len(log_dirs) <= 1 or other_threads():
        return 0
    if not all(type(d) is _LOCAL for dirs in log_dirs for d in dirs):
        return 0
    # this process loads a broker too: with two cores, two workers and this one keep both busy while the
    # workers' results are handed back (the hand-over is about a quarter of a small broker's load)
    return min(want, len(log_dirs) - 1)


def broker_loads(tasks: list[Task], log_dirs: list[list[Any]], jobs: int | None, load: Callable[[Task], Load]
                 ) -> Iterator[Load]:
    """``load`` of each task (a module's function: workers are handed it by name), in the tasks' order, ``jobs``
    brokers at a time (:func:`worker_count` of the tasks' ``log_dirs``)."""
    workers = worker_count(jobs, log_dirs)
    if not workers:
        for task in tasks:
            yield load(task)
        return
    import multiprocessing

    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        futures = [pool.submit(load, t) for t in tasks[:-1]]
        last = load(tasks[-1])
        for task, fut in zip(tasks, futures):
            yield _result(fut, task, load)
        yield last
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _result(fut: Future[Load], task: Task, load: Callable[[Task], Load]) -> Load:
    """A worker's load, or this process's own when the worker died before handing it back (the same load: what
    the worker would have read)."""
    try:
        return fut.result()
    except BrokenProcessPool:
        return load(task)
