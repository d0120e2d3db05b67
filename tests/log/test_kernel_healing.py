"""A damaged kernel cache heals: a command still gives its answer, with one warning line, never a signal or exit 3.

Each test copies a cache built once for this module into its own
``tmp_path``, damages it as a power loss or a partial copy of a shared cache
would (a library cut short, another ELF file at its path, an empty or cut
generated source, an empty numba index, a cut numba data file), and runs
``kforensics scan`` on a bundled broker in a fresh process with a time limit:
the exit code and the JSON must be those of an undamaged run, and stderr must
hold exactly one line, the warning.  A last test runs a command whose cache
is named at its input: nothing is written there.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest

from kforensics.log.kernels import native as native_kernels

from .test_kernel_cache import snapshot

ROOT = Path(__file__).resolve().parents[2]
BROKER = ROOT / "fixtures" / "brokers" / "damaged"
#: a cold numba compile on a busy machine takes a minute or two; a hang or a crash loop is what this catches
LIMIT = 900


def _env(tmp: Path, cache_dir: Path, kernels: str = "auto") -> dict[str, str]:
    (tmp / "tmp").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "KFORENSICS_KERNELS")}
    env.update(KFORENSICS_CACHE=str(cache_dir), XDG_CACHE_HOME=str(tmp / "xdg"), TMPDIR=str(tmp / "tmp"),
               KFORENSICS_KERNELS=kernels)
    return env


def _scan(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "kforensics", "scan", *(args or (str(BROKER),)), "--format", "json"]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=LIMIT)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A kernel cache with the native library and numba's cache files, and an undamaged scan's answer."""
    if native_kernels.compiler() is None:
        pytest.skip("no C compiler driver (cc) to link the native kernels")
    tmp = tmp_path_factory.mktemp("built")
    cache_dir = tmp / "cache"
    probe = "from kforensics.log import kernels; assert kernels.get().native"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=_env(tmp, cache_dir, "native"),
                          capture_output=True, text=True, timeout=LIMIT)
    assert done.returncode == 0, done.stderr
    answer = _scan(_env(tmp, cache_dir))
    assert answer.returncode == 1 and answer.stderr == ""  # findings at or above high, no warning
    return cache_dir, answer


@pytest.fixture
def cache_copy(built, tmp_path):
    cache_dir = tmp_path / "cache"
    shutil.copytree(built[0], cache_dir)  # modes and times kept: numba's index stamps stay valid
    return cache_dir


def _one(pattern: str, cache_dir: Path) -> Path:
    (found,) = cache_dir.glob(pattern)
    return found


def _same_answer_and_one_warning(run: subprocess.CompletedProcess, answer: subprocess.CompletedProcess) -> str:
    assert run.returncode >= 0, f"killed by signal {-run.returncode}"
    assert (run.returncode, run.stdout) == (answer.returncode, answer.stdout), run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kforensics: "), run.stderr[-2000:]
    return lines[0]


def _cut(path: Path, keep: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:keep])


# ---------------------------------------------------------------- the native library


