"""The native kernel library: built from numba's kernels, loaded without numba, and never a different answer.

The kernels' behaviour on every input is tested on both forms in
``test_kernels.py`` (its ``K`` fixture); here: how the library is found,
trusted, built, given up on, and what its entry points do with arguments they
do not take.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from kforensics.formats.record_batch import RecordData, build_batch
from kforensics.errors import UsageError
from kforensics.log import kernels
from kforensics.log.kernels import cache, dispatch, numba_kernels
from kforensics.log.kernels import native as native_kernels
from kforensics.log.batch_table import new_batch_rows

CRCS = (kernels.CRC32C_FN, kernels.CRC32_FN)


@pytest.fixture(autouse=True)
def _fresh_cache_choice():
    """Each test chooses its kernel cache afresh (no inputs named by another test)."""
    cache.forget()
    yield
    cache.forget()
needs_cc = pytest.mark.skipif(native_kernels.compiler() is None, reason="no C compiler driver (cc) on this machine")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A library built afresh from numba's kernels, in a directory of its own."""
    if native_kernels.compiler() is None:
        pytest.skip("no C compiler driver (cc) on this machine")
    path = str(tmp_path_factory.mktemp("native") / "kernels.so")
    native_kernels.build(kernels.jit(), path)
    return path


def _segment(n: int = 40) -> np.ndarray:
    raw = b"".join(build_batch([RecordData(i * 3 + j, 1000 + i, b"k", b"v" * i) for j in range(3)],
                               partition_leader_epoch=i % 4) for i in range(n))
    return np.frombuffer(raw, dtype=np.uint8)


def _walk(k, buf):
    out = new_batch_rows(64)
    got = k.walk(buf, buf.shape[0], 0, out, 0, 64)
    return got, out[: got[0]].copy()


@needs_cc
def test_a_command_loads_the_library_without_importing_numba(tmp_path):
    """The point of the library: a fresh process gets its kernels without numba (built first if need be)."""
    env = {**os.environ, "KFORENSICS_CACHE": str(tmp_path / "cache"), kernels.KERNELS_ENV: "auto"}
    probe = ("import sys; from kforensics.log import kernels; k = kernels.get(); "
             "print(k.native is not None, 'numba' in sys.modules)")
    first = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["True", "True"]  # built this time: numba compiled what the library holds
    second = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["True", "False"]


def test_the_library_walks_a_segment_as_numba_does(library):
    native = native_kernels.load(library, kernels.record_columns(), CRCS, kernels.jit)
    buf = _segment()
    (k, pos, status), rows = _walk(native, buf)
    (k2, pos2, status2), rows2 = _walk(kernels.jit(), buf)
    assert (k, pos, status) == (k2, pos2, status2) and k == 40
    assert np.array_equal(rows, rows2)
    assert (rows[:, 6] == rows[:, 7]).all()  # the CRC-32C the library computed through its pointer matches


def test_arguments_the_entry_points_do_not_take_as_they_are_give_numbas_answer(library):
    native = native_kernels.load(library, kernels.record_columns(), CRCS, kernels.jit)
    buf = _segment()
    spread = np.zeros(buf.shape[0] * 2, dtype=np.uint8)
    spread[::2] = buf
    strided = spread[::2]  # not contiguous: read from a contiguous copy
    assert not strided.flags.c_contiguous
    assert _walk(native, strided)[0] == _walk(kernels.jit(), buf)[0]
    assert np.array_equal(_walk(native, strided)[1], _walk(kernels.jit(), buf)[1])
    table = np.zeros((64, new_batch_rows(1).shape[1]), dtype=np.int32)  # another dtype: numba's kernel writes it
    native_got = native.walk(buf, buf.shape[0], 0, table, 0, 64)
    assert native_got == kernels.jit().walk(buf, buf.shape[0], 0, np.zeros_like(table), 0, 64)
    assert table[:, 0].any()


