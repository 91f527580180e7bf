"""Loading libctorch, the table of C signatures, and error translation.

Everything here uses only the standard library (ctypes).
"""

import ctypes
import ctypes.util
import os
import sys
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int32, c_int64,
                    c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)

#: The ABI version of include/ctorch.h this binding was written for.
ABI_VERSION = 1

_LIB_NAMES = ("libctorch.so", "libctorch.so.0", "libctorch.dylib", "ctorch.dll")


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------

class Error(Exception):
    """Base class of every error raised by ctorch.

    ``code`` is the C status (``CT_ERR_*``) and ``message`` the full text of
    ``ct_last_error()`` (first line short; C++ detail such as a TorchScript
    traceback may follow)."""

    code = None

    def __init__(self, message, code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    code = 1


class CTorchTypeError(Error, TypeError):
    code = 2


class CTorchIndexError(Error, IndexError):
    code = 3


class NotFoundError(Error, LookupError):
    code = 4


class CTorchIOError(Error, OSError):
    code = 5

    def __init__(self, message, code=None):
        Error.__init__(self, message, code)


class CTorchMemoryError(Error, MemoryError):
    code = 6


class NotSupportedError(Error, NotImplementedError):
    code = 7


class TorchError(Error, RuntimeError):
    code = 8


class CallbackError(Error, RuntimeError):
    code = 9


class InternalError(Error, RuntimeError):
    code = 10


class LibraryNotFoundError(Error, ImportError):
    """libctorch.so could not be found or loaded, or has the wrong ABI."""


_ERRORS = {c.code: c for c in (InvalidArgumentError, CTorchTypeError, CTorchIndexError,
                               NotFoundError, CTorchIOError, CTorchMemoryError,
                               NotSupportedError, TorchError, CallbackError, InternalError)}

STATUS_NAMES = {0: "CT_OK", 1: "CT_ERR_INVALID_ARGUMENT", 2: "CT_ERR_TYPE", 3: "CT_ERR_INDEX",
                4: "CT_ERR_NOT_FOUND", 5: "CT_ERR_IO", 6: "CT_ERR_OUT_OF_MEMORY",
                7: "CT_ERR_NOT_SUPPORTED", 8: "CT_ERR_TORCH", 9: "CT_ERR_CALLBACK",
                10: "CT_ERR_INTERNAL"}


# ---------------------------------------------------------------------------
# Finding the library
# ---------------------------------------------------------------------------

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    """Yields (description, path_or_name) in search order."""
    env = os.environ.get("CTORCH_LIBRARY")
    if env:
        yield "CTORCH_LIBRARY", env
    for n in _LIB_NAMES:
        yield "package directory", os.path.join(_PKG_DIR, n)
    # The build tree: walk up from the package looking for a repository root
    # (a directory holding include/ctorch.h) and look in its build*/ dirs,
    # build/ first.
    d = _PKG_DIR
    for _ in range(6):
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        if os.path.isfile(os.path.join(d, "include", "ctorch.h")):
            try:
                subs = sorted(e for e in os.listdir(d)
                              if e.startswith("build") and os.path.isdir(os.path.join(d, e)))
            except OSError:
                subs = []
            if "build" in subs:
                subs.remove("build")
                subs.insert(0, "build")
            for s in subs:
                yield "build tree", os.path.join(d, s, "libctorch.so")
            break
    found = ctypes.util.find_library("ctorch")
    yield "system loader", found or "libctorch.so"


def _load():
    tried = []
    for where, path in _candidates():
        is_path = os.sep in path
        if is_path and not os.path.exists(path):
            tried.append("%s: %s (no such file)" % (where, path))
            continue
        try:
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_GLOBAL", 0) | ctypes.DEFAULT_MODE)
        except OSError as e:
            tried.append("%s: %s (%s)" % (where, path, e))
            continue
        if not hasattr(lib, "ct_abi_version"):
            tried.append("%s: %s (not libctorch: no ct_abi_version)" % (where, path))
            continue
        lib.ct_abi_version.restype = c_int32
        lib.ct_abi_version.argtypes = []
        abi = lib.ct_abi_version()
        if abi != ABI_VERSION:
            raise LibraryNotFoundError(
                "libctorch at %s has ABI version %d, but this ctorch binding was written for "
                "ABI version %d" % (path, abi, ABI_VERSION))
        if tried and tried[0].startswith("CTORCH_LIBRARY"):
            import warnings
            warnings.warn("ctorch: CTORCH_LIBRARY is unusable (%s); using %s instead"
                          % (tried[0], path), RuntimeWarning, stacklevel=3)
        return lib, path
    raise LibraryNotFoundError(
        "cannot find libctorch; tried, in order:\n  " + "\n  ".join(tried) +
        "\nSet CTORCH_LIBRARY to the path of libctorch.so.")


lib, LIBRARY_PATH = _load()
#: The same library, called with the GIL held (ctypes.PyDLL): used for cheap
#: calls that never call back into Python on another thread.
plib = ctypes.PyDLL(LIBRARY_PATH, mode=getattr(os, "RTLD_GLOBAL", 0) | ctypes.DEFAULT_MODE)


# ---------------------------------------------------------------------------
# DLPack structs (layout of DLPack 1.1, as declared in ctorch.h)
# ---------------------------------------------------------------------------

class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p),
                            ("deleter", CFUNCTYPE(None, POINTER(DLManagedTensor)))]


