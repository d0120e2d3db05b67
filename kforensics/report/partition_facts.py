"""Per-partition numbers the report shows, computed once from the replay's JSON document and the verdict rules.

Records lost to a partition are the union of the offsets its replicas'
impact verdicts name (:data:`kforensics.verdict_rules.IMPACT`: records the
new leader does not serve): three followers losing the same ten offsets
lose ten records, not thirty.  Committed ones are those below the
partition's committed bound (its high watermark as the replay knows it).
"""

from __future__ import annotations

from typing import Any

from ..plots_fleet import merge_ranges as merge
from ..plots_fleet import ranges_below as below
from ..plots_fleet import union_count
from ..verdict_rules import FAILS_REPLAY, IMPACT, ORDER, worst

__all__ = ["at_risk", "below", "impact_ranges", "impact_records", "merge", "name", "partition_order_key",
           "union_count", "worst_code"]


def impact_ranges(p: dict[str, Any]) -> list[list[int]]:
    """The merged offsets of a partition's impact verdicts, over all replicas."""
    return merge([r for rep in p["replicas"] for v in rep["verdicts"] if v["code"] in IMPACT
                  for r in (v.get("offsets") or [])])


def impact_records(p: dict[str, Any]) -> int:
    """Records the new leader does not serve: the union of the impact offsets, else the largest count given."""
    ranges = impact_ranges(p)
    if ranges:
        return union_count(ranges)
    counts = [v.get("records") or 0 for rep in p["replicas"] for v in rep["verdicts"] if v["code"] in IMPACT]
    return max(counts, default=0)


def worst_code(p: dict[str, Any]) -> str:
    """The partition's worst verdict over its replicas (by the verdict rules' order)."""
    codes = [v["code"] for rep in p["replicas"] for v in rep["verdicts"]]
    return worst(codes) if codes else "OK"


def at_risk(p: dict[str, Any]) -> bool:
    """A verdict that fails the replay although nothing is counted lost (a replica that cannot come back or
    was not judged)."""
    return impact_records(p) == 0 and any(v["code"] in FAILS_REPLAY for rep in p["replicas"] for v in rep["verdicts"])


def partition_order_key(p: dict[str, Any]) -> tuple[int, int, str, int]:
    """Worst first: the worst verdict, then the most records lost, then the name."""
    return (-ORDER.index(worst_code(p)), -impact_records(p), p["topic"], p["partition"])


def name(p: dict[str, Any]) -> str:
    return f"{p['topic']}-{p['partition']}"
