"""torch.nn.init's initializers on ctorch tensors (``ct_tensor_nn_init``):
the same numbers as torch's after the same seed, in place, without autograd::

    ctorch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
"""

from typing import Any, Callable, Dict, List

from .._call import kwargs_values
from .._values import free_values
from .._lib import G, check
from .._values import from_value, values_array
from ctypes import byref, c_void_p

__all__: List[str] = ["calculate_gain"]


def _methods() -> Dict[str, str]:
    out = c_void_p()
    check(G.tensor_nn_init_methods(byref(out)))
    d: Dict[str, str] = from_value(out.value)
    return d


def _initializer(name: str, signature: str) -> Callable[..., Any]:
    key = name.encode()

    def run(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        owned: List[int] = []
        try:
            arr, n = values_array(args, owned)
            names, vals, nk = kwargs_values(kwargs, owned)
            check(G.tensor_nn_init(tensor, key, arr, n, names, vals, nk))
        finally:
            free_values(owned)
        return tensor

    run.__name__ = run.__qualname__ = name
    run.__module__ = __name__
    run.__doc__ = "torch.nn.init.%s(tensor, ...), on a ctorch tensor.\n\n%s" % (name, signature)
    return run


def calculate_gain(nonlinearity: str, param: Any = None) -> float:
    """torch.nn.init.calculate_gain."""
    import math
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError("Unsupported nonlinearity {}".format(nonlinearity))


for _name, _sig in _methods().items():
    globals()[_name] = _initializer(_name, _sig)
    __all__.append(_name)
del _name, _sig