class DLManagedTensorVersioned(Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion), ("manager_ctx", c_void_p),
    ("deleter", CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))),
    ("flags", c_uint64), ("dl_tensor", DLTensor)]

DLPACK_FLAG_BITMASK_READ_ONLY = 1
DLPACK_FLAG_BITMASK_IS_COPIED = 2


# ---------------------------------------------------------------------------
# Callback types
# ---------------------------------------------------------------------------

DELETER = CFUNCTYPE(None, c_void_p, c_void_p)
OP_FN = CFUNCTYPE(c_int32, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p))
AG_FORWARD = CFUNCTYPE(c_int32, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p),
                       c_size_t)
AG_BACKWARD = CFUNCTYPE(c_int32, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p),
                        c_size_t)
CTX_DESTROY = CFUNCTYPE(None, c_void_p)


# ---------------------------------------------------------------------------
# The signature table: every function of include/ctorch.h, declared once.
# ---------------------------------------------------------------------------

P = c_void_p          # any handle or pointer
PP = POINTER(c_void_p)  # handle out-parameter / handle array
S = c_int32           # ct_status / int32_t
I32 = c_int32
I64 = c_int64
PI64 = POINTER(c_int64)
PI32 = POINTER(c_int32)
SZ = c_size_t
PSZ = POINTER(c_size_t)
D = c_double
STR = c_char_p
PSTR = POINTER(c_char_p)
_FACT = [PP, PI64, SZ, I32, I32, I32, I32]

