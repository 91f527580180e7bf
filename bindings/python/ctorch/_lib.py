"""libctorch, opened once: named constants, the one signature table, errors.

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
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_int32, c_int64,
                    c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)
from typing import Any, Dict, Iterator, List, Optional, Tuple

#: The ABI version of include/ctorch.h this binding was written for.
ABI_VERSION = 1

# ---- named constants of include/ctorch.h ------------------------------------

# ct_status
CT_OK = 0
CT_ERR_INVALID_ARGUMENT = 1
CT_ERR_TYPE = 2
CT_ERR_INDEX = 3
CT_ERR_NOT_FOUND = 4
CT_ERR_IO = 5
CT_ERR_OUT_OF_MEMORY = 6
CT_ERR_NOT_SUPPORTED = 7
CT_ERR_TORCH = 8
CT_ERR_CALLBACK = 9
CT_ERR_INTERNAL = 10

STATUS_NAMES = {CT_OK: "CT_OK", CT_ERR_INVALID_ARGUMENT: "CT_ERR_INVALID_ARGUMENT",
                CT_ERR_TYPE: "CT_ERR_TYPE", CT_ERR_INDEX: "CT_ERR_INDEX",
                CT_ERR_NOT_FOUND: "CT_ERR_NOT_FOUND", CT_ERR_IO: "CT_ERR_IO",
                CT_ERR_OUT_OF_MEMORY: "CT_ERR_OUT_OF_MEMORY",
                CT_ERR_NOT_SUPPORTED: "CT_ERR_NOT_SUPPORTED", CT_ERR_TORCH: "CT_ERR_TORCH",
                CT_ERR_CALLBACK: "CT_ERR_CALLBACK", CT_ERR_INTERNAL: "CT_ERR_INTERNAL"}

# dtype codes
CT_DTYPE_KEEP = -1
CT_BOOL = 1
CT_UINT8 = 2
CT_INT8 = 3
CT_INT16 = 4
CT_INT32 = 5
CT_INT64 = 6
CT_FLOAT16 = 7
CT_BFLOAT16 = 8
CT_FLOAT32 = 9
CT_FLOAT64 = 10
CT_COMPLEX64 = 11
CT_COMPLEX128 = 12
CT_UINT16 = 13
CT_UINT32 = 14
CT_UINT64 = 15
CT_FLOAT8_E4M3FN = 16
CT_FLOAT8_E5M2 = 17
CT_FLOAT8_E4M3FNUZ = 18
CT_FLOAT8_E5M2FNUZ = 19
CT_QINT8 = 20
CT_QUINT8 = 21
CT_QINT32 = 22
CT_QUINT4X2 = 23

# device codes; the index -1 means "none / current"
CT_DEVICE_KEEP = 0
CT_DEVICE_CPU = 1
CT_DEVICE_CUDA = 2
CT_DEVICE_META = 3
CT_DEVICE_MPS = 4
CT_DEVICE_XPU = 5
CT_DEVICE_HIP = 6
CT_DEVICE_PRIVATEUSE1 = 7
NO_INDEX = -1

# layout codes (names as torch's Python prints them)
CT_LAYOUT_STRIDED = 0
CT_LAYOUT_SPARSE_COO = 1
CT_LAYOUT_SPARSE_CSR = 2
CT_LAYOUT_SPARSE_CSC = 3
CT_LAYOUT_SPARSE_BSR = 4
CT_LAYOUT_SPARSE_BSC = 5
CT_LAYOUT_MKLDNN = 6
LAYOUT_NAMES = {CT_LAYOUT_STRIDED: "strided", CT_LAYOUT_SPARSE_COO: "sparse_coo",
                CT_LAYOUT_SPARSE_CSR: "sparse_csr", CT_LAYOUT_SPARSE_CSC: "sparse_csc",
                CT_LAYOUT_SPARSE_BSR: "sparse_bsr", CT_LAYOUT_SPARSE_BSC: "sparse_bsc",
                CT_LAYOUT_MKLDNN: "_mkldnn"}

# ct_value tags
CT_VALUE_NONE = 0
CT_VALUE_BOOL = 1
CT_VALUE_INT = 2
CT_VALUE_DOUBLE = 3
CT_VALUE_STRING = 4
CT_VALUE_TENSOR = 5
CT_VALUE_DEVICE = 6
CT_VALUE_LIST = 7
CT_VALUE_TUPLE = 8
CT_VALUE_DICT = 9
CT_VALUE_INT_LIST = 10
CT_VALUE_DOUBLE_LIST = 11
CT_VALUE_BOOL_LIST = 12
CT_VALUE_TENSOR_LIST = 13
CT_VALUE_OBJECT = 14
CT_VALUE_OTHER = 15
#: ct_module_method_results: what ct_module_forward_tensors gives for a method
CT_RESULT_OTHER, CT_RESULT_TENSOR, CT_RESULT_TUPLE, CT_RESULT_LIST = 0, 1, 2, 3

# DLPack device types (dlpack.h) used by the binding
DL_CPU = 1
DL_CUDA = 2
DL_ROCM = 10
# DLPack stream values (array API): the legacy default CUDA stream
DL_STREAM_LEGACY = 1
DLPACK_FLAG_BITMASK_READ_ONLY = 1
DLPACK_FLAG_BITMASK_IS_COPIED = 2


# ---- errors -----------------------------------------------------------------

class Error(Exception):
    """Base class of every error raised by ctorch.

    ``code`` is the C status (``CT_ERR_*``) and ``message`` the full text of
    ``ct_last_error()`` (first line short; C++ detail such as a TorchScript
    traceback may follow)."""

    code: Optional[int] = None

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidArgumentError(Error, ValueError):
    code = CT_ERR_INVALID_ARGUMENT


class IntRangeError(InvalidArgumentError, OverflowError):
    """A Python int that does not fit the C integer type it is passed as,
    caught before ctypes would truncate it (see int_arg). Also an
    OverflowError, as Python's own int conversions raise."""


