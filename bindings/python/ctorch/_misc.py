"""Library-wide settings: versions, threads, seeds, grad modes, CUDA."""

import functools
import os
from ctypes import byref, c_double, c_int32, c_size_t, c_void_p
from typing import Any, Callable, List, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

from ._cuda_events import CUDAGraph, Event
from ._lib import C, G, check, int_arg
from ._values import from_value


def version() -> str:
    """libctorch's version string (ct_version)."""
    return str(G.version().decode())


def torch_version() -> str:
    """The LibTorch version libctorch was built against."""
    return str(G.torch_version().decode())


def abi_version() -> int:
    return int(G.abi_version())


def manual_seed(seed: int) -> None:
    """Seeds the CPU (and CUDA) generators. As torch: seeds from -2**63 to
    2**64 - 1; a negative seed wraps to uint64 (-1 is 2**64 - 1)."""
    check(G.manual_seed(int_arg(int(seed), "seed", "manual_seed") & 0xFFFFFFFFFFFFFFFF))


def get_num_threads() -> int:
    return int(G.num_threads())


def set_num_threads(n: int) -> None:
    check(G.set_num_threads(int_arg(n, "int32", "set_num_threads")))


def get_num_interop_threads() -> int:
    return int(G.num_interop_threads())


def set_num_interop_threads(n: int) -> None:
    check(G.set_num_interop_threads(int_arg(n, "int32", "set_num_interop_threads")))


def load_library(path: Any) -> None:
    """dlopen()s a library that registers TorchScript ops (e.g. torchvision's)."""
    check(C.load_library(os.fsencode(path)))


def set_cpp_backtraces(enabled: bool) -> None:
    """Restores (True) or disables (False, the default) LibTorch's C++
    backtraces in error messages. Process-wide; see ct_set_cpp_backtraces."""
    G.set_cpp_backtraces(1 if enabled else 0)


_LSTM_GUARD_MODES = {None: -1, False: 0, True: 1}


def lstm_guard_set(mode: Any) -> None:
    """Where float32 LSTM layers without grad run (ct_lstm_guard_set_mode): None
    probes oneDNN's kernel once and routes around it where it is wrong (the
    default), False uses oneDNN's kernel as LibTorch does, True always
    ctorch's own LSTM layer. Process-wide; call it at start-up."""
    if mode not in _LSTM_GUARD_MODES:
        raise ValueError("lstm_guard_set: mode must be None, False or True, got %r" % (mode,))
    check(G.lstm_guard_set_mode(_LSTM_GUARD_MODES[mode]))


def lstm_guard_state() -> int:
    """-1 nothing to guard (no oneDNN LSTM kernel in this LibTorch), 0 oneDNN's
    kernel in use, 1 ctorch's layer in use, 2 not probed yet (ct_lstm_guard_route)."""
    return int(G.lstm_guard_route())


def lstm_guard_check() -> float:
    """Probes now: the largest difference between oneDNN's no-grad LSTM and
    ctorch's layer on small LSTMs (ct_lstm_guard_check). NotSupportedError
    where there is nothing to guard."""
    err = c_double(0.0)
    check(C.lstm_guard_check(byref(err)))
    return float(err.value)


def is_grad_enabled() -> bool:
    return bool(G.grad_mode_is_enabled())


class _GradMode:
    """Context manager and decorator setting grad mode for this thread."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.prev: List[int] = []

    def __enter__(self) -> Any:
        self.prev.append(G.grad_mode_is_enabled())
        G.grad_mode_set_enabled(1 if self.enabled else 0)
        return self

    def __exit__(self, *exc: Any) -> None:
        G.grad_mode_set_enabled(self.prev.pop())

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*a: Any, **k: Any) -> Any:
            with _GradMode(self.enabled):
                return fn(*a, **k)
        return wrapper  # type: ignore[return-value]


class no_grad(_GradMode):
    """with ctorch.no_grad(): ... (also a decorator)."""

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(_GradMode):
    def __init__(self) -> None:
        super().__init__(True)


class inference_mode:
    """with ctorch.inference_mode(): ... (ct_inference_mode_push/pop)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> Any:
        check(G.inference_mode_push(1 if self.mode else 0))
        return self

    def __exit__(self, *exc: Any) -> None:
        check(G.inference_mode_pop())

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*a: Any, **k: Any) -> Any:
            with inference_mode(self.mode):
                return fn(*a, **k)
        return wrapper  # type: ignore[return-value]


