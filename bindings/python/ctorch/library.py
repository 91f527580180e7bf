"""Operators written in Python: in torch's dispatcher (``op``, ``Library``:
ct_library_*) or in TorchScript's registry only (``register``: ct_op_register).

    @ctorch.library.op("myns::scale", "(Tensor x, float a) -> Tensor")
    def scale(x, a):                     # the kernel for every device
        return ctorch.from_numpy(x.numpy() * a)     # numpy on zero-copy memory

    @scale.register_fake                 # shapes only (meta tensors)
    def _(x, a):
        return ctorch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.a = inputs[1]
    scale.register_autograd(lambda ctx, g: (g * ctx.a, None), setup_context=setup_context)

    scale(t, 2.0)                        # = ctorch.ops.myns.scale(t, 2.0)
    # and in PyTorch, in the same process: torch.ops.myns.scale(x, 2.0),
    # in torch.jit.script code, and in saved TorchScript models.

As torch.library.custom_op: ``register_kernel("cpu")`` adds a kernel for one
device type, ``register_fake`` the shape function, ``register_autograd`` the
backward; one difference: ``setup_context(ctx, inputs, output)`` runs when
backward runs, not after forward (inputs are detached, saved for it).
``Library`` is the thin layer under it (define, impl per dispatch key,
impl_autograd, close). Kernels run on the thread that calls the op, with the
GIL taken by ctypes; an exception in one surfaces from the call as the
original exception.

The older ct_op_register form:

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

from . import _capi, _lib, _callbacks, _release, ops
from ._lib import C, check
from ._values import borrowed_to_python, to_owned_value
from ._interop import leak as _leak

import itertools
from ctypes import byref, c_char_p, c_void_p
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .tensor import Tensor
from .autograd import _borrow, _new_handle
from ._misc import no_grad

__all__ = ["register", "registered", "op", "CustomOp", "Library"]

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
    return _leak(_capi.OP_FN(cb))


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


# ---- Operators in torch's dispatcher (ct_library_*).

_kernels: Dict[int, Any] = {}   # ctx key -> kernel function or backward state
_ids = itertools.count(1)


def _kernel_cb(key: int, args: Any, n: int, out: Any) -> int:
    try:
        fn = _kernels[key]
        res = fn(*[borrowed_to_python(args[i]) for i in range(n)])
        out[0] = to_owned_value(res)
        return 0
    except BaseException as e:
        return _callbacks.report(e)


class BackwardContext:
    """What setup_context and backward see (attributes are free to set)."""


def _backward_cb(key: int, args: Any, n_args: int, result: Any, grads: Any, n_out: int,
                 grad_inputs: Any) -> int:
    try:
        backward, setup_context = _kernels[key]
        inputs = tuple(borrowed_to_python(args[i]) for i in range(n_args))
        output = borrowed_to_python(result)
        ctx = BackwardContext()
        if setup_context is not None:
            setup_context(ctx, inputs, output)
        gs = [(_borrow(grads[i]) if grads[i] else None) for i in range(n_out)]
        res = backward(ctx, *gs)
        if not isinstance(res, (tuple, list)):
            res = (res,)
        if len(res) != n_args:
            raise ValueError("backward returned %d gradients, expected %d (one per argument, "
                             "None where there is none)" % (len(res), n_args))
        for i, g in enumerate(res):
            if g is not None and isinstance(inputs[i], Tensor):
                grad_inputs[i] = _new_handle(g)
        return 0
    except BaseException as e:
        return _callbacks.report(e)


def _destroy_cb(key: int, _kernels: Dict[int, Any] = _kernels) -> None:
    try:
        _kernels.pop(key, None)
    except BaseException:
        pass


_KERNEL = _leak(_capi.OP_FN(_kernel_cb))
_BACKWARD = _leak(_capi.OP_BACKWARD(_backward_cb))
_DESTROY = _leak(_capi.CTX_DESTROY(_destroy_cb))

def _to_array(x: Any) -> Any:
    """A tensor argument as a numpy array on its memory (contiguous tensors: no copy)."""
    if isinstance(x, Tensor):
        return x.detach().contiguous().numpy()
    if isinstance(x, (list, tuple)):
        return type(x)(_to_array(e) for e in x)
    return x


def _from_array(x: Any) -> Any:
    """A kernel's numpy result as a tensor on the same memory."""
    if type(x).__module__ == "numpy" and hasattr(x, "__array_interface__"):
        import numpy
        from ._interop import from_numpy
        return from_numpy(numpy.ascontiguousarray(x))
    if isinstance(x, (list, tuple)):
        return type(x)(_from_array(e) for e in x)
    return x


