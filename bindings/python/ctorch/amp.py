"""Mixed precision as torch.amp has it: ``autocast`` (C: ct_autocast_push/pop,
per thread) and ``GradScaler`` (C: ct_grad_scaler_*)."""

import functools
from ctypes import byref, c_double, c_int32, c_void_p
from typing import Any, Callable, Dict, Optional, TypeVar

from . import _release
from ._handle import new_tensor
from ._lib import C, G, CT_DEVICE_CPU, CT_DEVICE_CUDA, check
from ._types import get_dtype
from ._values import from_value, to_value, free_values

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype"]
F = TypeVar("F", bound=Callable[..., Any])


def _device_code(device_type: str) -> int:
    if device_type == "cpu":
        return CT_DEVICE_CPU
    if device_type == "cuda":
        return CT_DEVICE_CUDA
    raise ValueError("autocast and GradScaler are for 'cpu' or 'cuda', not %r" % (device_type,))


class autocast:
    """``with ctorch.autocast("cuda"): ...`` (also a decorator): ops called
    inside run in float16 (CUDA) or bfloat16 (CPU) where torch's autocast
    lists say so. dtype: ctorch.float16 / ctorch.bfloat16 (None: the
    device's default)."""

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool = True) -> None:
        self.device_type, self._code = device_type, _device_code(device_type)
        self._dtype = 0 if dtype is None else get_dtype(dtype).code
        self.enabled, self.cache_enabled = bool(enabled), bool(cache_enabled)

    def __enter__(self) -> "autocast":
        check(G.autocast_push(self._code, self._dtype, int(self.enabled),
                              int(self.cache_enabled)))
        return self

    def __exit__(self, *exc: Any) -> None:
        check(G.autocast_pop())

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*a: Any, **k: Any) -> Any:
            with autocast(self.device_type, None, self.enabled, self.cache_enabled) as ac:
                ac._dtype = self._dtype
                return fn(*a, **k)
        return wrapper  # type: ignore[return-value]


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    out = c_int32()
    check(G.autocast_is_enabled(byref(out), _device_code(device_type)))
    return bool(out.value)


def get_autocast_dtype(device_type: str) -> Any:
    from ._types import BY_CODE
    out = c_int32()
    check(G.autocast_dtype(byref(out), _device_code(device_type)))
    return BY_CODE[out.value]


class GradScaler(_release.Handle):
    """torch.amp.GradScaler: ``scaler.scale(loss).backward();
    scaler.step(optimizer); scaler.update()``. unscale_(optimizer) before
    clipping gradients."""

    __slots__ = ("_p", "__weakref__")
    _free_c = G.grad_scaler_free
    _handle_kind = "GradScaler"
    _no_copy = "save its state_dict() and load it into a new one"

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._p = None
        out = c_void_p()
        check(G.grad_scaler_new(byref(out), _device_code(device), float(init_scale),
                                float(growth_factor), float(backoff_factor),
                                int(growth_interval), 1 if enabled else 0))
        self._p = out.value

    def scale(self, outputs: Any) -> Any:
        """outputs times the scale: a tensor, or lists/tuples of tensors."""
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        out = c_void_p()
        check(G.grad_scaler_scale(byref(out), self._ptr(), outputs._ptr()))
        return new_tensor(out.value)

    def unscale_(self, optimizer: Any) -> None:
        check(G.grad_scaler_unscale(self._ptr(), optimizer._ptr()))

    def step(self, optimizer: Any) -> Optional[bool]:
        """Steps optimizer unless its gradients hold an inf or NaN; returns
        whether it stepped."""
        stepped = c_int32()
        check(C.grad_scaler_step(byref(stepped), self._ptr(), optimizer._ptr()))
        return bool(stepped.value)

    def update(self) -> None:
        check(G.grad_scaler_update(self._ptr()))

    def get_scale(self) -> float:
        out = c_double()
        check(G.grad_scaler_current_scale(byref(out), self._ptr()))
        return float(out.value)

    def state_dict(self) -> Dict[str, Any]:
        out = c_void_p()
        check(G.grad_scaler_state_dict(byref(out), self._ptr()))
        return from_value(out.value)  # type: ignore[no-any-return]

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        p, owned = to_value(dict(state_dict))
        try:
            check(G.grad_scaler_load_state_dict(self._ptr(), p))
        finally:
            if owned:
                free_values([p])

