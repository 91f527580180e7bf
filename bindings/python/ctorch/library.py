"""Foreign operators written in Python (ct_op_register).

    @ctorch.library.register("myns::scale(Tensor x, float a) -> Tensor")
    def scale(x, a):
        return x * a

    ctorch.ops.myns.scale(t, 2.0)       # from Python
    # ... and from TorchScript: torch.ops.myns.scale(x, 2.0) in a saved model
    # (register before loading it), or myns.scale(x, 2.0) in Module.define().

The function receives the arguments in schema order (defaults filled in) as
Python objects and returns the result(s) (a tuple for several). It runs on the
thread that calls the op (the ctypes callback takes the GIL). An exception in
it surfaces from the ctorch call that ran the op as the original exception,
with the ctorch error as its __cause__. Registrations last for the life of the
process.
"""

from . import _lib, _callbacks, ops
from ._lib import C, check
from ._values import borrowed_to_python, to_owned_value
from ._interop import leak as _leak

from typing import Any, Callable, Dict, Optional, Tuple

__all__ = ["register", "registered"]

_registered: Dict[str, Tuple[Callable[..., Any], Any]] = {}  # schema -> (fn, ctypes callback); kept forever


def _make_callback(fn: Callable[..., Any]) -> Any:
    def cb(ctx: Any, args: Any, n: int, out: Any) -> int:
        try:
            py = [borrowed_to_python(args[i]) for i in range(n)]
            res = fn(*py)
            out[0] = to_owned_value(res)
            return 0
        except BaseException as e:
            return _callbacks.report(e)
    return _leak(_lib.OP_FN(cb))


def register(schema: str, fn: Optional[Callable[..., Any]] = None) -> Any:
    """Registers fn as the operator described by schema
    ("ns::name(Tensor x, float a) -> Tensor"). Usable as a decorator."""
    if fn is None:
        return lambda f: register(schema, f)
    cb = _make_callback(fn)
    check(C.op_register(schema.encode(), cb, None))
    _registered[schema] = (fn, cb)
    ops._reset_index()
    return fn


def registered() -> Dict[str, Callable[..., Any]]:
    """{schema: function} of ops registered from Python in this process."""
    return {k: v[0] for k, v in _registered.items()}