SIGNATURES = {
    # versions
    "ct_version": (STR, []),
    "ct_abi_version": (I32, []),
    "ct_torch_version": (STR, []),
    # errors
    "ct_last_error": (STR, []),
    "ct_last_error_code": (S, []),
    "ct_set_error": (S, [S, STR]),
    "ct_clear_error": (None, []),
    "ct_free": (None, [P]),
    "ct_set_cpp_backtraces": (None, [I32]),
    # library-wide
    "ct_cuda_is_compiled": (I32, []),
    "ct_cuda_is_available": (I32, []),
    "ct_get_num_threads": (I32, []),
    "ct_set_num_threads": (S, [I32]),
    "ct_get_num_interop_threads": (I32, []),
    "ct_set_num_interop_threads": (S, [I32]),
    "ct_manual_seed": (S, [c_uint64]),
    "ct_load_library": (S, [STR]),
    "ct_grad_mode_set": (None, [I32]),
    "ct_grad_mode_is_enabled": (I32, []),
    "ct_inference_mode_push": (S, [I32]),
    "ct_inference_mode_pop": (S, []),
    "ct_inference_mode_is_enabled": (I32, []),
    # dtypes / devices
    "ct_dtype_element_size": (SZ, [I32]),
    "ct_dtype_name": (STR, [I32]),
    "ct_device_type_name": (STR, [I32]),
    # tensor creation
    "ct_tensor_empty": (S, _FACT),
    "ct_tensor_zeros": (S, _FACT),
    "ct_tensor_ones": (S, _FACT),
    "ct_tensor_full": (S, [PP, PI64, SZ, D, I32, I32, I32, I32]),
    "ct_tensor_rand": (S, _FACT),
    "ct_tensor_randn": (S, _FACT),
    "ct_tensor_arange": (S, [PP, D, D, D, I32, I32, I32, I32]),
    "ct_tensor_eye": (S, [PP, I64, I64, I32, I32, I32, I32]),
    "ct_tensor_from_data": (S, [PP, P, PI64, SZ, I32, I32, I32]),
    "ct_tensor_from_blob": (S, [PP, P, PI64, SZ, PI64, I32, I32, I32, DELETER, P]),
    "ct_tensor_from_blob_queued": (S, [PP, P, PI64, SZ, PI64, I32, I32, I32, P]),
    "ct_release_queue_poll": (S, [PP, SZ, PSZ]),
    "ct_release_queue_length": (SZ, []),
    # tensor handles and conversions
    "ct_tensor_free": (None, [P]),
    "ct_tensor_ref": (S, [PP, P]),
    "ct_tensor_clone": (S, [PP, P]),
    "ct_tensor_detach": (S, [PP, P]),
    "ct_tensor_contiguous": (S, [PP, P]),
    "ct_tensor_to": (S, [PP, P, I32, I32, I32, I32, I32]),
    "ct_tensor_copy_": (S, [P, P, I32]),
    "ct_tensor_fill_": (S, [P, D]),
    "ct_tensor_pin_memory": (S, [PP, P]),
    "ct_tensor_is_pinned": (I32, [P]),
    # tensor metadata
    "ct_tensor_ndim": (I64, [P]),
    "ct_tensor_sizes": (PI64, [P]),
    "ct_tensor_strides": (PI64, [P]),
    "ct_tensor_size": (S, [PI64, P, I64]),
    "ct_tensor_stride": (S, [PI64, P, I64]),
    "ct_tensor_numel": (I64, [P]),
    "ct_tensor_storage_offset": (I64, [P]),
    "ct_tensor_element_size": (SZ, [P]),
    "ct_tensor_nbytes": (SZ, [P]),
    "ct_tensor_dtype": (I32, [P]),
    "ct_tensor_device_type": (I32, [P]),
    "ct_tensor_device_index": (I32, [P]),
    "ct_tensor_data_ptr": (P, [P]),
    "ct_tensor_is_contiguous": (I32, [P]),
    "ct_tensor_requires_grad": (I32, [P]),
    "ct_tensor_is_defined": (I32, [P]),
    "ct_tensor_to_string": (S, [PP, P]),
    "ct_tensor_equal": (S, [PI32, P, P]),
    "ct_tensor_allclose": (S, [PI32, P, P, D, D, I32]),
    # autograd
    "ct_tensor_set_requires_grad": (S, [P, I32]),
    "ct_tensor_backward": (S, [P, P, I32, I32]),
    "ct_tensor_grad": (S, [PP, P]),
    "ct_tensor_set_grad": (S, [P, P]),
    "ct_tensor_zero_grad": (S, [P]),
    "ct_tensor_is_leaf": (I32, [P]),
    "ct_tensor_grad_fn_name": (S, [PP, P]),
    "ct_autograd_grad": (S, [PP, PP, SZ, PP, SZ, PP, I32, I32, I32]),
    "ct_autograd_function_apply": (S, [PP, SZ, PP, SZ, STR, AG_FORWARD, AG_BACKWARD, P,
                                       CTX_DESTROY]),
    # DLPack
    "ct_tensor_to_dlpack": (S, [PP, P, I32, I64]),
    "ct_tensor_to_dlpack_versioned": (S, [PP, P, I32, I64]),
    "ct_tensor_from_dlpack": (S, [PP, P]),
    "ct_tensor_from_dlpack_versioned": (S, [PP, P]),
    # values
    "ct_value_free": (None, [P]),
    "ct_value_tag": (I32, [P]),
    "ct_value_ref": (S, [PP, P]),
    "ct_value_none": (S, [PP]),
    "ct_value_from_bool": (S, [PP, I32]),
    "ct_value_from_int": (S, [PP, I64]),
    "ct_value_from_double": (S, [PP, D]),
    "ct_value_from_string": (S, [PP, P, SZ]),
    "ct_value_from_tensor": (S, [PP, P]),
    "ct_value_from_device": (S, [PP, I32, I32]),
    "ct_value_from_module": (S, [PP, P]),
    "ct_value_list": (S, [PP, PP, SZ]),
    "ct_value_int_list": (S, [PP, PI64, SZ]),
    "ct_value_double_list": (S, [PP, POINTER(c_double), SZ]),
    "ct_value_bool_list": (S, [PP, PI32, SZ]),
    "ct_value_tensor_list": (S, [PP, PP, SZ]),
    "ct_value_tuple": (S, [PP, PP, SZ]),
    "ct_value_dict": (S, [PP, PP, PP, SZ]),
    "ct_value_to_bool": (S, [PI32, P]),
    "ct_value_to_int": (S, [PI64, P]),
    "ct_value_to_double": (S, [POINTER(c_double), P]),
    "ct_value_to_string": (S, [PP, PSZ, P]),
    "ct_value_to_tensor": (S, [PP, P]),
    "ct_value_to_device": (S, [PI32, PI32, P]),
    "ct_value_to_module": (S, [PP, P]),
    "ct_value_len": (S, [PSZ, P]),
    "ct_value_get": (S, [PP, P, SZ]),
    "ct_value_dict_item": (S, [PP, PP, P, SZ]),
    "ct_value_dict_get": (S, [PP, P, P]),
    "ct_value_dict_get_str": (S, [PP, P, STR]),
    "ct_value_to_repr": (S, [PP, P]),
    "ct_value_type_str": (S, [PP, P]),
    # pickles
    "ct_pickle_load": (S, [PP, STR]),
    "ct_pickle_load_buffer": (S, [PP, P, SZ]),
    "ct_pickle_save": (S, [P, STR]),
    "ct_pickle_save_buffer": (S, [PP, PSZ, P]),
    # modules
    "ct_module_load": (S, [PP, STR, I32, I32]),
    "ct_module_load_buffer": (S, [PP, P, SZ, I32, I32]),
    "ct_module_free": (None, [P]),
    "ct_module_extra_files": (S, [PP, P]),
    "ct_module_forward": (S, [PP, P, PP, SZ]),
    "ct_module_call": (S, [PP, P, STR, PP, SZ, PSTR, PP, SZ]),
    "ct_module_methods": (S, [PP, P]),
    "ct_module_named_parameters": (S, [PP, P, I32]),
    "ct_module_named_buffers": (S, [PP, P, I32]),
    "ct_module_named_attributes": (S, [PP, P, I32]),
    "ct_module_named_children": (S, [PP, P, I32]),
    "ct_module_get_attr": (S, [PP, P, STR]),
    "ct_module_set_attr": (S, [P, STR, P]),
    "ct_module_to": (S, [P, I32, I32, I32, I32]),
    "ct_module_train": (S, [P, I32]),
    "ct_module_eval": (S, [P]),
    "ct_module_is_training": (I32, [P]),
    "ct_module_clone": (S, [PP, P]),
    "ct_module_save": (S, [P, STR, P]),
    "ct_module_save_buffer": (S, [PP, PSZ, P, P]),
    "ct_module_freeze": (S, [PP, P]),
    "ct_module_optimize_for_inference": (S, [PP, P]),
    "ct_module_new": (S, [PP, STR]),
    "ct_module_register_parameter": (S, [P, STR, P, I32]),
    "ct_module_register_buffer": (S, [P, STR, P]),
    "ct_module_register_module": (S, [P, STR, P]),
    "ct_module_define": (S, [P, STR]),
    "ct_script_compile": (S, [PP, STR]),
    "ct_script_free": (None, [P]),
    "ct_script_functions": (S, [PP, P]),
    "ct_script_call": (S, [PP, P, STR, PP, SZ, PSTR, PP, SZ]),
    # ops
    "ct_op_find": (S, [PP, STR, STR]),
    "ct_op_free": (None, [P]),
    "ct_op_num_overloads": (SZ, [P]),
    "ct_op_schema": (S, [PSTR, P, SZ]),
    "ct_op_num_arguments": (S, [PSZ, P, SZ]),
    "ct_op_argument": (S, [PSTR, PSTR, PSTR, PI32, P, SZ, SZ]),
    "ct_op_num_returns": (S, [PSZ, P, SZ]),
    "ct_op_return": (S, [PSTR, PSTR, P, SZ, SZ]),
    "ct_op_call": (S, [PP, P, PP, SZ, PSTR, PP, SZ]),
    "ct_op_call_tensors": (S, [PP, SZ, P, PP, SZ]),
    "ct_op_call_name": (S, [PP, STR, PP, SZ, PSTR, PP, SZ]),
    "ct_op_list": (S, [PP]),
    "ct_op_register": (S, [STR, OP_FN, P]),
    # CUDA
    "ct_cuda_device_count": (I32, []),
    "ct_cuda_current_device": (S, [PI32]),
    "ct_cuda_set_device": (S, [I32]),
    "ct_cuda_synchronize": (S, [I32]),
    "ct_cuda_memory_allocated": (S, [PSZ, I32]),
    "ct_cuda_memory_reserved": (S, [PSZ, I32]),
    "ct_cuda_empty_cache": (S, []),
    "ct_cuda_manual_seed_all": (S, [c_uint64]),
    "ct_cuda_current_stream": (S, [PP, I32]),
    "ct_cuda_set_stream": (S, [PP, I32, P]),
    "ct_cuda_stream_synchronize": (S, [P, I32]),
    "ct_cuda_stream_wait_stream": (S, [P, P, I32]),
}


