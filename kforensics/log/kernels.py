"""Compiled hot loops for walking and decoding segments, generated from the Construct declarations.

Python cannot walk millions of small batches per second, so the inner loops
run as numba-compiled kernels.  They are *generated*: the source below is
produced from :data:`kforensics.formats.record_batch.RecordBatchHeader`,
:data:`kforensics.formats.legacy.LegacyPrefix` and
:data:`kforensics.formats.record_batch.Record`, so the Construct declarations
stay the only description of the layouts (the same idea as Construct's own
compiler, targeting numba instead of Python).

numba compiles them once into its on-disk cache; their machine code is then
linked as a small native library (:mod:`.native_kernels`) that later runs load
without importing numba (:func:`get`).  ``KFORENSICS_KERNELS=numba`` keeps to
numba's dispatchers; ``native`` insists on the library (and retries a build
that failed before).

CRCs are computed by native code the kernels call through ctypes: CRC-32C from
the ``crc32c`` package's exported function and CRC-32 from the system zlib.
When either is unavailable the kernels report the CRC as not computed and the
Python layer checks it with the library call instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import zlib

import crc32c
import numpy as np
from construct import Bytes, FormatField, IfThenElse, Prefixed, Renamed, Struct

from ..formats import legacy, record_batch
from ..formats.record_batch import CountPrefixedArray, NullableVarBytes, VarBytes
from ..formats.varint import _LimitedVarInt
from .batch_table import COL, NCOLS

# ---------------------------------------------------------------- native CRCs


def _load_crc32c():
    """A ctypes handle on crc32c's C function ``f(crc, buf, len)`` (pre/post-inverted by us)."""
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


def _load_crc32():
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


CRC32C_FN = _load_crc32c()
CRC32_FN = _load_crc32()
HAVE_CRC32C = CRC32C_FN is not None
HAVE_CRC32 = CRC32_FN is not None


def _external(name: str, fn, crc_type: str):
    """Expose a ctypes function to numba by symbol name, so compiled kernels can be cached on disk.

    Pointers and sizes travel as ``intp``: the C ABI passes them the same way.
    """
    if fn is None:
        return None
    import llvmlite.binding as llvm
    from numba import types

    llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
    crc = getattr(types, crc_type)
    return types.ExternalFunction(name, crc(crc, types.intp, types.intp))



# ---------------------------------------------------------------- statuses

# walk statuses
ST_NEED_MORE = 0  # the next entry is not wholly in the buffer (or the buffer is full of rows)
ST_SIZE_TOO_SMALL = 1  # size field below the v0 minimum: Kafka throws here
ST_BAD_MAGIC = 2
ST_TOO_SMALL_FOR_MAGIC = 3  # size below the minimum for this magic
ST_FULL = 4  # output table full

# resync statuses
RESYNC_FOUND = 0  # a whole entry whose CRC matches
RESYNC_NEED_MORE = 1  # a plausible entry that the buffer does not hold whole
RESYNC_UNCHECKED = 2  # a plausible whole entry whose CRC the kernel could not compute

# record decode statuses
RS_OK = 0
RS_TRUNCATED = 1  # a field runs past the end of the records section
RS_BAD_VARINT = 2
RS_NEGATIVE_LENGTH = 3
RS_LENGTH_MISMATCH = 4  # bytes consumed differ from the record's length prefix
RS_TRAILING_BYTES = 5  # bytes left after recordsCount records
RS_TOO_FEW = 6  # section ended before recordsCount records
RS_NEGATIVE_COUNT = 7
RS_FULL = 8  # the output table is full: call again from where it stopped

RECORD_STATUS_TEXT = {
    RS_TRUNCATED: "record field runs past the end of the batch",
    RS_BAD_VARINT: "varint longer than Kafka allows",
    RS_NEGATIVE_LENGTH: "negative length field",
    RS_LENGTH_MISMATCH: "record length prefix does not match its fields",
    RS_TRAILING_BYTES: "bytes left after the declared number of records (Incorrect declared batch size)",
    RS_TOO_FEW: "records section ends before the declared number of records",
    RS_NEGATIVE_COUNT: "negative records count",
}

# ---------------------------------------------------------------- code generation


def _reader_expr(buf: str, at: str, size: int, signed: bool) -> str:
    return f"_rd{size}{'s' if signed else 'u'}({buf}, {at})"


