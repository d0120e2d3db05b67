"""The package's layering holds: import-linter contracts (pyproject.toml), and light start-up of the CLI."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT


def test_import_contracts_are_kept():
    lint = Path(sys.executable).parent / "lint-imports"
    r = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_every_package_has_its_place_in_the_layers():
    # a package or module the layers contract does not name is checked by no contract: import-linter would not say
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = next(c for c in contracts["contracts"] if c["type"] == "layers")["layers"]
    named = {m.strip() for layer in layers for m in layer.split("|")}
    package = ROOT / "kforensics"
    ours = {f"kforensics.{p.name}" for p in package.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    ours |= {f"kforensics.{p.stem}" for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert ours - named == set(), f"not in the layers contract (pyproject.toml): {sorted(ours - named)}"


def test_help_and_a_small_dump_import_nothing_heavy(tmp_path):
    # --help and the dump of a 60-byte file must not import numba, numpy, pandas, pyarrow, pyspark or matplotlib
    mp = tmp_path / "meta.properties"
    mp.write_bytes(b"version=0\nbroker.id=1\n")
    probe = ("import sys, runpy\n"
             "sys.argv = sys.argv[1:]\n"
             "try:\n    runpy.run_module('kforensics', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "heavy = sorted(m for m in ('numba', 'numpy', 'pandas', 'pyarrow', 'pyspark', 'matplotlib', 'rich') "
             "if m in sys.modules)\n"
             "print('HEAVY', heavy, file=sys.stderr)\n")
    for args in (["--help"], ["dump", str(mp)], ["scan", "--help"]):
        r = subprocess.run([sys.executable, "-c", probe, "kforensics", *args], capture_output=True, text=True,
                           timeout=120)
        assert "HEAVY []" in r.stderr, (args, r.stderr[-500:])
