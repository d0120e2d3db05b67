"""Which compiled kernels a process runs: the native library when it loads or builds, else numba's.

``KFORENSICS_KERNELS`` chooses: ``auto`` (the default: the native library,
built from numba's kernels when it is missing or damaged, numba's kernels
while a recent build failure stands), ``numba`` (numba's dispatchers only) or
``native`` (the library or an error; a recorded failure is retried).  Any
other value is a :class:`~kforensics.errors.UsageError`.

Whatever happens to the cache, a command gets kernels that give the same
answers: a damaged library is rebuilt (or numba's kernels are used) with one
warning line, never a signal and never an internal error.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from ...errors import UsageError
from . import cache, codegen, crc, native, numba_kernels
from .kernel_set import Kernels

#: ``KFORENSICS_KERNELS``: ``auto`` (the native library when it loads or builds, else numba), ``numba``, ``native``
KERNELS_ENV = "KFORENSICS_KERNELS"
MODES = ("auto", "numba", "native")

_KERNELS: Kernels | None = None
_JIT: Kernels | None = None
_ROOT: str | None = None  # the cache the loaded kernels came from
_LOCK = threading.RLock()  # get() builds the native library while holding it, and that compiles jit()


def mode() -> str:
    """The kernels setting of this process; raises :class:`UsageError` for a value that is not one."""
    value = os.environ.get(KERNELS_ENV, "auto").strip().lower() or "auto"
    if value not in MODES:
        raise UsageError(f"{KERNELS_ENV}={os.environ.get(KERNELS_ENV)!r} is not a kernels setting: "
                         "use auto, numba or native (or leave it unset for auto)")
    return value


def check_cache_location(inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Name a command's inputs before its kernels load: the kernel cache is never inside, equal to or above any.

    When the cache directory (``KFORENSICS_CACHE`` or the default) touches an
    input, a private directory is used instead, with one warning line; nothing
    is ever written to the input.  Kernels already loaded from a cache that is
    now refused are dropped and loaded again on the next :func:`get`.
    Thread-safe.
    """
    global _KERNELS, _JIT
    cache.avoid(inputs)
    with _LOCK:
        root = cache.root()  # chosen now, so a warning comes before the command's output
        if (_KERNELS is not None or _JIT is not None) and root != _ROOT:
            _KERNELS = _JIT = None


def jit() -> Kernels:
    """The numba kernels, compiled (or loaded from the on-disk cache) on first use.  Thread-safe."""
    global _JIT, _ROOT
    with _LOCK:
        if _JIT is None:
            src, rec_cols = codegen.source()
            _ROOT = cache.root()
            _JIT = numba_kernels.compile_source(src, rec_cols, _ROOT)
        return _JIT


def get() -> Kernels:
    """The compiled kernels: the native library (:mod:`.native`) when there is one for this source, else numba's,
    after which the library is built for the next run.

    Thread-safe: any number of threads may call it at once; the first call
    loads or builds under a lock and every call returns the same object, whose
    kernels may themselves run in several threads at once (they release the
    GIL).  Raises :class:`~kforensics.errors.UsageError` for a bad
    ``KFORENSICS_KERNELS``.
    """
    global _KERNELS
    kernels = _KERNELS
    if kernels is None:
        with _LOCK:
            if _KERNELS is None:
                _KERNELS = load_mode(mode())
            kernels = _KERNELS
    return kernels


def load_mode(setting: str) -> Kernels:
    """The kernels for a ``KFORENSICS_KERNELS`` setting (see the module's docstring); no memo."""
    global _ROOT
    if setting not in MODES:
        raise UsageError(f"{KERNELS_ENV}={setting!r} is not a kernels setting: use auto, numba or native")
    if setting == "numba":
        return jit()
    src, rec_cols = codegen.source()
    root = cache.root()
    if root is None:
        if setting == "native":
            raise RuntimeError("no usable kernel cache to build the native kernels in")
        return jit()
    _ROOT = root
    path = os.path.join(root, native.library_name(numba_kernels.digest(src)))
    found = _load_library(path, rec_cols)
    if found is not None:
        return found
    if setting == "auto" and native.failure_stands(path):
        return jit()  # building failed recently: not tried again at every start
    return _build(path, rec_cols, setting)


def _crcs() -> tuple[crc.CrcFunction | None, crc.CrcFunction | None]:
    return (crc.CRC32C_FN, crc.CRC32_FN)


def _load_library(path: str, rec_cols: tuple[str, ...]) -> Kernels | None:
    """The library at ``path``, or None; a damaged one is removed (it is rebuilt next) with one warning line."""
    try:
        return native.load(path, rec_cols, _crcs(), jit)
    except native.Damaged as e:
        cache.warn(f"the native kernel library {path} is not loaded: {e}; it is built again "
                   "(numba's kernels are used if that fails)")
        try:
            os.unlink(path)
        except OSError:
            pass
        return None


def _build(path: str, rec_cols: tuple[str, ...], setting: str) -> Kernels:
    """Build the library at ``path`` and load it; on any failure record it and return numba's kernels (or raise,
    for ``native``)."""
    numba_made = jit()
    try:
        native.build(numba_made, path)
        built = native.load(path, rec_cols, _crcs(), jit)
        if built is None:
            raise RuntimeError(f"the native kernels built at {path} do not load")
        native.clear_failure(path)  # an earlier failure, retried on request or after it expired
        return built
    except Exception as e:  # noqa: BLE001 - anything at all: numba's kernels do the same work
        if setting == "native":
            raise
        native.record_failure(path, e)
        return numba_made