def _gen_fixed_reads(layout, base: str) -> list[str]:
    """Assignment lines reading every field of a fixed layout at ``base``."""
    return [f"{f.name} = {_reader_expr('buf', f'{base} + {f.offset}', f.size, f.signed)}" for f in layout.fields]


def _low_byte(layout, name: str) -> int:
    """Offset of the least significant byte of a big-endian field."""
    f = layout[name]
    return f.offset + f.size - 1


def legacy_body(magic: int) -> list[tuple[str, str, object]]:
    """The fields of a legacy entry after its prefix, for one magic, read off the ``LegacyMessage`` declaration.

    Returns ``("int", name, FormatField)`` for a fixed field and
    ``("bytes", name, length_field)`` for bytes whose length a previous field
    gives (absent when that length is negative).  Conditions on the magic
    (v1's timestamp) are evaluated here; conditions on a length are runtime.
    """
    ctx: dict[str, int] = {"magic": magic}
    out: list[tuple[str, str, object]] = []
    for sub in legacy.LegacyMessage.subcons[len(legacy.LegacyPrefix.subcons):]:
        c = sub.subcon
        if isinstance(c, IfThenElse):
            try:
                present = bool(c.condfunc(ctx))
            except KeyError:  # a condition on a field read at run time (a length >= 0)
                present = True
            if not present:
                continue
            c = c.thensubcon
        if isinstance(c, FormatField):
            out.append(("int", sub.name, c))
            ctx[sub.name] = len(ctx)
        elif isinstance(c, Bytes):
            # which earlier field gives the length: evaluate the length expression on numbered fields
            probe = {name: i for i, name in enumerate(ctx)}
            index = c.length(probe)
            out.append(("bytes", sub.name, next(n for n, i in probe.items() if i == index)))
        else:
            raise TypeError(f"no kernel mapping for legacy field {sub.name}: {c!r}")
    return out


#: legacy declaration fields stored in batch-table columns of another name
_LEGACY_COLUMN = {"timestamp": "max_timestamp", "key_length": "key_length", "value_length": "value_length"}


def _gen_legacy_body(magic: int, indent: str) -> list[str]:
    """Lines reading a legacy entry's body (after the prefix) into locals, bounded by ``end``."""
    L = [f"{indent}q = pos + {legacy.PREFIX.size}"]
    for kind, name, spec in legacy_body(magic):
        if kind == "int":
            size = spec.length
            L.append(f"{indent}if q + {size} <= end:")
            L.append(f"{indent}    {name} = {_reader_expr('buf', 'q', size, spec.fmtstr[1].islower())}")
            L.append(f"{indent}else:")
            L.append(f"{indent}    {name} = np.int64(-2)  # runs past the message")
            L.append(f"{indent}q += {size}")
        else:
            L.append(f"{indent}{name}_position = q")
            L.append(f"{indent}if {spec} > 0:")
            L.append(f"{indent}    q += {spec}")
    return L


