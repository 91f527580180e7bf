"""ctorch.nn: torch.nn's layers, losses and containers, built by libctorch as
TorchScript modules (``ct_module_new_nn``), with torch.nn's names and
signatures::

    import ctorch
    from ctorch import nn
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding="same"), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Flatten(), nn.Linear(8 * 32 * 32, 10))
    loss = nn.CrossEntropyLoss(label_smoothing=0.1)(model(x), y)

Each layer is a :class:`ctorch.Module` (``ctorch.nn.Module``): it trains, saves
(``model.save(path)``: a file ``torch.jit.load`` opens) and loads like any.
After ``ctorch.manual_seed(s)`` a layer's parameters equal torch.nn's after
``torch.manual_seed(s)``. Your own layers are Modules too (``ctorch.Module.new``
plus ``define``, or one calling your operators), and go inside containers.
``ctorch.nn.init`` has torch.nn.init's initializers, ``ctorch.nn.functional``
the functional forms, ``ctorch.nn.utils`` gradient clipping.
"""

from ctypes import byref, c_void_p
from typing import Any, Callable, Dict, List

from .. import _lib
from .._call import kwargs_values
from .._values import free_values
from .._lib import G, check
from .._module import Module
from .._values import from_value, values_array
from . import functional, init, utils

__all__ = ["Module", "functional", "init", "utils", "layers"]


def _new(layer: bytes, args: Any, kwargs: Dict[str, Any]) -> Module:
    owned: List[int] = []
    try:
        arr, n = values_array(args, owned)
        names, vals, nk = kwargs_values(kwargs, owned)
        out = c_void_p()
        check(G.module_new_nn(byref(out), layer, arr, n, names, vals, nk))
        return Module._wrap(out.value)
    finally:
        free_values(owned)


def layers() -> Dict[str, str]:
    """{layer name: its signature} of every layer ctorch builds."""
    out = c_void_p()
    check(G.module_nn_layers(byref(out)))
    d: Dict[str, str] = from_value(out.value)
    return d


def _constructor(name: str, signature: str) -> Callable[..., Module]:
    key = name.encode()

    def make(*args: Any, **kwargs: Any) -> Module:
        return _new(key, args, kwargs)

    make.__name__ = make.__qualname__ = name
    make.__module__ = __name__
    make.__doc__ = ("torch.nn.%s, built by ctorch as a TorchScript module.\n\n%s"
                    % (name, signature))
    return make


for _name, _sig in layers().items():
    globals()[_name] = _constructor(_name, _sig)
    __all__.append(_name)
del _name, _sig
