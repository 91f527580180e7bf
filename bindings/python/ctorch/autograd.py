"""Custom autograd functions written in Python, and torch.autograd.grad.

    class Square(ctorch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g

    y = Square.apply(x)

Runs through ct_autograd_function_apply. forward runs with grad mode off;
backward runs on the thread that calls .backward() for CPU tensors (torch's
device threads for CUDA; the ctypes callbacks take the GIL themselves). An
exception raised in forward or backward comes back from apply() / backward()
as the original Python exception, with the ctorch error as its __cause__.

Non-tensor arguments to apply() are passed through to forward; backward
returns one gradient per forward argument (None for non-tensors), as in torch.

ctorch needs the number of outputs before forward runs: set the class
attribute ``num_outputs``; without it ctorch assumes 1 and, if forward
returns more, runs forward once more with the right count (remembered per
class).
"""

import itertools
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple
from ctypes import byref, c_void_p

from . import _capi, _lib, _callbacks, _call
from ._lib import C, G, check, error_from_status
from ._interop import leak as _leak
from .tensor import Tensor
from ._factories import as_tensor
from ._handle import new_tensor as _wrap_h

__all__ = ["Function", "FunctionCtx", "grad"]

_states: Dict[int, "_State"] = {}
_ids = itertools.count(1)
_states_lock = threading.Lock()


class _WrongOutputCount(Exception):
    pass


class FunctionCtx:
    """The ctx of a Function: save_for_backward / saved_tensors, plus any
    attributes you set in forward."""

    def __init__(self) -> None:
        self._saved: Tuple[Optional[Tensor], ...] = ()
        self.needs_input_grad: Tuple[bool, ...] = ()

    def save_for_backward(self, *tensors: Optional[Tensor]) -> None:
        # Saved as detached handles: saving an output would otherwise tie the
        # output to its own graph node (a reference cycle through C++).
        self._saved = tuple(None if t is None else t.detach() for t in tensors)

    @property
    def saved_tensors(self) -> Tuple[Optional[Tensor], ...]:
        return self._saved


class _State:
    __slots__ = ("cls", "ctx", "args", "tensor_pos", "n_out", "got_n_out", "returned_tuple")
    cls: Any
    ctx: FunctionCtx
    args: Tuple[Any, ...]
    tensor_pos: List[int]
    n_out: int
    got_n_out: Optional[int]
    returned_tuple: bool


def _borrow(p: int) -> Tensor:
    """A new Python Tensor (own handle) for a borrowed ct_tensor*."""
    out = c_void_p()
    check(G.tensor_ref(byref(out), p))
    return _wrap_h(out.value)


def _new_handle(t: Any) -> Optional[int]:
    tensor = as_tensor(t)  # kept until the call returns: a temporary's handle dies with it
    out = c_void_p()
    check(G.tensor_ref(byref(out), tensor._handle))
    return out.value


def _forward_cb(cctx: int, inputs: Any, n_in: int, outputs: Any, n_out: int) -> int:
    try:
        st = _states[cctx]
        args = list(st.args)
        for k, pos in enumerate(st.tensor_pos):
            args[pos] = _borrow(inputs[k])
        res = st.cls.forward(st.ctx, *args)
        st.returned_tuple = isinstance(res, (tuple, list))
        outs = tuple(res) if st.returned_tuple else (res,)
        if len(outs) != n_out:
            st.got_n_out = len(outs)
            raise _WrongOutputCount("forward returned %d outputs, expected %d" % (len(outs),
                                                                                   n_out))
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                raise TypeError("forward must return tensors, got %s" % type(o).__name__)
            outputs[i] = _new_handle(o)
        return 0
    except BaseException as e:
        return _callbacks.report(e)


