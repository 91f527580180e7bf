"""The one constructor of Python Tensor objects (``new_tensor``), and the
Tensor and Module classes as the lower modules see them.

This is the only place besides the Tensor class that knows a Tensor's slots.
It imports nothing of the package: tensor.py and _module.py register their
classes here, so the modules below them (_values, _call, _interop ...) make
and recognise Tensors and Modules without importing those modules."""

from typing import TYPE_CHECKING, Optional, Type

if TYPE_CHECKING:
    from ._module import Module as _Module
    from .tensor import Tensor as _Tensor

_new = object.__new__

#: ctorch.Tensor and ctorch.Module, once tensor.py and _module.py have run.
Tensor: "Type[_Tensor]" = None  # type: ignore[assignment]
Module: "Type[_Module]" = None  # type: ignore[assignment]


def register_tensor_class(cls: "Type[_Tensor]") -> None:
    global Tensor
    Tensor = cls


def register_module_class(cls: "Type[_Module]") -> None:
    global Module
    Module = cls


def new_tensor(h: Optional[int]) -> "_Tensor":
    """A Tensor owning the new ct_tensor* h (metadata read on first use)."""
    t = _new(Tensor)
    t._h = h or 0
    t._m = None
    return t
