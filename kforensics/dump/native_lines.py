"""The record lines of a dump (kafka-dump-log text or the dump's NDJSON) written by a small native library, a
chunk of records per call, with SHA-256 from the OpenSSL library Python's ``hashlib`` is linked with.

The library is one C function (:data:`SOURCE`) built once by the C compiler
driver into the kernel cache (:mod:`kforensics.log.kernels.cache`: never
evidence, never a directory others can write to), sealed with its SHA-256
and checked before it is loaded, as the decoding kernels are
(:mod:`kforensics.log.kernels.native`).  Without a compiler, or when the
build fails, :func:`library` is None and the renderers keep to pyarrow's
string kernels (:mod:`kforensics.cli.dump_columns`), which write the same
lines.

The function formats what the renderer's columns hold (one int64 row of
:data:`FIELDS` a record) and nothing else: a record with headers, or (with
``--print-data``) a key or value with a byte outside printable ASCII, is
left out and marked, and the caller writes that line with the per-record
path's own function.  So the native lines are the simple case only, the
case the column path and the per-record path agree on byte for byte.
``KFORENSICS_NATIVE_LINES=0`` turns the library off (to compare the two
renderings).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

import numpy as np

#: the columns of a record's line, in order
FIELDS = ("offset", "timestamp", "sequence", "size", "key_pos", "key_len", "value_pos", "value_len", "headers",
          "log_append", "batch_position")
#: the columns of a batch's line, in order (booleans as 0 or 1; codec: the attributes' compression id; previous:
#: the last offset of the entry before, shown where non_consecutive is 1)
BATCH_FIELDS = ("position", "size", "base_offset", "last_offset", "count", "crc", "valid", "codec", "log_append",
                "base_timestamp", "max_timestamp", "delete_horizon", "leader_epoch", "transactional", "producer_id",
                "producer_epoch", "base_sequence", "last_sequence", "non_consecutive", "previous_last")
#: mode bits
JSON, PRINT_DATA, SKIP_METADATA = 1, 2, 4
#: bytes a record's line takes at most besides its key and value (and the JSON head): every number at its
#: longest (20 characters), both digests, the fixed text
LINE_BOUND = 640

SOURCE = r"""
#include <stdint.h>
#include <stddef.h>
#include <string.h>

typedef int64_t i64;
typedef uint8_t u8;
typedef int (*sha_init_f)(void *);
typedef int (*sha_update_f)(void *, const void *, size_t);
typedef int (*sha_final_f)(unsigned char *, void *);

enum { C_OFFSET, C_TS, C_SEQ, C_SIZE, C_KPOS, C_KLEN, C_VPOS, C_VLEN, C_HEADERS, C_LOGAPPEND, C_BPOS, NCOL };
enum { M_JSON = 1, M_DATA = 2, M_SKIP = 4 };

#define LIT(o, s) (memcpy((o), (s), sizeof(s) - 1), (o) + sizeof(s) - 1)

static const char D2[] = "@D2@";

/* v in decimal, as Python's str(int) writes it (two digits a step) */
static u8 *dec(u8 *o, i64 v) {
    char t[24];
    int k = 24;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0) *o++ = '-';
    while (u >= 100) { unsigned r = (unsigned)(u % 100); u /= 100; k -= 2; memcpy(t + k, D2 + 2 * r, 2); }
    if (u >= 10) { k -= 2; memcpy(t + k, D2 + 2 * u, 2); } else t[--k] = (char)('0' + u);
    memcpy(o, t + k, (size_t)(24 - k));
    return o + 24 - k;
}

/* every byte printable ASCII (0x20..0x7e) */
static int plain(const u8 *p, i64 n) {
    for (i64 i = 0; i < n; i++) if (p[i] < 0x20 || p[i] > 0x7e) return 0;
    return 1;
}

static u8 *json_text(u8 *o, const u8 *p, i64 n) {
    for (i64 i = 0; i < n; i++) {
        u8 c = p[i];
        if (c == '"' || c == '\\') *o++ = '\\';
        *o++ = c;
    }
    return o;
}

