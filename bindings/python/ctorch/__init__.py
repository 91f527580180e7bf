"""ctorch: LibTorch through libctorch's stable C ABI, in pure Python (ctypes).

Needs only the standard library. numpy is used when you ask for numpy arrays
(Tensor.numpy(), from_numpy); torch is never imported.

    >>> import ctorch
    >>> a = ctorch.ones(2, 3)
    >>> (a + a).sum().item()
    12.0

Layout: _lib (the library, constants, signatures, errors), _types (dtype,
device), _handle (the Tensor constructor), _values (Python <-> ct_value),
_call (the marshalling path), tensor (Tensor), _interop (numpy, DLPack),
_factories, _format (printing), _functions (ctorch.cat & co), _module
(Module, Script, pickles), ops, autograd, library, _misc (settings).
"""

from typing import TYPE_CHECKING

from . import _lib
from ._torch_match import BUILT_WITH_TORCH  # noqa: E402  the torch a wheel was built for
from ._lib import (ABI_VERSION, LIBRARY_PATH, Error, InvalidArgumentError, CTorchTypeError,
                   CTorchIndexError, NotFoundError, CTorchIOError, CTorchMemoryError,
                   NotSupportedError, TorchError, CallbackError, InternalError,
                   LibraryNotFoundError, CTorchFileNotFoundError, ItemError,
                   CTorchTimeoutError)
from ._types import (dtype, device, bool_, uint8, int8, int16, int32, int64, float16,
                     bfloat16, float32, float64, complex64, complex128, uint16, uint32, uint64,
                     float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, qint8, quint8,
                     qint32, quint4x2, get_dtype, get_device)
from ._values import Value
from .tensor import Tensor, values_indices
from ._interop import from_numpy, from_dlpack
from ._factories import (tensor, as_tensor, empty, zeros, ones, full, arange, eye, rand, randn,
                         empty_like, zeros_like, ones_like, full_like, rand_like, randn_like,
                         scalar_tensor)
from ._format import set_printoptions
from ._module import Module, load, load_pickle, save_pickle, compile_script, Script
from .package import Package, load_package
from . import ops
from . import autograd
from . import library
from . import backends
from . import optim, nn, amp
from .amp import autocast
from ._generator import Generator, default_generator
from .backends import (use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                       is_deterministic_algorithms_warn_only_enabled,
                       get_float32_matmul_precision, set_float32_matmul_precision)
from ._functions import FUNCTIONS as _FUNCTIONS
from ._misc import (version, torch_version, abi_version, cuda, manual_seed, get_num_threads,
                    set_num_threads, get_num_interop_threads, set_num_interop_threads,
                    no_grad, enable_grad, inference_mode, is_grad_enabled, load_library,
                    set_cpp_backtraces, lstm_guard_set, lstm_guard_state, lstm_guard_check)

if TYPE_CHECKING:  # typed from the aten schemas (_function_ops.pyi, made by gen_stubs.py)
    from ._function_ops import *  # noqa: F401,F403
else:
    globals().update(_FUNCTIONS)  # cat, stack, matmul, where, relu, softmax ... (_functions)

bool = bool_  # ctorch.bool, as torch.bool (shadows the builtin only inside this module)
half = float16
float = float32
double = float64
long = int64
int = int32
short = int16
cfloat = complex64
cdouble = complex128

__version__ = version()  # the library's: include/ctorch.h is the one home of the version

# Aliases for the error classes under their C names.
TypeError_ = CTorchTypeError
IndexError_ = CTorchIndexError


__all__ = ["Tensor", "Module", "Value", "Script", "dtype", "device", "tensor", "as_tensor",
    "from_numpy", "from_dlpack", "empty", "zeros", "ones", "full", "arange", "eye", "rand",
    "randn", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "scalar_tensor", "load", "load_pickle", "save_pickle", "compile_script", "ops", "autograd",
    "library", "no_grad", "enable_grad", "inference_mode", "is_grad_enabled", "manual_seed",
    "cuda", "version", "torch_version", "abi_version", "get_num_threads", "set_num_threads",
    "get_num_interop_threads", "set_num_interop_threads", "load_library", "set_cpp_backtraces",
    "lstm_guard_set", "lstm_guard_state", "lstm_guard_check",
    "set_printoptions", "values_indices", "get_dtype", "get_device", "ABI_VERSION",
    "LIBRARY_PATH", "BUILT_WITH_TORCH", "Error", "InvalidArgumentError", "CTorchTypeError", "CTorchIndexError",
    "NotFoundError", "CTorchIOError", "CTorchMemoryError", "NotSupportedError", "TorchError",
    "CallbackError", "InternalError", "LibraryNotFoundError", "CTorchFileNotFoundError",
    "ItemError", "CTorchTimeoutError", "bool_", "uint8", "int8", "int16",
    "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "uint16", "uint32", "uint64", "bool", "half", "float", "double", "long", "int", "short",
    "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "qint8", "quint8", "qint32", "quint4x2", "backends", "Generator", "default_generator",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
    "is_deterministic_algorithms_warn_only_enabled", "get_float32_matmul_precision",
    "set_float32_matmul_precision", "optim", "nn", "amp", "autocast"]
__all__ += ["abs", "add", "all", "allclose", "any", "argmax", "argmin",
    "bmm", "cat", "ceil", "chunk", "clamp", "concat", "conv2d", "cos", "cumsum", "div", "dot",
    "dropout", "einsum", "equal", "erf", "exp", "flatten", "flip", "floor", "gather", "gelu",
    "hstack", "isinf", "isnan", "kthvalue", "layer_norm", "linear", "log", "log_softmax",
    "logical_not", "masked_fill", "matmul", "max", "maximum", "mean", "median", "min",
    "minimum", "mm", "mode", "mul", "neg", "outer", "permute", "pow", "prod", "randperm",
    "relu", "reshape", "roll", "round", "sigmoid", "sign", "silu", "sin", "softmax", "sort",
    "split", "sqrt", "squeeze", "stack", "std", "sub", "sum", "tanh", "topk", "transpose",
    "tril", "triu", "unsqueeze", "var", "vstack", "where"]