class _Cuda:
    """ctorch.cuda: queries and controls for CUDA devices (every function
    exists in every build; without CUDA they raise NotSupportedError, and
    is_available() is False)."""

    @staticmethod
    def is_compiled() -> bool:
        return bool(G.cuda_is_compiled())

    @staticmethod
    def is_available() -> bool:
        return bool(G.cuda_is_available())

    @staticmethod
    def device_count() -> int:
        return int(G.cuda_device_count())

    @staticmethod
    def current_device() -> int:
        o = c_int32()
        check(G.cuda_current_device(byref(o)))
        return o.value

    @staticmethod
    def set_device(d: int) -> None:
        check(G.cuda_set_device(int_arg(int(d), "int32", "cuda.set_device")))

    @staticmethod
    def synchronize(device: Any = -1) -> None:
        check(C.cuda_synchronize(-1 if device is None else
                                 int_arg(int(device), "int32", "cuda.synchronize")))

    @staticmethod
    def memory_allocated(device: int = -1) -> int:
        o = c_size_t()
        check(G.cuda_memory_allocated(byref(o), int_arg(device, "int32",
                                                        "cuda.memory_allocated")))
        return o.value

    @staticmethod
    def memory_reserved(device: int = -1) -> int:
        o = c_size_t()
        check(G.cuda_memory_reserved(byref(o), int_arg(device, "int32", "cuda.memory_reserved")))
        return o.value

    @staticmethod
    def empty_cache() -> None:
        check(C.cuda_empty_cache())

    @staticmethod
    def manual_seed_all(seed: int) -> None:
        check(G.cuda_manual_seed_all(int_arg(int(seed), "seed", "cuda.manual_seed_all")
                                     & 0xFFFFFFFFFFFFFFFF))

    @staticmethod
    def current_stream(device: int = -1) -> int:
        """torch's current cudaStream_t on a device, as an int."""
        o = c_void_p()
        check(G.cuda_current_stream(byref(o), int_arg(device, "int32", "cuda.current_stream")))
        return o.value or 0

    @staticmethod
    def set_stream(stream: int, device: int = -1) -> int:
        """Makes `stream` (a cudaStream_t as int) torch's current stream on the
        calling thread; returns the previous one."""
        prev = c_void_p()
        check(G.cuda_set_stream(byref(prev), int_arg(device, "int32", "cuda.set_stream"),
                                int_arg(stream, "size_t", "cuda.set_stream: stream")))
        return prev.value or 0

    @staticmethod
    def max_memory_allocated(device: int = -1) -> int:
        o = c_size_t()
        check(G.cuda_max_memory_allocated(byref(o), int_arg(device, "int32", "device")))
        return o.value

    @staticmethod
    def max_memory_reserved(device: int = -1) -> int:
        o = c_size_t()
        check(G.cuda_max_memory_reserved(byref(o), int_arg(device, "int32", "device")))
        return o.value

    @staticmethod
    def reset_peak_memory_stats(device: int = -1) -> None:
        check(G.cuda_reset_peak_memory_stats(int_arg(device, "int32", "device")))

    @staticmethod
    def memory_stats(device: int = -1) -> Any:
        """dict[str, int] with torch.cuda.memory_stats()'s keys (see ct_cuda_memory_stats)."""
        o = c_void_p()
        check(G.cuda_memory_stats(byref(o), int_arg(device, "int32", "device")))
        return from_value(o.value)

    @staticmethod
    def set_per_process_memory_fraction(fraction: float, device: int = -1) -> None:
        check(G.cuda_set_memory_fraction(int_arg(device, "int32", "device"), float(fraction)))

    @staticmethod
    def stream_from_pool(device: int = -1, high_priority: bool = False) -> int:
        """A cudaStream_t (int) from torch's pool, as torch.cuda.Stream() uses."""
        o = c_void_p()
        check(G.cuda_stream_from_pool(byref(o), int_arg(device, "int32", "device"),
                                      1 if high_priority else 0))
        return o.value or 0

    Event = Event
    CUDAGraph = CUDAGraph


cuda = _Cuda()