def _written_args(schema: str) -> List[int]:
    """Positions of the arguments a schema marks as written ("Tensor(a!) x")."""
    inner = schema[schema.index("(") + 1:schema.rindex("->")]
    inner = inner[:inner.rindex(")")]
    args, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch in "([" and 1 or (ch in ")]" and -1 or 0)
        if ch == "," and depth == 0:
            args.append(cur)
            cur = ""
        else:
            cur += ch
    args.append(cur)
    return [i for i, a in enumerate(args) if "!" in a]


def _with_arrays(fn: Callable[..., Any], written: Sequence[int] = ()) -> Callable[..., Any]:
    """fn written on numpy arrays, as a kernel on tensors. An argument the
    schema marks as written that had to be made contiguous gets the array's
    contents back after the call."""
    def kernel(*args: Any) -> Any:
        arrays = [_to_array(a) for a in args]
        res = fn(*arrays)
        for i in written:
            t = args[i] if i < len(args) else None
            if isinstance(t, Tensor) and not t.is_contiguous():
                from ._interop import from_numpy
                with no_grad():
                    t.copy_(from_numpy(arrays[i]))
        return _from_array(res)
    kernel.__wrapped__ = fn  # type: ignore[attr-defined]
    return kernel


def _backward_on_arrays(backward: Callable[..., Any],
                        setup_context: Optional[Callable[..., Any]]) -> Any:
    """A backward (and setup_context) written on numpy arrays, on tensors."""
    def bw(ctx: Any, *grads: Any) -> Any:
        return _from_array(backward(ctx, *[_to_array(g) for g in grads]))

    if setup_context is None:
        return bw, None
    setup = setup_context

    def sc(ctx: Any, inputs: Any, output: Any) -> None:
        setup(ctx, _to_array(tuple(inputs)), _to_array(output))
    return bw, sc


# torch.library's device names -> dispatch keys.
_DEVICE_KEYS = {None: "CompositeExplicitAutograd", "cpu": "CPU", "cuda": "CUDA",
                "meta": "Meta"}


class Library(_release.Handle):
    """A registration scope for one namespace (ct_library): the operators it
    defines and the kernels it adds stay in torch's dispatcher until
    ``close()`` (or until the object is collected). Usable as a context
    manager."""

    _handle_attr = "_handle"
    _free_c = C.library_free
    _handle_kind = "ctorch.library.Library"
    _no_copy = "it is a registration in this process; make another Library"

    def __init__(self, ns: str) -> None:
        h = c_void_p()
        check(C.library_new(byref(h), ns.encode()))
        self._handle: Optional[int] = h.value
        self.ns = ns

    def _h(self) -> int:
        if not self._handle:
            raise ValueError("the library is closed")
        return self._handle

    def define(self, schema: str, tags: Sequence[str] = ()) -> None:
        """Defines an operator: "name(Tensor x) -> Tensor" (this namespace)."""
        arr = (c_char_p * max(len(tags), 1))(*[t.encode() for t in tags])
        check(C.library_define(self._h(), schema.encode(), arr if tags else None, len(tags)))
        ops._reset_index()

    def impl(self, name: str, fn: Callable[..., Any], dispatch_key: str = "CPU") -> None:
        """Gives operator `name` the kernel fn for one dispatch key ("CPU",
        "CUDA", "Meta", "CompositeExplicitAutograd",
        "CompositeImplicitAutograd"). fn gets the arguments as Python values
        (tensors as ctorch Tensors sharing memory) and returns the result."""
        key = next(_ids)
        _kernels[key] = fn
        check(C.library_impl(self._h(), name.encode(), dispatch_key.encode(), _KERNEL, key,
                             _DESTROY, 0))

    def impl_autograd(self, name: str, backward: Callable[..., Any],
                      setup_context: Optional[Callable[..., Any]] = None) -> None:
        """backward(ctx, *grads) -> one gradient (or None) per argument;
        setup_context(ctx, inputs, output) runs first."""
        key = next(_ids)
        _kernels[key] = (backward, setup_context)
        check(C.library_impl_autograd(self._h(), name.encode(), _BACKWARD, key, _DESTROY, 0))

    def set_twin(self, name: str, source: str) -> None:
        """TorchScript source of one function computing operator `name` with
        torch's operators only: what ``Module.to_pytorch()`` writes in place
        of the operator's calls (ct_library_set_twin)."""
        check(C.library_set_twin(self._h(), name.encode(), source.encode()))

    def close(self) -> None:
        """Removes every operator and kernel of this library (idempotent)."""
        h, self._handle = self._handle, None
        if h:
            C.library_free(h)
            ops._reset_index()

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self, _free: Any = C.library_free, _reset: Any = ops._reset_index) -> None:
        # close() with its functions bound here: at exit module globals may be None;
        # no _handle when __init__ failed
        h, self._handle = getattr(self, "_handle", None), None
        if h:
            _free(h)
            try:
                _reset()  # the ops index: moot while the package is torn down
            except Exception:
                pass



