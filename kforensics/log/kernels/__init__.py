"""Compiled hot loops for walking and decoding segments, generated from the Construct declarations.

Python cannot walk millions of small batches per second, so the inner loops
run as compiled kernels whose source is generated from the declarations of
the entry formats, compiled by numba, and linked once as a small native
library that later runs load without importing numba.

The package, by job (each imports only those above it in this list):

- :mod:`.status`: the status codes the kernels return;
- :mod:`.crc`: the native CRC-32C and CRC-32 functions the kernels call;
- :mod:`.codecs`: the zstd and LZ4 C functions ``inflate`` calls, and their
  contexts;
- :mod:`.records_columns`, :mod:`.inflate`: the source of two kernels;
- :mod:`.codegen`: the kernels' source, generated from the declarations;
- :mod:`.kernel_set`: the ``Kernels`` type, one set of compiled kernels;
- :mod:`.cache`: where compiled kernels are cached (never evidence, never a
  directory others can write to);
- :mod:`.numba_kernels`: numba's kernels, compiled in the cache and healed
  when its files are damaged;
- :mod:`.native`: the native library: built, sealed with its SHA-256,
  verified before it is loaded;
- :mod:`.dispatch`: which kernels a process runs (``KFORENSICS_KERNELS``).

This module is the public face: ``kernels.get()``, ``kernels.jit()``,
``kernels.record_columns()``, the status codes and the CRC handles, and
:func:`check_cache_location`, which front ends call with their inputs before
any kernel loads.
"""

from __future__ import annotations

from .cache import CACHE_ENV
from .codegen import legacy_body, record_columns, source
from .crc import CRC32_FN, CRC32C_FN, HAVE_CRC32, HAVE_CRC32C
from .dispatch import KERNELS_ENV, MODES, check_cache_location, get, jit, mode
from .kernel_set import Kernels
from .status import (
    RECORD_STATUS_TEXT,
    RESYNC_FOUND,
    RESYNC_NEED_MORE,
    RESYNC_UNCHECKED,
    RS_BAD_VARINT,
    RS_FULL,
    RS_LENGTH_MISMATCH,
    RS_NEGATIVE_COUNT,
    RS_NEGATIVE_LENGTH,
    RS_OK,
    RS_TOO_FEW,
    RS_TRAILING_BYTES,
    RS_TRUNCATED,
    ST_BAD_MAGIC,
    ST_FULL,
    ST_NEED_MORE,
    ST_SIZE_TOO_SMALL,
    ST_TOO_SMALL_FOR_MAGIC,
)

__all__ = [
    "CACHE_ENV", "CRC32C_FN", "CRC32_FN", "HAVE_CRC32", "HAVE_CRC32C", "KERNELS_ENV", "MODES", "Kernels",
    "RECORD_STATUS_TEXT", "RESYNC_FOUND", "RESYNC_NEED_MORE", "RESYNC_UNCHECKED", "RS_BAD_VARINT", "RS_FULL",
    "RS_LENGTH_MISMATCH", "RS_NEGATIVE_COUNT", "RS_NEGATIVE_LENGTH", "RS_OK", "RS_TOO_FEW", "RS_TRAILING_BYTES",
    "RS_TRUNCATED", "ST_BAD_MAGIC", "ST_FULL", "ST_NEED_MORE", "ST_SIZE_TOO_SMALL", "ST_TOO_SMALL_FOR_MAGIC",
    "check_cache_location", "get", "jit", "legacy_body", "mode", "record_columns", "source",
]
