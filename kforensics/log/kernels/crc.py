"""The native CRC functions the kernels call: CRC-32C (v2 batches) and CRC-32 (v0/v1 messages).

CRC-32C comes from the ``crc32c`` package's exported C function and CRC-32
from the system zlib, both through ctypes, each checked against a known
answer before it is trusted.  When either is unavailable the generated
kernels report that CRC as not computed and the Python layer checks it with
the library call instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import zlib
from typing import TYPE_CHECKING, Any

import crc32c


def _load_crc32c() -> ctypes._NamedFuncPointer | None:
    """A ctypes handle on crc32c's C function ``f(crc, buf, len)`` (pre/post-inverted by us), or None."""
    try:
        lib = ctypes.CDLL(crc32c._crc32c.__file__)
        if crc32c.hardware_based and hasattr(lib, "_crc32c_hw_adler"):
            lib.crc32c_init_hw_adler.restype = None
            lib.crc32c_init_hw_adler()
            fn = lib._crc32c_hw_adler
        else:
            fn = lib._crc32c_sw_slicing_by_8
        fn.restype = ctypes.c_uint32
        fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
        probe = b"123456789"
        if fn(0xFFFFFFFF, probe, len(probe)) ^ 0xFFFFFFFF != crc32c.crc32c(probe):
            return None
        return fn
    except (OSError, AttributeError):
        return None


def _load_crc32() -> ctypes._NamedFuncPointer | None:
    """A ctypes handle on zlib's ``uLong crc32(uLong crc, buf, uInt len)``, or None."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("z") or "libz.so.1")
        fn = lib.crc32
        fn.restype = ctypes.c_ulong
        fn.argtypes = [ctypes.c_ulong, ctypes.c_void_p, ctypes.c_uint]
        if fn(0, b"hello", 5) != zlib.crc32(b"hello"):
            return None
        return fn
    except (OSError, AttributeError, TypeError):
        return None


if TYPE_CHECKING:
    #: a CRC function of a C library, called through ctypes (a name of typeshed's only)
    CrcFunction = ctypes._NamedFuncPointer

CRC32C_FN = _load_crc32c()
CRC32_FN = _load_crc32()
HAVE_CRC32C = CRC32C_FN is not None
HAVE_CRC32 = CRC32_FN is not None


def external(name: str, fn: ctypes._NamedFuncPointer | None, crc_type: str) -> Any:  # a numba ExternalFunction
    """Expose a ctypes function to numba by symbol name, so compiled kernels can be cached on disk.

    Pointers and sizes travel as ``intp``: the C ABI passes them the same way.
    Imports numba: only called when the kernels are compiled.
    """
    if fn is None:
        return None
    import llvmlite.binding as llvm
    from numba import types

    llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
    crc = getattr(types, crc_type)
    return types.ExternalFunction(name, crc(crc, types.intp, types.intp))
