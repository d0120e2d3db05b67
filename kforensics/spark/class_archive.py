"""A class-data-sharing archive of the Spark driver JVM's classes: a local session starts in seconds less.

A fresh local session spends most of its start-up, and of its first job, loading and verifying Spark's classes
(about 8 s to start and 11 s for a first small job on 2 cores; 5 s and 8.6 s with the archive).  The JDK can
map the classes of an earlier run instead (AppCDS, JDK 13+: ``-XX:ArchiveClassesAtExit`` writes the archive,
``-XX:SharedArchiveFile`` maps it).  :func:`build` (``python -m kforensics.spark.class_archive``, which the set-up
runs) writes one with a short training job (:mod:`.class_training`); :func:`java_options` gives the driver's
options to map it.

An archive the JVM maps but that is cut short crashes it (SIGBUS), so an archive is only ever used as sealed:
written under a temporary name, its SHA-256 recorded beside it, renamed into place, and its digest checked
before each use.  Anything else (no archive, another JDK or Spark, a digest that differs, a cache we may not
write to) means no options: the session starts as it always did.  The archive lives in the kernel cache
(:mod:`kforensics.log.kernels.cache`: ours alone, never evidence), named after the JDK and the Spark it was
made with; a classpath that differs at start (extra jars) makes the JVM ignore it, silently.  Making one removes
all but the :data:`KEPT` used last (another environment's, another Spark's): a use marks its seal's time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ..log.kernels import cache

#: the JVM's messages about the archive (a classpath that differs) are not ours to print
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: how long the training run may take before it is given up (it takes about 30 s on 2 cores)
TRAINING_TIMEOUT_S = 300
#: archives kept in the cache (about 160 MB each; one per JDK, Spark and environment): the one just made and those
#: used last, the others removed when one is made
KEPT = 3


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(java) if java and os.path.exists(java) else None


def archive_path() -> Path | None:
    """Where the archive of this JDK and this Spark is (or would be); None without a JDK or a cache."""
    import pyspark

    java, root = _java(), cache.root()
    if java is None or root is None:
        return None
    st = os.stat(java)
    ident = f"{java}\0{st.st_size}\0{st.st_mtime_ns}\0{pyspark.__version__}\0{os.path.dirname(pyspark.__file__)}"
    return Path(root) / "spark-cds" / f"{hashlib.sha256(ident.encode()).hexdigest()[:24]}.jsa"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


def _run_training(out: str) -> bool:
    """Run the training session in a process group of its own; whether it ended well in time.  On a timeout the
    whole group (the child and its JVM) is killed: nothing it started outlives it."""
    child = subprocess.Popen([sys.executable, "-m", "kforensics.spark.class_training", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        return child.wait(timeout=TRAINING_TIMEOUT_S) == 0
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return False


def _seal_of(path: Path) -> Path:
    return path.with_suffix(".sha256")


def java_options() -> str | None:
    """The driver JVM's options that map the sealed archive; None when there is none to map (or it is not the
    one sealed)."""
    try:
        path = archive_path()
        if path is None or not path.is_file():
            return None
        seal = _seal_of(path)
        if seal.read_text().strip() != _digest(path):
            return None
        _used(seal)
    except (OSError, ImportError):
        return None
    return f"-XX:SharedArchiveFile={path} -Xshare:auto {QUIET}"


def _used(seal: Path) -> None:
    """Note that the archive was just used (its seal's time: which archives :func:`prune` keeps)."""
    try:
        os.utime(seal)
    except OSError:
        pass  # a cache we may read but not write: the archive is used all the same


def prune(keep: Path, kept: int = KEPT) -> list[Path]:
    """Remove the archives beside ``keep`` (and their seals) but ``keep`` and the ``kept - 1`` used last; those
    removed.  A JVM that maps one removed keeps its mapping; one about to map it starts without it
    (``-Xshare:auto``)."""
    others = []
    for seal in keep.parent.glob("*.sha256"):
        archive = seal.with_suffix(".jsa")
        if archive != keep:
            try:
                others.append((seal.stat().st_mtime, archive, seal))
            except OSError:
                continue
    others.sort(reverse=True)
    removed = []
    for _, archive, seal in others[max(0, kept - 1):]:
        for f in (archive, seal):  # the archive first: a seal left without one maps nothing and goes next time
            try:
                f.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                break
        else:
            removed.append(archive)
    return removed


def with_archive(settings: dict[str, str]) -> dict[str, str]:
    """A local session's settings with the driver's options to map the archive added to any given (the same
    settings when there is none to map)."""
    mapped = java_options()
    if mapped is None:
        return settings
    given = settings.get("spark.driver.extraJavaOptions")
    return {**settings, "spark.driver.extraJavaOptions": f"{given} {mapped}" if given else mapped}


def build() -> Path | None:
    """Write and seal the archive with a training session in a child process; its path (None: no JDK, no cache,
    or the training failed: nothing is left behind)."""
    path = archive_path()
    if path is None:
        return None
    path.parent.mkdir(mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".training-", suffix=".jsa", dir=path.parent)
    os.close(fd)
    os.unlink(tmp)  # the JVM writes it at its exit
    try:
        if not _run_training(tmp) or not os.path.getsize(tmp):
            return None
        _seal_of(path).write_text(_digest(Path(tmp)) + "\n")
        os.replace(tmp, path)  # the seal first: an archive never stands without it
        prune(path)
        return path
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main() -> int:
    """Make and seal the archive unless a sealed one is there (the set-up runs this)."""
    if java_options() is not None:
        print(f"spark class archive: {archive_path()} (sealed already)")
        return 0
    made = build()
    print(f"spark class archive: {made}" if made else "spark class archive: not made (no JDK, cache or training)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
