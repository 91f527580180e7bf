"""libctorch, opened once: named constants, the one signature table (both
generated from the header: _capi.py), statuses turned into the errors of
_errors.py (and the exceptions of Python callbacks waiting to be re-raised).

Everything here uses only the standard library (ctypes). Every other module of
the package calls C through the two namespaces defined here: ``C`` releases
the GIL during the call (anything that may run long or call back into Python),
``G`` keeps it (cheap calls, where releasing it costs more than the call).
"""

import ctypes
import ctypes.util
import operator
import os
import threading
from ctypes import (POINTER, c_char_p, c_double, c_int32, c_int64, c_size_t, c_uint64,
                    c_void_p)
from typing import Any, Dict, Iterator, List, NoReturn, Optional, Tuple


# ---- named constants of include/ctorch.h (generated: _capi.py) ---------------------

from ._capi import *  # noqa: E402,F401,F403  (CT_OK, CT_FLOAT32, ... as the header names them)
from ._capi import (CT_OK, CT_ERR_INVALID_ARGUMENT, CT_ERR_TYPE, CT_ERR_INDEX,  # noqa: E402
                    CT_ERR_NOT_FOUND, CT_ERR_IO, CT_ERR_OUT_OF_MEMORY, CT_ERR_NOT_SUPPORTED,
                    CT_ERR_TORCH, CT_ERR_CALLBACK, CT_ERR_INTERNAL, CT_ERR_TIMEOUT,
                    CT_LAYOUT_STRIDED,
                    CT_LAYOUT_SPARSE_COO, CT_LAYOUT_SPARSE_CSR, CT_LAYOUT_SPARSE_CSC,
                    CT_LAYOUT_SPARSE_BSR, CT_LAYOUT_SPARSE_BSC, CT_LAYOUT_MKLDNN)
from . import _capi  # noqa: E402

#: The ABI version of include/ctorch.h this binding was generated from.
ABI_VERSION = _capi.CTORCH_ABI_VERSION

from ._capi import STATUS_NAMES  # noqa: E402,F401

#: the device index meaning "none / current"
NO_INDEX = -1

LAYOUT_NAMES = {CT_LAYOUT_STRIDED: "strided", CT_LAYOUT_SPARSE_COO: "sparse_coo",
                CT_LAYOUT_SPARSE_CSR: "sparse_csr", CT_LAYOUT_SPARSE_CSC: "sparse_csc",
                CT_LAYOUT_SPARSE_BSR: "sparse_bsr", CT_LAYOUT_SPARSE_BSC: "sparse_bsc",
                CT_LAYOUT_MKLDNN: "_mkldnn"}

# DLPack device types (dlpack.h, in the header) used by the binding
DL_CPU = _capi.kDLCPU
DL_CUDA = _capi.kDLCUDA
DL_ROCM = _capi.kDLROCM
# DLPack stream values (array API): the legacy default CUDA stream
DL_STREAM_LEGACY = 1
DLPACK_FLAG_BITMASK_READ_ONLY = 1
DLPACK_FLAG_BITMASK_IS_COPIED = 2


# ---- errors (classes: _errors.py) ------------------------------------------------

from ._errors import *  # noqa: E402,F401,F403  (Error, InvalidArgumentError, ...)
from ._errors import (ERRORS as _ERRORS, CTorchFileNotFoundError, Error,  # noqa: E402
                      LibraryNotFoundError)


# ---- finding and opening the library ------------------------------------------

_LIB_NAMES = ("libctorch.so", "libctorch.so.0", "libctorch.dylib", "ctorch.dll")
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_DL_MODE = getattr(os, "RTLD_GLOBAL", 0) | ctypes.DEFAULT_MODE


def _build_dirs(root: str) -> List[str]:
    """The build*/ directories of a source tree, build/ first."""
    try:
        subs = sorted(e for e in os.listdir(root)
                      if e.startswith("build") and os.path.isdir(os.path.join(root, e)))
    except OSError:
        return []
    if "build" in subs:
        subs.remove("build")
        subs.insert(0, "build")
    return subs