def _gen_walk() -> str:
    """Source of ``walk``: frame entries, read headers, check CRCs, fill the batch table."""
    h = record_batch.HEADER
    lp = legacy.PREFIX
    size_off = h.offset("batch_length")
    magic_off = h.offset("magic")
    # the framing every magic shares: the walk reads size and magic before knowing which format it holds
    assert size_off == lp.offset("message_size") and magic_off == lp.offset("magic")
    assert record_batch.LOG_OVERHEAD == legacy.LOG_OVERHEAD
    mins = legacy.MIN_MESSAGE_SIZE
    L: list[str] = []
    a = L.append
    a("def walk(buf, n, pos, out, k, cap):")
    a("    base = buf.ctypes.data")
    a("    while True:")
    a("        if k >= cap:")
    a(f"            return k, pos, {ST_FULL}")
    a(f"        if n - pos < {record_batch.ENTRY_PREFIX}:")
    a(f"            return k, pos, {ST_NEED_MORE}")
    a(f"        size = {_reader_expr('buf', f'pos + {size_off}', 4, True)}")
    a(f"        magic = {_reader_expr('buf', f'pos + {magic_off}', 1, True)}")
    a(f"        if size < {mins[0]}:")
    a(f"            return k, pos, {ST_SIZE_TOO_SMALL}")
    a(f"        end = pos + {record_batch.LOG_OVERHEAD} + size")
    a("        if magic == 2:")
    a(f"            if size < {record_batch.MIN_BATCH_SIZE}:")
    a(f"                return k, pos, {ST_TOO_SMALL_FOR_MAGIC}")
    a("            if end > n:")
    a(f"                return k, pos, {ST_NEED_MORE}")
    for line in _gen_fixed_reads(h, "pos"):
        a("            " + line)
    a("            row = out[k]")
    a(f"            row[{COL['position']}] = pos")
    a(f"            row[{COL['size_in_bytes']}] = end - pos")
    a(f"            row[{COL['last_offset']}] = base_offset + last_offset_delta")
    for f in h.fields:
        if f.name in COL:
            a(f"            row[{COL[f.name]}] = {f.name}")
    if HAVE_CRC32C:
        start = record_batch.CRC_START
        a(f"            row[{COL['crc_computed']}] = np.int64(_crc32c(np.uint32(0xFFFFFFFF), base + pos + {start}, "
          f"end - pos - {start}) ^ np.uint32(0xFFFFFFFF))")
    else:
        a(f"            row[{COL['crc_computed']}] = -1")
    for name in ("value_position", "value_length", "key_length", "flags"):
        a(f"            row[{COL[name]}] = {0 if name == 'flags' else -1}")
    for magic in sorted(mins):
        a(f"        elif magic == {magic}:")
        a(f"            if size < {mins[magic]}:")
        a(f"                return k, pos, {ST_TOO_SMALL_FOR_MAGIC}")
        a("            if end > n:")
        a(f"                return k, pos, {ST_NEED_MORE}")
        for line in _gen_fixed_reads(lp, "pos"):
            a("            " + line)
        L.extend(_gen_legacy_body(magic, "            "))
        a("            row = out[k]")
        a(f"            row[{COL['position']}] = pos")
        a(f"            row[{COL['size_in_bytes']}] = end - pos")
        a(f"            row[{COL['magic']}] = magic")
        a(f"            codec = attributes & {record_batch.COMPRESSION_MASK}")
        # a wrapper's first offset and count are known only after decompressing it
        a(f"            row[{COL['base_offset']}] = offset if codec == 0 else -1")
        a(f"            row[{COL['last_offset']}] = offset")
        a(f"            row[{COL['crc']}] = crc")
        if HAVE_CRC32:
            start = legacy.CRC_START
            a(f"            row[{COL['crc_computed']}] = np.int64(_crc32(np.uint64(0), base + pos + {start}, "
              f"end - pos - {start}))")
        else:
            a(f"            row[{COL['crc_computed']}] = -1")
        a(f"            row[{COL['attributes']}] = attributes")
        body_names = {name for _, name, _ in legacy_body(magic)}
        a(f"            row[{COL['max_timestamp']}] = {'timestamp' if 'timestamp' in body_names else -1}")
        for name in ("partition_leader_epoch", "base_timestamp", "producer_id", "producer_epoch", "base_sequence"):
            a(f"            row[{COL[name]}] = -1")
        a(f"            row[{COL['records_count']}] = 1 if codec == 0 else -1")
        a(f"            row[{COL['key_length']}] = key_length")
        # the value's bytes must lie inside the message, or the entry is malformed
        a(f"            row[{COL['value_position']}] = value_position")
        a("            if value_length >= 0 and value_position + value_length > end:")
        a(f"                row[{COL['value_length']}] = -2")
        a("            else:")
        a(f"                row[{COL['value_length']}] = value_length")
        a(f"            row[{COL['flags']}] = 0")
    a("        else:")
    a(f"            return k, pos, {ST_BAD_MAGIC}")
    a("        k += 1")
    a("        pos = end")
    return "\n".join(L) + "\n"


