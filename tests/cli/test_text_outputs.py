"""The text every command prints, as an operator reads it: golden transcripts on the bundled fixtures (the README's
examples are exactly these), no Python repr in any text output of any command on any fixture, examples in every
``--help``.

Regenerate the transcripts with ``KFORENSICS_UPDATE_GOLDEN=1`` and read the diff before committing it.
"""

from __future__ import annotations

import os
import re
import shlex

import pytest
from click.testing import CliRunner

from tests.conftest import ROOT
from kforensics.cli import main

TEXT = ROOT / "tests" / "golden" / "text"
README = ROOT / "README.md"
BROKERS = ROOT / "fixtures" / "brokers"
SCENARIOS = ROOT / "fixtures" / "scenarios"
COMMANDS = ("dump", "scan", "replay", "timeline")

#: golden transcript name -> the command line, run from the repository root (paths in the output are as given)
GOLDENS = {
    "scan-healthy": "kforensics scan fixtures/brokers/healthy",
    "scan-damaged": "kforensics scan fixtures/brokers/damaged",
    "scan-damaged-high": "kforensics scan fixtures/brokers/damaged --min-severity high",
    "scan-damaged-clean": "kforensics scan fixtures/brokers/damaged-clean",
    "scan-damaged-topic": "kforensics scan fixtures/brokers/damaged --topic torn --topic orders",
    "dump-healthy": "kforensics dump fixtures/brokers/healthy/orders-0/00000000000000000012.log",
    "dump-zero-gap": "kforensics dump fixtures/brokers/damaged/zeros-0/00000000000000000000.log",
    "dump-torn": "kforensics dump fixtures/brokers/damaged/torn-0/00000000000000000000.log",
    "dump-print-data": "kforensics dump --print-data fixtures/brokers/healthy/payments.v1-events-2/"
                       "00000000000000000000.log",
    "dump-side-files": "kforensics dump fixtures/brokers/damaged/orders-0/leader-epoch-checkpoint "
                       "fixtures/brokers/damaged/replication-offset-checkpoint fixtures/brokers/damaged/meta.properties",
    "dump-index": "kforensics dump fixtures/brokers/damaged/zeros-0/00000000000000000000.index",
    "replay-healthy": "kforensics replay --scenario fixtures/scenarios/healthy-3-brokers",
    "replay-kip101": "kforensics replay --scenario fixtures/scenarios/kip101-s2-two-hard-failures",
    "replay-kip101-0.10": "kforensics replay --scenario fixtures/scenarios/kip101-s2-two-hard-failures "
                          "--kafka-version 0.10",
    "replay-lost-tail": "kforensics replay --scenario fixtures/scenarios/clean-election-leader-lost-tail",
    "replay-marker-lost": "kforensics replay --scenario fixtures/scenarios/transaction-marker-lost",
    "replay-what-if": "kforensics replay --scenario fixtures/scenarios/kip101-s2-two-hard-failures --what-if "
                      "--digests",
    "timeline-unclean": "kforensics timeline fixtures/scenarios/unclean-leader-election/controller",
}


