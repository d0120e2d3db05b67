"""The compiled kernels as a native shared library, loaded without numba: built, sealed, verified, loaded.

numba compiles the generated kernels (:mod:`.numba_kernels`), but importing
numba and readying its dispatchers costs more than half a second at every
start, longer than a scan of hundreds of MiB takes.  So, once the kernels are
compiled, their machine code is also written out as a small shared library in
the kernel cache (:mod:`.cache`): numba's own compiled functions, linked with
entry points that take plain pointers, sizes and strides.  Later runs load
that library with ctypes in about a millisecond and never import numba.

It is the same code numba runs, not a second implementation: the entry
points build numba's array structures from their arguments and call the
functions numba compiled from the generated source.  Arguments the entry
points do not take (another dtype, a non-contiguous input) go to the numba
kernels instead, so every call gives what the numba kernels give.  A ctypes
call releases the GIL, as ``nogil`` kernels do.

A library is *sealed* when it is built: the SHA-256 of its bytes is appended
to the file (after the ELF's last section, where the loader never looks) and
the whole is moved into place with one atomic rename, so the library and its
digest can never disagree by a race between two writers.  Before ``dlopen``
the file is opened once, its owner and mode checked, its bytes hashed and
compared with the seal, and that very open file is what is loaded
(``/proc/self/fd``): a library cut short (power loss, a partial copy of a
shared cache) or replaced by another file is refused as :class:`Damaged`
before it is mapped, so it can never kill the process with SIGBUS.

Linking needs a C compiler driver (``cc``); without one, or when anything in
the build fails, the reason is recorded beside the library (a ``.failed``
marker, which expires after a day or when the compiler, numba or llvmlite
changes) and the numba kernels are used meanwhile.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import KforensicsError
from . import codecs
from .kernel_set import Kernels

if TYPE_CHECKING:
    from .crc import CrcFunction

    #: the CRC-32C and CRC-32 functions the kernels call (None: one the kernels were generated without)
    Crcs = tuple[CrcFunction | None, CrcFunction | None]

#: bumped whenever the entry points' C signatures or the library's file format change, so an older library is never
#: loaded (2: sealed with its SHA-256)
ABI = 4  # 3: inflate, and the codec libraries' functions called through pointers; 4: records_plain

# argument kinds of the entry points: how a Python argument becomes C arguments
BYTES = "bytes"  # a uint8 buffer read by the kernel: pointer, length (made contiguous if it is not: the kernels
# load multi-byte fields straight from memory, so they read a buffer's bytes as laid out one after another)
INT = "int"  # an int64
IVEC = "ivec"  # an int64 vector read by the kernel: pointer, length (made contiguous if it is not)
OVEC = "ovec"  # an int64 vector the kernel writes: pointer, length (must be contiguous)
TABLE = "table"  # an int64 matrix the kernel writes, any strides: pointer, rows, columns, byte strides

#: the C arguments each kind becomes, in order (the one description the ctypes prototypes and the entry points'
#: LLVM signatures are both made from); every entry point takes a pointer to its int64 results last
C_ARGS = {INT: ("int",), BYTES: ("ptr", "int"), IVEC: ("ptr", "int"), OVEC: ("ptr", "int"),
          TABLE: ("ptr", "int", "int", "int", "int")}

#: kernel -> (attribute of ``Kernels``, argument kinds, number of results)
ENTRY_POINTS = {
    "walk": ("walk", (BYTES, INT, INT, TABLE, INT, INT), 3),
    "resync": ("resync", (BYTES, INT, INT, INT), 2),
    "records": ("decode_records", (BYTES, INT, INT, INT, TABLE), 3),
    "records_many": ("decode_records_many", (BYTES, IVEC, IVEC, IVEC, TABLE, OVEC, OVEC), 2),
    "records_columns": ("decode_records_columns", (BYTES, TABLE, TABLE, OVEC, TABLE, TABLE), 2),
    # dst is written: a contiguous uint8 array is passed as it is, never copied
    "inflate": ("inflate", (BYTES, TABLE, BYTES, INT, INT, INT, OVEC, TABLE), 2),
    "records_plain": ("records_plain", (BYTES, TABLE, INT, INT, INT, INT, TABLE, OVEC, TABLE, TABLE, INT), 5),
}

_CRC_POINTERS = ("kforensics_crc32c_ptr", "kforensics_crc32_ptr")


def library_name(kernel_digest: str) -> str:
    """File name of the library for these kernels on this platform, numba and llvmlite."""
    key = f"{kernel_digest}/{ABI}/{sys.platform}/{platform.machine()}/{_tools()}"
    return f"_kf_native_{hashlib.sha256(key.encode()).hexdigest()[:16]}.so"


def _tools() -> str:
    """The numba and llvmlite versions the library is built with (a library is only loaded by the same)."""
    from importlib.metadata import version

    try:
        return f"{version('numba')}/{version('llvmlite')}"
    except Exception:  # metadata missing: a key that never matches a later build
        return "unknown"


# ---------------------------------------------------------------- the seal

#: what precedes the digest at the end of a sealed library
SEAL = b"\0kforensics-native-sha256\0"
_SEAL_LEN = len(SEAL) + 32
#: a library is a few hundred KiB; anything far larger is not one of ours (and is not read whole)
_MAX_LIBRARY = 64 << 20


def seal(library: bytes) -> bytes:
    """The library's bytes followed by the seal: a marker and their SHA-256."""
    return library + SEAL + hashlib.sha256(library).digest()


