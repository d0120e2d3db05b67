"""Real JSON output of ``dump``, ``scan``, ``replay`` and ``timeline`` for the schema tests: the bundled fixtures, every
scenario, the oracle segments and the real broker dirs in ../shared (those only when present)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner

from tests.conftest import ORACLE, REALDATA, ROOT
from kforensics.cli import main

BROKERS = ROOT / "fixtures" / "brokers"
SCENARIOS = ROOT / "fixtures" / "scenarios"
#: real brokers of one cluster side by side (replay) and real KRaft metadata logs (timeline)
REAL_CLUSTERS = [
    [REALDATA / "hiage__kafka-raft__c5f680e" / "data" / f"kafka{i}" for i in (1, 2, 3)],
    [REALDATA / "cesaralcancio__study-kafka__66aa23e" / "data" / f"kafka{i}" for i in (1, 2, 3, 4, 5)],
]
#: real segments and snapshots are dumped up to this (--max-bytes), and side files up to this size: the schema sees
#: every kind of object the real data holds, not every byte of it
REAL_DUMP_BYTES = 8 * 1024
REAL_SIDE_BYTES = 16 * 1024


def run(*args) -> str:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code in (0, 1), (args, r.output)
    return r.stdout


def scenarios() -> list[Path]:
    return sorted(p for p in SCENARIOS.iterdir() if (p / "scenario.json").exists())


def real_log_dirs() -> list[Path]:
    from kforensics.log.log_dir import find_log_dirs

    if not REALDATA.exists():
        return []
    return [Path(str(d)) for c in sorted(REALDATA.iterdir()) if c.is_dir() and not c.name.startswith("_")
            for d in find_log_dirs(c)]


def scan_inputs() -> list[tuple[str, list]]:
    out = [(f"fixture {b.name}", [b]) for b in sorted(BROKERS.iterdir()) if b.is_dir()]
    out += [(f"scenario {s.name} {b.name}", [b]) for s in scenarios() for b in sorted(s.glob("broker-*"))]
    if (ORACLE / "logs").exists():
        out.append(("oracle logs", [ORACLE / "logs"]))
    out += [(f"real {d.relative_to(REALDATA)}", [d]) for d in real_log_dirs()]
    return out


def replay_inputs() -> list[tuple[str, list]]:
    out = [(f"scenario {s.name}", ["--scenario", s]) for s in scenarios()]
    # the other rule sets, what-if and digests on a few scenarios that lose, fork and stall
    for name in ("kip101-s2-two-hard-failures", "not-converging-kip279-checkpoint", "unreadable-epoch-checkpoint"):
        for version in ("0.10", "0.11", "2.0.0"):
            out.append((f"scenario {name} {version}", ["--scenario", SCENARIOS / name, "--kafka-version", version]))
    for name in ("kip101-s2-two-hard-failures", "consumer-group-resets", "transaction-marker-lost"):
        out.append((f"scenario {name} what-if digests", ["--scenario", SCENARIOS / name, "--what-if", "--digests"]))
    out += [(f"real {c[0].parent.relative_to(REALDATA)}", c) for c in REAL_CLUSTERS if all(d.exists() for d in c)]
    return out


def timeline_inputs() -> list[tuple[str, list]]:
    out = [(f"scenario {s.name}", [s / "controller"]) for s in scenarios() if (s / "controller").exists()]
    out += [(f"real {d.relative_to(REALDATA)}", [d]) for d in real_log_dirs()
            if (d / "__cluster_metadata-0").exists()]
    return out


def dump_inputs() -> list[tuple[str, list]]:
    """Every file of the fixtures (deep, with keys and payloads; indexes also verified and sanity-checked), the
    oracle segments, and the real files (segments and snapshots up to REAL_DUMP_BYTES)."""
    out = []
    fixture_files = sorted(p for root in (BROKERS, SCENARIOS) for p in root.rglob("*") if p.is_file())
    out.append(("fixture files", ["--deep", "--print-data", *fixture_files]))
    out.append(("fixture files shallow", fixture_files))
    indexes = [p for p in fixture_files if p.suffix in (".index", ".timeindex")]
    out.append(("fixture indexes verified", ["--verify-index-only", *indexes]))
    out.append(("fixture indexes sanity", ["--index-sanity-check", *indexes]))
    if (ORACLE / "logs").exists():
        out.append(("oracle segments", ["--deep", "--print-data", *sorted((ORACLE / "logs").rglob("*.log"))]))
    for d in real_log_dirs():
        files = sorted(p for p in d.rglob("*") if p.is_file())
        batches = [p for p in files if p.suffix in (".log", ".checkpoint") and p.name != "cleaner-offset-checkpoint"
                   and not p.name.endswith("-offset-checkpoint")]
        side = [p for p in files if p not in batches and p.stat().st_size <= REAL_SIDE_BYTES]
        label = f"real {d.relative_to(REALDATA)}"
        if side:
            out.append((label, side))
        if batches:
            out.append((label + " batches", ["--deep", "--print-data", "--max-bytes", REAL_DUMP_BYTES, *batches]))
    return out


def documents(command: str) -> Iterator[tuple[str, object]]:
    """(label, JSON value) of every sample of ``command``: one document (scan, replay, timeline) or one NDJSON
    object per line (dump)."""
    inputs = {"scan": scan_inputs, "replay": replay_inputs, "timeline": timeline_inputs, "dump": dump_inputs}[command]
    for label, args in inputs():
        text = run(command, "--format", "json", *args)
        if command == "dump":
            for i, line in enumerate(text.splitlines()):
                yield f"{label} line {i + 1}", json.loads(line)
        else:
            yield label, json.loads(text)
