"""The interpreter's cyclic garbage collector, tuned for a process that builds many long-lived objects.

A scan or replay of a fleet of small partitions keeps tens of thousands of partition results alive at once;
with CPython's default thresholds (700, 10, 10) the collector then walks that heap again and again, a quarter
of a replay of 3 x 10 000 partitions (measured: 21.1 s CPU, 16.3 s with the thresholds below, the same peak
RSS).  The front ends (the command line, the Spark tasks) call :func:`tune` once per process.

Each collection of the youngest generation walks every object allocated since the last one that is still alive,
and nearly all of a fleet's are (the replicas, their scans and replays): so whatever the threshold, each kept
object is walked once, unless no collection comes at all.  With generation 0 collected every 50 000 net
allocations, a replay of 3 x 10 000 small partitions spent 0.9 s to 1.0 s in 59 young collections with
``--jobs 1``, and 0.6 s to 0.7 s in 44 with the brokers loaded side by side (this process's share).  At 1 000 000
none comes: the replay keeps about 92 net objects a partition, so its 920 000 stay below (the same peak RSS: its
objects leave no cyclic garbage to speak of); a larger fleet meets collections again, each kept object walked once
as before.  The threshold is not higher because it bounds what can wait for the collector whatever the input: a
million small containers held in cycles, about 90 MB measured, under a third of the 300 MB a fleet's scan or
replay may take.  The older generations come after 1 000 and 100 young collections, as good as never: each would
walk everything kept.
"""

from __future__ import annotations

import gc

#: generation 0 collected after 1 000 000 net allocations (not 700), generation 1 after 1 000 of those (not 10)
THRESHOLDS = (1_000_000, 1_000, 100)


def tune() -> None:
    """Set :data:`THRESHOLDS` unless the collector was disabled or already tuned by whoever runs us."""
    if gc.isenabled() and gc.get_threshold() == (700, 10, 10):
        gc.set_threshold(*THRESHOLDS)
