"""torch.backends' switches, read and set as in torch::

    ctorch.backends.cudnn.benchmark = True
    ctorch.backends.cuda.matmul.allow_tf32 = False
    ctorch.backends.cuda.enable_flash_sdp(False)
    ctorch.use_deterministic_algorithms(True, warn_only=True)

Process-wide (ct_backend_flag/set). A switch this LibTorch does not have
raises NotSupportedError naming the version it needs."""

from ctypes import byref, c_char_p, c_int32
from typing import Any, Tuple

from ._lib import G, check

_FLAGS = {"cudnn.enabled": 0, "cudnn.benchmark": 1, "cudnn.deterministic": 2,
          "cudnn.allow_tf32": 3, "cuda.matmul.allow_tf32": 4,
          "cuda.matmul.allow_fp16_reduced_precision_reduction": 5,
          "cuda.matmul.allow_bf16_reduced_precision_reduction": 6,
          "deterministic_algorithms": 7, "deterministic_warn_only": 8, "mkldnn.enabled": 9,
          "sdp.flash": 10, "sdp.math": 11, "sdp.mem_efficient": 12, "sdp.cudnn": 13}


def get_flag(name: str) -> bool:
    out = c_int32()
    check(G.backend_flag(byref(out), _FLAGS[name]))
    return bool(out.value)


def set_flag(name: str, value: bool) -> None:
    check(G.set_backend_flag(_FLAGS[name], 1 if value else 0))


class _Switches:
    """Attributes that read and set flags `prefix.<name>`."""

    def __init__(self, prefix: str, names: Tuple[str, ...]) -> None:
        object.__setattr__(self, "_names", {n: prefix + "." + n for n in names})

    def __getattr__(self, name: str) -> Any:
        names = object.__getattribute__(self, "_names")
        if name not in names:
            raise AttributeError(name)
        return get_flag(names[name])

    def __setattr__(self, name: str, value: Any) -> None:
        names = object.__getattribute__(self, "_names")
        if name not in names:
            raise AttributeError("no backend switch %r" % name)
        set_flag(names[name], bool(value))


cudnn = _Switches("cudnn", ("enabled", "benchmark", "deterministic", "allow_tf32"))
mkldnn = _Switches("mkldnn", ("enabled",))


class _Cuda:
    matmul = _Switches("cuda.matmul", ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                                       "allow_bf16_reduced_precision_reduction"))

    @staticmethod
    def flash_sdp_enabled() -> bool:
        return get_flag("sdp.flash")

    @staticmethod
    def enable_flash_sdp(enabled: bool) -> None:
        set_flag("sdp.flash", enabled)

    @staticmethod
    def math_sdp_enabled() -> bool:
        return get_flag("sdp.math")

    @staticmethod
    def enable_math_sdp(enabled: bool) -> None:
        set_flag("sdp.math", enabled)

    @staticmethod
    def mem_efficient_sdp_enabled() -> bool:
        return get_flag("sdp.mem_efficient")

    @staticmethod
    def enable_mem_efficient_sdp(enabled: bool) -> None:
        set_flag("sdp.mem_efficient", enabled)

    @staticmethod
    def cudnn_sdp_enabled() -> bool:
        return get_flag("sdp.cudnn")

    @staticmethod
    def enable_cudnn_sdp(enabled: bool) -> None:
        set_flag("sdp.cudnn", enabled)


cuda = _Cuda()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """As torch.use_deterministic_algorithms."""
    set_flag("deterministic_warn_only", warn_only)
    set_flag("deterministic_algorithms", mode)


def are_deterministic_algorithms_enabled() -> bool:
    return get_flag("deterministic_algorithms")


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return get_flag("deterministic_warn_only")


def get_float32_matmul_precision() -> str:
    out = c_char_p()
    check(G.float32_matmul_precision(byref(out)))
    return (out.value or b"").decode()


def set_float32_matmul_precision(precision: str) -> None:
    check(G.set_float32_matmul_precision(str(precision).encode()))
