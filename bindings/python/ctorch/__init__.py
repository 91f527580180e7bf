"""ctorch: LibTorch through libctorch's stable C ABI, in pure Python (ctypes).

Needs only the standard library. numpy is used when you ask for numpy arrays
(Tensor.numpy(), from_numpy); torch is never imported.

    >>> import ctorch
    >>> a = ctorch.ones(2, 3)
    >>> (a + a).sum().item()
    12.0
    >>> m = ctorch.load("model.pt")
    >>> y = m(ctorch.randn(1, 3, 224, 224))
"""

from . import _lib
from ._lib import (ABI_VERSION, LIBRARY_PATH, Error, InvalidArgumentError, CTorchTypeError,
                   CTorchIndexError, NotFoundError, CTorchIOError, CTorchMemoryError,
                   NotSupportedError, TorchError, CallbackError, InternalError,
                   LibraryNotFoundError)
from ._types import (dtype, device, bool_, uint8, int8, int16, int32, int64, float16,
                     bfloat16, float32, float64, complex64, complex128, get_dtype, get_device)
from ._core import (Tensor, Value, tensor, as_tensor, from_numpy, from_dlpack, empty, zeros,
                    ones, full, arange, eye, rand, randn, empty_like, zeros_like, ones_like,
                    full_like, rand_like, randn_like, scalar_tensor)
from ._module import Module, load, load_pickle, save_pickle, compile_script, Script
from . import ops
from . import autograd
from . import library
from ._misc import (version, torch_version, abi_version, cuda, manual_seed, get_num_threads,
                    set_num_threads, get_num_interop_threads, set_num_interop_threads,
                    no_grad, enable_grad, inference_mode, is_grad_enabled, load_library,
                    set_cpp_backtraces)

bool = bool_  # ctorch.bool, as torch.bool (shadows the builtin only inside this module)
half = float16
float = float32
double = float64
long = int64
int = int32
short = int16
cfloat = complex64
cdouble = complex128

__version__ = "0.1.0"

# Aliases for the error classes under their C names.
TypeError_ = CTorchTypeError
IndexError_ = CTorchIndexError

__all__ = [
    "Tensor", "Module", "Value", "Script", "dtype", "device", "tensor", "as_tensor",
    "from_numpy", "from_dlpack", "empty", "zeros", "ones", "full", "arange", "eye", "rand",
    "randn", "empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
    "load", "load_pickle", "save_pickle", "compile_script", "ops", "autograd", "library",
    "no_grad", "enable_grad", "inference_mode", "manual_seed", "cuda", "Error",
    "InvalidArgumentError", "CTorchTypeError", "CTorchIndexError", "NotFoundError",
    "CTorchIOError", "CTorchMemoryError", "NotSupportedError", "TorchError", "CallbackError",
    "InternalError", "LibraryNotFoundError",
]