static const char HEX[] = "0123456789abcdef";

static u8 *digest(u8 *o, const u8 *p, i64 n, void **sha) {
    union { unsigned char b[512]; uint64_t a; } ctx;
    unsigned char md[32];
    ((sha_init_f)sha[0])(ctx.b);
    ((sha_update_f)sha[1])(ctx.b, p, (size_t)n);
    ((sha_final_f)sha[2])(md, ctx.b);
    *o++ = '"';
    for (int i = 0; i < 32; i++) { *o++ = (u8)HEX[md[i] >> 4]; *o++ = (u8)HEX[md[i] & 15]; }
    *o++ = '"';
    return o;
}

static u8 *text_line(u8 *o, const i64 *r, const u8 *pay, i64 mode) {
    o = LIT(o, "| ");
    if (!(mode & M_SKIP)) {
        o = LIT(o, "offset: "); o = dec(o, r[C_OFFSET]);
        if (r[C_LOGAPPEND]) o = LIT(o, " LogAppendTime: "); else o = LIT(o, " CreateTime: ");
        o = dec(o, r[C_TS]);
        o = LIT(o, " keySize: "); o = dec(o, r[C_KLEN]);
        o = LIT(o, " valueSize: "); o = dec(o, r[C_VLEN]);
        o = LIT(o, " sequence: "); o = dec(o, r[C_SEQ]);
        o = LIT(o, " headerKeys: []");
        if (mode & M_DATA) *o++ = ' ';
    }
    if (mode & M_DATA) {
        if (r[C_KLEN] >= 0) {
            o = LIT(o, "key: ");
            memcpy(o, pay + r[C_KPOS], (size_t)r[C_KLEN]); o += r[C_KLEN];
            *o++ = ' ';
        }
        o = LIT(o, "payload: ");
        if (r[C_VLEN] >= 0) { memcpy(o, pay + r[C_VPOS], (size_t)r[C_VLEN]); o += r[C_VLEN]; }
        else o = LIT(o, "null");
    }
    *o++ = '\n';
    return o;
}

static u8 *json_line(u8 *o, const i64 *r, const u8 *pay, i64 mode, const u8 *head, i64 head_len, void **sha) {
    memcpy(o, head, (size_t)head_len); o += head_len;
    o = dec(o, r[C_BPOS]);
    o = LIT(o, ", \"offset\": "); o = dec(o, r[C_OFFSET]);
    o = LIT(o, ", \"timestamp\": "); o = dec(o, r[C_TS]);
    o = LIT(o, ", \"sequence\": "); o = dec(o, r[C_SEQ]);
    o = LIT(o, ", \"size_in_bytes\": "); o = dec(o, r[C_SIZE]);
    o = LIT(o, ", \"key_size\": "); o = dec(o, r[C_KLEN]);
    o = LIT(o, ", \"value_size\": "); o = dec(o, r[C_VLEN]);
    o = LIT(o, ", \"key_sha256\": ");
    if (r[C_KLEN] >= 0) o = digest(o, pay + r[C_KPOS], r[C_KLEN], sha); else o = LIT(o, "null");
    o = LIT(o, ", \"value_sha256\": ");
    if (r[C_VLEN] >= 0) o = digest(o, pay + r[C_VPOS], r[C_VLEN], sha); else o = LIT(o, "null");
    o = LIT(o, ", \"headers\": [], \"crc\": null, \"is_valid\": null, \"control\": null");
    if (mode & M_DATA) {
        o = LIT(o, ", \"key\": ");
        if (r[C_KLEN] >= 0) {
            o = LIT(o, "{\"encoding\": \"utf-8\", \"data\": \"");
            o = json_text(o, pay + r[C_KPOS], r[C_KLEN]);
            o = LIT(o, "\"}");
        } else o = LIT(o, "null");
        o = LIT(o, ", \"value\": ");
        if (r[C_VLEN] >= 0) {
            o = LIT(o, "{\"encoding\": \"utf-8\", \"data\": \"");
            o = json_text(o, pay + r[C_VPOS], r[C_VLEN]);
            o = LIT(o, "\"}");
        } else o = LIT(o, "null");
    }
    *o++ = '}';
    *o++ = '\n';
    return o;
}