class _Missing:
    """Stands in for a function the loaded library lacks (older build)."""

    def __init__(self, name):
        self.__name__ = name

    def __call__(self, *a):
        raise NotSupportedError("%s is not exported by %s (library older than the binding?)"
                                % (self.__name__, LIBRARY_PATH))


class _Funcs:
    pass


#: Functions that release the GIL while they run (ctypes.CDLL): anything that
#: may run for long or may call back into Python from another thread.
C = _Funcs()
#: The same functions called with the GIL held (ctypes.PyDLL): used only for
#: cheap metadata calls, where releasing the GIL costs more than the call.
G = _Funcs()
MISSING = []
for _name, (_res, _args) in SIGNATURES.items():
    for _l, _ns in ((lib, C), (plib, G)):
        try:
            _f = getattr(_l, _name)
        except AttributeError:
            if _ns is C:
                MISSING.append(_name)
            setattr(_ns, _name[3:], _Missing(_name))
            continue
        _f.restype = _res
        _f.argtypes = _args
        setattr(_ns, _name[3:], _f)
del _name, _res, _args, _l, _ns

#: Hot-path functions declared WITHOUT argtypes (ctypes' per-argument
#: from_param conversion costs more than the call itself): callers pass ctypes
#: objects only (c_void_p, c_size_t, arrays, byref, None).
RAW = _Funcs()
_rawlib = ctypes.CDLL(LIBRARY_PATH, mode=getattr(os, "RTLD_GLOBAL", 0) | ctypes.DEFAULT_MODE)
for _name in ("ct_op_call", "ct_op_call_tensors", "ct_module_call", "ct_module_forward",
              "ct_tensor_from_blob"):
    _f = getattr(_rawlib, _name, None)
    if _f is not None:
        _f.restype = c_int32
        setattr(RAW, _name[3:], _f)
    else:
        setattr(RAW, _name[3:], _Missing(_name))
