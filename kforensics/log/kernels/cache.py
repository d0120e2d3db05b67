"""Where the compiled kernels are cached: a directory we own, that only we can write to, and never evidence.

What is loaded from the kernel cache runs as our code, and what is written
there must never land in the evidence.  So the cache directory
(``KFORENSICS_CACHE``, else ``$XDG_CACHE_HOME/kforensics``, else
``~/.cache/kforensics``) is used only when

- it is not an input, inside one or above one (the front ends name their
  inputs with :func:`avoid` before the kernels load), and
- it is a directory (not a symlink, for the ones we pick ourselves) owned by
  us that neither group nor others can write to.

A directory that fails either test is *refused*, never changed (no chmod):
one warning line says why, and a private directory is used instead, created
with mode 0700: ``$XDG_CACHE_HOME/kforensics`` (when the refused one was
``KFORENSICS_CACHE``), ``$TMPDIR/kforensics-<uid>``, or a fresh temporary
directory removed at exit.  When none is usable the kernels compile in
memory and nothing is written at all.

Warnings go through the ``kforensics.log.kernels`` logger, one line each
(with no logging configured, Python prints a warning's message alone on
stderr).
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterable

from ...outputs import relation

#: environment variable naming the kernel cache directory
CACHE_ENV = "KFORENSICS_CACHE"

LOG = logging.getLogger("kforensics.log.kernels")

_lock = threading.Lock()
_inputs: list[str] = []  # every input named by avoid(): the cache never lies inside, on or above one
# (settings, inputs) -> the root chosen for them, so each warning shows once
_chosen: dict[tuple[object, ...], str | None] = {}
_temporary: list[str] = []  # fresh temporary roots of this process, removed at exit
_warned: set[str] = set()


def warn(message: str) -> None:
    """One warning line about the kernels (the same message at most once per process)."""
    line = " ".join(message.split())
    if line not in _warned:
        _warned.add(line)
        LOG.warning("kforensics: %s", line)


def configured() -> str:
    """The cache directory asked for: ``KFORENSICS_CACHE``, else the per-user default."""
    return os.environ.get(CACHE_ENV) or _user_default()


def _user_default() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kforensics")


def avoid(inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Name inputs of this command: the cache is never inside, equal to or above any of them from now on."""
    with _lock:
        for p in inputs:
            text = os.fspath(p) if isinstance(p, os.PathLike) else str(p)
            if text not in _inputs:
                _inputs.append(text)


def root() -> str | None:
    """The kernel cache directory to use (created if missing), or None when no directory may be written."""
    key = (os.environ.get(CACHE_ENV), os.environ.get("XDG_CACHE_HOME"), os.path.expanduser("~"),
           tempfile.gettempdir(), tuple(_inputs))
    with _lock:
        if key not in _chosen:
            _chosen[key] = _choose()
        return _chosen[key]


def _choose() -> str | None:
    first = configured()
    reason = _refusal(first, create=True, ours=False)
    if reason is None:
        return first
    quiet = reason.startswith("unavailable")  # a missing or read-only home is no news; a refusal is
    candidates = [_user_default()] if os.environ.get(CACHE_ENV) else []
    candidates.append(os.path.join(tempfile.gettempdir(), f"kforensics-{os.getuid()}"))
    chosen = next((c for c in candidates if c != first and _refusal(c, create=True, ours=True) is None), None)
    if chosen is None:
        chosen = _fresh_temporary()
    if not quiet:
        where = f"kernels cached in {chosen}" if chosen else "kernels compiled in memory, nothing written"
        warn(f"kernel cache {first} not used: {reason}; {where}")
    return chosen


def _refusal(path: str, create: bool, ours: bool) -> str | None:
    """Why ``path`` may not be the kernel cache, or None when it may.

    ``ours``: a directory we pick ourselves (not a user's setting), which must
    not be a symlink either.  A missing directory is created with mode 0700
    only once it is known not to touch any input.
    """
    for ev in list(_inputs):
        rel = relation(path, ev)
        if rel is not None:
            return {"equal": "it is the input", "inside": "it lies inside the input",
                    "above": "it contains the input"}[rel] + f" {ev} (nothing is written to evidence)"
    try:
        if create and not os.path.lexists(path):
            os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path) if ours else os.stat(path)
    except OSError as e:
        return f"unavailable ({e.strerror or e})"
    if ours and stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    # what is loaded from here runs as our code: only a directory we own, that no one else can write to
    if st.st_uid != os.getuid():
        return f"it belongs to user {st.st_uid}, not to us"
    if st.st_mode & 0o022:
        return (f"group or others can write to it (mode {stat.S_IMODE(st.st_mode):o}); "
                "it is not changed: make it private (chmod go-w) or name another one with KFORENSICS_CACHE")
    if not os.access(path, os.W_OK | os.X_OK):
        return "unavailable (not writable)"
    return None


def _fresh_temporary() -> str | None:
    """A new private directory (mode 0700) under the temporary directory, removed at exit; None when refused."""
    base = tempfile.gettempdir()
    if any(relation(base, ev) in ("equal", "inside") for ev in _inputs):
        return None  # mkdtemp would create it in the evidence
    try:
        path = tempfile.mkdtemp(prefix=f"kforensics-{os.getuid()}-")
    except OSError:
        return None
    if _refusal(path, create=False, ours=True) is not None:
        return None
    if not _temporary:
        atexit.register(_remove_temporaries)
    _temporary.append(path)
    return path


def _remove_temporaries() -> None:
    for path in _temporary:
        shutil.rmtree(path, ignore_errors=True)


def numba_cache_dir_allowed() -> bool:
    """False when ``NUMBA_CACHE_DIR`` (where numba would then write its cache files) touches an input."""
    own = os.environ.get("NUMBA_CACHE_DIR")
    return not own or all(relation(own, ev) is None for ev in _inputs)


def forget() -> None:
    """Forget the inputs and the choices made (for tests)."""
    with _lock:
        _inputs.clear()
        _chosen.clear()
        _warned.clear()