def _gen_resync() -> str:
    """Source of ``resync``: the next position where a whole entry starts whose CRC matches."""
    h = record_batch.HEADER
    lp = legacy.PREFIX
    size_off = h.offset("batch_length")
    magic_off = h.offset("magic")
    mask = record_batch.COMPRESSION_MASK
    L: list[str] = []
    a = L.append
    a("def resync(buf, n, pos, limit):")
    a("    # The next position >= pos where a plausible entry with a matching CRC starts, and a status;")
    a("    # position -1 when none starts before n - ENTRY_PREFIX + 1.  limit = bytes of the file")
    a("    # available from buf[0]: an entry reaching past it is implausible.")
    a("    base = buf.ctypes.data")
    a(f"    while pos + {record_batch.ENTRY_PREFIX} <= n:")
    a(f"        magic = buf[pos + {magic_off}]")
    a(f"        if magic > {record_batch.MAGIC} or buf[pos + {h.offset('base_offset')}] >= 128:"
      "  # negative offsets are implausible")
    a("            pos += 1")
    a("            continue")
    a(f"        size = {_reader_expr('buf', f'pos + {size_off}', 4, True)}")
    a(f"        if size < {legacy.MIN_MESSAGE_SIZE[0]} or (magic == 2 and size < {record_batch.MIN_BATCH_SIZE}):")
    a("            pos += 1")
    a("            continue")
    a(f"        end = pos + {record_batch.LOG_OVERHEAD} + size")
    a("        if end > limit:")
    a("            pos += 1")
    a("            continue")
    a("        if end > n:")
    a(f"            return pos, {RESYNC_NEED_MORE}")
    a("        if magic == 2:")
    a(f"            if (buf[pos + {_low_byte(h, 'attributes')}] & {mask}) > 4 "
      f"or buf[pos + {h.offset('records_count')}] >= 128 or buf[pos + {h.offset('last_offset_delta')}] >= 128:")
    a("                pos += 1")
    a("                continue")
    if HAVE_CRC32C:
        start = record_batch.CRC_START
        crc_at = h.offset("crc")
        a(f"            stored = {_reader_expr('buf', f'pos + {crc_at}', 4, False)}")
        a(f"            got = np.int64(_crc32c(np.uint32(0xFFFFFFFF), base + pos + {start}, end - pos - {start}) "
          "^ np.uint32(0xFFFFFFFF))")
        a("            if stored == got:")
        a(f"                return pos, {RESYNC_FOUND}")
    else:
        a(f"            return pos, {RESYNC_UNCHECKED}")
    a(f"        elif (buf[pos + {_low_byte(lp, 'attributes')}] & {mask}) > 3:")
    a("            pos += 1")
    a("            continue")
    a("        else:")
    if HAVE_CRC32:
        start = legacy.CRC_START
        lcrc_at = lp.offset("crc")
        a(f"            stored = {_reader_expr('buf', f'pos + {lcrc_at}', 4, False)}")
        a(f"            got = np.int64(_crc32(np.uint64(0), base + pos + {start}, end - pos - {start}))")
        a("            if stored == got:")
        a(f"                return pos, {RESYNC_FOUND}")
    else:
        a(f"            return pos, {RESYNC_UNCHECKED}")
    a("        pos += 1")
    a(f"    return -1, {RESYNC_FOUND}")
    return "\n".join(L) + "\n"


def _field_kind(sub) -> tuple[str, object]:
    c = sub.subcon if isinstance(sub, Renamed) else sub
    if isinstance(c, FormatField):
        return "int", c
    if isinstance(c, _LimitedVarInt):
        return "varint", c
    if isinstance(c, NullableVarBytes):
        return ("bytes_nonnull" if isinstance(c, VarBytes) else "bytes"), c
    if isinstance(c, CountPrefixedArray):
        return "array", c
    raise TypeError(f"no kernel mapping for {sub!r}")


