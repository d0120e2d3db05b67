"""The interpreter's cyclic garbage collector, tuned for a process that builds many long-lived objects.

A scan or replay of a fleet of small partitions keeps tens of thousands of partition results alive at once;
with CPython's default thresholds (700, 10, 10) the collector then walks that heap again and again, a quarter
of a replay of 3 x 10 000 partitions (measured: 21.1 s CPU, 16.3 s with the thresholds below, the same peak
RSS).  The front ends (the command line, the Spark tasks) call :func:`tune` once per process.

The older generations are collected far more rarely still: each collection of generation 1 walks every object that
survived the young collections since the last one, and nearly all of those are the results being kept (the
replicas, their scans and replays).  With generation 1 collected after 20 young collections, a replay of
3 x 10 000 small partitions spent 1.8 to 2.3 s in the collector; after 1 000, 0.8 to 1.0 s (the same peak RSS: the
scans and replays leave no cyclic garbage to speak of, and young cycles are still collected every 50 000 net
allocations).
"""

from __future__ import annotations

import gc

#: generation 0 collected after 50 000 net allocations (not 700), generation 1 after 1 000 of those (not 10)
THRESHOLDS = (50_000, 1_000, 100)


def tune() -> None:
    """Set :data:`THRESHOLDS` unless the collector was disabled or already tuned by whoever runs us."""
    if gc.isenabled() and gc.get_threshold() == (700, 10, 10):
        gc.set_threshold(*THRESHOLDS)
