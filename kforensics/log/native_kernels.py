"""The compiled kernels as a native shared library, loaded without numba.

numba compiles the generated kernels (:mod:`kforensics.log.kernels`), but
importing numba and readying its dispatchers costs more than half a second
at every start, longer than a scan of hundreds of MiB takes.  So, once the
kernels are compiled, their machine code is also written out as a small
shared library in the kernel cache: numba's own compiled functions, linked
with entry points that take plain pointers, sizes and strides.  Later runs
load that library with ctypes in about a millisecond and never import numba.

It is the same code numba runs, not a second implementation: the entry
points build numba's array structures from their arguments and call the
functions numba compiled from the generated source.  Arguments the entry
points do not take (another dtype, a non-contiguous input) go to the numba
kernels instead, so every call gives what the numba kernels give.  A ctypes
call releases the GIL, as ``nogil`` kernels do.

Linking needs a C compiler driver (``cc``); without one, or when anything in
the build fails, the reason is recorded in the cache and the numba kernels
are used as before.
"""

from __future__ import annotations

import ctypes
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable

import numpy as np

#: bumped whenever the entry points' C signatures change, so an older library is never loaded
ABI = 1

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
}

_CRC_POINTERS = ("kforensics_crc32c_ptr", "kforensics_crc32_ptr")


def library_name(kernel_digest: str) -> str:
    """File name of the library for these kernels on this platform, numba and llvmlite."""
    import hashlib
    from importlib.metadata import version

    try:
        tools = f"{version('numba')}/{version('llvmlite')}"
    except Exception:  # metadata missing: a key that never matches a later build
        tools = "unknown"
    key = f"{kernel_digest}/{ABI}/{sys.platform}/{platform.machine()}/{tools}"
    return f"_kf_native_{hashlib.sha256(key.encode()).hexdigest()[:16]}.so"


# ---------------------------------------------------------------- loading


def _owned(path: str, st: os.stat_result) -> bool:
    # a library runs as our code: only one that we own, in a directory only we can write to
    try:
        dst = os.stat(os.path.dirname(path))
    except OSError:
        return False
    uid = os.getuid()
    return st.st_uid == uid and dst.st_uid == uid and not (dst.st_mode & 0o022) and not (st.st_mode & 0o022)


def load(path: str, record_columns: tuple[str, ...], crcs: tuple, fallback: Callable):
    """The kernels in the library at ``path`` (a ``Kernels``), or None when it is absent or not ours.

    ``crcs`` are the ctypes CRC-32C and CRC-32 functions the kernels call
    (None for one the kernels were generated without); ``fallback`` returns
    the numba kernels, for arguments the entry points do not take.
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not _owned(path, st):
        return None
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    return _bind(lib, record_columns, crcs, fallback)


def _bind(lib, record_columns, crcs, fallback):
    from .kernels import Kernels

    for name, fn in zip(_CRC_POINTERS, crcs):
        if fn is not None:
            ctypes.c_void_p.in_dll(lib, name).value = ctypes.cast(fn, ctypes.c_void_p).value
    calls = {}
    for name, (attr, kinds, nres) in ENTRY_POINTS.items():
        fn = getattr(lib, f"kf_{name}")
        fn.restype = ctypes.c_int32
        fn.argtypes = _c_argtypes(kinds)
        calls[attr] = _EntryPoint(fn, kinds, nres, attr, fallback)
    k = Kernels(calls["walk"], calls["resync"], calls["decode_records"], calls["decode_records_many"],
                record_columns)
    k.native = lib._name
    return k


def _c_argtypes(kinds) -> list:
    c = {"int": ctypes.c_int64, "ptr": ctypes.c_void_p}
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

    def __init__(self, fn, kinds, nres, attr, fallback):
        self.fn = fn
        self.kinds = kinds
        self.nres = nres
        self.attr = attr
        self.fallback = fallback
        self.results = ctypes.c_int64 * nres
        # the last array seen in each argument and its address (reading an address costs microseconds; the
        # reference held keeps the array alive, so an identical object is the identical buffer)
        self.last: list[tuple[object, int]] = [(None, 0)] * len(kinds)

    def __call__(self, *args):
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


def build(jit, path: str) -> None:
    """Write the library for the numba kernels ``jit`` (a ``Kernels``) to ``path``; raises on any failure.

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
        library = AOTCPUCodegen("kforensics_native").create_library("kforensics_native")
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
        os.chmod(so, 0o644)
        os.replace(so, path)  # atomic: a concurrent run loads the old file or the whole new one


def _numba_type(types, kind):
    if kind == INT:
        return types.int64
    if kind == BYTES:
        return types.Array(types.uint8, 1, "C")
    if kind in (IVEC, OVEC):
        return types.Array(types.int64, 1, "C")
    return types.Array(types.int64, 2, "A")


def _entry_point(ctx, module, name, kinds, sig, callee, fndesc, i32, i64) -> None:
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


def _crc_shims(module, i32, i64) -> None:
    """The CRC functions the kernels call by name, as calls through pointers the loader sets (the library is
    built once and loaded into processes where the CRC code lies at other addresses)."""
    from llvmlite import ir

    for sym, width in (("kforensics_crc32c", i32), ("kforensics_crc32", i64)):
        fty = ir.FunctionType(width, [width, i64, i64])
        slot = ir.GlobalVariable(module, fty.as_pointer(), f"{sym}_ptr")
        slot.initializer = ir.Constant(fty.as_pointer(), None)
        fn = ir.Function(module, fty, sym)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        b.ret(b.call(b.load(slot), fn.args))