def _gen_struct_body(struct: Struct, indent: str, lim: str, store: bool, depth: int) -> tuple[list[str], list[str]]:
    """Lines parsing ``struct`` at ``p`` (bounded by ``lim``); returns (lines, output columns)."""
    lines: list[str] = []
    cols: list[str] = []

    def varint(var: str, c: _LimitedVarInt):
        lines.append(f"{indent}{var}, p, ok = _varint(buf, p, {lim}, {c.max_bytes}, {c.zigzag})")
        lines.append(f"{indent}if ok != 0:")
        lines.append(f"{indent}    return i, start, ok")

    for sub in struct.subcons:
        name = f"{sub.name}_{depth}" if not store else sub.name
        kind, c = _field_kind(sub)
        if kind == "int":
            size = c.length
            lines.append(f"{indent}if p + {size} > {lim}:")
            lines.append(f"{indent}    return i, start, {RS_TRUNCATED}")
            lines.append(f"{indent}{name} = {_reader_expr('buf', 'p', size, c.fmtstr[1].islower())}")
            lines.append(f"{indent}p += {size}")
            if store:
                cols.append(sub.name)
        elif kind == "varint":
            varint(name, c)
            if store:
                cols.append(sub.name)
        elif kind in ("bytes", "bytes_nonnull"):
            varint(f"{name}_len", c.lengthfield)
            if kind == "bytes_nonnull":  # a header key: Kafka refuses a negative length; elsewhere it means null
                lines.append(f"{indent}if {name}_len < 0:")
                lines.append(f"{indent}    return i, start, {RS_NEGATIVE_LENGTH}")
            lines.append(f"{indent}{name}_pos = p")
            lines.append(f"{indent}if {name}_len > 0:")
            lines.append(f"{indent}    p += {name}_len")
            lines.append(f"{indent}if p > {lim}:")
            lines.append(f"{indent}    return i, start, {RS_TRUNCATED}")
            if store:
                cols += [f"{sub.name}_pos", f"{sub.name}_len"]
        elif kind == "array":
            varint(f"{name}_count", c.countfield)
            lines.append(f"{indent}if {name}_count < 0 or {name}_count > {lim} - p:")
            # each element takes at least one byte: a count beyond the bytes left is damage, not a loop
            lines.append(f"{indent}    return i, start, {RS_NEGATIVE_LENGTH}")
            lines.append(f"{indent}{name}_pos = p")
            lines.append(f"{indent}for _j{depth} in range({name}_count):")
            inner, _ = _gen_struct_body(c.subcon, indent + "    ", lim, False, depth + 1)
            lines += inner
            if store:
                cols += [f"{sub.name}_pos", f"{sub.name}_count"]
    return lines, cols


def _gen_records() -> tuple[str, tuple[str, ...]]:
    """Source of ``records``: decode up to ``count`` v2 records (at most the output's rows) into a record table.

    Returns ``(records decoded, position after them, status)``; with
    ``RS_FULL`` the caller drains the table and calls again from that position
    for the remaining count, so a batch of millions of records never needs a
    table of millions of rows.
    """
    rec = record_batch.Record
    assert isinstance(rec, Prefixed)
    body_lines, cols = _gen_struct_body(rec.subcon, "        ", "rend", True, 0)
    columns = ("position", "size_in_bytes") + tuple(cols)
    L: list[str] = []
    a = L.append
    a("def records(buf, p, end, count, out):")
    a("    i = 0")
    a("    if count < 0:")
    a(f"        return 0, p, {RS_NEGATIVE_COUNT}")
    a("    cap = out.shape[0]")
    a("    while i < count:")
    a("        if i >= cap:")
    a(f"            return i, p, {RS_FULL}")
    a("        if p >= end:")
    a(f"            return i, p, {RS_TOO_FEW}")
    a("        start = p")
    lc = rec.lengthfield
    a(f"        length, p, ok = _varint(buf, p, end, {lc.max_bytes}, {lc.zigzag})")
    a("        if ok != 0:")
    a("            return i, start, ok")
    a("        if length < 0:")
    a(f"            return i, start, {RS_NEGATIVE_LENGTH}")
    a("        rend = p + length")
    a("        if rend > end:")
    a(f"            return i, start, {RS_TRUNCATED}")
    L += body_lines
    a("        if p != rend:")
    a(f"            return i, start, {RS_LENGTH_MISMATCH}")
    a("        row = out[i]")
    a("        row[0] = start")
    a("        row[1] = rend - start")
    for j, c in enumerate(cols):
        a(f"        row[{j + 2}] = {c}")
    a("        p = rend")
    a("        i += 1")
    a("    if p != end:")
    a(f"        return i, p, {RS_TRAILING_BYTES}")
    a(f"    return i, p, {RS_OK}")
    return "\n".join(L) + "\n", columns