enum { B_POS, B_SIZE, B_BASE, B_LAST, B_COUNT, B_CRC, B_VALID, B_CODEC, B_LOGAPPEND, B_BASETS, B_MAXTS, B_DH,
       B_EPOCH, B_TXN, B_PID, B_PEPOCH, B_BSEQ, B_LSEQ, B_NC, B_PREV, NBCOL };
static const char *const CODEC[] = {"none", "gzip", "snappy", "lz4", "zstd"};

static u8 *word(u8 *o, const char *s) { size_t n = strlen(s); memcpy(o, s, n); return o + n; }

static u8 *text_batch(u8 *o, const i64 *v) {
    o = LIT(o, "baseOffset: "); o = dec(o, v[B_BASE]);
    o = LIT(o, " lastOffset: "); o = dec(o, v[B_LAST]);
    o = LIT(o, " count: "); o = dec(o, v[B_COUNT]);
    o = LIT(o, " baseSequence: "); o = dec(o, v[B_BSEQ]);
    o = LIT(o, " lastSequence: "); o = dec(o, v[B_LSEQ]);
    o = LIT(o, " producerId: "); o = dec(o, v[B_PID]);
    o = LIT(o, " producerEpoch: "); o = dec(o, v[B_PEPOCH]);
    o = LIT(o, " partitionLeaderEpoch: "); o = dec(o, v[B_EPOCH]);
    o = LIT(o, " isTransactional: "); o = word(o, v[B_TXN] ? "true" : "false");
    o = LIT(o, " isControl: false deleteHorizonMs: ");
    if (v[B_DH]) { o = LIT(o, "OptionalLong["); o = dec(o, v[B_BASETS]); *o++ = ']'; }
    else o = LIT(o, "OptionalLong.empty");
    o = LIT(o, " position: "); o = dec(o, v[B_POS]);
    o = word(o, v[B_LOGAPPEND] ? " LogAppendTime: " : " CreateTime: "); o = dec(o, v[B_MAXTS]);
    o = LIT(o, " size: "); o = dec(o, v[B_SIZE]);
    o = LIT(o, " magic: 2 compresscodec: "); o = word(o, CODEC[v[B_CODEC]]);
    o = LIT(o, " crc: "); o = dec(o, v[B_CRC]);
    o = LIT(o, " isvalid: "); o = word(o, v[B_VALID] ? "true" : "false");
    *o++ = '\n';
    return o;
}