class CustomOp:
    """An operator made by ``op``: call it like a function."""

    def __init__(self, qualname: str, schema: str, lib: Library) -> None:
        self.qualname = qualname
        self.schema = schema
        self.lib = lib
        self._name = qualname.split("::", 1)[1]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ns = getattr(ops, self.lib.ns)
        return getattr(ns, self._name)(*args, **kwargs)

    def register_kernel(self, device_types: Any, fn: Optional[Callable[..., Any]] = None, *,
                        arrays: bool = False) -> Any:
        """Adds fn as the kernel for "cpu", "cuda" (or a sequence of them).
        arrays=True: fn takes and returns numpy arrays on the tensors' memory
        (CPU). Usable as a decorator."""
        if fn is None:
            return lambda f: self.register_kernel(device_types, f, arrays=arrays)
        if arrays:
            fn = _with_arrays(fn, _written_args(self.schema))
        names = [device_types] if isinstance(device_types, str) or device_types is None \
            else list(device_types)
        for d in names:
            if d not in _DEVICE_KEYS or d == "meta":
                raise ValueError("device type must be 'cpu' or 'cuda', got %r" % (d,))
            self.lib.impl(self._name, fn, _DEVICE_KEYS[d])
        return fn

    def register_fake(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """The shape function (runs on meta tensors; must not read data)."""
        self.lib.impl(self._name, fn, "Meta")
        return fn

    def register_autograd(self, backward: Callable[..., Any],
                          setup_context: Optional[Callable[..., Any]] = None, *,
                          arrays: bool = False) -> None:
        """backward(ctx, *grads) -> a gradient (or None) per argument;
        setup_context(ctx, inputs, output) runs first. arrays=True: inputs,
        output, grads and the returned gradients are numpy arrays."""
        if arrays:
            backward, setup_context = _backward_on_arrays(backward, setup_context)
        self._has_backward = True
        self.lib.impl_autograd(self._name, backward, setup_context)

    def register_twin(self, source: str) -> str:
        """The operator's TorchScript twin (one function named as the operator,
        torch's operators only), which ``Module.to_pytorch()`` puts in place of
        its calls so that PyTorch loads the model without ctorch. Returns
        source (usable as a decorator on a function returning the source)."""
        self.lib.set_twin(self._name, source)
        self.twin_source = source
        return source

    def check_twin(self, *args: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
        """Runs the operator and its twin on args and compares results and,
        for floating tensor arguments of an operator with a backward
        (register_autograd), gradients; AssertionError naming the largest
        difference otherwise. For tests of a layer's twin."""
        import math
        from ._module import compile_script
        src = getattr(self, "twin_source", None)
        if src is None:
            raise ValueError("%s has no twin (register_twin)" % self.qualname)
        script = compile_script(src)
        fname = self._name.split(".")[0]
        if fname not in script.functions():
            fname = script.functions()[0]

        def leaves() -> Any:
            return [a.detach().clone().requires_grad_(a.dtype.is_floating_point)
                    if isinstance(a, Tensor) else a for a in args]

        def flat(x: Any) -> Any:
            return list(x) if isinstance(x, (tuple, list)) else [x]

        a1, a2 = leaves(), leaves()
        got, want = flat(self(*a1)), flat(script.call(fname, *a2))
        if len(got) != len(want):
            raise AssertionError("%s returns %d values, its twin %d"
                                 % (self.qualname, len(got), len(want)))

        def compare(what: str, x: Any, y: Any) -> None:
            if isinstance(x, Tensor):
                if tuple(x.shape) != tuple(y.shape):
                    raise AssertionError("%s: shape %s, twin %s" % (what, tuple(x.shape),
                                                                    tuple(y.shape)))
                xs = x.detach().double().contiguous().numpy().ravel()
                ys = y.detach().double().contiguous().numpy().ravel()
                worst = max([abs(p - q) - atol - rtol * abs(q) for p, q in zip(xs, ys)] or [0.0])
                if worst > 0 or any(math.isnan(p) != math.isnan(q) for p, q in zip(xs, ys)):
                    diff = max([abs(p - q) for p, q in zip(xs, ys)] or [0.0])
                    raise AssertionError("%s of %s and its twin differ by up to %g"
                                         % (what, self.qualname, diff))
            elif x != y:
                raise AssertionError("%s: %r, twin %r" % (what, x, y))

        for i, (x, y) in enumerate(zip(got, want)):
            compare("result %d" % i, x, y)
        # Gradients are compared where the operator has a backward
        # (register_autograd); without one, LibTorch 2.x still marks results as
        # requiring grad but gives the inputs none.
        outs = [(x, y) for x, y in zip(got, want)
                if isinstance(x, Tensor) and x.requires_grad and y.requires_grad
                and getattr(self, "_has_backward", False)]
        if outs:
            for side in (0, 1):
                total = outs[0][side].sum()
                for pair in outs[1:]:
                    total = total + pair[side].sum()
                total.backward()
            for i, (p, q) in enumerate(zip(a1, a2)):
                if isinstance(p, Tensor) and p.requires_grad:
                    if (p.grad is None) != (q.grad is None):
                        raise AssertionError("gradient of argument %d: only one of %s and its "
                                             "twin has one" % (i, self.qualname))
                    if p.grad is not None:
                        compare("gradient of argument %d" % i, p.grad, q.grad)

    def close(self) -> None:
        """Removes the operator from the dispatcher."""
        self.lib.close()


def op(qualname: str, schema: str, fn: Optional[Callable[..., Any]] = None, *,
       device_types: Any = None, tags: Sequence[str] = (), arrays: bool = False) -> Any:
    """Defines operator "ns::name" with schema "(Tensor x, float a) -> Tensor"
    in torch's dispatcher, with fn as its kernel for device_types (None:
    every device). arrays=True: fn takes numpy arrays on the tensors' own
    memory (made contiguous where they are not) and returns arrays (or
    tensors), which become the results without a copy. A decorator; returns
    a CustomOp."""
    if "::" not in qualname:
        raise ValueError("the name must be 'namespace::name', got %r" % qualname)
    if fn is None:
        return lambda f: op(qualname, schema, f, device_types=device_types, tags=tags,
                            arrays=arrays)
    ns, name = qualname.split("::", 1)
    lib = Library(ns)
    lib.define(name + schema if schema.startswith("(") else schema, tags)
    cop = CustomOp(qualname, schema, lib)
    if device_types is None:
        lib.impl(name, _with_arrays(fn, _written_args(schema)) if arrays else fn,
                 "CompositeExplicitAutograd")
    else:
        cop.register_kernel(device_types, fn, arrays=arrays)
    return cop