class CTorchTypeError(Error, TypeError):
    code = CT_ERR_TYPE


class CTorchIndexError(Error, IndexError):
    code = CT_ERR_INDEX


class NotFoundError(Error, LookupError):
    code = CT_ERR_NOT_FOUND


class CTorchIOError(Error, OSError):
    code = CT_ERR_IO

    def __init__(self, message: str, code: Optional[int] = None) -> None:
        Error.__init__(self, message, code)


class CTorchMemoryError(Error, MemoryError):
    code = CT_ERR_OUT_OF_MEMORY


class NotSupportedError(Error, NotImplementedError):
    code = CT_ERR_NOT_SUPPORTED


class TorchError(Error, RuntimeError):
    code = CT_ERR_TORCH


class CallbackError(Error, RuntimeError):
    code = CT_ERR_CALLBACK


class InternalError(Error, RuntimeError):
    code = CT_ERR_INTERNAL


class LibraryNotFoundError(Error, ImportError):
    """libctorch.so could not be found or loaded, or has the wrong ABI."""


_ERRORS = {c.code: c for c in (InvalidArgumentError, CTorchTypeError, CTorchIndexError,
                               NotFoundError, CTorchIOError, CTorchMemoryError,
                               NotSupportedError, TorchError, CallbackError, InternalError)}


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


lib, LIBRARY_PATH = _open()
#: The same loaded library (no second dlopen), called with the GIL held.
plib = ctypes.PyDLL(LIBRARY_PATH, handle=lib._handle)


# ---- structures ------------------------------------------------------------------

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


