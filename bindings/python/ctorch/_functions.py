"""torch-style module-level functions (``ctorch.cat``, ``ctorch.relu`` ...): thin
wrappers that call the aten op of the same name through ``ctorch.ops``."""

from typing import Any, Callable, Dict

from . import ops
from .tensor import NAMED_TUPLE_OPS, _named

#: ctorch name -> aten op name
_NAMES: Dict[str, str] = {n: n for n in (
    "cat", "stack", "hstack", "vstack", "matmul", "mm", "bmm", "where", "relu", "softmax",
    "log_softmax", "sigmoid", "tanh", "exp", "log", "sqrt", "sin", "cos", "abs", "neg",
    "sum", "mean", "std", "var", "prod", "argmax", "argmin", "transpose", "permute", "reshape",
    "flatten", "squeeze", "unsqueeze", "clamp", "maximum", "minimum", "einsum", "outer",
    "dot", "allclose", "equal", "flip", "roll", "tril", "triu", "cumsum", "chunk", "split",
    "gather", "masked_fill", "isnan", "isinf", "logical_not", "all", "any", "add", "sub",
    "mul", "div", "pow", "floor", "ceil", "round", "sign", "erf", "gelu", "silu",
    "layer_norm", "dropout", "linear", "conv2d", "randperm")}
_NAMES["concat"] = "cat"
_NAMED_TUPLES = NAMED_TUPLE_OPS


def _make(name: str, aten: str, named: bool) -> Callable[..., Any]:
    def f(*args: Any, **kwargs: Any) -> Any:
        r = getattr(ops.aten, aten)(*args, **kwargs)
        return _named(r) if named else r
    f.__name__ = f.__qualname__ = name
    f.__doc__ = "ctorch.%s: calls aten::%s (see help(ctorch.ops.aten.%s))" % (name, aten, aten)
    return f


def einsum(equation: str, *operands: Any, **kwargs: Any) -> Any:
    """ctorch.einsum("ij,jk->ik", a, b) or einsum(eq, [a, b]), as torch.einsum."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return ops.aten.einsum(equation, list(operands), **kwargs)


FUNCTIONS: Dict[str, Callable[..., Any]] = {n: _make(n, a, False) for n, a in _NAMES.items()}
FUNCTIONS.update({n: _make(n, n, True) for n in _NAMED_TUPLES})
FUNCTIONS["einsum"] = einsum
