"""Where the compiled kernels are cached, and when a build is tried: decided without touching evidence or others' dirs.

Every test names its own cache (``KFORENSICS_CACHE``), per-user default
(``XDG_CACHE_HOME``) and temporary directory in ``tmp_path``, so the shared
cache is never read or changed here.  These tests run in this process; what
a whole command does with a damaged cache is in ``test_kernel_healing.py``.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
import threading
import time
from pathlib import Path

import pytest

from kforensics.errors import ExitCode, UsageError, exit_code_for
from kforensics.log import kernels
from kforensics.log.kernels import cache, dispatch
from kforensics.log.kernels import native as native_kernels

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def private_dirs(tmp_path, monkeypatch):
    """A cache choice made afresh, with the per-user default and the temporary directory in ``tmp_path``."""
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    cache.forget()
    yield tmp_path
    cache.forget()


def snapshot(top: Path) -> dict[str, tuple]:
    """Every entry under ``top`` (and ``top`` itself): type, mode, size, modification time and content digest."""
    import hashlib

    out = {}
    for path in [top, *sorted(top.rglob("*"))]:
        st = os.lstat(path)
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else None
        out[str(path.relative_to(top))] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_size,
                                           st.st_mtime_ns, digest)
    return out


def evidence(tmp_path: Path) -> Path:
    """A copy of a bundled broker dir, group-writable as a shared evidence dir often is (775)."""
    import shutil

    ev = tmp_path / "evidence" / "broker"
    shutil.copytree(ROOT / "fixtures" / "brokers" / "damaged", ev)
    os.chmod(ev, 0o775)
    os.chmod(ev.parent, 0o775)
    return ev


def kernel_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kforensics.log.kernels"]


# ---------------------------------------------------------------- never evidence


@pytest.mark.parametrize("where", ["equal", "inside", "above"])
def test_a_cache_named_at_an_input_inside_or_above_one_is_not_used_and_the_input_is_untouched(
        private_dirs, monkeypatch, caplog, where):
    ev = evidence(private_dirs)
    named = {"equal": ev, "inside": ev / "kernel-cache", "above": ev.parent}[where]
    monkeypatch.setenv("KFORENSICS_CACHE", str(named))
    before = snapshot(ev.parent)
    cache.avoid([str(ev)])
    with caplog.at_level(logging.WARNING):
        chosen = cache.root()
    assert chosen == str(private_dirs / "xdg" / "kforensics")
    assert snapshot(ev.parent) == before  # nothing created, nothing chmod-ed
    assert os.stat(chosen).st_mode & 0o777 == 0o700
    (line,) = kernel_warnings(caplog)
    assert str(named) in line and str(ev) in line and "nothing is written to evidence" in line


def test_when_every_candidate_touches_an_input_the_kernels_compile_in_memory(private_dirs, monkeypatch, caplog):
    """An input above the cache, the per-user default and the temporary directory (say ``/``): no dir at all."""
    monkeypatch.setenv("KFORENSICS_CACHE", str(private_dirs / "cache"))
    before = snapshot(private_dirs)
    cache.avoid([str(private_dirs)])
    with caplog.at_level(logging.WARNING):
        assert cache.root() is None
    assert snapshot(private_dirs) == before
    (line,) = kernel_warnings(caplog)
    assert "compiled in memory, nothing written" in line


def test_check_cache_location_takes_the_commands_inputs_as_paths_or_strings(private_dirs, monkeypatch):
    ev = evidence(private_dirs)
    monkeypatch.setenv("KFORENSICS_CACHE", str(ev))
    # without kernels loaded in this process, naming the inputs changes nothing else
    monkeypatch.setattr(dispatch, "_KERNELS", None)
    monkeypatch.setattr(dispatch, "_JIT", None)
    kernels.check_cache_location([ev, "s3a://bucket/snap", str(private_dirs / "elsewhere")])
    assert cache.root() == str(private_dirs / "xdg" / "kforensics")


def test_a_cache_apart_from_the_inputs_is_used(private_dirs, monkeypatch, caplog):
    ev = evidence(private_dirs)
    mine = private_dirs / "my-cache"
    monkeypatch.setenv("KFORENSICS_CACHE", str(mine))
    cache.avoid([str(ev)])
    with caplog.at_level(logging.WARNING):
        assert cache.root() == str(mine)
    assert os.stat(mine).st_mode & 0o777 == 0o700  # created private
    assert kernel_warnings(caplog) == []


# ---------------------------------------------------------------- never chmod-ed


def test_a_group_writable_cache_is_refused_and_left_as_it_is(private_dirs, monkeypatch, caplog):
    shared = private_dirs / "shared-cache"
    shared.mkdir()
    os.chmod(shared, 0o775)
    monkeypatch.setenv("KFORENSICS_CACHE", str(shared))
    with caplog.at_level(logging.WARNING):
        chosen = cache.root()
    assert stat.S_IMODE(os.stat(shared).st_mode) == 0o775  # not chmod-ed
    assert chosen == str(private_dirs / "xdg" / "kforensics")
    assert stat.S_IMODE(os.stat(chosen).st_mode) == 0o700  # the fallback: a private dir we created
    (line,) = kernel_warnings(caplog)
    assert str(shared) in line and "775" in line and "not changed" in line


def test_a_squatted_temporary_fallback_is_passed_over_for_a_fresh_private_one(private_dirs, monkeypatch, caplog):
    """The per-user default refused too (group-writable), and ``$TMPDIR/kforensics-<uid>`` writable by others: a
    fresh private temporary dir."""
    shared = private_dirs / "shared-cache"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("KFORENSICS_CACHE", str(shared))
    default = private_dirs / "xdg" / "kforensics"
    default.mkdir(parents=True)
    os.chmod(default, 0o770)
    squatted = private_dirs / "tmp" / f"kforensics-{os.getuid()}"
    squatted.mkdir()
    os.chmod(squatted, 0o777)
    with caplog.at_level(logging.WARNING):
        chosen = cache.root()
    assert chosen is not None and Path(chosen).parent == private_dirs / "tmp"
    assert chosen != str(squatted) and stat.S_IMODE(os.stat(chosen).st_mode) == 0o700
    assert [stat.S_IMODE(os.stat(p).st_mode) for p in (shared, default, squatted)] == [0o777, 0o770, 0o777]
    assert len(kernel_warnings(caplog)) == 1


def test_a_numba_cache_folder_others_can_write_to_is_not_used_nor_changed(private_dirs, caplog):
    from kforensics.log.kernels import numba_kernels

    root = private_dirs / "cache"
    (root / "__pycache__").mkdir(parents=True)
    os.chmod(root, 0o700)
    os.chmod(root / "__pycache__", 0o775)  # numba made it under a umask of 002
    with caplog.at_level(logging.WARNING):
        assert numba_kernels._private_pycache(str(root)) is False
    assert stat.S_IMODE(os.stat(root / "__pycache__").st_mode) == 0o775
    (line,) = kernel_warnings(caplog)
    assert "compiled in memory" in line
    fresh = private_dirs / "fresh"
    fresh.mkdir(mode=0o700)
    assert numba_kernels._private_pycache(str(fresh)) is True
    assert stat.S_IMODE(os.stat(fresh / "__pycache__").st_mode) == 0o700


# ---------------------------------------------------------------- a recorded build failure expires


NUMBA_KERNELS = object()  # stands for numba's kernels: these tests compile nothing


@pytest.fixture
def failing_build(private_dirs, monkeypatch):
    """Builds that fail, counted; the cache in ``tmp_path``."""
    monkeypatch.setenv("KFORENSICS_CACHE", str(private_dirs / "cache"))
    monkeypatch.setattr(dispatch, "jit", lambda: NUMBA_KERNELS)
    tried = []

    def build(_jit, path):
        tried.append(path)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(native_kernels, "build", build)
    return tried


def _marker(private_dirs: Path) -> Path:
    (marker,) = (private_dirs / "cache").glob("*.failed")
    return marker


def test_a_recorded_build_failure_stands_for_a_day_then_expires(private_dirs, failing_build):
    assert dispatch.load_mode("auto") is NUMBA_KERNELS
    assert len(failing_build) == 1
    note = json.loads(_marker(private_dirs).read_text())
    assert "No space left on device" in note["error"]
    assert dispatch.load_mode("auto") is NUMBA_KERNELS
    assert len(failing_build) == 1  # within the day: not tried at this start
    note["time"] = time.time() - 25 * 3600
    _marker(private_dirs).write_text(json.dumps(note))
    assert dispatch.load_mode("auto") is NUMBA_KERNELS
    assert len(failing_build) == 2  # a day later (the disk may have been freed): tried again


def test_a_recorded_build_failure_expires_when_the_toolchain_changes(private_dirs, failing_build, monkeypatch):
    dispatch.load_mode("auto")
    dispatch.load_mode("auto")
    assert len(failing_build) == 1
    monkeypatch.setattr(native_kernels, "_tools", lambda: "0.99.0/0.99.0")  # numba or llvmlite upgraded
    dispatch.load_mode("auto")
    assert len(failing_build) == 2


def test_a_marker_that_does_not_parse_has_expired(private_dirs, failing_build):
    dispatch.load_mode("auto")
    _marker(private_dirs).write_text("")  # cut by a full disk
    dispatch.load_mode("auto")
    assert len(failing_build) == 2


# ---------------------------------------------------------------- the setting, and threads


def test_a_bad_kernels_setting_is_a_usage_error_naming_the_allowed_values(monkeypatch):
    monkeypatch.setenv(kernels.KERNELS_ENV, "bogus")
    monkeypatch.setattr(dispatch, "_KERNELS", None)  # as in a fresh command
    with pytest.raises(UsageError, match="auto, numba or native") as raised:
        kernels.get()
    assert "KFORENSICS_KERNELS='bogus'" in str(raised.value)
    assert exit_code_for(raised.value) == ExitCode.ERROR == 2


@pytest.mark.parametrize("value", ["auto", "NUMBA", " native ", ""])
def test_the_kernels_settings(monkeypatch, value):
    monkeypatch.setenv(kernels.KERNELS_ENV, value)
    assert kernels.mode() == (value.strip().lower() or "auto")


def test_get_loads_once_when_many_threads_ask_at_once(monkeypatch):
    monkeypatch.setattr(dispatch, "_KERNELS", None)
    monkeypatch.delenv(kernels.KERNELS_ENV, raising=False)
    loads = []

    def slow_load(setting):
        loads.append(setting)
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(dispatch, "load_mode", slow_load)
    got = []
    threads = [threading.Thread(target=lambda: got.append(kernels.get())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == ["auto"] and len(got) == 8 and len({id(k) for k in got}) == 1