def test_a_reused_array_is_read_at_its_address_and_a_new_one_at_its_own(library):
    native = native_kernels.load(library, kernels.record_columns(), CRCS, kernels.jit)
    a, b = _segment(5), _segment(7)
    assert _walk(native, a)[0][0] == 5
    assert _walk(native, a)[0][0] == 5
    assert _walk(native, b)[0][0] == 7  # another object: its own address, not the last one's


def test_a_library_others_can_write_is_not_loaded(library, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    copy = shared / "kernels.so"
    copy.write_bytes(open(library, "rb").read())
    os.chmod(shared, 0o777)
    assert native_kernels.load(str(copy), kernels.record_columns(), CRCS, kernels.jit) is None
    os.chmod(shared, 0o755)
    os.chmod(copy, 0o666)
    assert native_kernels.load(str(copy), kernels.record_columns(), CRCS, kernels.jit) is None
    os.chmod(copy, 0o644)
    assert native_kernels.load(str(copy), kernels.record_columns(), CRCS, kernels.jit) is not None


def test_a_missing_library_is_none():
    assert native_kernels.load("/nonexistent/kernels.so", kernels.record_columns(), CRCS, kernels.jit) is None


def test_a_failed_build_falls_back_to_numba_and_is_not_retried_at_every_start(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORENSICS_CACHE", str(tmp_path))
    monkeypatch.setattr(native_kernels, "compiler", lambda: None)
    got = dispatch.load_mode("auto")
    assert got is kernels.jit() and got.native is None
    failed = [p for p in os.listdir(tmp_path) if p.endswith(".failed")]
    assert len(failed) == 1 and "no C compiler" in (tmp_path / failed[0]).read_text()

    tried = []

    def build_fails(*_a):
        tried.append(1)
        raise RuntimeError("the build was tried")

    monkeypatch.setattr(native_kernels, "build", build_fails)
    assert dispatch.load_mode("auto") is kernels.jit()
    assert tried == []  # the recorded failure stands: no build at this start
    # asked for explicitly, it is tried (and its failure is an error)
    with pytest.raises(RuntimeError, match="the build was tried"):
        dispatch.load_mode("native")
    assert tried == [1]


def test_the_kernels_setting_is_checked(monkeypatch):
    assert dispatch.load_mode("numba") is kernels.jit()
    with pytest.raises(UsageError, match="auto, numba or native"):
        dispatch.load_mode("fast")


def test_library_names_differ_with_the_kernel_source():
    assert native_kernels.library_name("a" * 16) != native_kernels.library_name("b" * 16)
    assert native_kernels.library_name("a" * 16) == native_kernels.library_name("a" * 16)


def test_the_kernel_cache_is_a_directory_only_we_can_write_to(tmp_path, monkeypatch):
    mine = tmp_path / "mine"
    mine.mkdir()
    os.chmod(mine, 0o700)
    monkeypatch.setenv("KFORENSICS_CACHE", str(mine))
    assert cache.root() == str(mine)
    if os.getuid() != 0:
        return  # handing a directory to another user needs root
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, os.getuid() + 4242, -1)
    monkeypatch.setenv("KFORENSICS_CACHE", str(theirs))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.root() == str(tmp_path / "xdg" / "kforensics")


def test_a_view_of_another_objects_buffer_is_not_held_after_the_call(library):
    native = native_kernels.load(library, kernels.record_columns(), CRCS, kernels.jit)
    raw = bytearray(_segment(3).tobytes())
    assert _walk(native, np.frombuffer(raw, dtype=np.uint8))[0][0] == 3
    raw.extend(b"\0" * 10)  # would raise BufferError if the entry point still held a view of it
    assert len(raw) == _segment(3).shape[0] + 10


def test_without_a_writable_cache_the_kernels_compile_in_memory():
    """No cache directory anywhere: numba compiles the source in memory (its on-disk caching switched off, which
    needs a file to locate) and the kernels work."""
    src, cols = kernels.source()
    k = numba_kernels.compile_source(src, cols, None)
    buf = _segment(4)
    assert _walk(k, buf)[0] == _walk(kernels.jit(), buf)[0]
    assert _walk(k, buf)[0][0] == 4