def test_the_library_is_sealed_with_the_sha256_of_its_bytes(built):
    data = _one("_kf_native_*.so", built[0]).read_bytes()
    assert native_kernels.unsealed(data) is None
    assert native_kernels.unsealed(data[:-1]) is not None and native_kernels.unsealed(data[:len(data) // 2])


def test_a_library_cut_short_is_never_mapped_and_is_rebuilt(built, cache_copy, tmp_path):
    """Cut inside its mapped segments (a power loss after the rename): dlopen would map pages past the end of the
    file, and the first touch of one raises SIGBUS."""
    lib = _one("_kf_native_*.so", cache_copy)
    _cut(lib, lib.stat().st_size // 2)
    run = _scan(_env(tmp_path, cache_copy))
    line = _same_answer_and_one_warning(run, built[1])
    assert lib.name in line and "built again" in line
    assert native_kernels.unsealed(lib.read_bytes()) is None  # whole again
    again = _scan(_env(tmp_path, cache_copy))
    assert (again.returncode, again.stdout, again.stderr) == (built[1].returncode, built[1].stdout, "")


def test_another_elf_file_at_the_library_path_is_not_loaded(built, cache_copy, tmp_path):
    lib = _one("_kf_native_*.so", cache_copy)
    other = Path(ctypes.CDLL(crc32c._crc32c.__file__)._name)  # a shared library, but not ours
    shutil.copyfile(other, lib)
    run = _scan(_env(tmp_path, cache_copy))
    line = _same_answer_and_one_warning(run, built[1])
    assert "seal" in line
    assert native_kernels.unsealed(lib.read_bytes()) is None


# ---------------------------------------------------------------- numba's cache (numba's kernels, or a rebuild)


def _empty_source(c: Path) -> None:
    _one("_kf_kernels_*.py", c).write_text("")


def _cut_source(c: Path) -> None:
    src = _one("_kf_kernels_*.py", c)
    _cut(src, src.stat().st_size * 2 // 3)


def _empty_index(c: Path) -> None:
    _one("__pycache__/*.walk-*.nbi", c).write_bytes(b"")


def _cut_data(c: Path) -> None:
    files = list(c.glob("__pycache__/*.walk-*.nbc"))
    assert files
    for data in files:
        _cut(data, data.stat().st_size // 2)


@pytest.mark.parametrize("damage", [_empty_source, _cut_source, _empty_index, _cut_data],
                         ids=["empty source", "cut source", "empty index", "cut data file"])
def test_damaged_numba_cache_files_heal(built, cache_copy, tmp_path, damage):
    damage(cache_copy)
    run = _scan(_env(tmp_path, cache_copy, "numba"))
    line = _same_answer_and_one_warning(run, built[1])
    assert "damaged" in line
    again = _scan(_env(tmp_path, cache_copy, "numba"))
    assert (again.returncode, again.stdout, again.stderr) == (built[1].returncode, built[1].stdout, "")


def test_a_rebuild_through_a_damaged_numba_cache_heals_too(built, cache_copy, tmp_path):
    """The library missing (a fresh node of a shared cache) and numba's data cut: built from a fresh compile."""
    _one("_kf_native_*.so", cache_copy).unlink()
    _cut_data(cache_copy)
    run = _scan(_env(tmp_path, cache_copy))
    assert "damaged" in _same_answer_and_one_warning(run, built[1])
    assert native_kernels.unsealed(_one("_kf_native_*.so", cache_copy).read_bytes()) is None


# ---------------------------------------------------------------- never evidence


def test_a_command_whose_cache_is_its_input_writes_nothing_there(built, tmp_path):
    """The issue's case: KFORENSICS_CACHE at the evidence.  The command names its inputs first (as the front ends
    do), the kernels come from the private fallback, and the evidence is byte for byte and mode for mode as it
    was."""
    ev = tmp_path / "evidence"
    shutil.copytree(BROKER, ev)
    os.chmod(ev, 0o775)
    shutil.copytree(built[0], tmp_path / "xdg" / "kforensics")  # the fallback, warm
    before = snapshot(ev)
    probe = ("import sys; from kforensics.log import kernels; kernels.check_cache_location(sys.argv[1:]); "
             "from kforensics.cli import main; main(['scan', *sys.argv[1:], '--format', 'json'])")
    run = subprocess.run([sys.executable, "-c", probe, str(ev)], cwd=ROOT, env=_env(tmp_path, ev),
                         capture_output=True, text=True, timeout=LIMIT)
    assert run.returncode == 1, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(ev) in lines[0] and "nothing is written to evidence" in lines[0]
    assert snapshot(ev) == before
    assert list((tmp_path / "xdg" / "kforensics").glob("_kf_native_*.so"))