def transcript(command_line: str) -> str:
    """``$ COMMAND`` and what the terminal shows (stdout and stderr as written), as the README gives it."""
    args = shlex.split(command_line)
    assert args[0] == "kforensics"
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        r = CliRunner().invoke(main, args[1:], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert r.exit_code in (0, 1), (command_line, r.output)
    return f"$ {command_line}\n{r.output}"


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_text_output_matches_its_golden_transcript(name):
    got = transcript(GOLDENS[name])
    path = TEXT / f"{name}.txt"
    if os.environ.get("KFORENSICS_UPDATE_GOLDEN"):
        TEXT.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")


def test_every_command_has_golden_transcripts():
    assert {GOLDENS[n].split()[1] for n in GOLDENS} == set(COMMANDS)
    assert sorted(p.stem for p in TEXT.glob("*.txt")) == sorted(GOLDENS)  # none stale


def readme_transcripts() -> list[str]:
    """Every fenced block of the README that starts with ``$ kforensics``."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", README.read_text(encoding="utf-8"), flags=re.S | re.M)
    return [b for b in blocks if b.startswith("$ kforensics ")]


def test_the_readme_examples_are_the_golden_transcripts():
    goldens = {(TEXT / f"{n}.txt").read_text(encoding="utf-8"): n for n in GOLDENS}
    shown = readme_transcripts()
    for block in shown:
        first = block.splitlines()[0]
        assert block in goldens, f"README example {first!r} differs from its golden transcript (or has none)"
    assert {goldens[b].split("-")[0] for b in shown} == set(COMMANDS)  # an example of each command


# ------------------------------------------------------------------------------------- no Python repr in text
#: what a Python value printed with str() or repr() looks like in text: None, a dict, a list of strings, bytes
REPR = re.compile(r"\bNone\b|\{'|\['|\bb'|\bb\"")


def text_runs():
    """(label, args) of every command's text output on every bundled fixture, with the flags that add text."""
    files = sorted(p for root in (BROKERS, SCENARIOS) for p in root.rglob("*") if p.is_file() and p.name !=
                   "scenario.json")
    yield "dump every fixture file", ["dump", *files]
    yield "dump every fixture file deep with data", ["dump", "--deep", "--print-data", *files]
    yield "dump every fixture file deep, data only", ["dump", "--print-data", "--skip-record-metadata", *files]
    indexes = [p for p in files if p.suffix in (".index", ".timeindex")]
    yield "dump indexes verified", ["dump", "--verify-index-only", *indexes]
    yield "dump indexes sanity", ["dump", "--index-sanity-check", *indexes]
    for b in sorted(p for p in BROKERS.iterdir() if p.is_dir()):
        yield f"scan {b.name}", ["scan", b]
    scenarios = sorted(p for p in SCENARIOS.iterdir() if (p / "scenario.json").exists())
    for s in scenarios:
        for b in sorted(s.glob("broker-*")):
            yield f"scan {s.name} {b.name}", ["scan", b]
        yield f"replay {s.name}", ["replay", "--scenario", s, "--what-if", "--digests", "--verbose"]
        yield f"replay {s.name} 0.10", ["replay", "--scenario", s, "--kafka-version", "0.10"]
        yield f"replay {s.name} 2.0.0", ["replay", "--scenario", s, "--kafka-version", "2.0.0"]
        if (s / "controller").exists():
            yield f"timeline {s.name}", ["timeline", s / "controller"]


def test_no_python_repr_in_any_text_output():
    # HEAD (issue): "directory_id: None", "properties: {'version': '0', ...}", "content looks like: None", "HW None",
    # what-if printed as a dict
    runs = 0
    for label, args in text_runs():
        r = CliRunner().invoke(main, [str(a) for a in args])
        assert r.exit_code in (0, 1), (label, r.output[-2000:])
        bad = [line for line in r.output.splitlines() if REPR.search(line)]
        assert not bad, (label, bad[:5])
        runs += 1
    assert runs > 100


def test_the_repr_pattern_finds_what_the_issue_found():
    for leak in ("directory_id: None", "properties: {'version': '0'}", "HW None", "what-if: ['1']", "key: b'x'"):
        assert REPR.search(leak), leak
    for fine in ("payload: null", "isr: [1,2,3]", "Nonexistent", "key: {\"type\":\"1\"}", "bytes"):
        assert not REPR.search(fine), fine


# ------------------------------------------------------------------------------------------------ --help
def _commands() -> list[str]:
    import click

    with click.Context(main) as ctx:
        return main.list_commands(ctx)


@pytest.mark.parametrize("command", _commands())
def test_every_commands_help_has_examples_that_name_it(command):
    r = CliRunner().invoke(main, [command, "--help"])
    assert r.exit_code == 0
    assert "Examples:" in r.stdout, command
    examples = r.stdout.split("Examples:", 1)[1].split("Options:", 1)[0]
    lines = [line.strip() for line in examples.splitlines() if line.strip()]
    assert len(lines) >= 2 and all(line.startswith(f"kforensics {command} ") for line in lines), lines
