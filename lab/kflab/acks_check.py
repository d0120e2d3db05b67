"""kforensics' acknowledgement classes against what the lab's producers were told.

Every loss verdict of ``replay`` carries ``facts.acknowledged_offsets``: per
class (``acked-all``: an acks=all producer was told the record is committed;
``acked-leader-only``: acknowledged at append only; ``never-acked``) the
offset ranges of the replica's lost records.  The lab knows the truth per
record: the workload's acknowledgement log (``story.acks.acked``, filled by
the producers' delivery callbacks) and the producer kind in each id
(``<run>|<topic>|<kind>|<n>``: ``all`` and ``txn-*`` use acks=all, ``one``
acks=1).  The ids at the lost offsets are read from the frozen evidence with
the lab's own reader (:mod:`.segments`), not kforensics'.

Per lost record of an acks=all producer the check agrees when kforensics
says ``acked-all`` exactly when the producer was told so.  A record of an
acks=1 producer that was acknowledged must not be ``never-acked``; one that
was not acknowledged (its response lost with the broker) cannot be judged.

    python -m kflab.acks_check RUN_DIR...     # a table per run and the totals
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from .segments import partition_content

ACKS_ALL_KINDS = ("all", "txn-commit", "txn-abort")


def _judge(kind: str, told: bool, cls: str) -> bool | None:
    """Whether the class agrees with what the producer was told (None: not judged)."""
    if kind in ACKS_ALL_KINDS:
        return told == (cls == "acked-all")
    if kind == "one":
        return cls != "never-acked" if told else None
    return None


def lost_records(run_dir: Path) -> list[dict]:
    """One row per lost record that a loss verdict classes: where, its id, what the producer was told, the class
    and whether they agree."""
    run_dir = Path(run_dir)
    if not (run_dir / "result.json").exists():
        return []  # a run still going, or one that ended before it compared
    result = json.loads((run_dir / "result.json").read_text())
    acked = set((result.get("story", {}).get("acks") or {}).get("acked", {}))
    replay_json = run_dir / "predictions" / "replay.json"
    if not replay_json.exists():
        return []
    replay = json.loads(replay_json.read_text())
    rows = []
    contents: dict[Path, dict] = {}
    for p in replay.get("partitions", []):
        for rp in p.get("replicas", []):
            pdir = run_dir / "evidence" / f"broker-{rp['broker_id']}" / f"{p['topic']}-{p['partition']}"
            for v in rp.get("verdicts", []):
                offsets = (v.get("facts") or {}).get("acknowledged_offsets") or {}
                if not any(offsets.values()) or not pdir.is_dir():
                    continue
                content = contents.setdefault(pdir, partition_content(pdir)["records"])
                for cls, ranges in offsets.items():
                    for first, last in ranges:
                        for off in range(first, last + 1):
                            rid = content.get(off)
                            if rid is None or rid.count("|") < 3:
                                continue  # a control batch or another tool's record: no producer to ask
                            kind = rid.split("|")[2]
                            told = rid in acked
                            rows.append({"topic": p["topic"], "partition": p["partition"], "broker": rp["broker_id"],
                                         "verdict": v["code"], "offset": off, "id": rid, "kind": kind,
                                         "told": told, "class": cls, "agree": _judge(kind, told, cls)})
    return rows


def summary(rows: list[dict]) -> Counter:
    """(version-less) counts: (kind, told, class, agree) -> records."""
    return Counter((r["kind"] if r["kind"] in ("one", "all") else "txn", r["told"], r["class"], r["agree"])
                   for r in rows)


def main(argv: list[str]) -> int:
    total: Counter = Counter()
    for d in argv:
        if not (Path(d) / "result.json").exists():
            continue
        rows = lost_records(Path(d))
        judged = [r for r in rows if r["agree"] is not None]
        agree = sum(1 for r in judged if r["agree"])
        version = json.loads((Path(d) / "result.json").read_text()).get("version", "?")
        print(f"{Path(d).name}: {agree}/{len(judged)} lost records classed as their producers were told"
              + (f" ({len(rows) - len(judged)} not judged)" if len(rows) > len(judged) else ""))
        for r in judged:
            if not r["agree"]:
                print(f"  disagree: {r['topic']}-{r['partition']} broker {r['broker']} offset {r['offset']} "
                      f"{r['kind']} told={r['told']} class={r['class']} ({r['verdict']})")
        total.update({(version, "agree"): agree, (version, "judged"): len(judged),
                      (version, "not judged"): len(rows) - len(judged)})
    for version in sorted({v for v, _ in total}):
        print(f"{version}: {total[(version, 'agree')]}/{total[(version, 'judged')]} agree, "
              f"{total[(version, 'not judged')]} not judged")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
