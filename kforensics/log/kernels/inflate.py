"""The source of ``inflate``: the records sections of many lz4/zstd batches decompressed in one compiled call.

Each batch is decompressed by its library's one-shot entry point
(:mod:`.codecs`) into one reused output buffer, one payload after another,
so a chunk of small compressed batches costs one call from Python, not one
per batch.  Only what one library call settles is taken here, the rule of
:meth:`kforensics.formats.compression.Decompressor.one_call`: one whole zstd
frame and nothing after it (``ZSTD_decompressStream``, as ``zstandard``'s
decompression object runs it, with the same default limits), an LZ4 frame
that ends within the space (bytes after the frame are ignored, as
``decompress`` ignores them).  Any other
batch (damage, a payload larger than the space, another codec) stops the
call at that batch and the caller decompresses it the long way, which gives
the findings; so the answers are always those of
:func:`kforensics.formats.compression.decompress`.  No batch ever writes past
the buffer nor past the decompression cap: the output space handed to the
library is the smaller of the two.
"""

from __future__ import annotations

#: columns of ``inflate``'s per-batch input, in order (codec id, records section's start and end in ``src``)
INFLATE_INFO = ("codec", "start", "end")
#: ``inflate``'s statuses: every batch done; the buffer is full before batch ``done`` (call again with it empty);
#: batch ``done`` is not settled by one library call here (the caller decompresses it)
INFLATE_DONE, INFLATE_FULL, INFLATE_FALLBACK = 0, 1, 2
#: the LZ4 frame magic, little-endian bytes (LZ4 frame format, 3.1)
_LZ4_MAGIC = (0x04, 0x22, 0x4D, 0x18)
_CODEC_LZ4, _CODEC_ZSTD = 3, 4
_ZSTD_RESET_SESSION = 1  # ZSTD_reset_session_only


def gen_inflate(native: bool) -> str:
    """Source of ``inflate(src, info, dst, limit, zctx, lctx, sizes, out) -> (batches done, status)``.

    ``info`` rows are :data:`INFLATE_INFO`; ``out`` gets each done batch's
    payload start and end in ``dst``; ``sizes`` is six int64s of scratch
    (LZ4F's in/out sizes, zstd's output and input buffer structs);
    ``zctx``/``lctx`` are the contexts' addresses.
    Without the native libraries (``native`` False) it settles nothing: every
    batch is left to the caller.
    """
    if not native:
        return "\n".join([
            "def inflate(src, info, dst, limit, zctx, lctx, sizes, out):",
            "    # the codec libraries were not found: every batch is decompressed by the caller",
            f"    return 0, {INFLATE_FALLBACK}",
        ]) + "\n"
    m0, m1, m2, m3 = _LZ4_MAGIC
    return _NATIVE_SOURCE.format(INFLATE_DONE=INFLATE_DONE, INFLATE_FULL=INFLATE_FULL,
                                 INFLATE_FALLBACK=INFLATE_FALLBACK, _CODEC_LZ4=_CODEC_LZ4, _CODEC_ZSTD=_CODEC_ZSTD,
                                 _ZSTD_RESET_SESSION=_ZSTD_RESET_SESSION, m0=m0, m1=m1, m2=m2, m3=m3)


#: ``inflate`` with the codec libraries (str.format fields: the statuses, codec ids, the LZ4 magic bytes)
_NATIVE_SOURCE = """
@njit(inline="always", cache=True)
def _inflate_zstd(s, e, sbase, dbase, room, zctx, sizes):
    # one zstd frame from src[s:e] into room bytes at dbase: (bytes out, whether the frame ended with the input)
    sz = sizes.ctypes.data
    _zstd_reset(zctx, np.uint32({_ZSTD_RESET_SESSION}))
    # ZSTD_outBuffer {{dst, size, pos}}, then ZSTD_inBuffer {{src, size, pos}}
    sizes[0] = dbase
    sizes[1] = room
    sizes[2] = 0
    sizes[3] = sbase + s
    sizes[4] = e - s
    sizes[5] = 0
    while True:
        out_before = sizes[2]
        in_before = sizes[5]
        r = _zstd_stream(zctx, sz, sz + 24)
        if _zstd_is_error(r) != 0:
            return 0, False
        if r == 0:
            # the frame ended: settled only when nothing follows it (a second frame goes the long way)
            return sizes[2], sizes[5] == sizes[4]
        if sizes[5] >= sizes[4] or sizes[2] >= sizes[1] or (sizes[2] == out_before and sizes[5] == in_before):
            return 0, False


@njit(inline="always", cache=True)
def _inflate_lz4(src, s, e, sbase, dbase, room, lctx, sizes):
    # one LZ4 frame from src[s:e] into room bytes at dbase: (bytes out, whether the frame ended); the context is
    # reset when it did not (it is mid-frame or in error)
    sz = sizes.ctypes.data
    got = 0
    p = s
    while True:
        sizes[0] = room - got
        sizes[1] = e - p
        r = _lz4f_decompress(lctx, dbase + got, sz, sbase + p, sz + 8, 0)
        if _lz4f_is_error(r) != 0:
            break
        got += sizes[0]
        p += sizes[1]
        if r == 0:
            return got, True
        if (sizes[0] == 0 and sizes[1] == 0) or p >= e or got >= room:
            break
    _lz4f_reset(lctx)
    return got, False


def inflate(src, info, dst, limit, zctx, lctx, sizes, out):
    # returns (batches done, status): {INFLATE_DONE} all done, {INFLATE_FULL} dst full before batch done,
    # {INFLATE_FALLBACK} batch done left to the caller
    sbase = src.ctypes.data
    dbase = dst.ctypes.data
    total = dst.shape[0]
    d = 0
    for b in range(info.shape[0]):
        codec = info[b, 0]
        s = info[b, 1]
        e = info[b, 2]
        room = min(total - d, limit)
        if codec == {_CODEC_ZSTD}:
            got, ok = _inflate_zstd(s, e, sbase, dbase + d, room, zctx, sizes)
        elif (codec == {_CODEC_LZ4} and e - s >= 7 and src[s] == {m0} and src[s + 1] == {m1} and src[s + 2] == {m2}
              and src[s + 3] == {m3}):
            got, ok = _inflate_lz4(src, s, e, sbase, dbase + d, room, lctx, sizes)
        else:
            return b, {INFLATE_FALLBACK}
        if not ok:
            # no room left after the payloads before it: again with the buffer empty; else the long way
            return b, {INFLATE_FULL} if d > 0 else {INFLATE_FALLBACK}
        out[b, 0] = d
        out[b, 1] = d + got
        d += got
    return info.shape[0], {INFLATE_DONE}
"""