static u8 *json_batch(u8 *o, const i64 *v, const u8 *file, i64 file_len) {
    o = LIT(o, "{\"kind\": \"batch\", \"file\": ");
    memcpy(o, file, (size_t)file_len); o += file_len;
    o = LIT(o, ", \"position\": "); o = dec(o, v[B_POS]);
    o = LIT(o, ", \"size_in_bytes\": "); o = dec(o, v[B_SIZE]);
    o = LIT(o, ", \"magic\": 2, \"base_offset\": "); o = dec(o, v[B_BASE]);
    o = LIT(o, ", \"last_offset\": "); o = dec(o, v[B_LAST]);
    o = LIT(o, ", \"next_offset\": "); o = dec(o, v[B_LAST] + 1);
    o = LIT(o, ", \"count\": "); o = dec(o, v[B_COUNT]);
    o = LIT(o, ", \"crc\": "); o = dec(o, v[B_CRC]);
    o = LIT(o, ", \"is_valid\": "); o = word(o, v[B_VALID] ? "true" : "false");
    o = LIT(o, ", \"compression\": \""); o = word(o, CODEC[v[B_CODEC]]);
    o = word(o, v[B_LOGAPPEND] ? "\", \"timestamp_type\": \"LogAppendTime" : "\", \"timestamp_type\": \"CreateTime");
    o = LIT(o, "\", \"base_timestamp\": "); o = dec(o, v[B_BASETS]);
    o = LIT(o, ", \"max_timestamp\": "); o = dec(o, v[B_MAXTS]);
    o = LIT(o, ", \"delete_horizon_ms\": ");
    if (v[B_DH]) o = dec(o, v[B_BASETS]); else o = LIT(o, "null");
    o = LIT(o, ", \"partition_leader_epoch\": "); o = dec(o, v[B_EPOCH]);
    o = LIT(o, ", \"is_transactional\": "); o = word(o, v[B_TXN] ? "true" : "false");
    o = LIT(o, ", \"is_control\": false, \"producer_id\": "); o = dec(o, v[B_PID]);
    o = LIT(o, ", \"producer_epoch\": "); o = dec(o, v[B_PEPOCH]);
    o = LIT(o, ", \"base_sequence\": "); o = dec(o, v[B_BSEQ]);
    o = LIT(o, ", \"last_sequence\": "); o = dec(o, v[B_LSEQ]);
    o = LIT(o, ", \"record_count\": "); o = dec(o, v[B_COUNT]);
    o = LIT(o, ", \"recovered\": false, \"non_consecutive\": "); o = word(o, v[B_NC] ? "true" : "false");
    o = LIT(o, ", \"previous_last_offset\": ");
    if (v[B_NC]) o = dec(o, v[B_PREV]); else o = LIT(o, "null");
    *o++ = '}';
    *o++ = '\n';
    return o;
}

/* The lines of nb batches (NBCOL columns, as kf_record_lines takes its columns) into out, offs[j] where line j
   starts (and offs[nb] the end).  Returns the bytes written; -1 when cap would be passed, -2 for a codec that is
   not one of the five. */
i64 kf_batch_lines(const i64 *const *cols, const i64 *strides, i64 nb, i64 mode, const u8 *file, i64 file_len,
                   u8 *out, i64 cap, i64 *offs) {
    u8 *o = out;
    i64 v[NBCOL];
    for (i64 j = 0; j < nb; j++) {
        for (int k = 0; k < NBCOL; k++) v[k] = cols[k][j * strides[k]];
        if (v[B_CODEC] < 0 || v[B_CODEC] > 4) return -2;
        if (out + cap - o < 1024 + file_len) return -1;
        offs[j] = o - out;
        o = (mode & M_JSON) ? json_batch(o, v, file, file_len) : text_batch(o, v);
    }
    offs[nb] = o - out;
    return o - out;
}

/* The lines of n records (NCOL columns of int64, each with its stride in elements: 0 for one value for all)
   and, before each batch's first record, its line (blines, boffs: the batch lines' bytes and nb+1 offsets;
   first: each batch's first record).  A record with headers, or with a key or value not of printable ASCII
   when its data are printed, is not written: slow[i] is set, and at[i] is where its line belongs.  Returns the
   bytes written; -1 when cap would be passed, -2 when a key or value lies outside the payload. */