def unsealed(data: bytes) -> str | None:
    """Why ``data`` is not a whole sealed library, or None when its digest matches."""
    if len(data) < _SEAL_LEN or data[-_SEAL_LEN:-32] != SEAL:
        return f"no SHA-256 seal at its end ({len(data)} bytes: cut short, or another file)"
    if hashlib.sha256(data[:-_SEAL_LEN]).digest() != data[-32:]:
        return "its SHA-256 does not match the one recorded when it was built"
    return None


class Damaged(KforensicsError):
    """A library at the expected path that must not be loaded: cut, replaced, or not a library of ours.

    Never leaves the kernels package: the library is rebuilt, or numba's kernels are used.
    """


# ---------------------------------------------------------------- loading


def _trusted(path: str, st: os.stat_result) -> bool:
    # a library runs as our code: only one that we own, in a directory only we can write to
    try:
        dst = os.stat(os.path.dirname(path))
    except OSError:
        return False
    uid = os.getuid()
    return st.st_uid == uid and dst.st_uid == uid and not (dst.st_mode & 0o022) and not (st.st_mode & 0o022)


def load(path: str, record_columns: tuple[str, ...], crcs: Crcs, fallback: Callable[[], Kernels]) -> Kernels | None:
    """The kernels in the library at ``path``, or None when there is none or it is not ours to load.

    Raises :class:`Damaged` when a file is there but is not a whole library
    of these kernels (checked before it is mapped).  ``crcs`` are the ctypes
    CRC-32C and CRC-32 functions the kernels call (None for one the kernels
    were generated without); ``fallback`` returns the numba kernels, for
    arguments the entry points do not take.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as e:
        if os.path.islink(path):
            return None  # never followed: a link may point anywhere
        raise Damaged(f"it cannot be opened ({e.strerror or e})") from None
    try:
        st = os.fstat(fd)
        if not _trusted(path, st):
            return None
        if st.st_size > _MAX_LIBRARY:
            raise Damaged(f"it is {st.st_size} bytes, not a kernel library")
        with os.fdopen(os.dup(fd), "rb") as fh:
            problem = unsealed(fh.read(_MAX_LIBRARY + 1))
        if problem is not None:
            raise Damaged(problem)
        lib = _dlopen(fd, path)
    finally:
        if fd not in _MAPPED:
            os.close(fd)
    try:
        return _bind(lib, path, record_columns, crcs, fallback)
    except (AttributeError, ValueError) as e:  # a symbol missing: not a library of these kernels
        raise Damaged(f"it lacks an entry point of these kernels ({e})") from None


#: descriptors of the libraries loaded through ``/proc/self/fd``, kept open for the life of the process: the loader
#: knows a library by the name it was opened with, so that name must never come to mean another file
_MAPPED: set[int] = set()


def _dlopen(fd: int, path: str) -> ctypes.CDLL:
    """Load the library open at ``fd`` (the very file just checked, whatever is renamed onto ``path`` meanwhile)."""
    proc = f"/proc/self/fd/{fd}"
    try:
        if os.path.exists(proc):
            lib = ctypes.CDLL(proc)
            _MAPPED.add(fd)
            return lib
        return ctypes.CDLL(path)
    except OSError as e:
        raise Damaged(f"it does not load ({e})") from None


def _bind(lib: ctypes.CDLL, path: str, record_columns: tuple[str, ...], crcs: Crcs,
          fallback: Callable[[], Kernels]) -> Kernels:
    for name, fn in zip(_CRC_POINTERS, crcs):
        if fn is not None:
            ctypes.c_void_p.in_dll(lib, name).value = ctypes.cast(fn, ctypes.c_void_p).value
    for sym, fn in codecs.EXTERNALS.items():
        ctypes.c_void_p.in_dll(lib, f"{sym}_ptr").value = ctypes.cast(fn, ctypes.c_void_p).value
    calls = {}
    for name, (attr, kinds, nres) in ENTRY_POINTS.items():
        fn = getattr(lib, f"kf_{name}")
        fn.restype = ctypes.c_int32
        fn.argtypes = _c_argtypes(kinds)
        calls[attr] = _EntryPoint(fn, kinds, nres, attr, fallback)
    k = Kernels(calls["walk"], calls["resync"], calls["decode_records"], calls["decode_records_many"],
                record_columns, calls["decode_records_columns"], calls["inflate"], calls["records_plain"])
    k.native = path
    return k


def _c_argtypes(kinds: tuple[str, ...]) -> list[type[ctypes.c_int64] | type[ctypes.c_void_p]]:
    c: dict[str, type[ctypes.c_int64] | type[ctypes.c_void_p]] = {"int": ctypes.c_int64, "ptr": ctypes.c_void_p}
    return [c[t] for kind in kinds for t in C_ARGS[kind]] + [ctypes.c_void_p]


_U8 = np.dtype(np.uint8)
_I64 = np.dtype(np.int64)


def _numpy_owned(a: np.ndarray) -> bool:
    # only memory numpy allocated is remembered: holding a view of another object's buffer (a bytearray, an
    # mmap) would stop its owner from resizing or closing it
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base is None


class _EntryPoint:
    """One kernel's entry point: checks and converts the arguments, calls the library, returns the results."""

    def __init__(self, fn: Any, kinds: tuple[str, ...], nres: int, attr: str, fallback: Callable[[], Kernels]):
        # fn: the library's ctypes entry point
        self.fn = fn
        self.kinds = kinds
        self.nres = nres
        self.attr = attr
        self.fallback = fallback
        self.results = ctypes.c_int64 * nres
        # the last array seen in each argument and its address (reading an address costs microseconds; the
        # reference held keeps the array alive, so an identical object is the identical buffer)
        self.last: list[tuple[object, int]] = [(None, 0)] * len(kinds)

    def __call__(self, *args: Any) -> Any:  # the kernel's arguments (arrays, integers) and results
        c = []
        copies = []  # contiguous copies made here live until the call returns
        for i, (kind, a) in enumerate(zip(self.kinds, args)):
            if kind == INT:
                c.append(a)
                continue
            last = self.last[i]
            if last[0] is a:
                addr = last[1]
            else:
                if not isinstance(a, np.ndarray):
                    return getattr(self.fallback(), self.attr)(*args)
                if kind == BYTES:
                    if a.dtype != _U8 or a.ndim != 1:
                        return getattr(self.fallback(), self.attr)(*args)
                    if not a.flags.c_contiguous:
                        a = np.ascontiguousarray(a)
                elif kind == IVEC:
                    if a.ndim != 1:
                        return getattr(self.fallback(), self.attr)(*args)
                    if a.dtype != _I64 or not a.flags.c_contiguous:
                        a = np.ascontiguousarray(a, dtype=np.int64)  # read only: a copy reads the same
                elif kind == OVEC:
                    if a.dtype != _I64 or a.ndim != 1 or not a.flags.c_contiguous or not a.flags.writeable:
                        return getattr(self.fallback(), self.attr)(*args)
                elif a.dtype != _I64 or a.ndim != 2 or not a.flags.writeable or a.strides[0] % 8 or \
                        a.strides[1] % 8:
                    return getattr(self.fallback(), self.attr)(*args)
                addr = a.ctypes.data
                if a is not args[i]:
                    copies.append(a)
                elif _numpy_owned(a):
                    self.last[i] = (a, addr)
            if kind == TABLE:
                c += [addr, a.shape[0], a.shape[1], a.strides[0], a.strides[1]]
            else:
                c += [addr, a.shape[0]]
        res = self.results()
        if self.fn(*c, res):
            # the compiled functions raise nothing: a failure here is a defect, never evidence
            raise RuntimeError(f"native kernel {self.attr} reported an error")
        return tuple(res)


