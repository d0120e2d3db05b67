"""The package's shape: small modules and functions, no import cycle, and every rule defined in one place.

Each check reads the source (ast), so a second definition of a rule, a
module grown past its size or a cycle fails here with the place named.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kforensics.catalogue import VERDICTS
from kforensics.severity import Severity

PACKAGE = Path(__file__).resolve().parents[1] / "kforensics"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
SOURCES = sorted(PACKAGE.rglob("*.py"))
SEVERITY_NAMES = {str(s) for s in Severity}


def _rel(p: Path) -> str:
    return p.relative_to(PACKAGE.parent).as_posix()


def _tree(p: Path) -> ast.Module:
    return ast.parse(p.read_text(encoding="utf-8"), filename=str(p))


def test_no_module_is_over_the_limit():
    big = {_rel(p): n for p in SOURCES if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not big, f"modules over {MAX_MODULE_LINES} lines: {big}"


def test_no_function_is_over_the_limit():
    long = []
    for p in SOURCES:
        for node in ast.walk(_tree(p)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{_rel(p)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def _module_name(p: Path) -> str:
    parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(p: Path) -> set[str]:
    """The kforensics modules ``p`` imports (at any depth: lazy imports inside functions count too)."""
    me = _module_name(p)
    package = me if p.name == "__init__.py" else me.rpartition(".")[0]
    out = set()
    for node in ast.walk(_tree(p)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("kforensics")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("kforensics"):
                out.add(target)
                out |= {f"{target}.{a.name}" for a in node.names}
    return out


def test_the_import_graph_has_no_cycle():
    modules = {_module_name(p): p for p in SOURCES}
    graph = {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}
    # a package's __init__ importing its own submodules is how a package re-exports: not a cycle of modules
    for m in graph:
        graph[m] = {i for i in graph[m] if not (modules[m].name == "__init__.py" and i.startswith(m + "."))}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (cycle := visit(n)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            pytest.fail(f"import cycle: {' -> '.join(cycle)}")


def _string_collections(tree: ast.Module):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(values) >= 2 and len(values) == len(node.elts):
                yield node, values


#: the owners of the rules; everyone else imports them
OWNERS = {"verdicts": {"kforensics/verdict_rules.py", "kforensics/catalogue.py"},
          "severities": {"kforensics/severity.py", "kforensics/catalogue.py"}}


def _collections_of(names: set[str], at_least: int, owners: set[str]) -> list[str]:
    """Literal collections of ``at_least`` of ``names`` in modules other than ``owners``, as ``file:line values``."""
    return [f"{_rel(p)}:{node.lineno} {values}" for p in SOURCES if _rel(p) not in owners
            for node, values in _string_collections(_tree(p)) if sum(v in names for v in values) >= at_least]


def test_verdict_classes_are_defined_only_by_their_owner():
    found = _collections_of(set(VERDICTS), 2, OWNERS["verdicts"])
    assert not found, f"sets of verdict codes outside kforensics/verdict_rules.py: {found}"


def test_the_severity_order_is_defined_only_by_its_owner():
    found = _collections_of(SEVERITY_NAMES, 3, OWNERS["severities"])
    assert not found, f"severity orders outside kforensics/severity.py: {found}"


def test_exit_codes_are_defined_only_in_errors():
    found = []
    for p in SOURCES:
        if _rel(p) == "kforensics/errors.py":
            continue
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                names += [e.id for t in node.targets if isinstance(t, ast.Tuple) for e in t.elts
                          if isinstance(e, ast.Name)]
                literal = any(isinstance(c, ast.Constant) and isinstance(c.value, int)
                              for c in ast.walk(node.value))
                if literal and any(n.startswith("EXIT_") for n in names):
                    found.append(f"{_rel(p)}:{node.lineno}")
    assert not found, f"exit codes defined outside kforensics/errors.py: {found}"


def test_the_segment_file_name_is_spelled_once():
    found = [f"{_rel(p)}:{i}" for p in SOURCES if _rel(p) != "kforensics/log/file_kinds.py"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if ":020d}" in line]
    assert not found, f"segment file names formatted outside kforensics/log/file_kinds.py: {found}"


def test_no_error_is_classified_by_its_class_name_or_traceback():
    found = [f"{_rel(p)}:{i}" for p in SOURCES for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if "__class__.__name__ ==" in line or "tb_frame.f_globals" in line]
    assert not found, f"errors classified by name or traceback: {found}"


def test_every_exception_class_descends_from_the_error_root():
    from kforensics import errors

    allowed = {"kforensics/errors.py"}
    ours = {name for name in dir(errors) if isinstance(getattr(errors, name), type)
            and issubclass(getattr(errors, name), errors.KforensicsError)}
    strays = []
    for p in SOURCES:
        if _rel(p) in allowed:
            continue
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                # a builtin base beside one of ours keeps old `except ValueError` callers working: allowed
                if bases & {"Exception", "ValueError", "OSError", "RuntimeError"} and not bases & ours:
                    strays.append(f"{_rel(p)}:{node.lineno} {node.name}({', '.join(sorted(bases))})")
    assert errors.KforensicsError in errors.InputError.__mro__
    assert not strays, f"exception classes outside the kforensics.errors hierarchy: {strays}"