_PRELUDE = """
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


def _load_be(nbytes, signed):
    # an unaligned big-endian load of ``nbytes`` at ``b[i]`` as one machine load and a byte swap, widened to
    # int64 (indexing byte by byte costs a negative-index check per byte and defeats load combining); the
    # callers check ``i`` against the bytes held, as with plain indexing
    @intrinsic
    def load(typingctx, arr, idx):
        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            i = context.cast(builder, args[1], sig.args[1], types.intp)
            ity = ir.IntType(8 * nbytes)
            v = builder.load(builder.bitcast(builder.gep(ary.data, [i]), ity.as_pointer()), align=1)
            if nbytes > 1:
                v = builder.call(builder.module.declare_intrinsic("llvm.bswap", [ity]), [v])
            if nbytes < 8:
                v = builder.sext(v, ir.IntType(64)) if signed else builder.zext(v, ir.IntType(64))
            return v

        return types.int64(arr, idx), codegen

    return load


_rd1u = _load_be(1, False)
_rd1s = _load_be(1, True)
_rd2s = _load_be(2, True)
_rd4u = _load_be(4, False)
_rd4s = _load_be(4, True)
_rd8s = _load_be(8, True)


@njit(inline="always", cache=True)
def _varint(b, p, lim, max_bytes, zigzag):
    # unsigned LEB128 of at most max_bytes bytes, optionally zig-zag decoded;
    # status 0 ok, 1 truncated, 2 too long
    v = np.uint64(0)
    shift = np.uint64(0)
    for j in range(max_bytes):
        if p >= lim:
            return np.int64(0), p, 1
        x = np.uint64(_rd1u(b, p))
        p += 1
        v |= (x & np.uint64(0x7F)) << shift
        if x < np.uint64(0x80):
            if max_bytes == 5:
                v &= np.uint64(0xFFFFFFFF)
            if zigzag:
                return np.int64(v >> np.uint64(1)) ^ -np.int64(v & np.uint64(1)), p, 0
            return np.int64(v), p, 0
        shift += np.uint64(7)
    return np.int64(0), p, 2
"""


_RECORDS_MANY = """
def records_many(buf, starts, ends, counts, out, batch_out, status_out):
    # decode the records of many uncompressed batches held in one buffer;
    # returns (batches done, rows written); stops before a batch that does not fit in ``out``
    k = 0
    for b in range(starts.shape[0]):
        c = counts[b]
        if c > 0 and k + c > out.shape[0]:
            return b, k
        n, p, st = records(buf, starts[b], ends[b], c, out[k:])
        for j in range(n):
            batch_out[k + j] = b
        status_out[b] = st
        k += n
    return starts.shape[0], k
"""


def source() -> tuple[str, tuple[str, ...]]:
    """The generated kernel source and the record table's columns."""
    rec_src, rec_cols = _gen_records()
    src = (
        '"""Generated by kforensics.log.kernels from the Construct declarations. Do not edit."""\n'
        + _PRELUDE
        + "\n\n_crc32c = None\n_crc32 = None\n\n\n"
        + _gen_walk()
        + "\n\n"
        + _gen_resync()
        + "\n\n"
        + rec_src
        + "\n\n"
        + _RECORDS_MANY
    )
    return src, rec_cols


class Kernels:
    """The compiled kernels (see :func:`get`): numba's dispatchers, or the native library's entry points."""

    def __init__(self, walk, resync, records, records_many, record_columns):
        self.walk = walk
        self.resync = resync
        self.decode_records = records
        self.decode_records_many = records_many
        self.RECORD_COLUMNS = record_columns
        self.RCOL = {name: i for i, name in enumerate(record_columns)}
        #: path of the native library these kernels run from, None for numba's
        self.native: str | None = None

    def new_record_table(self, cap: int) -> np.ndarray:
        """An empty output table for :meth:`decode_records` (at least one row)."""
        return np.empty((max(cap, 1), len(self.RECORD_COLUMNS)), dtype=np.int64)


def _cache_root() -> str | None:
    """The kernel cache directory (created if missing), never next to evidence; None when none is writable."""
    first = os.environ.get("KFORENSICS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "kforensics"
    )
    for root in (first, os.path.join(tempfile.gettempdir(), f"kforensics-{os.getuid()}")):
        try:
            os.makedirs(root, mode=0o755, exist_ok=True)
            st = os.stat(root)
            # what is loaded from here runs as our code: only a directory we own, that no one else can write to
            if st.st_uid != os.getuid():
                continue
            if st.st_mode & 0o022:
                os.chmod(root, st.st_mode & ~0o022)
            if os.access(root, os.W_OK):
                return root
        except OSError:
            continue
    return None


