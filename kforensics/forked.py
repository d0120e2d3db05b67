"""Work done by forked processes beside this one, its results handed back in order.

A command over a fleet of small partitions spends most of its time on Python objects, a partition at a time, on one
core.  Where that work is independent from one item to the next (loading one broker, converting one partition's
result to JSON, writing a scan's tables), a forked process can do part of it on another core: it starts with this
process's state (nothing is sent to it) and hands back only its results, pickled through a pipe of its own.  Three
uses build on :class:`Forked`: the brokers a replay loads side by side (:mod:`kforensics.replay.broker_workers`),
:func:`helped_map` (every other run of items done by a helper: a fleet's JSON lists), and :func:`beside` (work
done while the caller goes on: ``scan --out``'s tables while the scan's document is written).

Replaying a fleet's partition groups with :func:`helped_map` was measured and left out: the helper's replays were
no sooner handed back (unpickled) than this process would have made them, and a forked process's first write to
each page it shares costs a copy (CPython writes a reference count whenever an object is read), so this process
replayed its own runs more slowly (0.3 ms a group against 0.2 ms): three brokers of 10 000 partitions took 1.7 s
to 2.2 s with the helper against 1.7 s without.

A process is forked only where that is safe (:func:`may_fork`): no other thread in this process (a notebook's kernel
has several; a forked copy of a lock another thread held would never be released), and more than one core (or
``jobs`` above 1).  The forked process only reads and computes: it ignores Ctrl-C, which stays this process's, and
whatever ends the work early (an interrupt, an error) ends it at once, as nothing of it is left half done.  One that
dies (killed, out of memory) or whose result does not pickle leaves its work to this process, which then meets the
same result or exception.  A process pool was not used: an interrupt while its workers started could leave it
waiting for them forever.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, BinaryIO, Generic, NoReturn, TypeVar

T = TypeVar("T")
A = TypeVar("A")


def cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def other_threads() -> bool:
    """Whether this process runs threads besides this one (then it is not forked)."""
    return threading.active_count() > 1


def may_fork(jobs: int | None = None) -> bool:
    """Whether a helper process may work beside this one: ``jobs`` (None: :func:`cores`) above 1, and no other
    thread here."""
    return (cores() if jobs is None else jobs) > 1 and not other_threads()


class Forked(Generic[T]):
    """A forked process computing one result, or a series of them (``stream``); each comes back pickled through a
    pipe."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid, self.fd = pid, fd
        self._stream: BinaryIO | None = None

    @classmethod
    def start(cls, running: dict[int, Forked[T]], i: int, work: Callable[[], Any], stream: bool = False) -> None:
        """Fork a process computing ``work()`` into ``running[i]`` (``stream``: ``work()`` is an iterator whose
        items are handed back one by one, each once it is made).  Ctrl-C is held until it is there: the process
        never takes it (it ignores it), and this one, which ends its helpers when it takes it, knows of every one."""
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            running[i] = cls._fork(work, running.values(), held, stream)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    @classmethod
    def _fork(cls, work: Callable[[], Any], others: Iterable[Forked[Any]], held: Iterable[int], stream: bool
              ) -> Forked[T]:
        read_end, write_end = os.pipe()
        sys.stdout.flush()  # what this process wrote is written once, by this process
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the helper (its results are checked through the parent)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            os.close(read_end)
            for w in others:
                os.close(w.fd)  # the other helpers' pipes are not this one's
            _work(work, write_end, stream)
        os.close(write_end)
        return cls(pid, read_end)

    def take(self, again: Callable[[], T]) -> T:
        """The result, raised if the work raised; ``again()`` (this process does the work) when the helper died
        before handing it back (killed, out of memory) or could not pickle it."""
        try:
            got = self._read()
        finally:
            self.end()  # taken, or given up (an interrupt while it is read): no helper outlives its taking
        if got is None:
            return again()
        return got[0]

    def next(self) -> tuple[T] | None:
        """The next item of a ``stream``, in a 1-tuple, raised if making it raised; None when the helper handed
        back no more (it died, could not pickle the item, or there is none): it is then ended, and whatever is
        left is this process's to do."""
        got = self._read()
        if got is None:
            self.end()
        return got

    def _read(self) -> tuple[T] | None:
        if self._stream is None:
            if self.fd < 0:
                return None
            self._stream = os.fdopen(self.fd, "rb")
        try:
            # read as it is unpickled: a result is never held twice (as the pipe's bytes and as values)
            kind, value = pickle.load(self._stream)
        except Exception:  # noqa: BLE001 - cut short: the helper died while it wrote (or before), or ended
            return None
        if kind == "raised":
            self.end()
            raise value
        return (value,)

    def end(self) -> None:
        """Stop the helper now (nothing more of it is wanted) and reap it; again, nothing."""
        # Ctrl-C is held meanwhile: taken between the reap and forgetting the pid, it would leave a pid that is no
        # longer ours for the ``finally`` that ends the helpers to kill and wait for (ECHILD, or another process)
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            if self._stream is not None:
                self._stream.close()
                self._stream, self.fd = None, -1
            elif self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
            if self.pid > 0:
                try:
                    os.kill(self.pid, signal.SIGKILL)  # it only reads and computes: nothing of it is left half done
                except ProcessLookupError:
                    pass
                os.waitpid(self.pid, 0)
                self.pid = -1
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _work(work: Callable[[], Any], out: int, stream: bool) -> NoReturn:  # pragma: no cover - in the helper
    """In the helper: the result (each item of a ``stream``), or the exception raised, pickled into ``out``; then
    the helper ends at once (no exit handler of the process it was forked from runs), with status 1 if a result
    could not be handed back whole.  A result is pickled as it is written (never held twice); an item of a stream
    is pickled whole before any of it is written, so one that does not pickle ends the stream where it was."""
    code = 1
    try:
        with os.fdopen(out, "wb") as fh:
            if not stream:
                pickle.dump(_outcome(work), fh, protocol=pickle.HIGHEST_PROTOCOL)
            else:
                for item in _items(work):
                    fh.write(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL))
                    fh.flush()  # this item is this process's to take now
        code = 0
    finally:
        os._exit(code)


