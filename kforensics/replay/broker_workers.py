"""Brokers loaded side by side: each broker's scan in a worker process, its replicas handed back in order.

A replay reads every broker's log dirs, one broker after another, and most of a fleet's replay is that reading (three
brokers of 10 000 small partitions: more than half).  The brokers are independent until their replicas are
grouped, so each can be scanned by a process of its own, as Kafka recovers its log dirs with
``num.recovery.threads.per.data.dir`` threads.  This process loads the last broker itself while the workers load the
others; the loads are then taken in the brokers' order, so the groups, the unnamed brokers' numbers and every refusal
are those of one broker after another.

Workers are forked (:class:`kforensics.forked.Forked`): they start with this process's modules and the resolved log
dirs, and only read.  They are used only where that is safe and pays: local log dirs (an archive or a remote source
keeps open handles that do not cross processes), more than one broker, and no other thread in this process.  A
worker that dies (killed, out of memory) leaves its brokers to this process, which loads them as it would have;
Ctrl-C is this process's, and whatever ends the loads early ends the workers at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, TypeVar

from ..forked import Forked, cores, other_threads
from ..log.listing import is_local

#: a broker to load (:class:`~.inputs.BrokerTask`) and its load (:class:`~.inputs.BrokerLoad`)
Task = TypeVar("Task")
Load = TypeVar("Load")


def worker_count(jobs: int | None, log_dirs: list[list[Any]]) -> int:
    """How many worker processes load the brokers of ``log_dirs`` (each broker's) beside this one: none for
    ``jobs`` 1, one broker, log dirs that are not local directories or a process with other threads; else up to
    ``jobs`` (None: :func:`cores`), never more than the brokers left once this process has taken one."""
    want = cores() if jobs is None else jobs
    if want <= 1 or len(log_dirs) <= 1 or other_threads():
        return 0
    if not all(is_local(d) for dirs in log_dirs for d in dirs):
        return 0
    # this process loads a broker too: with two cores, two workers and this one keep both busy while the
    # workers' results are handed back (the hand-over is about a quarter of a small broker's load)
    return min(want, len(log_dirs) - 1)


def broker_loads(tasks: list[Task], log_dirs: list[list[Any]], jobs: int | None, load: Callable[[Task], Load]
                 ) -> Iterator[Load]:
    """``load`` of each task, in the tasks' order: a forked worker per task but the last, which this process loads
    meanwhile, at most :func:`worker_count` workers at once (of ``jobs`` and the tasks' ``log_dirs``), all taken
    before the first is given; whatever ends the loads early (an interrupt, an error) ends the workers too.  Without
    workers, one after another as they are asked for."""
    workers = worker_count(jobs, log_dirs)
    if not workers:
        return (load(task) for task in tasks)  # one at a time: a refusal comes before the next broker is read
    return iter(_side_by_side(tasks, workers, load))


def _side_by_side(tasks: list[Task], workers: int, load: Callable[[Task], Load]) -> list[Load]:
    # every load is taken before this returns, so nothing can leave it suspended with workers running: whatever
    # ends it early (Ctrl-C, an error) passes the ``finally``, which ends them
    running: dict[int, Forked[Load]] = {}
    out: list[Load] = []
    try:
        for i in range(min(workers, len(tasks) - 1)):
            Forked.start(running, i, partial(load, tasks[i]))
        last = load(tasks[-1])
        for i in range(len(tasks) - 1):
            out.append(running[i].take(partial(load, tasks[i])))
            del running[i]  # only once taken: a worker interrupted while it is read is still ended below
            if i + workers < len(tasks) - 1:
                Forked.start(running, i + workers, partial(load, tasks[i + workers]))
        return [*out, last]
    finally:
        for w in running.values():
            w.end()