i64 kf_record_lines(const i64 *const *cols, const i64 *strides, i64 n, const u8 *pay, i64 pay_len, i64 mode,
                    const u8 *head, i64 head_len, const u8 *blines, const i64 *boffs, const i64 *first, i64 nb,
                    u8 *out, i64 cap, i64 *at, u8 *slow, void **sha) {
    u8 *o = out, *end = out + cap;
    i64 j = 0;
    i64 r[NCOL];
    for (i64 i = 0; i < n; i++) {
        for (int k = 0; k < NCOL; k++) r[k] = cols[k][i * strides[k]];
        while (j < nb && first[j] <= i) {
            i64 len = boffs[j + 1] - boffs[j];
            if (end - o < len) return -1;
            memcpy(o, blines + boffs[j], (size_t)len); o += len; j++;
        }
        at[i] = o - out;
        i64 kl = r[C_KLEN] > 0 ? r[C_KLEN] : 0, vl = r[C_VLEN] > 0 ? r[C_VLEN] : 0;
        if ((kl && (r[C_KPOS] < 0 || r[C_KPOS] > pay_len - kl)) || (vl && (r[C_VPOS] < 0 || r[C_VPOS] > pay_len - vl)))
            return -2;
        int s = r[C_HEADERS] != 0;
        if (!s && (mode & M_DATA)) s = !plain(pay + r[C_KPOS], kl) || !plain(pay + r[C_VPOS], vl);
        slow[i] = (u8)s;
        if (s) continue;
        if (end - o < 640 + head_len + 2 * (kl + vl)) return -1;
        o = (mode & M_JSON) ? json_line(o, r, pay, mode, head, head_len, sha) : text_line(o, r, pay, mode);
    }
    while (j < nb) {
        i64 len = boffs[j + 1] - boffs[j];
        if (end - o < len) return -1;
        memcpy(o, blines + boffs[j], (size_t)len); o += len; j++;
    }
    return o - out;
}
""".replace("@D2@", "".join(f"{i:02d}" for i in range(100)))

#: bumped when the function's signature changes (with the source's digest it names the library)
ABI = 3

_LOCK = threading.Lock()
_LOADED: list[Library | None] = []  # [] until tried; then the library or None (not available in this process)


@dataclass
class Library:
    """The loaded function and the SHA-256 functions it calls."""

    fn: ctypes._CFuncPtr  # type: ignore[name-defined]  # ctypes' function type, private in typeshed
    batch: ctypes._CFuncPtr  # type: ignore[name-defined]
    sha: ctypes.Array[ctypes.c_void_p]
    path: str


def library() -> Library | None:
    """The native record-line function (built into the kernel cache on first use), or None when it is not to be
    had here (no compiler, no OpenSSL, no cache directory, a failed build: said once on stderr)."""
    with _LOCK:
        if not _LOADED:
            try:
                _LOADED.append(_load())
            except Exception as e:  # noqa: BLE001 - whatever keeps the library from us, the lines are pyarrow's
                from ..log.kernels import cache

                cache.warn(f"native record lines not used ({type(e).__name__}: {e}); lines formatted by pyarrow")
                _LOADED.append(None)
        return _LOADED[0]


def _name() -> str:
    key = f"{SOURCE}/{ABI}/{sys.platform}/{os.uname().machine}"
    return f"_kf_lines_{hashlib.sha256(key.encode()).hexdigest()[:16]}.so"


def _sha_functions() -> ctypes.Array[ctypes.c_void_p] | None:
    """SHA256_Init, _Update and _Final of the libcrypto ``hashlib`` is linked with (None: not found)."""
    import _hashlib  # noqa: F401  # maps the very libcrypto hashlib uses

    path = None
    try:
        with open("/proc/self/maps") as fh:
            path = next((line.split()[-1] for line in fh if "libcrypto" in line and line.rstrip().endswith(
                tuple(f".so.{v}" for v in range(1, 10)) + (".so",))), None)
    except OSError:
        pass
    if path is None:
        from ctypes.util import find_library

        path = find_library("crypto")
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        fns = [ctypes.cast(getattr(lib, n), ctypes.c_void_p).value for n in ("SHA256_Init", "SHA256_Update",
                                                                                   "SHA256_Final")]
    except (OSError, AttributeError):
        return None
    return (ctypes.c_void_p * 3)(*fns)


def _load() -> Library | None:
    from ..log.kernels import cache, native

    if os.environ.get("KFORENSICS_NATIVE_LINES", "1") == "0":  # for comparing the two renderings
        return None
    sha = _sha_functions()
    root = cache.root()
    if sha is None or root is None:
        return None
    path = os.path.join(root, _name())
    lib = _open(path)
    if lib is None:
        cc = native.compiler()
        if cc is None:
            return None
        _build(cc, path)
        lib = _open(path)
    if lib is None:
        return None
    fn = lib.kf_record_lines
    fn.restype = ctypes.c_int64
    fn.argtypes = ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                    ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.c_void_p])
    batch = lib.kf_batch_lines
    batch.restype = ctypes.c_int64
    batch.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_char_p,
                      ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    return Library(fn, batch, sha, path)


def _open(path: str) -> ctypes.CDLL | None:
    """The sealed library at ``path`` (None: none there, not ours to load, or cut short: then removed, to be built
    again); raises ``Damaged`` when it does not load."""
    from ..log.kernels import native

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        if not native._trusted(path, st):
            return None
        with os.fdopen(os.dup(fd), "rb") as fh:
            problem = native.unsealed(fh.read(1 << 24))
        if problem is not None:
            os.unlink(path)  # ours, in our cache (a partial copy, a crash while writing): built again
            return None
        return native._dlopen(fd, path)  # the very file checked (kept open while mapped)
    finally:
        if fd not in native._MAPPED:
            os.close(fd)


def _build(cc: list[str], path: str) -> None:
    """Compile :data:`SOURCE`, seal it and move it into place at ``path`` in one rename."""
    from ..log.kernels import native

    folder = os.path.dirname(path)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".kf-lines-") as tmp:
        src, so = os.path.join(tmp, "lines.c"), os.path.join(tmp, "lines.so")
        with open(src, "w") as fh:
            fh.write(SOURCE)
        done = subprocess.run([*cc, "-O2", "-fPIC", "-shared", "-o", so, src], capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"compiling failed: {done.stderr.strip()[-300:]}")
        with open(so, "rb") as fh:
            sealed = native.seal(fh.read())
        out = os.path.join(tmp, "lines.sealed")
        with open(out, "wb") as fh:
            fh.write(sealed)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(out, 0o644)
        os.replace(out, path)


@dataclass
class Lines:
    """What one call wrote: ``data[:size]``, and the records it left to the caller (``slow``) with where each
    one's line goes (``at``, a position in ``data``)."""

    data: np.ndarray
    size: int
    at: np.ndarray
    slow: np.ndarray

    def pieces(self, slow_line: object, encoding: str = "utf-8", errors: str = "strict") -> list[bytes | memoryview]:
        """The lines as byte strings in order, the slow records' lines (``slow_line(i)``, a str with its newline)
        put in their places."""
        view = memoryview(self.data)  # type: ignore[arg-type]  # numpy arrays export the buffer protocol
        rows = np.flatnonzero(self.slow).tolist()
        if not rows:
            return [view[: self.size]]
        out: list[bytes | memoryview] = []
        prev = 0
        at = self.at[rows].tolist()
        for i, p in zip(rows, at):
            out.append(view[prev:p])
            out.append(slow_line(i).encode(encoding, errors))  # type: ignore[operator]
            prev = p
        out.append(view[prev : self.size])
        return out


