"""The kernels' source, generated from the Construct declarations of the entry formats.

Python cannot walk millions of small batches per second, so the inner loops
run as numba-compiled kernels.  Their source is *generated* here from
:data:`kforensics.formats.record_batch.RecordBatchHeader`,
:data:`kforensics.formats.legacy.LegacyPrefix` / ``LegacyMessage`` and
:data:`kforensics.formats.record_batch.Record`, so the Construct declarations
stay the only description of the layouts (the same idea as Construct's own
compiler, targeting numba instead of Python).  Every number in the source
comes from a declaration or from :mod:`.status`.

Generating imports nothing of numba: the source is plain text, compiled by
:mod:`.numba_kernels`.
"""

from __future__ import annotations

from construct import Bytes, Construct, FormatField, IfThenElse, Prefixed, Renamed, Struct

from ...formats import legacy, record_batch
from ...formats.layout import FixedLayout
from ...formats.record_batch import CountPrefixedArray, NullableVarBytes, VarBytes
from ...formats.varint import LimitedVarInt
from ..batch_table import COL
from . import codecs, crc
from .inflate import gen_inflate
from .records_columns import gen_records_columns, gen_records_plain
from .status import (
    RESYNC_FOUND,
    RESYNC_NEED_MORE,
    RESYNC_UNCHECKED,
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

# ---------------------------------------------------------------- reading fields


def _reader_expr(buf: str, at: str, size: int, signed: bool) -> str:
    return f"_rd{size}{'s' if signed else 'u'}({buf}, {at})"


def _gen_fixed_reads(layout: FixedLayout, base: str) -> list[str]:
    """Assignment lines reading every field of a fixed layout at ``base``."""
    return [f"{f.name} = {_reader_expr('buf', f'{base} + {f.offset}', f.size, f.signed)}" for f in layout.fields]


def _low_byte(layout: FixedLayout, name: str) -> int:
    """Offset of the least significant byte of a big-endian field."""
    f = layout[name]
    return f.offset + f.size - 1


def legacy_body(magic: int) -> list[tuple[str, str, FormatField | str]]:
    """The fields of a legacy entry after its prefix, for one magic, read off the ``LegacyMessage`` declaration.

    Returns ``("int", name, FormatField)`` for a fixed field and
    ``("bytes", name, length_field)`` for bytes whose length a previous field
    gives (absent when that length is negative).  Conditions on the magic
    (v1's timestamp) are evaluated here; conditions on a length are runtime.
    """
    ctx: dict[str, int] = {"magic": magic}
    out: list[tuple[str, str, FormatField | str]] = []
    for sub in legacy.LegacyMessage.subcons[len(legacy.LegacyPrefix.subcons):]:
        if not isinstance(sub, Renamed):
            raise TypeError(f"no kernel mapping for an unnamed legacy field: {sub!r}")
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


def _gen_legacy_body(magic: int, indent: str) -> list[str]:
    """Lines reading a legacy entry's body (after the prefix) into locals, bounded by ``end``."""
    L = [f"{indent}q = pos + {legacy.PREFIX.size}"]
    for _kind, name, spec in legacy_body(magic):
        if isinstance(spec, FormatField):  # an "int"
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


# ---------------------------------------------------------------- walk


def gen_walk() -> str:
    """Source of ``walk``: frame entries, read headers, check CRCs, fill the batch table.

    The framing (size and magic, read before the format is known) is common to
    every magic; each magic's branch is generated by :func:`_walk_v2` or
    :func:`_walk_legacy`.
    """
    h = record_batch.HEADER
    lp = legacy.PREFIX
    size_off = h.offset("batch_length")
    magic_off = h.offset("magic")
    # the framing every magic shares: the walk reads size and magic before knowing which format it holds
    assert size_off == lp.offset("message_size") and magic_off == lp.offset("magic")
    assert record_batch.LOG_OVERHEAD == legacy.LOG_OVERHEAD
    L = [
        "def walk(buf, n, pos, out, k, cap):",
        "    base = buf.ctypes.data",
        "    while True:",
        "        if k >= cap:",
        f"            return k, pos, {ST_FULL}",
        f"        if n - pos < {record_batch.ENTRY_PREFIX}:",
        f"            return k, pos, {ST_NEED_MORE}",
        f"        size = {_reader_expr('buf', f'pos + {size_off}', 4, True)}",
        f"        magic = {_reader_expr('buf', f'pos + {magic_off}', 1, True)}",
        f"        if size < {legacy.MIN_MESSAGE_SIZE[0]}:",
        f"            return k, pos, {ST_SIZE_TOO_SMALL}",
        f"        end = pos + {record_batch.LOG_OVERHEAD} + size",
        "        if magic == 2:",
    ]
    L += _walk_v2("            ")
    for magic in sorted(legacy.MIN_MESSAGE_SIZE):
        L.append(f"        elif magic == {magic}:")
        L += _walk_legacy(magic, "            ")
    L += [
        "        else:",
        f"            return k, pos, {ST_BAD_MAGIC}",
        "        k += 1",
        "        pos = end",
    ]
    return "\n".join(L) + "\n"


def _walk_entry_checks(least: int, indent: str) -> list[str]:
    """Lines returning a status when the entry at ``pos`` is below ``least`` bytes or not wholly in the buffer."""
    return [
        f"{indent}if size < {least}:",
        f"{indent}    return k, pos, {ST_TOO_SMALL_FOR_MAGIC}",
        f"{indent}if end > n:",
        f"{indent}    return k, pos, {ST_NEED_MORE}",
    ]


def _walk_v2(indent: str) -> list[str]:
    """The magic 2 branch of ``walk``: a batch header read into a batch-table row, its CRC-32C computed."""
    h = record_batch.HEADER
    L = _walk_entry_checks(record_batch.MIN_BATCH_SIZE, indent)
    L += [indent + line for line in _gen_fixed_reads(h, "pos")]
    L += [
        f"{indent}row = out[k]",
        f"{indent}row[{COL['position']}] = pos",
        f"{indent}row[{COL['size_in_bytes']}] = end - pos",
        f"{indent}row[{COL['last_offset']}] = base_offset + last_offset_delta",
    ]
    L += [f"{indent}row[{COL[f.name]}] = {f.name}" for f in h.fields if f.name in COL]
    if crc.HAVE_CRC32C:
        start = record_batch.CRC_START
        L.append(f"{indent}row[{COL['crc_computed']}] = np.int64(_crc32c(np.uint32(0xFFFFFFFF), base + pos + {start}, "
                 f"end - pos - {start}) ^ np.uint32(0xFFFFFFFF))")
    else:
        L.append(f"{indent}row[{COL['crc_computed']}] = -1")
    for name in ("value_position", "value_length", "key_length", "flags"):
        L.append(f"{indent}row[{COL[name]}] = {0 if name == 'flags' else -1}")
    return L


def _walk_legacy(magic: int, indent: str) -> list[str]:
    """The branch of ``walk`` for one legacy magic: a message's prefix and body read into a batch-table row."""
    L = _walk_entry_checks(legacy.MIN_MESSAGE_SIZE[magic], indent)
    L += [indent + line for line in _gen_fixed_reads(legacy.PREFIX, "pos")]
    L += _gen_legacy_body(magic, indent)
    L += [
        f"{indent}row = out[k]",
        f"{indent}row[{COL['position']}] = pos",
        f"{indent}row[{COL['size_in_bytes']}] = end - pos",
        f"{indent}row[{COL['magic']}] = magic",
        f"{indent}codec = attributes & {record_batch.COMPRESSION_MASK}",
        # a wrapper's first offset and count are known only after decompressing it
        f"{indent}row[{COL['base_offset']}] = offset if codec == 0 else -1",
        f"{indent}row[{COL['last_offset']}] = offset",
        f"{indent}row[{COL['crc']}] = crc",
    ]
    if crc.HAVE_CRC32:
        start = legacy.CRC_START
        L.append(f"{indent}row[{COL['crc_computed']}] = np.int64(_crc32(np.uint64(0), base + pos + {start}, "
                 f"end - pos - {start}))")
    else:
        L.append(f"{indent}row[{COL['crc_computed']}] = -1")
    L.append(f"{indent}row[{COL['attributes']}] = attributes")
    body_names = {name for _, name, _ in legacy_body(magic)}
    L.append(f"{indent}row[{COL['max_timestamp']}] = {'timestamp' if 'timestamp' in body_names else -1}")
    for name in ("partition_leader_epoch", "base_timestamp", "producer_id", "producer_epoch", "base_sequence"):
        L.append(f"{indent}row[{COL[name]}] = -1")
    L += [
        f"{indent}row[{COL['records_count']}] = 1 if codec == 0 else -1",
        f"{indent}row[{COL['key_length']}] = key_length",
        # the value's bytes must lie inside the message, or the entry is malformed
        f"{indent}row[{COL['value_position']}] = value_position",
        f"{indent}if value_length >= 0 and value_position + value_length > end:",
        f"{indent}    row[{COL['value_length']}] = -2",
        f"{indent}else:",
        f"{indent}    row[{COL['value_length']}] = value_length",
        f"{indent}row[{COL['flags']}] = 0",
    ]
    return L


# ---------------------------------------------------------------- resync


def gen_resync() -> str:
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
    if crc.HAVE_CRC32C:
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
    if crc.HAVE_CRC32:
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


# ---------------------------------------------------------------- records


def _field(sub: Construct) -> FormatField | LimitedVarInt | NullableVarBytes | CountPrefixedArray:
    """The construct a struct field is declared with, if the kernels map it."""
    c = sub.subcon if isinstance(sub, Renamed) else sub
    if isinstance(c, (FormatField, LimitedVarInt, NullableVarBytes, CountPrefixedArray)):
        return c
    raise TypeError(f"no kernel mapping for {sub!r}")


def _varint_of(c: Construct) -> LimitedVarInt:
    """The varint a length or count field is declared with."""
    if not isinstance(c, LimitedVarInt):
        raise TypeError(f"no kernel mapping for a length or count field {c!r}")
    return c


def _gen_struct_body(struct: Struct, indent: str, lim: str, store: bool, depth: int) -> tuple[list[str], list[str]]:
    """Lines parsing ``struct`` at ``p`` (bounded by ``lim``); returns (lines, output columns)."""
    lines: list[str] = []
    cols: list[str] = []

    def varint(var: str, c: LimitedVarInt) -> None:
        lines.append(f"{indent}{var}, p, ok = _varint(buf, p, {lim}, {c.max_bytes}, {c.zigzag})")
        lines.append(f"{indent}if ok != 0:")
        lines.append(f"{indent}    return i, start, ok")

    for sub in struct.subcons:
        if not isinstance(sub, Renamed):
            raise TypeError(f"no kernel mapping for an unnamed field: {sub!r}")
        name = f"{sub.name}_{depth}" if not store else sub.name
        c = _field(sub)
        if isinstance(c, FormatField):
            size = c.length
            lines.append(f"{indent}if p + {size} > {lim}:")
            lines.append(f"{indent}    return i, start, {RS_TRUNCATED}")
            lines.append(f"{indent}{name} = {_reader_expr('buf', 'p', size, c.fmtstr[1].islower())}")
            lines.append(f"{indent}p += {size}")
            if store:
                cols.append(sub.name)
        elif isinstance(c, LimitedVarInt):
            varint(name, c)
            if store:
                cols.append(sub.name)
        elif isinstance(c, NullableVarBytes):
            varint(f"{name}_len", _varint_of(c.lengthfield))
            if isinstance(c, VarBytes):  # a header key: Kafka refuses a negative length; elsewhere it means null
                lines.append(f"{indent}if {name}_len < 0:")
                lines.append(f"{indent}    return i, start, {RS_NEGATIVE_LENGTH}")
            lines.append(f"{indent}{name}_pos = p")
            lines.append(f"{indent}if {name}_len > 0:")
            lines.append(f"{indent}    p += {name}_len")
            lines.append(f"{indent}if p > {lim}:")
            lines.append(f"{indent}    return i, start, {RS_TRUNCATED}")
            if store:
                cols += [f"{sub.name}_pos", f"{sub.name}_len"]
        else:  # a CountPrefixedArray
            varint(f"{name}_count", _varint_of(c.countfield))
            lines.append(f"{indent}if {name}_count < 0 or {name}_count > {lim} - p:")
            # each element takes at least one byte: a count beyond the bytes left is damage, not a loop
            lines.append(f"{indent}    return i, start, {RS_NEGATIVE_LENGTH}")
            lines.append(f"{indent}{name}_pos = p")
            lines.append(f"{indent}for _j{depth} in range({name}_count):")
            if not isinstance(c.subcon, Struct):
                raise TypeError(f"no kernel mapping for array elements {c.subcon!r}")
            inner, _ = _gen_struct_body(c.subcon, indent + "    ", lim, False, depth + 1)
            lines += inner
            if store:
                cols += [f"{sub.name}_pos", f"{sub.name}_count"]
    return lines, cols


def gen_records() -> tuple[str, tuple[str, ...]]:
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


def _header() -> str:
    """The comment block the generated source opens with: what it implements, from what, and its statuses."""
    crcs = (f"CRC-32C {'computed' if crc.HAVE_CRC32C else 'not computed (checked by the Python layer)'}, "
            f"CRC-32 {'computed' if crc.HAVE_CRC32 else 'not computed (checked by the Python layer)'}")
    return "\n".join([
        "# kforensics segment kernels: generated by kforensics.log.kernels.codegen, do not edit.",
        "#",
        "# What this implements: Kafka's reading of a log segment (FileLogInputStream framing v0/v1 messages and",
        "# v2 batches, DefaultRecordBatch's header and CRC, DefaultRecord's fields), as numba kernels generated from",
        "# the Construct declarations RecordBatchHeader, LegacyPrefix/LegacyMessage and Record",
        "# (kforensics/formats/record_batch.py, kforensics/formats/legacy.py): every offset, size and minimum below",
        "# is read off them.",
        "#   walk(buf, n, pos, out, k, cap) -> (k, pos, status)   frame entries from pos, one batch-table row each",
        f"#       status: {ST_NEED_MORE} need more bytes, {ST_SIZE_TOO_SMALL} size below the v0 minimum, "
        f"{ST_BAD_MAGIC} unknown magic, {ST_TOO_SMALL_FOR_MAGIC} size too small for its magic, {ST_FULL} table full",
        "#   resync(buf, n, pos, limit) -> (pos, status)   the next position where a whole entry with a matching CRC",
        f"#       starts; status: {RESYNC_FOUND} found (pos -1: none), {RESYNC_NEED_MORE} needs more bytes, "
        f"{RESYNC_UNCHECKED} CRC not computed",
        "#   records(buf, p, end, count, out) -> (decoded, pos, status)   a v2 batch's uncompressed records section",
        f"#       into a record table; status {RS_OK} ok, {RS_FULL} table full (call again), others: damage",
        "#   records_many(buf, starts, ends, counts, out, batch_out, status_out) -> (batches done, rows written)",
        "#   records_columns(buf, info, out, batch_out, abs_out, status_out) -> (batches done, rows written)",
        "#   records_plain(buf, bt, file_pos, held_end, rows_cap, room, out, batch_out, abs_out, status_out, j0)",
        "#       -> (next row, rows written, batches to report, stop, compressed batches held)",
        "#   inflate(src, info, dst, limit, zctx, lctx, sizes, out) -> (batches done, status)   lz4/zstd records",
        "#       sections decompressed one after another into dst by the codec libraries"
        + ("" if codecs.HAVE_INFLATE else " (a stub: the libraries were not found)"),
        f"# {crcs}.",
        "",
    ])


def source() -> tuple[str, tuple[str, ...]]:
    """The generated kernel source and the record table's columns."""
    rec_src, rec_cols = gen_records()
    src = (
        _header()
        + _PRELUDE
        + "\n\n_crc32c = None\n_crc32 = None\n"
        + "".join(f"{external_name(sym)} = None\n" for sym in codecs.FUNCTIONS)
        + "\n\n"
        + gen_walk()
        + "\n\n"
        + gen_resync()
        + "\n\n"
        + rec_src
        + "\n\n"
        + _RECORDS_MANY
        + "\n\n"
        + gen_records_columns(rec_cols)
        + "\n\n"
        + gen_records_plain(rec_cols, COL, record_batch.HEADER_SIZE, record_batch.MAGIC, record_batch.COMPRESSION_MASK,
                            record_batch.TIMESTAMP_TYPE_BIT, record_batch.MIN_RECORD_SIZE, RS_OK, RS_TOO_FEW)
        + "\n\n"
        + gen_inflate(codecs.HAVE_INFLATE)
    )
    return src, rec_cols


def external_name(symbol: str) -> str:
    """The global a native function is known by in the generated source (``kforensics_zstd_stream`` ->
    ``_zstd_stream``)."""
    return "_" + symbol.removeprefix("kforensics_")


def record_columns() -> tuple[str, ...]:
    """The record table's columns (no compilation needed)."""
    return gen_records()[1]
