"""Gradient clipping as torch.nn.utils has it (C: ct_clip_grad_norm,
ct_clip_grad_value)."""

from ctypes import byref, c_void_p
from typing import Any, List

from .._handle import new_tensor
from .._lib import C, G, check

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _params(parameters: Any) -> List[Any]:
    return [parameters] if hasattr(parameters, "_ptr") else list(parameters)


def _array(ps: List[Any]) -> Any:
    return (c_void_p * len(ps))(*[p._ptr() for p in ps])


def clip_grad_norm_(parameters: Any, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False) -> Any:
    """Scales the gradients so that their total norm is at most max_norm;
    returns the total norm before clipping (a 0-dim tensor). norm_type
    float("inf") for the max-norm."""
    ps = _params(parameters)
    out = c_void_p()
    check(C.clip_grad_norm(byref(out), _array(ps), len(ps), float(max_norm), float(norm_type),
                           1 if error_if_nonfinite else 0))
    return new_tensor(out.value)


def clip_grad_value_(parameters: Any, clip_value: float) -> None:
    """Clamps every gradient into [-clip_value, clip_value] in place."""
    ps = _params(parameters)
    check(G.clip_grad_value(_array(ps), len(ps), float(clip_value)))