def _candidates() -> Iterator[Tuple[str, str]]:
    """Yields (where, path_or_name) in search order."""
    env = os.environ.get("CTORCH_LIBRARY")
    if env:
        yield "CTORCH_LIBRARY", env
    for n in _LIB_NAMES:
        yield "package directory", os.path.join(_PKG_DIR, n)
    # The source tree: a repository root holds include/ctorch.h.
    d = _PKG_DIR
    for _ in range(6):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        if os.path.isfile(os.path.join(d, "include", "ctorch.h")):
            for s in _build_dirs(d):
                yield "build tree", os.path.join(d, s, "libctorch.so")
            break
    found = ctypes.util.find_library("ctorch")
    yield "system loader", found or "libctorch.so"


def _open() -> Tuple[ctypes.CDLL, str]:
    tried: List[str] = []
    for where, path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s: %s (no such file)" % (where, path))
            continue
        try:
            dll = ctypes.CDLL(path, mode=_DL_MODE)
        except OSError as e:
            tried.append("%s: %s (%s)" % (where, path, e))
            continue
        if not hasattr(dll, "ct_abi_version"):
            tried.append("%s: %s (not libctorch: no ct_abi_version)" % (where, path))
            continue
        dll.ct_abi_version.restype = c_int32
        dll.ct_abi_version.argtypes = []
        abi = dll.ct_abi_version()
        if abi != ABI_VERSION:
            raise LibraryNotFoundError(
                "libctorch at %s has ABI version %d, but this ctorch binding was written for "
                "ABI version %d" % (path, abi, ABI_VERSION))
        if tried and tried[0].startswith("CTORCH_LIBRARY"):
            import warnings
            warnings.warn("ctorch: CTORCH_LIBRARY is unusable (%s); using %s instead"
                          % (tried[0], path), RuntimeWarning, stacklevel=3)
        return dll, path
    raise LibraryNotFoundError(
        "cannot find libctorch; tried, in order:\n  " + "\n  ".join(tried) +
        "\nSet CTORCH_LIBRARY to the path of libctorch.so.")


# A wheel built for one torch refuses another before its library is loaded (a mix crashes).
from . import _torch_match  # noqa: E402
_torch_match.check()
_torch_match.load_torch()
lib, LIBRARY_PATH = _open()
#: The same loaded library (no second dlopen), called with the GIL held.
plib = ctypes.PyDLL(LIBRARY_PATH, handle=lib._handle)


# ---- structures and callback types: generated from the header in _capi.py --------

# (SIGNATURES names the callback types; other modules import them from _capi)
from ._capi import (TensorInfo, DELETER, OP_FN, AG_FORWARD, AG_BACKWARD,  # noqa: E402,F401
                    CTX_DESTROY, TENSOR_KERNEL, OP_BACKWARD)


# ---- the signature table: every function of include/ctorch.h, declared once --------

P = c_void_p            # any handle or pointer
PP = POINTER(c_void_p)  # handle out-parameter / handle array
#: A handle array on the hot op paths, declared as a plain pointer: callers pass
#: the address of a thread-local array as a ready c_void_p (tls.fast), which
#: ctypes converts fastest (ctypes arrays are accepted too).
PA = c_void_p
S = c_int32             # ct_status
I32 = c_int32
I64 = c_int64
PI64 = POINTER(c_int64)
PI32 = POINTER(c_int32)
SZ = c_size_t
PSZ = POINTER(c_size_t)
D = c_double
STR = c_char_p
PSTR = POINTER(c_char_p)

U64 = c_uint64
PU64 = POINTER(c_uint64)
PD = POINTER(c_double)
PINFO = POINTER(TensorInfo)

#: Every function of include/ctorch.h: (result type, argument types), from the
#: generated table (_capi.py; scripts/gen_bindings.py maps each C type once).
SIGNATURES: Dict[str, Tuple[Any, List[Any]]] = {
    name: (globals()[res] if res != "None" else None, [globals()[t] for t in args])
    for name, (res, args) in _capi.SIGNATURES.items()}

class _Funcs:
    """Attribute namespace of C functions, named without the ct_ prefix."""

    def __getattr__(self, name: str) -> Any:  # for mypy: attributes are set below
        raise AttributeError(name)