def _outcome(work: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "done", work()
    except BaseException as e:  # noqa: BLE001 - raised again in the parent, as if it had done the work
        return "raised", e


def _items(work: Callable[[], Iterator[Any]]) -> Iterator[tuple[str, Any]]:
    try:
        for item in work():
            yield "done", item
    except GeneratorExit:
        raise  # closed while it waited at a yield (the parent went away): nothing more to make
    except BaseException as e:  # noqa: BLE001 - raised again in the parent, as if it had done the work
        yield "raised", e


def _runs(items: Sequence[A], run: int) -> Iterator[tuple[Sequence[A], Sequence[A]]]:
    """``items`` as pairs of runs of ``run``: this process's, then the helper's."""
    for i in range(0, len(items), 2 * run):
        yield items[i:i + run], items[i + run:i + 2 * run]


def _helper_runs(fn: Callable[[A], T], items: Sequence[A], run: int) -> Iterator[list[T]]:
    for _mine, theirs in _runs(items, run):
        if theirs:
            yield [fn(x) for x in theirs]


def helped_map(fn: Callable[[A], T], items: Sequence[A], run: int) -> Iterator[T]:
    """``fn`` of each item, in the items' order, as ``map`` gives them; the items are taken in runs of ``run``,
    this process's and a forked helper's in turn: the helper does its runs meanwhile and hands their results back.
    One helper is forked, at the start (``fn`` reads there what this process holds then); it is at most a run
    ahead, so at most two runs of results are held whatever the number of items.  A helper that dies, or whose
    results do not pickle, leaves the rest to this process, which does it as the helper would have."""
    running: dict[int, Forked[list[T]]] = {}
    if len(items) > run:
        Forked.start(running, 0, partial(_helper_runs, fn, items, run), stream=True)
    try:
        for mine, theirs in _runs(items, run):
            yield from (fn(x) for x in mine)
            if not theirs:
                continue
            helper = running.get(0)
            got = helper.next() if helper is not None else None
            if got is None:
                running.pop(0, None)
            yield from got[0] if got is not None else (fn(x) for x in theirs)
    finally:
        for w in running.values():
            w.end()


@contextmanager
def beside(work: Callable[[], object], fork: bool) -> Iterator[None]:
    """``work()`` done while the body of the ``with`` runs, by a forked helper when ``fork`` (taken when the body
    ends, and raised there if it raised); else by this process, before the body.  Whatever ends the body early
    ends the helper."""
    if not fork:
        work()
        yield
        return
    running: dict[int, Forked[object]] = {}
    Forked.start(running, 0, work)
    try:
        yield
    except BaseException:
        running[0].end()
        raise
    running[0].take(work)
