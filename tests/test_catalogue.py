"""The catalogue of codes: every code the package emits is in it, every entry is used, the docs are current."""

from __future__ import annotations

import ast
import re

import pytest

from kforensics import findings
from kforensics.catalogue import CATALOGUE, VERDICTS, markdown
from tests.conftest import ROOT

PACKAGE = ROOT / "kforensics"
CODE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
#: functions whose first argument (or the argument after a message-less position) is a finding or verdict code
TAKES_CODE = {"finding", "DecodeError", "Verdict", "verdict_over", "_fail", "report", "refuse", "odd", "problem",
              "_finding", "first_of", "Finding"}


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def emitted_codes() -> dict[str, list[str]]:
    """Every string literal passed as a code to a code-taking call in the package, with where it is."""
    out: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _name(node.func) in TAKES_CODE:
                for arg in node.args[:2]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and CODE.match(arg.value):
                        out.setdefault(arg.value, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def test_every_emitted_code_is_in_the_catalogue():
    missing = {c: where for c, where in emitted_codes().items() if c not in CATALOGUE and c not in VERDICTS}
    assert not missing, missing


def test_every_catalogue_code_is_emitted_somewhere():
    used = set(emitted_codes())
    # codes passed through variables: the severity map of the scan's checks and the verdict loop
    text = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py") if p.name != "catalogue.py")
    unused = [c for c in list(CATALOGUE) + list(VERDICTS) if c not in used and f'"{c}"' not in text]
    assert not unused, f"catalogue entries nothing emits: {unused}"


def test_an_unknown_code_cannot_be_emitted():
    with pytest.raises(KeyError):
        findings.finding("NO_SUCH_CODE", "x")


def test_the_default_severity_comes_from_the_catalogue():
    f = findings.finding("CRC_MISMATCH", "x", file="f", position=3)
    assert f.severity == CATALOGUE["CRC_MISMATCH"].severity and (f.file, f.position) == ("f", 3)


def test_every_entry_says_what_it_means_and_what_kafka_does():
    for e in [*CATALOGUE.values(), *VERDICTS.values()]:
        assert e.meaning and e.kafka and CODE.match(e.code), e


def test_docs_findings_md_is_generated_from_the_catalogue():
    assert (ROOT / "docs" / "findings.md").read_text(encoding="utf-8") == markdown(), \
        "docs/findings.md is stale: python -m kforensics.catalogue > docs/findings.md"