# ---------------------------------------------------------------- building


def compiler() -> list[str] | None:
    """The C compiler driver that links the library (it compiles nothing), or None."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    parts = cc.split()
    if parts and shutil.which(parts[0]):
        return parts
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    return None


def build(jit: Kernels, path: str) -> None:
    """Write the sealed library for the numba kernels ``jit`` (a ``Kernels``) to ``path``; raises on any failure.

    The object code is generated for the architecture's baseline CPU (the
    library may be read by another machine sharing the cache) and
    position-independent; the driver only links it.
    """
    from llvmlite import ir
    from numba import types
    from numba.core.codegen import AOTCPUCodegen
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler driver (cc) to link the native kernels")
    ctx = cpu_target.target_context
    i32, i64 = ir.IntType(32), ir.IntType(64)
    module = ir.Module("kforensics_native_entry_points")
    with global_compiler_lock:
        # an ahead-of-time library: finalizing it adds nothing to numba's JIT in this process (where the shims
        # below would replace the symbols numba's own kernels call); baseline CPU, position-independent code
        codegen = AOTCPUCodegen("kforensics_native")  # type: ignore[no-untyped-call]  # numba's, untyped
        library = codegen.create_library("kforensics_native")  # type: ignore[no-untyped-call]
        for name, (attr, kinds, nres) in ENTRY_POINTS.items():
            sig = tuple(_numba_type(types, kind) for kind in kinds)
            disp = getattr(jit, attr)
            disp.compile(sig)
            cres = disp.overloads[sig]
            fndesc = cres.fndesc
            if len(fndesc.restype) != nres:
                raise RuntimeError(f"kernel {name} returns {fndesc.restype}, not {nres} values")
            library.add_linking_library(cres.library)
            callee = ir.Function(module, ctx.call_conv.get_function_type(fndesc.restype, fndesc.argtypes),
                                 fndesc.llvm_func_name)
            _entry_point(ctx, module, name, kinds, sig, callee, fndesc, i32, i64)
        _crc_shims(module, i32, i64)
        # numba's decref calls this when a count drops to zero; the entry points pass no owned arrays (their
        # arrays have no meminfo), so it is never reached, but the library must define every symbol it names
        dtor = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer()]),
                           "NRT_MemInfo_call_dtor")
        ir.IRBuilder(dtor.append_basic_block("entry")).ret_void()
        library.add_ir_module(module)
        obj = library.emit_native_object()
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.TemporaryDirectory(dir=folder, prefix=".kf-native-") as tmp:
        o = os.path.join(tmp, "kernels.o")
        so = os.path.join(tmp, "kernels.so")
        with open(o, "wb") as fh:
            fh.write(obj)
        done = subprocess.run([*cc, "-shared", "-o", so, o], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"linking the native kernels failed: {done.stderr.strip()[-500:]}")
        with open(so, "rb") as fh:
            library = fh.read()
        sealed = os.path.join(tmp, "kernels.sealed")
        with open(sealed, "wb") as fh:
            fh.write(seal(library))
            fh.flush()
            os.fsync(fh.fileno())  # whole on disk before the rename makes it visible
        os.chmod(sealed, 0o644)
        os.replace(sealed, path)  # atomic: a concurrent run loads the old file or the whole new one


def _numba_type(types: Any, kind: str) -> Any:  # numba's types module, and a numba type (numba ships no types)
    if kind == INT:
        return types.int64
    if kind == BYTES:
        return types.Array(types.uint8, 1, "C")
    if kind in (IVEC, OVEC):
        return types.Array(types.int64, 1, "C")
    return types.Array(types.int64, 2, "A")


def _entry_point(ctx: Any, module: Any, name: str, kinds: tuple[str, ...], sig: tuple[Any, ...], callee: Any,
                 fndesc: Any, i32: Any, i64: Any) -> None:  # numba's and llvmlite's objects
    """``int32 kf_<name>(C arguments..., int64 *results)``: numba's arrays built from the arguments, the compiled
    function called, its results stored; returns 0, or 1 if the function reported an error."""
    from llvmlite import ir
    from numba import types

    llvm_type = {"int": i64, "ptr": ir.IntType(8).as_pointer()}
    params = [llvm_type[t] for kind in kinds for t in C_ARGS[kind]]
    fn = ir.Function(module, ir.FunctionType(i32, params + [i64.as_pointer()]), f"kf_{name}")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = list(fn.args)
    values = []
    for kind, ty in zip(kinds, sig):
        if kind == INT:
            values.append(args.pop(0))
            continue
        data = args.pop(0)
        itemsize = ctx.get_constant(types.intp, ctx.get_abi_sizeof(ctx.get_data_type(ty.dtype)))
        if kind == TABLE:
            shape = [args.pop(0), args.pop(0)]
            strides = [args.pop(0), args.pop(0)]
        else:
            shape = [args.pop(0)]
            strides = [itemsize]
        ary = ctx.make_array(ty)(ctx, b)
        ctx.populate_array(ary, data=b.bitcast(data, ary.data.type), shape=shape, strides=strides,
                           itemsize=itemsize, meminfo=None)
        values.append(ary._getvalue())
    results = args.pop(0)
    status, out = ctx.call_conv.call_function(b, callee, fndesc.restype, fndesc.argtypes, values)
    for j in range(len(fndesc.restype)):
        v = b.extract_value(out, j)
        if v.type != i64:  # a narrower integer result
            v = b.sext(v, i64)
        b.store(v, b.gep(results, [ir.Constant(i64, j)]))
    b.ret(b.select(status.is_error, ir.Constant(i32, 1), ir.Constant(i32, 0)))


def _crc_shims(module: Any, i32: Any, i64: Any) -> None:  # llvmlite's module and integer types
    """The CRC and codec functions the kernels call by name, as calls through pointers the loader sets (the
    library is built once and loaded into processes where that code lies at other addresses)."""
    from llvmlite import ir

    c_type = {"u64": i64, "u32": i32, "ptr": i64, "void": ir.VoidType()}
    shims = [(sym, width, [width, i64, i64]) for sym, width in (("kforensics_crc32c", i32), ("kforensics_crc32", i64))]
    shims += [(sym, c_type[res], [c_type[a] for a in args])
              for sym, (_lib, _name, res, args) in codecs.FUNCTIONS.items()]
    for sym, result, params in shims:
        fty = ir.FunctionType(result, params)
        slot = ir.GlobalVariable(module, fty.as_pointer(), f"{sym}_ptr")
        slot.initializer = ir.Constant(fty.as_pointer(), None)
        fn = ir.Function(module, fty, sym)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        called = b.call(b.load(slot), fn.args)
        if isinstance(result, ir.VoidType):
            b.ret_void()
        else:
            b.ret(called)


# ---------------------------------------------------------------- a build that failed

#: how long a recorded build failure stops the next starts from trying again (a full disk, a missing compiler: both
#: may be fixed without anything else changing)
FAILURE_EXPIRES_SECONDS = 24 * 3600


def _toolchain() -> str:
    """What a build depends on besides the source: the compiler driver (path, size, time) and numba/llvmlite."""
    cc = compiler()
    where = shutil.which(cc[0]) if cc else None
    try:
        st = os.stat(where) if where else None
    except OSError:
        st = None
    driver = f"{where}:{st.st_size}:{int(st.st_mtime)}" if st else "none"
    return f"{' '.join(cc or [])}|{driver}|{_tools()}"


def record_failure(path: str, error: BaseException) -> None:
    """Remember beside the library why building it failed (best effort: a full disk may refuse this too)."""
    note = {"error": f"{type(error).__name__}: {error}", "toolchain": _toolchain(), "time": time.time()}
    try:
        tmp = f"{path}.failed.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(json.dumps(note) + "\n")
        os.replace(tmp, path + ".failed")
    except OSError:
        pass


def failure_stands(path: str) -> bool:
    """True when a build of ``path`` failed less than a day ago with the same compiler, numba and llvmlite.

    An older failure, one under another toolchain, or a marker that does not
    parse has expired: it is removed and the build is tried again.
    """
    marker = path + ".failed"
    try:
        with open(marker) as fh:
            note = json.loads(fh.read(4096))
        fresh = (isinstance(note, dict) and note.get("toolchain") == _toolchain()
                 and 0 <= time.time() - float(note.get("time", 0)) < FAILURE_EXPIRES_SECONDS)
    except FileNotFoundError:
        return False
    except (OSError, ValueError, TypeError):
        fresh = False
    if not fresh:
        clear_failure(path)
    return fresh


def clear_failure(path: str) -> None:
    """Forget a recorded failure to build ``path``."""
    try:
        os.unlink(path + ".failed")
    except OSError:
        pass