_BUFFER: list[np.ndarray] = []  # the output buffer, kept between calls (its pages stay mapped)


def _buffer(cap: int) -> np.ndarray:
    """A buffer of at least ``cap`` bytes: the one of the call before when it is large enough."""
    if not _BUFFER or len(_BUFFER[0]) < cap:
        _BUFFER[:] = [np.empty(max(cap, 1 << 20), dtype=np.uint8)]
    return _BUFFER[0]


def record_lines(lib: Library, columns: list[np.ndarray | int], n: int, payload: bytes | bytearray, mode: int,
                 head: bytes = b"", batch_lines: tuple[bytes | memoryview | np.ndarray, np.ndarray] | None = None,
                 first: np.ndarray | None = None) -> Lines:
    """The lines of ``n`` records, given as the columns :data:`FIELDS` (int64 vectors of ``n``, any stride, or
    one int for every record), keys and values in ``payload``; ``head``: a JSON line's start up to its batch
    position; ``batch_lines``: the bytes of batch lines and their ``len + 1`` offsets, each written before the
    record ``first[j]`` (or at the end).

    The lines are written into one buffer kept for the next call (a fresh one a chunk costs a page fault every
    4 KiB): write them out, or copy them, before calling again."""
    cols, pointers, strides = _columns(columns, n)
    pay = np.frombuffer(payload, dtype=np.uint8) if len(payload) else np.zeros(1, dtype=np.uint8)
    lens = sum(int(np.maximum(cols[k], 0).sum()) * (n if len(cols[k]) == 1 else 1) for k in (5, 7)) if n else 0
    if batch_lines is not None and first is not None:
        bdata = np.frombuffer(batch_lines[0], dtype=np.uint8) if len(batch_lines[0]) else np.zeros(1, np.uint8)
        boffs = np.ascontiguousarray(batch_lines[1], dtype=np.int64)
        firsts = np.ascontiguousarray(first, dtype=np.int64)
        nb = len(boffs) - 1
        extra = int(boffs[-1] - boffs[0])
    else:
        bdata, boffs, firsts, nb, extra = np.zeros(1, np.uint8), np.zeros(1, np.int64), np.zeros(1, np.int64), 0, 0
    cap = n * (LINE_BOUND + len(head)) + 2 * lens + extra + 1
    out = _buffer(cap)
    at = np.empty(max(n, 1), dtype=np.int64)
    slow = np.empty(max(n, 1), dtype=np.uint8)
    size = lib.fn(pointers, strides.ctypes.data, n, pay.ctypes.data, len(payload), mode, head, len(head),
                  bdata.ctypes.data, boffs.ctypes.data, firsts.ctypes.data, nb, out.ctypes.data, cap, at.ctypes.data,
                  slow.ctypes.data, lib.sha)
    if size < 0:  # never for rows the decoder gave and the bound above; said, not guessed
        raise ValueError(f"native record lines failed ({size})")
    return Lines(out, int(size), at[:n], slow[:n])


