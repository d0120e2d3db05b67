"""The native decompressors the ``inflate`` kernel calls: zstd's and LZ4's frame decoders, through their C entry points.

A compressed batch of a few records costs more in Python around the library
call (slicing, the call, the result object) than in the library, so the
kernels call the libraries themselves, many batches per call.  The libraries
are the ones the Python codecs already ship: zstd from ``zstandard``'s cffi
module (or the system's ``libzstd``), LZ4's frame API from ``lz4.frame``'s
module (or the system's ``liblz4``).  Each function is looked up through
ctypes and the pair is checked against a known answer (a frame of each codec
decompressed through it) before it is trusted; when either is missing the
kernel is generated as a stub and the Python path decompresses every batch,
with the same results.

Contexts (:class:`Contexts`) belong to one walk: they are not thread-safe, and
are freed when the walk ends.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
from typing import Any

#: the C functions the kernel calls: our symbol -> (library, C name, result type, argument types as 'u64'/'ptr')
FUNCTIONS = {
    "kforensics_zstd_stream": ("zstd", "ZSTD_decompressStream", "u64", ("ptr", "ptr", "ptr")),
    "kforensics_zstd_reset": ("zstd", "ZSTD_DCtx_reset", "u64", ("ptr", "u32")),
    "kforensics_zstd_is_error": ("zstd", "ZSTD_isError", "u32", ("u64",)),
    "kforensics_lz4f_decompress": ("lz4", "LZ4F_decompress", "u64", ("ptr", "ptr", "ptr", "ptr", "ptr", "ptr")),
    "kforensics_lz4f_is_error": ("lz4", "LZ4F_isError", "u32", ("u64",)),
    "kforensics_lz4f_reset": ("lz4", "LZ4F_resetDecompressionContext", "void", ("ptr",)),
}
_LZ4F_VERSION = 100  # LZ4F_VERSION: the frame API version contexts are created for
ZSTD_RESET_SESSION_ONLY = 1  # ZSTD_ResetDirective's ZSTD_reset_session_only


def _library_paths(which: str) -> list[str]:
    """Where each library may be found: the Python codec's own module first, then the system's."""
    paths = []
    module = "zstandard._cffi" if which == "zstd" else "lz4.frame._frame"
    try:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            paths.append(spec.origin)
    except (ImportError, ValueError):
        pass
    system = ctypes.util.find_library("zstd" if which == "zstd" else "lz4")
    if system:
        paths.append(system)
    return paths


_CTYPE: dict[str, Any] = {"u64": ctypes.c_uint64, "u32": ctypes.c_uint32, "ptr": ctypes.c_void_p, "void": None}


def _bind(lib: ctypes.CDLL, which: str) -> dict[str, Any]:
    """The functions of one library (ctypes handles, typed); raises AttributeError when one is missing."""
    out = {}
    for sym, (lib_name, cname, res, args) in FUNCTIONS.items():
        if lib_name != which:
            continue
        fn = getattr(lib, cname)
        fn.restype = _CTYPE[res]
        fn.argtypes = [_CTYPE[a] for a in args]
        out[sym] = fn
    if which == "zstd":
        out["ZSTD_createDCtx"] = lib.ZSTD_createDCtx
        out["ZSTD_createDCtx"].restype = ctypes.c_void_p
        out["ZSTD_createDCtx"].argtypes = []
        out["ZSTD_freeDCtx"] = lib.ZSTD_freeDCtx
    else:
        out["LZ4F_createDecompressionContext"] = lib.LZ4F_createDecompressionContext
        out["LZ4F_createDecompressionContext"].argtypes = [ctypes.c_void_p, ctypes.c_uint]
        out["LZ4F_createDecompressionContext"].restype = ctypes.c_size_t
        out["LZ4F_freeDecompressionContext"] = lib.LZ4F_freeDecompressionContext
    free = out["ZSTD_freeDCtx" if which == "zstd" else "LZ4F_freeDecompressionContext"]
    free.argtypes = [ctypes.c_void_p]
    free.restype = ctypes.c_size_t
    return out


def _load(which: str) -> dict[str, Any] | None:
    for path in _library_paths(which):
        try:
            fns = _bind(ctypes.CDLL(path), which)
        except (OSError, AttributeError):
            continue
        if _known_answer(which, fns):
            return fns
    return None


def _known_answer(which: str, fns: dict[str, Any]) -> bool:
    """Whether the functions decompress a known frame to its known content (with a fresh context)."""
    plain = b"kforensics known answer " * 8
    try:
        if which == "zstd":
            import zstandard

            frame = zstandard.ZstdCompressor(write_content_size=False).compress(plain)
            ctx = fns["ZSTD_createDCtx"]()
            out = ctypes.create_string_buffer(len(plain) + 64)
            src = ctypes.create_string_buffer(frame, len(frame))
            # ZSTD_outBuffer {dst, size, pos} then ZSTD_inBuffer {src, size, pos}
            bufs = (ctypes.c_size_t * 6)(ctypes.addressof(out), len(out), 0, ctypes.addressof(src), len(frame), 0)
            try:
                fns["kforensics_zstd_reset"](ctx, ZSTD_RESET_SESSION_ONLY)
                n = fns["kforensics_zstd_stream"](ctx, ctypes.addressof(bufs), ctypes.addressof(bufs) + 24)
                ok = n == 0 and bufs[5] == len(frame) and out.raw[: bufs[2]] == plain
            finally:
                fns["ZSTD_freeDCtx"](ctx)
            return bool(ok)
        import lz4.frame

        frame = lz4.frame.compress(plain)
        lctx = _lz4_context(fns)
        out = ctypes.create_string_buffer(len(plain) + 64)
        sizes = (ctypes.c_size_t * 2)(len(out), len(frame))
        try:
            r = fns["kforensics_lz4f_decompress"](lctx, out, ctypes.addressof(sizes), frame,
                                                  ctypes.addressof(sizes) + 8, None)
            ok = r == 0 and out.raw[: sizes[0]] == plain
        finally:
            fns["LZ4F_freeDecompressionContext"](lctx)
        return bool(ok)
    except Exception:  # noqa: BLE001 - any failure: the library is not used
        return False


def _lz4_context(fns: dict[str, Any]) -> int:
    create = fns["LZ4F_createDecompressionContext"]
    holder = ctypes.c_void_p()
    if fns["kforensics_lz4f_is_error"](create(ctypes.byref(holder), _LZ4F_VERSION)) or not holder.value:
        raise MemoryError("LZ4F_createDecompressionContext failed")
    return holder.value


_ZSTD = _load("zstd")
_LZ4 = _load("lz4")
#: whether the ``inflate`` kernel calls the libraries (False: it is a stub, and Python decompresses every batch)
HAVE_INFLATE = _ZSTD is not None and _LZ4 is not None
#: our symbol -> the ctypes function the kernels call under it (empty without the libraries)
EXTERNALS: dict[str, Any] = (
    {sym: (_ZSTD if FUNCTIONS[sym][0] == "zstd" else _LZ4)[sym] for sym in FUNCTIONS}  # type: ignore[index]
    if HAVE_INFLATE else {})


class Contexts:
    """One zstd and one LZ4 decompression context, as addresses for the ``inflate`` kernel; freed by :meth:`close`
    (or when collected).  Not thread-safe: one per walk."""

    def __init__(self) -> None:
        if not HAVE_INFLATE or _ZSTD is None or _LZ4 is None:
            raise RuntimeError("the native decompressors are not available")
        self.zstd = int(_ZSTD["ZSTD_createDCtx"]() or 0)
        if not self.zstd:
            raise MemoryError("ZSTD_createDCtx failed")
        self.lz4 = _lz4_context(_LZ4)

    def close(self) -> None:
        """Free both contexts (once)."""
        if self.zstd and _ZSTD is not None:
            _ZSTD["ZSTD_freeDCtx"](self.zstd)
            self.zstd = 0
        if self.lz4 and _LZ4 is not None:
            _LZ4["LZ4F_freeDecompressionContext"](self.lz4)
            self.lz4 = 0

    def __del__(self) -> None:
        self.close()


def externals() -> dict[str, Any]:
    """numba's external functions for :data:`FUNCTIONS`, by our symbol (imports numba: only when compiling)."""
    import llvmlite.binding as llvm
    from numba import types

    ty: dict[str, Any] = {"u64": types.uint64, "u32": types.uint32, "ptr": types.intp, "void": types.void}
    out = {}
    for sym, fn in EXTERNALS.items():
        _lib, _cname, res, args = FUNCTIONS[sym]
        llvm.add_symbol(sym, ctypes.cast(fn, ctypes.c_void_p).value)
        out[sym] = types.ExternalFunction(sym, ty[res](*(ty[a] for a in args)))
    return out
