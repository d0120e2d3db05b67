"""Where a scan task's ``batches`` rows go: one file per small partition dir would cost more than its scan.

A partition dir's rows are held while it is scanned as long as they are few
(at most :data:`kforensics.spark.window.INLINE_ROWS`, the replicas that
travel whole with their summary, so nothing reads them back); when the dir's
scan succeeds they join the task's file for their cluster and topic
(:class:`TaskBatches`), and a failed dir leaves none behind.  A larger dir
streams its rows to a file of its own from the first chunk past the limit,
which the replay stage reads its window from.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..tables.scan_tables import ROW_GROUP, BatchesWriter
from .files import FileSystem
from .window import INLINE_ROWS

#: rows held across a task's per-topic writers before they all write what they hold (memory stays bounded
#: however many topics a task's dirs belong to)
TASK_BUDGET = 2 * ROW_GROUP


class TaskBatches:
    """A scan task's writers of small dirs' batch rows: one file per batches directory (cluster and topic),
    named after the task."""

    def __init__(self, part: str, filesystem: FileSystem = None, budget: int = TASK_BUDGET):
        self.part = part
        self.filesystem = filesystem
        self.budget = budget
        self.writers: dict[str, BatchesWriter] = {}
        self.held = 0

    def add(self, batch_dir: str, context: Mapping[str, object], chunks: list[tuple]) -> None:
        """A scanned dir's chunks (``(partition dir, segment, table)``, as the scan's batch sink got them)."""
        w = self.writers.get(batch_dir)
        if w is None:
            w = self.writers[batch_dir] = BatchesWriter(f"{batch_dir}/{self.part}.parquet", context, self.filesystem)
        w.set_context(**context)  # a task's dirs come from several snapshots
        before = w.held_rows
        for pd_, seg, t in chunks:
            w(pd_, seg, t)
        self.held += w.held_rows - before
        if self.held > self.budget:
            for each in self.writers.values():
                each.flush()
            self.held = 0

    def close(self) -> None:
        """Write what is held and close every file (a failure is raised after all are closed)."""
        error = None
        for w in self.writers.values():
            try:
                w.close()
            except Exception as e:  # noqa: BLE001 - close the others first
                error = error or e
        self.writers = {}
        if error is not None:
            raise error


class DirBatches:
    """The batch sink of one partition dir in a scan task: its rows held while few, else streamed to ``path``."""

    def __init__(self, task: TaskBatches, batch_dir: str, path: str, context: Mapping[str, object],
                 filesystem: FileSystem = None, limit: int = INLINE_ROWS):
        self.task, self.batch_dir, self.path, self.context = task, batch_dir, path, context
        self.filesystem = filesystem
        self.limit = limit
        self.rows = 0
        self._held: list[tuple] = []
        self.own: BatchesWriter | None = None

    def __call__(self, pd_, seg, t) -> None:
        if not len(t):
            return
        self.rows += len(t)
        if self.own is not None:
            self.own(pd_, seg, t)
            return
        self._held.append((pd_, seg, t))
        if self.rows > self.limit:
            self.own = BatchesWriter(self.path, self.context, self.filesystem)
            for chunk in self._held:
                self.own(*chunk)
            self._held = []

    def close(self) -> str | None:
        """The dir was scanned: its own file, if it has one, is closed and its path returned (None: its rows are
        held, and join the task's file at :meth:`commit`)."""
        if self.own is None:
            return None
        self.own.close()
        return self.path

    def commit(self) -> None:
        """Everything else about the dir succeeded: its held rows join the task's file."""
        if self._held:
            self.task.add(self.batch_dir, self.context, self._held)
            self._held = []

    def abandon(self) -> bool:
        """The dir's scan failed: its held rows are dropped; True when it has a file of its own to remove."""
        self._held = []
        if self.own is None:
            return False
        try:
            self.own.close()
        except Exception:  # noqa: BLE001 - the file is removed anyway
            pass
        return True