#: Functions that release the GIL while they run (CDLL): those the header
#: declares CT_MAY_BLOCK (_capi.MAY_BLOCK), and only those; a Python exception
#: that Python code run by LibTorch inside them left set (a torch dispatch
#: mode's: FakeTensorMode, torch.compile's tracers) comes out as itself
#: (passing_python_errors), except from the hot functions of RAISE_OWN, whose
#: callers do that (python_error).
C = _Funcs()
#: Every function called with the GIL held (PyDLL: ctypes raises such an
#: exception itself). A CT_MAY_BLOCK function goes through G only where
#: HELD_ON_PURPOSE says why (tests/test_structure.py checks the package's calls).
G = _Funcs()
HELD_ON_PURPOSE = {
    "ct_tensor_empty": "the generator state buffer: one byte, no callback",
    "ct_tensor_from_dlpack": "a producer's deleter that runs on failure takes the GIL itself "
                             "(numpy's, torch's); releasing it costs more than the import",
}
#: C functions bound bare (op calls, forward): their call sites catch SystemError.
RAISE_OWN = frozenset({"op_call", "op_call_tensors", "op_call_tensors_values",
                       "module_forward_tensors"})


def python_error(e: SystemError) -> BaseException:
    """The exception a GIL-releasing ctypes call really raised: when Python
    code run inside it (a torch dispatch mode LibTorch called) failed, the
    call returns with that exception set, which ctypes reports as
    SystemError("... returned a result with an exception set") caused by
    it. Returns that cause, else e."""
    cause = e.__cause__
    if cause is not None and "returned a result with an exception set" in str(e):
        return cause
    return e


def raise_python_error(e: SystemError) -> NoReturn:
    """Raises python_error(e) from an ``except SystemError as e`` handler,
    keeping the exception's own context (not the SystemError)."""
    err = python_error(e)
    if err is e:
        raise e
    context = err.__context__
    try:
        raise err
    finally:
        err.__context__ = context


def passing_python_errors(f: Any) -> Any:
    """f (a CDLL function), raising python_error's exception instead of the
    SystemError that ctypes makes of it."""
    def call(*args: Any) -> Any:
        try:
            return f(*args)
        except SystemError as e:
            raise_python_error(e)
    call.__name__ = call.__qualname__ = getattr(f, "__name__", "ct_function")
    return call

def _bind() -> None:
    """Sets argument and result types of every function in SIGNATURES. A
    library without one of them is older than this binding (its ABI version
    matched, but a function added since is missing): refused here with the
    names, instead of a fallback path per function."""
    missing = [n for n in SIGNATURES if not hasattr(lib, n)]
    if missing:
        raise LibraryNotFoundError(
            "libctorch at %s is older than this ctorch binding: it lacks %s; use the library "
            "built from the same ctorch version" % (LIBRARY_PATH, ", ".join(sorted(missing))))
    for name, (res, args) in SIGNATURES.items():
        for dll, ns in ((lib, C), (plib, G)):
            if ns is C and name not in _capi.MAY_BLOCK:
                continue  # C has only what the header marks CT_MAY_BLOCK
            f = getattr(dll, name)
            f.restype = res
            f.argtypes = args
            if ns is C and name[3:] not in RAISE_OWN:
                f = passing_python_errors(f)
            setattr(ns, name[3:], f)


_bind()


# ---- exceptions of Python callbacks -------------------------------------------------
# Kept process-wide (a callback may run on another thread than the ctorch call
# that ran it) until that call re-raises them (error_from_status); reported by
# _callbacks.report.

_pending_lock = threading.Lock()
_pending: List[Tuple[str, BaseException]] = []  # [(message, exception)], newest last
_MAX_PENDING = 64


def keep_pending(msg: str, exc: BaseException) -> None:
    with _pending_lock:
        _pending.append((msg, exc))
        del _pending[:-_MAX_PENDING]


def take_pending(message: Optional[str] = None) -> Optional[BaseException]:
    """Removes and returns the pending exception whose message appears in
    `message` (the newest if message is None), or None."""
    with _pending_lock:
        if not _pending:
            return None
        if message is None:
            return _pending.pop()[1]
        for i in range(len(_pending) - 1, -1, -1):
            if _pending[i][0] in message:
                return _pending.pop(i)[1]
    return None


# ---- status checking --------------------------------------------------------------

_last_error = G.last_error