def _digest(src: str) -> str:
    return hashlib.sha256((src + repr((HAVE_CRC32C, HAVE_CRC32))).encode()).hexdigest()[:16]


def _compile(src: str, rec_cols: tuple[str, ...], root: str | None) -> Kernels:
    """Compile the generated kernels with numba, caching them on disk in ``root`` (in memory when None)."""
    name = f"_kf_kernels_{_digest(src)}"
    path = None
    if root is not None:
        try:
            path = os.path.join(root, name + ".py")
            if not os.path.exists(path):
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as fh:
                    fh.write(src)
                os.replace(tmp, path)
        except OSError:
            path = None
    if path is not None:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        ns = mod.__dict__
    else:  # no writable cache anywhere: compile in memory
        ns: dict = {}
        exec(compile(src.replace("cache=True", "cache=False"), "<kforensics kernels>", "exec"), ns)
    # the crc handles must be globals before njit compiles the functions
    ns["_crc32c"] = _external("kforensics_crc32c", CRC32C_FN, "uint32")
    ns["_crc32"] = _external("kforensics_crc32", CRC32_FN, "uint64")  # zlib: uLong crc32(uLong, buf, uInt)
    from numba import njit

    cache = path is not None
    walk = njit(cache=cache, nogil=True)(ns["walk"])
    resync = njit(cache=cache, nogil=True)(ns["resync"])
    records = njit(cache=cache, nogil=True)(ns["records"])
    ns["records"] = records  # records_many calls the compiled version
    records_many = njit(cache=cache, nogil=True)(ns["records_many"])
    return Kernels(walk, resync, records, records_many, rec_cols)


#: ``KFORENSICS_KERNELS``: ``auto`` (the native library when it loads or builds, else numba), ``numba``, ``native``
KERNELS_ENV = "KFORENSICS_KERNELS"

_KERNELS: Kernels | None = None
_JIT: Kernels | None = None
_LOCK = threading.RLock()  # get() builds the native library while holding it, and that compiles jit()


def jit() -> Kernels:
    """The numba kernels, compiled (or loaded from the on-disk cache) on first use."""
    global _JIT
    with _LOCK:
        if _JIT is None:
            src, rec_cols = source()
            _JIT = _compile(src, rec_cols, _cache_root())
        return _JIT


def get() -> Kernels:
    """The compiled kernels: the native library (:mod:`.native_kernels`) when there is one for this source, else
    numba's, after which the library is built for the next run."""
    global _KERNELS
    if _KERNELS is None:
        with _LOCK:
            if _KERNELS is None:
                _KERNELS = _load(os.environ.get(KERNELS_ENV, "auto").strip().lower() or "auto")
    return _KERNELS


def _load(mode: str) -> Kernels:
    from . import native_kernels

    if mode not in ("auto", "numba", "native"):
        raise ValueError(f"{KERNELS_ENV}={mode!r}: expected auto, numba or native")
    if mode == "numba":
        return jit()
    src, rec_cols = source()
    root = _cache_root()
    crcs = (CRC32C_FN, CRC32_FN)
    if root is not None:
        path = os.path.join(root, native_kernels.library_name(_digest(src)))
        native = native_kernels.load(path, rec_cols, crcs, jit)
        if native is not None:
            return native
        failed = path + ".failed"
        if mode == "auto" and os.path.exists(failed):
            return jit()  # building failed before: not tried again at every start
        numba_kernels = jit()
        try:
            native_kernels.build(numba_kernels, path)
            native = native_kernels.load(path, rec_cols, crcs, jit)
            if native is None:
                raise RuntimeError(f"the native kernels built at {path} do not load")
            if os.path.exists(failed):  # an earlier failure, retried on request (KFORENSICS_KERNELS=native)
                os.unlink(failed)
            return native
        except Exception as e:  # anything at all: numba's kernels do the same work
            if mode == "native":
                raise
            try:
                with open(failed, "w") as fh:
                    fh.write(f"{type(e).__name__}: {e}\n")
            except OSError:
                pass
            return numba_kernels
    if mode == "native":
        raise RuntimeError("no writable kernel cache to build the native kernels in")
    return jit()


def record_columns() -> tuple[str, ...]:
    """The record table's columns (no compilation needed)."""
    return _gen_records()[1]
