"""Library-wide settings: versions, threads, seeds, grad modes, CUDA."""

import functools
import os
from ctypes import byref, c_int32, c_size_t, c_void_p

from . import _lib
from ._lib import C, G, check


def version():
    """libctorch's version string (ct_version)."""
    return G.version().decode()


def torch_version():
    """The LibTorch version libctorch was built against."""
    return G.torch_version().decode()


def abi_version():
    return G.abi_version()


def manual_seed(seed):
    check(G.manual_seed(int(seed) & 0xFFFFFFFFFFFFFFFF))


def get_num_threads():
    return G.get_num_threads()


def set_num_threads(n):
    check(G.set_num_threads(n))


def get_num_interop_threads():
    return G.get_num_interop_threads()


def set_num_interop_threads(n):
    check(G.set_num_interop_threads(n))


def load_library(path):
    """dlopen()s a library that registers TorchScript ops (e.g. torchvision's)."""
    check(C.load_library(os.fsencode(path)))


def set_cpp_backtraces(enabled):
    """Restores (True) or disables (False, the default) LibTorch's C++
    backtraces in error messages. Process-wide; see ct_set_cpp_backtraces."""
    G.set_cpp_backtraces(1 if enabled else 0)


def is_grad_enabled():
    return bool(G.grad_mode_is_enabled())


class _GradMode:
    """Context manager and decorator setting grad mode for this thread."""

    def __init__(self, enabled):
        self.enabled = enabled
        self.prev = []

    def __enter__(self):
        self.prev.append(G.grad_mode_is_enabled())
        G.grad_mode_set(1 if self.enabled else 0)
        return self

    def __exit__(self, *exc):
        G.grad_mode_set(self.prev.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with _GradMode(self.enabled):
                return fn(*a, **k)
        return wrapper


class no_grad(_GradMode):
    """with ctorch.no_grad(): ... (also a decorator)."""

    def __init__(self):
        super().__init__(False)


class enable_grad(_GradMode):
    def __init__(self):
        super().__init__(True)


class inference_mode:
    """with ctorch.inference_mode(): ... (ct_inference_mode_push/pop)."""

    def __init__(self, mode=True):
        self.mode = mode

    def __enter__(self):
        check(G.inference_mode_push(1 if self.mode else 0))
        return self

    def __exit__(self, *exc):
        check(G.inference_mode_pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*a, **k):
            with inference_mode(self.mode):
                return fn(*a, **k)
        return wrapper


class _Cuda:
    """ctorch.cuda: queries and controls for CUDA devices (every function
    exists in every build; without CUDA they raise NotSupportedError, and
    is_available() is False)."""

    @staticmethod
    def is_compiled():
        return bool(G.cuda_is_compiled())

    @staticmethod
    def is_available():
        return bool(G.cuda_is_available())

    @staticmethod
    def device_count():
        return G.cuda_device_count()

    @staticmethod
    def current_device():
        o = c_int32()
        check(G.cuda_current_device(byref(o)))
        return o.value

    @staticmethod
    def set_device(d):
        check(G.cuda_set_device(int(d)))

    @staticmethod
    def synchronize(device=-1):
        check(C.cuda_synchronize(-1 if device is None else int(device)))

    @staticmethod
    def memory_allocated(device=-1):
        o = c_size_t()
        check(G.cuda_memory_allocated(byref(o), device))
        return o.value

    @staticmethod
    def memory_reserved(device=-1):
        o = c_size_t()
        check(G.cuda_memory_reserved(byref(o), device))
        return o.value

    @staticmethod
    def empty_cache():
        check(C.cuda_empty_cache())

    @staticmethod
    def manual_seed_all(seed):
        check(G.cuda_manual_seed_all(int(seed) & 0xFFFFFFFFFFFFFFFF))

    @staticmethod
    def current_stream(device=-1):
        """torch's current cudaStream_t on a device, as an int."""
        o = c_void_p()
        check(G.cuda_current_stream(byref(o), device))
        return o.value or 0

    @staticmethod
    def set_stream(stream, device=-1):
        """Makes `stream` (a cudaStream_t as int) torch's current stream on the
        calling thread; returns the previous one."""
        prev = c_void_p()
        check(G.cuda_set_stream(byref(prev), device, stream))
        return prev.value or 0


cuda = _Cuda()
