"""What ``kforensics spark`` (and its ``spark-submit`` entry) says when the job ends: a short table per cluster,
the failures named, one summary line, and the exit code.

The job's own failures are never only inside the Parquet: a partition that
could not be scanned (``SCAN_FAILED``), a partition group that could not be
replayed (``REPLAY_FAILED``) and a snapshot that could not be read are
listed here and make the exit code 1 at least, whatever ``--fail-on`` says;
findings make it 1 at or above ``--fail-on``, as for ``scan``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO, TypedDict, TypeVar

from ..errors import ExitCode
from ..severity import Severity
from ..verdict_rules import FAILS_REPLAY

#: severity names, worst first, as the table and the summary line list them
SEVERITIES = tuple(str(s) for s in sorted(Severity, reverse=True))
#: failures listed by name (the rest are counted)
LISTED = 10


class FailedTask(TypedDict):
    """A scan task that failed, by name (``SCAN_FAILED`` in the findings table)."""

    snapshot_id: str
    dir_name: str
    status: str
    error: str | None


class FailedGroup(TypedDict):
    """A partition group whose replay failed, by name (``REPLAY_FAILED`` in the findings table)."""

    cluster: str | None
    topic: str
    partition: int
    error: str | None


class ClusterCounts(TypedDict):
    """One cluster's line of the summary."""

    cluster: str | None
    snapshots: int
    partitions: int
    batches: int
    bytes: int
    failed_tasks: int
    failed_groups: int
    findings: dict[str, int]  # severity name -> findings
    verdicts: dict[str, int]  # verdict code -> partitions


#: a failure listed by name
_Failure = TypeVar("_Failure", FailedTask, FailedGroup)


class Summary(TypedDict, total=False):
    """The job's summary (:func:`kforensics.spark.summary.summarize`), a JSON document; what it does not hold
    counts as none."""

    snapshots: int
    tasks: int
    failed_tasks: list[FailedTask]
    groups: int
    failed_groups: list[FailedGroup]
    unreadable_snapshots: list[str]
    partitions: int
    batches: int
    bytes: int
    findings: dict[str, int]  # severity name -> findings
    verdicts: dict[str, int]  # verdict code -> partitions
    clusters: list[ClusterCounts]
    clusters_with_metadata: list[str]
    topic_names_corrected: int
    out: str
    timings: dict[str, float]  # stage -> seconds


def _text(value: object) -> str:
    """A value from the evidence (cluster ids, snapshot ids, dir names) safe for a terminal."""
    if value is None:
        return "-"
    s = str(value)
    return s if s.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


def exit_code(summary: Summary, threshold: Severity) -> ExitCode:
    """:attr:`~kforensics.errors.ExitCode.FINDINGS` when a task or group failed, a snapshot could not be read, or
    a finding is at or above ``threshold``; else :attr:`~kforensics.errors.ExitCode.CLEAN`."""
    if summary.get("failed_tasks") or summary.get("failed_groups") or summary.get("unreadable_snapshots"):
        return ExitCode.FINDINGS
    for name, n in (summary.get("findings") or {}).items():
        if n and Severity.parse(name) >= threshold:
            return ExitCode.FINDINGS
    return ExitCode.CLEAN


def _table(header: list[str], rows: list[list[str]], left: set[int]) -> list[str]:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
                         ).rstrip()

    return [line(header)] + [line(r) for r in rows]


def summary_line(summary: Summary) -> str:
    """``summary: 3 findings (1 high, 2 low), 2 snapshots, 4 partitions, 0 failed tasks, 0 failed replays``."""
    counts = {s: (summary.get("findings") or {}).get(s, 0) for s in SEVERITIES}
    total = sum(counts.values())
    parts = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    head = f"{total} findings ({parts})" if total else "no findings"
    failed, groups = len(summary.get("failed_tasks") or []), len(summary.get("failed_groups") or [])
    return (f"summary: {head}, {summary.get('snapshots', 0)} snapshot(s), {summary.get('partitions', 0)} "
            f"partition(s), {failed} failed task(s), {groups} failed replay(s)")


def answer_line(summary: Summary) -> str:
    """What matters first, as ``scan`` and ``replay`` say it: replicas whose verdict fails the replay, or evidence
    that could not be judged, or nothing lost."""
    bad: dict[str, int] = {}
    clusters = summary.get("clusters", [])
    for c in clusters:
        for code, n in c["verdicts"].items():
            if code in FAILS_REPLAY:
                bad[code] = bad.get(code, 0) + n
    failed = (len(summary.get("failed_tasks") or []) + len(summary.get("failed_groups") or [])
              + len(summary.get("unreadable_snapshots") or []))
    unknown = f"; unknown where {failed} task(s), replay(s) or snapshot(s) failed" if failed else ""
    if bad:
        n = sum(bad.values())
        codes = ", ".join(f"{code} {k}" for code, k in sorted(bad.items()))
        who = "1 replica loses" if n == 1 else f"{n} replicas lose"
        return f"answer: {who} records or cannot recover ({codes}){unknown}"
    if failed:
        return f"answer: nothing lost where judged{unknown}"
    return (f"answer: nothing lost: {summary.get('partitions', 0)} partition(s) in {len(clusters)} cluster(s), "
            "no verdict that fails the replay")


def render_text(summary: Summary, out: TextIO) -> None:
    """The answer line, the per-cluster table, the failures by name, and the summary line."""
    out.write(answer_line(summary) + "\n")
    header = ["cluster", "snapshots", "partitions", "batches", "failed"] + list(SEVERITIES) + ["verdicts"]
    rows = []
    for c in summary.get("clusters", []):
        verdicts = ", ".join(f"{code} {n}" for code, n in c["verdicts"].items()) or "-"
        rows.append([_text(c["cluster"]), str(c["snapshots"]), str(c["partitions"]), str(c["batches"]),
                     str(c["failed_tasks"] + c["failed_groups"])]
                    + [str(c["findings"].get(s, 0)) for s in SEVERITIES] + [verdicts])
    out.write("clusters\n")
    for line in _table(header, rows, {0, len(header) - 1}):
        out.write(line + "\n")
    _listed(out, "failed tasks", "SCAN_FAILED", summary.get("failed_tasks") or [],
            lambda f: f"{_text(f['snapshot_id'])} {_text(f['dir_name'])}: {_text(f['error'])}")
    _listed(out, "failed replays", "REPLAY_FAILED", summary.get("failed_groups") or [],
            lambda g: f"{_text(g['cluster'])} {_text(g['topic'])}-{_text(g['partition'])}: {_text(g['error'])}")
    unreadable = summary.get("unreadable_snapshots") or []
    if unreadable:
        shown = ", ".join(_text(s) for s in unreadable[:LISTED]) + (" …" if len(unreadable) > LISTED else "")
        out.write(f"\nunreadable snapshots ({len(unreadable)}; SNAPSHOT_UNREADABLE or NO_LOG_DIR): {shown}\n")
    out.write(f"\ntables in {_text(summary.get('out'))}\n")
    out.write(summary_line(summary) + "\n")


def _listed(out: TextIO, title: str, code: str, items: list[_Failure], line: Callable[[_Failure], str]) -> None:
    """A titled list of failures, the first ``LISTED`` of them, and how many more there are."""
    if not items:
        return
    out.write(f"\n{title} ({len(items)}; {code} in the findings table)\n")
    for item in items[:LISTED]:
        out.write(f"  {line(item)}\n")
    if len(items) > LISTED:
        out.write(f"  … {len(items) - LISTED} more\n")
