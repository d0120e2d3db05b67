"""The archive of Spark's classes: mapped only as sealed (an archive cut short crashes the JVM that maps it),
added to a local session's driver options beside any given, and made by a training session that Spark then
starts with."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kforensics.log.kernels import cache
from kforensics.spark import class_archive


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A private, empty kernel cache for the test."""
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    cache.forget()
    yield root
    cache.forget()


def _fake_archive(data: bytes, seal: bytes | None):
    path = class_archive.archive_path()
    if path is None:
        pytest.skip("no JDK here")
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    if seal is not None:
        path.with_suffix(".sha256").write_text(class_archive._digest(path) if seal == b"right" else seal.decode())
    return path


def test_no_archive_no_options(own_cache):
    assert class_archive.java_options() is None
    assert class_archive.with_archive({"a": "b"}) == {"a": "b"}


def test_an_archive_is_mapped_only_as_sealed(own_cache):
    path = _fake_archive(b"x" * 1000, b"right")
    assert class_archive.java_options() == f"-XX:SharedArchiveFile={path} -Xshare:auto {class_archive.QUIET}"
    path.write_bytes(b"x" * 10)  # cut short after it was sealed
    assert class_archive.java_options() is None
    path.with_suffix(".sha256").unlink()
    path.write_bytes(b"x" * 1000)
    assert class_archive.java_options() is None  # never sealed


def test_the_options_go_beside_the_drivers_given_ones(own_cache):
    path = _fake_archive(b"y" * 100, b"right")
    given = {"spark.driver.extraJavaOptions": "-Dfoo=1", "spark.x": "1"}
    got = class_archive.with_archive(given)
    assert got["spark.driver.extraJavaOptions"] == f"-Dfoo=1 -XX:SharedArchiveFile={path} -Xshare:auto " \
                                                   f"{class_archive.QUIET}"
    assert got["spark.x"] == "1" and given["spark.driver.extraJavaOptions"] == "-Dfoo=1"
    assert class_archive.with_archive({})["spark.driver.extraJavaOptions"].startswith("-XX:SharedArchiveFile=")


def test_a_built_archive_starts_a_session_that_maps_it(own_cache):
    if shutil.which("java") is None:
        pytest.skip("no JDK here")
    made = class_archive.build()
    assert made is not None and made.stat().st_size > 1 << 20
    assert not [p for p in made.parent.iterdir() if p.name.startswith(".training-")]
    options = class_archive.java_options()
    assert options is not None and str(made) in options
    # in a process of its own: this one may hold the tests' shared session, which the JVM options cannot reach
    probe = ("from kforensics.spark.session import session\n"
             "s = session('local[1]', {'spark.ui.enabled': 'false'})\n"
             "print(s.sparkContext.getConf().get('spark.driver.extraJavaOptions'))\n"
             "mx = s.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()\n"
             "print(sorted(str(a) for a in mx.getInputArguments() if 'Tiered' in str(a)))\n"
             "print(s.range(10).count())\n"
             "s.stop()\n")
    got = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300,
                         env={**os.environ, cache.CACHE_ENV: str(own_cache)})
    assert got.returncode == 0, got.stderr[-2000:]
    lines = got.stdout.strip().splitlines()
    assert str(made) in lines[-3] and lines[-1] == "10"
    assert lines[-2] == "['-XX:TieredStopAtLevel=1']", lines[-2]  # the local session's JIT (session.LOCAL_JIT)


def test_a_training_that_takes_too_long_leaves_nothing_behind(own_cache, monkeypatch):
    """Past its time the training's process group is killed (the child and the JVM it started): no archive, no
    temporary file, no process still naming the cache."""
    if shutil.which("java") is None:
        pytest.skip("no JDK here")
    monkeypatch.setattr(class_archive, "TRAINING_TIMEOUT_S", 3)
    assert class_archive.build() is None
    made = class_archive.archive_path()
    assert not made.exists() and not list(made.parent.iterdir())
    time.sleep(1)
    left = []
    for proc in Path("/proc").iterdir():
        try:
            if str(own_cache) in (proc / "cmdline").read_bytes().decode(errors="replace"):
                left.append(proc.name)
        except OSError:
            continue
    assert not left


def test_a_local_session_compiles_with_the_quick_jit_unless_told_how():
    from kforensics.spark.session import LOCAL_JIT, with_local_jit

    assert with_local_jit({}) == {"spark.driver.extraJavaOptions": LOCAL_JIT}
    assert with_local_jit({"spark.driver.extraJavaOptions": "-Da=1"})["spark.driver.extraJavaOptions"] == \
        f"-Da=1 {LOCAL_JIT}"
    for own in ("-XX:TieredStopAtLevel=4", "-XX:-TieredCompilation"):
        assert with_local_jit({"spark.driver.extraJavaOptions": own}) == {"spark.driver.extraJavaOptions": own}


def test_a_new_archive_keeps_the_ones_used_last_and_removes_the_others(own_cache, monkeypatch):
    """Each JDK, Spark and environment has its archive (about 160 MB): making one keeps it and the two used last
    (a use marks its seal's time), and removes the others with their seals."""
    current = class_archive.archive_path()
    if current is None:
        pytest.skip("no JDK here")
    current.parent.mkdir(parents=True, exist_ok=True)
    old = []
    for i in range(5):
        a = current.parent / f"old{i}.jsa"
        a.write_bytes(b"z" * 10)
        seal = a.with_suffix(".sha256")
        seal.write_text("whatever\n")
        os.utime(seal, (1_000_000 + i, 1_000_000 + i))  # old4 used last
        old.append(a)
    os.utime(old[1].with_suffix(".sha256"))  # old1 used just now

    def training(out):
        Path(out).write_bytes(b"t" * 100)
        return True

    monkeypatch.setattr(class_archive, "_run_training", training)
    assert class_archive.build() == current
    left = sorted(p.name for p in current.parent.iterdir())
    assert left == sorted([current.name, current.with_suffix(".sha256").name, "old1.jsa", "old1.sha256",
                           "old4.jsa", "old4.sha256"])
    assert class_archive.java_options() is not None  # the new one, sealed
    before = current.with_suffix(".sha256").stat().st_mtime_ns
    os.utime(current.with_suffix(".sha256"), (1, 1))
    class_archive.java_options()
    assert current.with_suffix(".sha256").stat().st_mtime_ns >= before  # its use noted
