"""Read a scenario dir written by the builder."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Scenario:
    """A scenario dir as written by :class:`ScenarioBuilder`: the brokers' dirs, the events, the expectations."""

    name: str
    description: str
    topic: str
    partition: int
    events: list[dict[str, Any]]
    expected: dict[str, dict[int, list[str]]]  # Kafka version -> broker -> verdict codes
    brokers: dict[int, list[Path]]
    metadata: list[Path]
    doc: dict[str, Any] = field(default_factory=dict)  # everything scenario.json says (derivations, citations)
    # every log dir of each broker: ``brokers``' plus the second one holding internal partitions, when written
    log_dirs: dict[int, list[Path]] = field(default_factory=dict)


def load_scenario(path: str | Path) -> Scenario:
    """Read a scenario dir (``broker-<id>/`` log dirs, ``scenario.json``, ``controller/`` metadata log or the
    ``controller-<id>/`` copies of it)."""
    root = Path(path)
    doc = json.loads((root / "scenario.json").read_text(encoding="utf-8"))
    brokers = {int(d.name.split("-", 1)[1]): [d] for d in sorted(root.glob("broker-*")) if d.is_dir()}
    meta = root / "controller" / "__cluster_metadata-0"
    # several controllers' copies of the metadata log (kforensics.scenario.metadata_copies)
    copies = sorted(root.glob("controller-*/__cluster_metadata-0"))
    expected = {v: {int(k): codes for k, codes in exp.items()} for v, exp in doc.get("expected", {}).items()}
    log_dirs = {b: list(dirs) for b, dirs in brokers.items()}
    for d in sorted((root / "coordinators").glob("broker-*")):
        if d.is_dir():
            log_dirs.setdefault(int(d.name.split("-", 1)[1]), []).append(d)
    return Scenario(doc.get("name", root.name), doc.get("description", ""), doc.get("topic", "orders"),
                    doc.get("partition", 0), doc.get("events", []), expected, brokers,
                    [meta] if meta.exists() else copies, doc, log_dirs)