def batch_lines(lib: Library, columns: list[np.ndarray | int], nb: int, mode: int, file_json: bytes = b""
                ) -> tuple[np.ndarray, np.ndarray]:
    """The lines of ``nb`` batches, given as the columns :data:`BATCH_FIELDS` (as :func:`record_lines` takes
    them); ``file_json``: the file's name as JSON text.  Returns their bytes and ``nb + 1`` offsets."""
    cols, pointers, strides = _columns(columns, nb)
    cap = nb * (1024 + len(file_json)) + 1
    out = np.empty(cap, dtype=np.uint8)
    offs = np.empty(nb + 1, dtype=np.int64)
    size = lib.batch(pointers, strides.ctypes.data, nb, mode, file_json, len(file_json), out.ctypes.data, cap,
                     offs.ctypes.data)
    if size < 0:  # never for the batches a run takes; said, not guessed
        raise ValueError(f"native batch lines failed ({size})")
    return out[:size], offs


def _columns(columns: list[np.ndarray | int], n: int
             ) -> tuple[list[np.ndarray], ctypes.Array[ctypes.c_void_p], np.ndarray]:
    """The columns as int64 vectors, their addresses and their strides in elements (0: one value for all)."""
    cols = [_column(c, n) for c in columns]
    pointers = (ctypes.c_void_p * len(cols))(*[c.ctypes.data for c in cols])
    strides = np.array([c.strides[0] // 8 if len(c) == n and n > 1 else 0 for c in cols], dtype=np.int64)
    return cols, pointers, strides


def _column(c: np.ndarray | int, n: int) -> np.ndarray:
    """A column as an int64 vector whose stride is whole elements (one element: the value of every record)."""
    a = np.asarray(c, dtype=np.int64).reshape(-1)
    if len(a) not in (1, n):
        raise ValueError(f"a column of {len(a)} values for {n} records")
    return a if a.strides[0] % 8 == 0 and a.strides[0] >= 0 else np.ascontiguousarray(a)