def _backward_cb(cctx: int, grads: Any, n_out: int, grad_inputs: Any, n_in: int) -> int:
    try:
        st = _states[cctx]
        gs = [(_borrow(grads[i]) if grads[i] else None) for i in range(n_out)]
        res = st.cls.backward(st.ctx, *gs)
        if not isinstance(res, (tuple, list)):
            res = (res,)
        res = tuple(res)
        nargs = len(st.args)
        if len(res) < nargs:
            if len(res) == len(st.tensor_pos):  # one gradient per tensor input
                full = [None] * nargs
                for k, pos in enumerate(st.tensor_pos):
                    full[pos] = res[k]
                res = full
            else:
                raise ValueError("backward returned %d gradients, expected %d (one per forward "
                                 "argument)" % (len(res), nargs))
        for k, pos in enumerate(st.tensor_pos):
            g = res[pos]
            grad_inputs[k] = _new_handle(g) if g is not None else None
        return 0
    except BaseException as e:
        return _callbacks.report(e)


def _destroy_cb(cctx: int, _states: Dict[int, _State] = _states) -> None:
    try:
        _states.pop(cctx, None)
    except BaseException:
        pass


_FORWARD = _leak(_capi.AG_FORWARD(_forward_cb))
_BACKWARD = _leak(_capi.AG_BACKWARD(_backward_cb))
_DESTROY = _leak(_capi.CTX_DESTROY(_destroy_cb))


class Function:
    """Base class for custom autograd functions (see the module docstring)."""

    num_outputs = None
    _learned_outputs = None

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any) -> Any:
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        n_in = len(tensor_pos)
        n_out = cls.num_outputs or cls.__dict__.get("_learned_outputs") or 1
        for attempt in range(2):
            st = _State()
            st.cls = cls
            st.ctx = FunctionCtx()
            st.ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad
                                            for a in args)
            st.args = args
            st.tensor_pos = tensor_pos
            st.n_out = n_out
            st.got_n_out = None
            st.returned_tuple = False
            key = next(_ids)
            _states[key] = st
            ins = (c_void_p * max(n_in, 1))(*[args[i]._handle for i in tensor_pos])
            outs = (c_void_p * n_out)()
            status = C.autograd_function_apply(outs, n_out, ins, n_in, cls.__name__.encode(),
                                               _FORWARD, _BACKWARD, key, _DESTROY)
            _call.bump()
            if status:
                err = error_from_status(status)
                if isinstance(err, _WrongOutputCount) and attempt == 0 and \
                        cls.num_outputs is None and st.got_n_out:
                    n_out = st.got_n_out
                    cls._learned_outputs = n_out
                    continue
                raise err
            res = tuple(_wrap_h(outs[i]) for i in range(n_out))
            if n_out == 1 and not st.returned_tuple:
                return res[0]
            return res


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False,
         allow_unused: bool = False) -> Tuple[Optional[Tensor], ...]:
    """torch.autograd.grad: gradients of outputs with respect to inputs."""
    single_in = isinstance(inputs, Tensor)
    if isinstance(outputs, Tensor):
        outputs = (outputs,)
    if single_in:
        inputs = (inputs,)
    if isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    no = len(outputs)
    ni = len(inputs)
    oa = (c_void_p * no)(*[o._handle for o in outputs])
    ia = (c_void_p * ni)(*[i._handle for i in inputs])
    ga = None
    # The tensors made from numpy arrays or lists live until the call returns (a temporary's
    # handle is freed with it).
    held = None
    if grad_outputs is not None:
        held = [None if g is None else as_tensor(g) for g in grad_outputs]
        ga = (c_void_p * no)(*[None if g is None else g._handle for g in held])
    res = (c_void_p * ni)()
    if retain_graph is None:
        retain_graph = create_graph
    status = C.autograd_grad(res, oa, no, ia, ni, ga, 1 if retain_graph else 0,
                             1 if create_graph else 0, 1 if allow_unused else 0)
    del held
    if status:
        raise error_from_status(status)
    return tuple(_wrap_h(res[i]) if res[i] else None for i in range(ni))
