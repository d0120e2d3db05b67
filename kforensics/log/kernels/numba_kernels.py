"""numba's kernels: the generated source written to the kernel cache, compiled there, and healed when damaged.

numba caches compiled functions beside their source file (in
``__pycache__/``: an index ``.nbi`` per function and a data file ``.nbc`` per
compiled signature), so the generated source is written to the kernel cache
as ``_kf_kernels_<digest>.py`` and compiled from there.  Every file of that
entry is checked before numba sees it, since numba trusts what it finds and
fails on every later run otherwise:

- the source file must hold exactly the generated source (an empty or cut one
  is rewritten);
- each index and data file of this source must be a whole pickle (an empty
  index or a cut data file is removed, and numba compiles that kernel again).

Either repair costs one warning line.  The source is compiled from the text
in hand (never imported, so no bytecode file is read or written), and when
the cache still does not load the kernels are compiled in memory for this
run.  With no usable cache at all they are compiled in memory from the start.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickletools
import stat
import sys
import types as pytypes

from . import cache, codecs, codegen, crc
from .kernel_set import Kernels

#: the kernels numba compiles, in the order they are defined (``records_many`` calls the compiled ``records``)
_KERNELS = ("walk", "resync", "records", "records_many", "records_columns", "records_plain", "inflate")


def digest(src: str) -> str:
    """The key of a generated source in the cache (it also depends on which CRCs the kernels compute)."""
    return hashlib.sha256((src + repr((crc.HAVE_CRC32C, crc.HAVE_CRC32, codecs.HAVE_INFLATE))).encode()
                          ).hexdigest()[:16]


def compile_source(src: str, rec_cols: tuple[str, ...], root: str | None) -> Kernels:
    """Compile the generated kernels with numba, caching them on disk in ``root`` (in memory when None)."""
    name = f"_kf_kernels_{digest(src)}"
    path = None
    if root is not None and cache.numba_cache_dir_allowed() and _private_pycache(root):
        path = _source_file(root, name, src)
        if path is not None:
            _heal_numba_cache(root, name)
    try:
        return _compile(src, rec_cols, name, path)
    except Exception as e:  # noqa: BLE001 - a cache numba cannot read: the same kernels, compiled in memory
        if path is None or root is None:
            raise
        cache.warn(f"numba's kernel cache in {root} does not load ({type(e).__name__}: {e}); "
                   "the kernels are compiled in memory for this run")
        _remove_numba_cache(root, name)
        return _compile(src, rec_cols, name, None)


def _private_pycache(root: str) -> bool:
    """True when numba's cache folder in ``root`` is (or is now created as) a directory only we can write to.

    numba would create it with the process's umask, perhaps group-writable,
    and what it loads from there runs as our code; one that others can write
    to is not used (nor changed): the kernels compile in memory.
    """
    folder = os.path.join(root, "__pycache__")
    try:
        if not os.path.lexists(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)  # another process may create it first
        st = os.lstat(folder)
    except OSError:
        return False
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022:
        return True
    cache.warn(f"numba's kernel cache {folder} is not a directory only we can write to "
               f"(mode {stat.S_IMODE(st.st_mode):o}): not used, nor changed; the kernels are compiled in memory")
    return False


def _source_file(root: str, name: str, src: str) -> str | None:
    """The path of the generated source in the cache, written (atomically) unless it already holds ``src``."""
    path = os.path.join(root, name + ".py")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            held = fh.read(len(src) + 1)
    except FileNotFoundError:
        held = None
    except OSError:
        held = ""
    if held == src:
        return path
    try:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(src)
        os.replace(tmp, path)
    except OSError:
        return None
    if held is not None:
        cache.warn(f"the generated kernel source {path} was damaged ({len(held)} characters, not the "
                   f"{len(src)} generated): written again")
        _remove_numba_cache(root, name)  # compiled from the damaged text, or stamped by it
    return path


def _numba_cache_files(root: str, name: str) -> list[str]:
    folder = os.path.join(root, "__pycache__")
    try:
        entries = os.listdir(folder)
    except OSError:
        return []
    return [os.path.join(folder, f) for f in entries
            if f.startswith(name + ".") and (f.endswith(".nbi") or f.endswith(".nbc"))]


def _whole_pickles(path: str, count: int) -> bool:
    """True when the file holds ``count`` whole pickles (structure only: nothing is unpickled), then, for an
    index, any bytes."""
    try:
        with open(path, "rb") as fh:
            stream = io.BytesIO(fh.read())
        for _ in range(count):
            for _op in pickletools.genops(stream):
                pass
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return False
    return True


def _heal_numba_cache(root: str, name: str) -> None:
    """Remove this source's numba cache files that are not whole (numba would fail on them at every run).

    numba copes with a missing file (an index: none yet; a data file: compile
    that signature again and rewrite the index), so removing the damaged ones
    is enough: the others stay valid.
    """
    bad = [p for p in _numba_cache_files(root, name)
           if not _whole_pickles(p, 2 if p.endswith(".nbi") else 1)]  # an index: numba's version, then the entries
    for p in bad:
        try:
            os.unlink(p)
        except OSError:
            pass
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        cache.warn(f"numba's kernel cache file {bad[0]}{more} was damaged: removed, and compiled again")


def _remove_numba_cache(root: str, name: str) -> None:
    for p in _numba_cache_files(root, name):
        try:
            os.unlink(p)
        except OSError:
            pass


def _compile(src: str, rec_cols: tuple[str, ...], name: str, path: str | None) -> Kernels:
    """numba's dispatchers for the kernels of ``src``; cached on disk beside ``path`` when it is given."""
    cached = path is not None
    if not cached:  # numba's on-disk cache needs a source file to locate: switch it off
        src = src.replace("cache=True", "cache=False")
    # compiled from the text in hand, not imported: numba locates its cache by the code's file name
    mod = pytypes.ModuleType(name)
    mod.__file__ = path or "<kforensics kernels>"
    ns = mod.__dict__
    # the crc handles must be globals before njit compiles the functions
    ns["_crc32c"] = None
    ns["_crc32"] = None
    exec(compile(src, mod.__file__, "exec"), ns)  # noqa: S102 - our generated source
    if cached:
        sys.modules[name] = mod
    ns["_crc32c"] = crc.external("kforensics_crc32c", crc.CRC32C_FN, "uint32")
    ns["_crc32"] = crc.external("kforensics_crc32", crc.CRC32_FN, "uint64")  # zlib: uLong crc32(uLong, buf, uInt)
    for sym, fn in codecs.externals().items():
        ns[codegen.external_name(sym)] = fn
    from numba import njit

    compiled = {}
    for kernel in _KERNELS:
        compiled[kernel] = njit(cache=cached, nogil=True)(ns[kernel])
        ns[kernel] = compiled[kernel]  # records_many calls the compiled records
    return Kernels(compiled["walk"], compiled["resync"], compiled["records"], compiled["records_many"], rec_cols,
                   compiled["records_columns"], compiled["inflate"], compiled["records_plain"])