class TensorInfo(Structure):
    """ct_tensor_info: a tensor's metadata in one call (ct_tensor_info_get)."""
    _fields_ = [("size", c_size_t), ("dtype", c_int32), ("device_type", c_int32),
                ("device_index", c_int32), ("ndim", c_int32), ("requires_grad", c_int32),
                ("is_contiguous", c_int32), ("numel", c_int64), ("storage_offset", c_int64),
                ("data", c_void_p), ("sizes", POINTER(c_int64)),
                ("strides", POINTER(c_int64))]


# ---- callback types ----------------------------------------------------------------

DELETER = CFUNCTYPE(None, c_void_p, c_void_p)
OP_FN = CFUNCTYPE(c_int32, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p))
AG_FORWARD = CFUNCTYPE(c_int32, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p),
                       c_size_t)
AG_BACKWARD = CFUNCTYPE(c_int32, c_void_p, POINTER(c_void_p), c_size_t, POINTER(c_void_p),
                        c_size_t)
CTX_DESTROY = CFUNCTYPE(None, c_void_p)


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
_FACT = [PP, PI64, SZ, I32, I32, I32, I32]

SIGNATURES: Dict[str, Tuple[Any, List[Any]]] = {
    # versions
    "ct_version": (STR, []),
    "ct_abi_version": (I32, []),
    "ct_torch_version": (STR, []),
    # errors and warnings
    "ct_last_error": (STR, []),
    "ct_last_error_code": (S, []),
    "ct_set_error": (S, [S, STR]),
    "ct_clear_error": (None, []),
    "ct_free": (None, [P]),
    "ct_set_cpp_backtraces": (None, [I32]),
    "ct_warnings_count": (SZ, []),
    "ct_warnings_get": (STR, [SZ]),
    "ct_warnings_clear": (None, []),
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
    "ct_tensor_info_get": (S, [POINTER(TensorInfo), P]),
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
    "ct_tensor_layout": (S, [PI32, P]),
    # LibTorch 2.x kinds: dtype support, memory formats, quantized, sparse
    "ct_dtype_is_supported": (I32, [I32]),
    "ct_tensor_is_contiguous_format": (S, [PI32, P, I32]),
    "ct_tensor_contiguous_format": (S, [PP, P, I32]),
    "ct_tensor_suggest_memory_format": (S, [PI32, P]),
    "ct_tensor_q_scheme": (S, [PI32, P]),
    "ct_tensor_q_scale": (S, [POINTER(D), P]),
    "ct_tensor_q_zero_point": (S, [PI64, P]),
    "ct_tensor_q_per_channel_scales": (S, [PP, P]),
    "ct_tensor_q_per_channel_zero_points": (S, [PP, P]),
    "ct_tensor_q_per_channel_axis": (S, [PI64, P]),
    "ct_tensor_int_repr": (S, [PP, P]),
    "ct_tensor_dequantize": (S, [PP, P]),
    "ct_tensor_quantize_per_tensor": (S, [PP, P, D, I64, I32]),
    "ct_tensor_quantize_per_channel": (S, [PP, P, P, P, I64, I32]),
    "ct_tensor_make_per_tensor_quantized": (S, [PP, P, D, I64]),
    "ct_tensor_make_per_channel_quantized": (S, [PP, P, P, P, I64]),
    "ct_tensor_sparse_indices": (S, [PP, P]),
    "ct_tensor_sparse_values": (S, [PP, P]),
    "ct_tensor_sparse_compressed_indices": (S, [PP, P]),
    "ct_tensor_sparse_plain_indices": (S, [PP, P]),
    "ct_tensor_to_dense": (S, [PP, P]),
    "ct_value_object_class": (S, [PSTR, P]),
    "ct_value_object_state": (S, [PP, P]),
    "ct_value_object_args": (S, [PP, P]),
    # TorchScript CPU fuser switch
    "ct_cpu_fuser_set": (S, [I32]),
    "ct_cpu_fuser_is_enabled": (I32, []),
    "ct_lstm_guard_set": (S, [I32]),
    "ct_lstm_guard_state": (I32, []),
    "ct_lstm_guard_check": (S, [POINTER(c_double)]),
    "ct_tensor_data_ptr": (P, [P]),
    "ct_tensor_is_contiguous": (I32, [P]),
    "ct_tensor_requires_grad": (I32, [P]),
    "ct_tensor_is_defined": (I32, [P]),
    "ct_tensor_defined": (I32, [P]),
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
    "ct_pickle_verify": (S, [STR]),
    # modules
    "ct_module_load": (S, [PP, STR, I32, I32]),
    "ct_module_load_buffer": (S, [PP, P, SZ, I32, I32]),
    "ct_module_verify": (S, [STR]),
    "ct_module_free": (None, [P]),
    "ct_module_extra_files": (S, [PP, P]),
    "ct_module_forward": (S, [PP, P, PP, SZ]),
    "ct_module_forward_tensors": (S, [PA, SZ, PSZ, P, STR, PA, SZ]),
    "ct_module_method_results": (S, [P, P, P, STR]),
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
    # AOTInductor packages (bindings/python/ctorch/package.py)
    "ct_package_load": (S, [PP, STR, STR]),
    "ct_package_load_buffer": (S, [PP, P, SZ, STR]),
    "ct_package_free": (None, [P]),
    "ct_package_run": (S, [PP, SZ, PSZ, P, PP, SZ]),
    "ct_package_metadata": (S, [PP, P]),
    "ct_package_call_spec": (S, [PP, P]),
    "ct_package_constant_names": (S, [PP, P]),
    "ct_package_update_constants": (S, [P, PSTR, PP, SZ]),
    "ct_package_device": (S, [PI32, PI32, P]),
    # ops
    "ct_op_find": (S, [PP, STR, STR]),
    "ct_op_free": (None, [P]),
    "ct_op_num_overloads": (SZ, [P]),
    "ct_op_schema": (S, [PSTR, P, SZ]),
    "ct_op_num_arguments": (S, [PSZ, P, SZ]),
    "ct_op_argument": (S, [PSTR, PSTR, PSTR, PI32, P, SZ, SZ]),
    "ct_op_num_returns": (S, [PSZ, P, SZ]),
    "ct_op_return": (S, [PSTR, PSTR, P, SZ, SZ]),
    "ct_op_tensors_only": (S, [PI32, P, SZ]),
    "ct_op_call": (S, [PP, P, PP, SZ, PSTR, PP, SZ]),
    "ct_op_call_tensors": (S, [PA, SZ, P, PA, SZ]),
    "ct_op_call_tensors_values": (S, [PA, SZ, P, PA, SZ, PA, SZ]),
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

class _Funcs:
    """Attribute namespace of C functions, named without the ct_ prefix."""

    def __getattr__(self, name: str) -> Any:  # for mypy: attributes are set below
        raise AttributeError(name)


#: Functions that release the GIL while they run (CDLL).
C = _Funcs()
#: The same functions called with the GIL held (PyDLL).
G = _Funcs()

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
            f = getattr(dll, name)
            f.restype = res
            f.argtypes = args
            setattr(ns, name[3:], f)


_bind()


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
    err = _ERRORS.get(status, Error)(msg, status)
    if status == CT_ERR_CALLBACK:
        from . import _callbacks
        pending = _callbacks.take_pending(msg)
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


#: c_size_t objects for small counts (ctypes converts its own objects fastest).
SIZES = tuple(c_size_t(i) for i in range(17))


class _TLS(threading.local):
    """Per-thread argument arrays and out-parameter for the hot paths (a
    foreign-op callback that re-enters on the same thread is safe: ctorch has
    copied the arguments before it runs the op)."""

    def __init__(self) -> None:
        self.out = c_void_p()
        self.out_ref = ctypes.byref(self.out)
        self.args = (c_void_p * 16)()       # ct_value* arguments
        self.tensors = (c_void_p * 16)()    # ct_tensor* inputs
        self.outputs = (c_void_p * 16)()    # ct_tensor* outputs
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