#: c_size_t constants for argument counts.
SIZES = tuple(c_size_t(i) for i in range(17))
#: c_int32 constants for dtype codes, device codes and -1.
I32 = {i: c_int32(i) for i in range(-1, 17)}


# ---------------------------------------------------------------------------
# Status checking
# ---------------------------------------------------------------------------

_last_error = G.last_error
_last_error_code = G.last_error_code


def error_from_status(status):
    """The exception for a failed call: a ctorch.Error subclass carrying the
    full ct_last_error() message and the code. When the failure came from a
    Python callback (CT_ERR_CALLBACK), the callback's original exception is
    returned instead, with the ctorch error as its __cause__."""
    msg = _last_error()
    msg = msg.decode("utf-8", "replace") if msg else ""
    if not msg:
        msg = "ctorch call failed with status %s" % STATUS_NAMES.get(status, status)
    err = _ERRORS.get(status, Error)(msg, status)
    if status == 9:
        from . import _callbacks
        pending = _callbacks.take_pending(msg)
        if pending is not None:
            pending.__cause__ = err
            return pending
    return err


def _check(status):
    """Raises the ctorch.Error subclass matching a non-zero status."""
    if status:
        raise error_from_status(status)


check = _check


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------

_free = C.free


def take_string(p):
    """Decodes and ct_free()s a caller-owned char* (a c_void_p value)."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        _free(p)


def int64_array(seq):
    seq = tuple(seq)
    return (c_int64 * max(len(seq), 1))(*seq), len(seq)


class _TLS(threading.local):
    """Per-thread argument array and out-parameter for the hot path (a
    foreign-op callback that re-enters on the same thread is safe: ctorch has
    copied the arguments before it runs the op)."""

    def __init__(self):
        self.out = c_void_p()
        self.out_ref = ctypes.byref(self.out)
        self.args = (c_void_p * 16)()
        # the three together, for the hot path (one thread-local lookup)
        self.frame = (self.args, self.out_ref, self.out)
        # ct_op_call_tensors: input handles; out_ref doubles as the one-slot
        # outputs array
        self.tensors = (c_void_p * 16)()
        self.tframe = (self.tensors, self.out_ref, self.out)


tls = _TLS()