def error_from_status(status: int) -> BaseException:
    """The exception for a failed call: a ctorch.Error subclass carrying the
    full ct_last_error() message and the code. When the failure came from a
    Python callback (CT_ERR_CALLBACK), the callback's original exception is
    returned instead, with the ctorch error as its __cause__."""
    raw = _last_error()
    msg = raw.decode("utf-8", "replace") if raw else ""
    if not msg:
        msg = "ctorch call failed with status %s" % STATUS_NAMES.get(status, status)
    cls = _ERRORS.get(status, Error)
    if status == CT_ERR_NOT_FOUND and "No such file or directory" in msg:
        cls = CTorchFileNotFoundError
    err = cls(msg, status)
    if status == CT_ERR_CALLBACK:
        pending = take_pending(msg)
        if pending is not None:
            pending.__cause__ = err
            return pending
    return err


def check(status: int) -> None:
    """Raises the ctorch.Error subclass matching a non-zero status."""
    if status:
        raise error_from_status(status)


def last_error_code() -> int:
    code: int = G.last_error_code()
    return code


# ---- integers entering C ------------------------------------------------------------

#: Ranges of the C integer types user integers are passed as; "seed" is what
#: torch.manual_seed takes (negative seeds wrap to uint64, as in torch).
INT_RANGES: Dict[str, Tuple[int, int]] = {
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint64": (0, (1 << 64) - 1),
    "size_t": (0, (1 << (8 * ctypes.sizeof(c_size_t))) - 1),
    "seed": (-(1 << 63), (1 << 64) - 1),
}


def int_arg(x: Any, kind: str, what: str, *what_args: Any) -> int:
    """x (an int, or anything with __index__) as a Python int that fits the C
    type `kind` (a key of INT_RANGES). Raises IntRangeError naming the
    argument (``what % what_args``) and the user's number where ctypes would
    silently truncate it, and CTorchTypeError for a non-integer. Every user
    integer bound for a C integer parameter goes through here (TorchScript
    values through _values.int_value); the hot paths take no user integers."""
    try:
        v: int = x if type(x) is int else operator.index(x)
    except TypeError:
        raise CTorchTypeError("%s must be an integer, got %s"
                              % (what % what_args, type(x).__name__)) from None
    lo, hi = INT_RANGES[kind]
    if not lo <= v <= hi:
        raise IntRangeError("%s: %d is out of range for %s (%d to %d)"
                            % (what % what_args, v, kind, lo, hi))
    return v


# ---- small helpers ---------------------------------------------------------------

def take_string(p: Optional[int]) -> Optional[str]:
    """Decodes and ct_free()s a caller-owned char* (an address)."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        C.free(p)


def take_buffer(p: Optional[int], n: int) -> bytes:
    """Copies and ct_free()s a caller-owned buffer of n bytes."""
    try:
        return ctypes.string_at(p, n) if n and p else b""
    finally:
        C.free(p)


#: Arguments and results the hot paths pass in the per-thread arrays below
#: (more take the general path, or arrays of their own).
FAST_SLOTS = 16

#: c_size_t objects for small counts (ctypes converts its own objects fastest).
SIZES = tuple(c_size_t(i) for i in range(FAST_SLOTS + 1))


class _TLS(threading.local):
    """Per-thread argument arrays and out-parameter for the hot paths (a
    foreign-op callback that re-enters on the same thread is safe: ctorch has
    copied the arguments before it runs the op)."""

    def __init__(self) -> None:
        self.out = c_void_p()
        self.out_ref = ctypes.byref(self.out)
        self.args = (c_void_p * FAST_SLOTS)()       # ct_value* arguments
        self.tensors = (c_void_p * FAST_SLOTS)()    # ct_tensor* inputs
        self.outputs = (c_void_p * FAST_SLOTS)()    # ct_tensor* outputs
        self.n = c_size_t()
        self.n_ref = ctypes.byref(self.n)
        self.sizes = (c_int64 * 32)()       # sizes in (from_numpy)
        #: the arrays and their addresses (c_void_p) for the hot op paths
        self.fast = (self.tensors, self.outputs, self.args,
                     c_void_p(ctypes.addressof(self.tensors)),
                     c_void_p(ctypes.addressof(self.outputs)),
                     c_void_p(ctypes.addressof(self.args)))
        #: the same for the tensors-only module call (adds the result count)
        self.forward = (self.tensors, self.outputs, self.n, self.n_ref,
                        self.fast[3], self.fast[4])


tls = _TLS()
