"""Where replicas of one partition stop agreeing, as found on disk (before any replay).

Batches are aligned by offset.  Two batches agree when base, last, epoch and
CRC match.  In a range both replicas have compacted (below both cleaner
offsets) a batch may differ in content or be missing on one side, because
each broker's cleaner works independently; such differences are reported as
``compacted`` rather than as divergence.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np

from .replica import Replica


def first_divergence(a: Replica, b: Replica) -> dict[str, Any]:
    """The first offset where ``a`` and ``b`` differ, and a coarse agreement map."""
    la, lb = a.log, b.log
    n = min(len(la), len(lb))
    ia, ib = la.identity()[:n], lb.identity()[:n]
    same = np.all(ia == ib, axis=1)
    cleaned = min(a.cleaner_offset or -1, b.cleaner_offset or -1)
    first = None
    compacted_diffs = 0
    i = 0
    bad = np.nonzero(~same)[0]
    for j in bad.tolist():
        ra, rb = ia[j], ib[j]
        if ra[0] == rb[0] and ra[1] == rb[1] and ra[2] == rb[2] and ra[1] < cleaned:
            compacted_diffs += 1  # same offsets and epoch, content cleaned differently
            continue
        if max(ra[1], rb[1]) < cleaned:
            # boundaries differ inside the compacted range: from here on alignment by index is meaningless
            compacted_diffs += 1
            first = None
            i = j
            break
        first = int(min(ra[0], rb[0]))
        break
    end_a, end_b = a.log_end_offset, b.log_end_offset
    agree_to = first if first is not None else min(end_a, end_b)
    amap = [{"from": int(min(a.log_start, b.log_start)), "to": int(agree_to), "status": "agree"}]
    if first is not None:
        amap.append({"from": first, "to": int(min(end_a, end_b)), "status": "differ"})
    if end_a != end_b:
        longer = a if end_a > end_b else b
        amap.append({"from": int(min(end_a, end_b)), "to": int(max(end_a, end_b)),
                     "status": f"only_on_{longer.broker_id}"})
    return {
        "brokers": [a.broker_id, b.broker_id],
        "first_divergent_offset": first,
        "prefix": first is None and i == 0,
        "compacted_differences": compacted_diffs,
        "log_end_offsets": [end_a, end_b],
        "agreement": amap,
    }


def divergence(replicas: list[Replica]) -> list[dict[str, Any]]:
    """Pairwise divergence for every pair of replicas."""
    return [first_divergence(a, b) for a, b in combinations(sorted(replicas, key=lambda r: r.broker_id), 2)]
