"""``Tensor``: one ``ct_tensor`` handle, its cached metadata, operators,
ops as methods and indexing."""

from ctypes import byref, c_int32, c_void_p
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, List, NamedTuple, Optional,
                    Tuple, overload)

from . import _lib, _call, _handle, _interop, _format, _release, ops
from ._lib import (C, G, CT_DEVICE_CPU, CT_DEVICE_CUDA, CT_DTYPE_KEEP, CT_DEVICE_KEEP, NO_INDEX,
                   SIZES, check, tls)
from ._call import aten as _op, generation
from ._factories import as_tensor, tensor as _tensor
from ._handle import new_tensor
from ._indexing import index as _index, select as _select, setitem as _setitem
from ._meta import Meta as _Meta, read as _read_meta
from ._module import load_pickle, save_pickle
from ._types import CPU, device, dtype, get_device, get_dtype
from . import _types

_tensor_free = G.tensor_free
_release_h, _release_deferred, _deferred = (_release.release, _release.release_deferred,
                                             _release._deferred)
_op_call_tensors = C.op_call_tensors
_last_error_code = G.last_error_code
_ONE, _TWO = SIZES[1], SIZES[2]
_EXACT = 1 << 53  # ints up to this pass through a C double exactly


def _out(fn: Callable[..., int], *args: Any) -> "Tensor":
    out = c_void_p()
    check(fn(byref(out), *args))
    return new_tensor(out.value or 0)



class GradFn:
    """What ``Tensor.grad_fn`` gives: the node's ``name()``, as torch's
    autograd nodes have (the node itself stays inside LibTorch)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return "<%s object>" % self._name

if TYPE_CHECKING:  # the aten ops as methods, generated from the op schemas (gen_stubs.py)
    from ._tensor_ops import TensorOps as _TensorOps
else:
    _TensorOps = object


class Tensor(_TensorOps):
    """A handle to a LibTorch tensor (one ``ct_tensor``; pass it to ctypes
    functions directly, through ``_as_parameter_``).

    Operators, indexing and every aten op as a method (``t.sum(dim=1)``) run
    through ctorch's op calls. Metadata (shape, dtype, device, ...) is read
    once per handle with ``ct_tensor_metadata`` and read again after calls
    that may change it in place. The handle is freed when the object dies, or
    at once with ``free()`` or a ``with`` block."""

    __slots__ = ("_h", "_m", "_g", "__weakref__")
    _h: int
    _m: Optional[_Meta]
    _g: int

    def __new__(cls, data: Any = None, dtype: Any = None, device: Any = None,
                requires_grad: bool = False) -> "Tensor":
        if data is None:
            raise TypeError("use ctorch.tensor(data), ctorch.empty(...) or another factory")
        return _tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)

    # ---- the handle ------------------------------------------------------------
    def _ptr(self) -> int:
        h = self._h
        if not h:
            raise _lib.InvalidArgumentError("use of a freed tensor")
        return h

    @property
    def _as_parameter_(self) -> int:
        return self._ptr()

    @property
    def _handle(self) -> int:
        """The ct_tensor* as an int (borrowed; valid while this object lives)."""
        return self._ptr()

    def free(self) -> None:
        """Frees the handle now (the memory lives on while other handles, views
        or numpy arrays use it). Further use raises ctorch.InvalidArgumentError.
        Safe against use on other threads: while another thread runs ctorch
        code (it may be using this tensor), the handle is freed when this
        object dies instead (see _release)."""
        h, self._h, self._m = self._h, 0, None
        if h:
            _release_h(self, _tensor_free, h)

    def __del__(self, _free: Any = _tensor_free, _deferred: Any = _deferred,
                _release_deferred: Any = _release_deferred) -> None:
        # no module global (bound here): at interpreter exit they may be None
        h = self._h
        if h:
            _free(h)
        elif _deferred:
            _release_deferred(self)

    def __enter__(self) -> "Tensor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()

    @property
    def is_freed(self) -> bool:
        return not self._h

    # ---- metadata ----------------------------------------------------------------
    def _meta(self) -> _Meta:
        m = self._m
        if m is None or self._g != generation[0]:
            self._g = generation[0]
            m = self._m = _read_meta(self._ptr())
        return m

    @property
    def shape(self) -> Tuple[int, ...]:
        m = self._m
        if m is None or self._g != generation[0]:
            m = self._meta()
        return m.shape

    @overload
    def size(self) -> Tuple[int, ...]: ...
    @overload
    def size(self, dim: int) -> int: ...
    def size(self, dim: Optional[int] = None) -> Any:
        shape = self._meta().shape
        if dim is None:
            return shape
        return shape[_dim(dim, len(shape))]

    @property
    def strides(self) -> Tuple[int, ...]:
        """Strides in elements (numpy's .strides is in bytes)."""
        return self._meta().strides

    @overload
    def stride(self) -> Tuple[int, ...]: ...
    @overload
    def stride(self, dim: int) -> int: ...
    def stride(self, dim: Optional[int] = None) -> Any:
        strides = self._meta().strides
        if dim is None:
            return strides
        return strides[_dim(dim, len(strides))]

    @property
    def ndim(self) -> int:
        m = self._m
        if m is None or self._g != generation[0]:
            m = self._meta()
        return m.ndim

    def dim(self) -> int:
        return len(self._meta().shape)

    def numel(self) -> int:
        return self._meta().numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        m = self._meta()
        return m.numel * self.dtype.itemsize

    def storage_offset(self) -> int:
        return self._meta().storage_offset

    @property
    def dtype(self) -> dtype:
        m = self._m
        if m is None or self._g != generation[0]:
            m = self._meta()
        d = m.dtype
        if d is None:
            raise _lib.CTorchTypeError("tensor has a dtype ctorch has no code for")
        return d

    @property
    def device(self) -> device:
        m = self._m
        if m is None or self._g != generation[0]:
            m = self._meta()
        return m.device

    @property
    def is_cuda(self) -> bool:
        return self._meta().device_type == CT_DEVICE_CUDA

    @property
    def is_cpu(self) -> bool:
        return self._meta().device_type == CT_DEVICE_CPU

    def data_ptr(self) -> int:
        """Address of the first element (0 for an empty tensor)."""
        return self._meta().data

    def is_contiguous(self) -> bool:
        return bool(self._meta().is_contiguous)

    @property
    def layout(self) -> str:
        """"strided", "sparse_coo", ... (ct_tensor_layout; torch.strided is "strided")."""
        out = c_int32()
        check(G.tensor_layout(byref(out), self._ptr()))
        return _lib.LAYOUT_NAMES.get(out.value, "unknown")

    def is_pinned(self) -> bool:
        return bool(G.tensor_is_pinned(self._ptr()))

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def __len__(self) -> int:
        shape = self._meta().shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    @property
    def T(self) -> "Tensor":
        """The dimensions reversed (torch's Tensor.T)."""
        r: Tensor = _op("permute")(self, list(range(self.ndim - 1, -1, -1)))
        return r

    @property
    def mT(self) -> "Tensor":
        """The last two dimensions swapped (a batch of matrices transposed)."""
        r: Tensor = _op("transpose", "int")(self, -2, -1)
        return r

    # ---- autograd ------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return bool(self._meta().requires_grad)

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        check(G.tensor_set_requires_grad(self._ptr(), 1 if flag else 0))
        _call.bump()

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Optional["Tensor"]:
        out = c_void_p()
        check(G.tensor_grad(byref(out), self._ptr()))
        return new_tensor(out.value) if out.value else None

    @grad.setter
    def grad(self, g: Optional["Tensor"]) -> None:
        check(G.tensor_set_grad(self._ptr(), None if g is None else g._ptr()))

    def zero_grad(self) -> None:
        check(G.tensor_zero_grad(self._ptr()))

    @property
    def is_leaf(self) -> bool:
        return bool(G.tensor_is_leaf(self._ptr()))

    @property
    def grad_fn_name(self) -> Optional[str]:
        """Name of the autograd node that made this tensor ("AddBackward0"), or None."""
        out = c_void_p()
        check(G.tensor_grad_fn_name(byref(out), self._ptr()))
        return _lib.take_string(out.value)

    @property
    def grad_fn(self) -> Optional["GradFn"]:
        """The autograd node that made this tensor (None for leaves), with
        torch's ``name()``."""
        name = self.grad_fn_name
        return None if name is None else GradFn(name)

    def backward(self, gradient: Any = None, retain_graph: bool = False,
                 create_graph: bool = False) -> None:
        """Runs backward. An exception raised by a Python autograd.Function's
        backward is re-raised here (the original exception, with the ctorch
        error as __cause__)."""
        g = None if gradient is None else _as_tensor(gradient)
        check(C.tensor_backward(self._ptr(), g, 1 if (retain_graph or create_graph) else 0,
                                1 if create_graph else 0))

    # ---- conversions -------------------------------------------------------------
    def to(self, *args: Any, dtype: Any = None, device: Any = None, non_blocking: bool = False,
           copy: bool = False) -> "Tensor":
        """t.to(dtype), t.to(device), t.to(device, dtype), t.to(other_tensor),
        keywords dtype=, device=, non_blocking=, copy=."""
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, _types.dtype) or (not isinstance(a, (str, _types.device, int))
                                                 and _looks_like_dtype(a)):
                dtype = a
            else:
                device = a
        dt = get_dtype(dtype).code if dtype is not None else CT_DTYPE_KEEP
        if device is not None:
            d = get_device(device)
            dc, di = d.code, d.c_index
        else:
            dc, di = CT_DEVICE_KEEP, NO_INDEX
        return _out(C.tensor_to, self._ptr(), dc, di, dt, 1 if non_blocking else 0,
                    1 if copy else 0)

    def cpu(self) -> "Tensor":
        return self.to(device=CPU)

    def cuda(self, index: Optional[int] = None) -> "Tensor":
        return self.to(device=_types.device("cuda", index))

    def clone(self) -> "Tensor":
        return _out(C.tensor_clone, self._ptr())

    def detach(self) -> "Tensor":
        return _out(G.tensor_detach, self._ptr())

    def contiguous(self) -> "Tensor":
        return _out(C.tensor_contiguous, self._ptr())

    def ref(self) -> "Tensor":
        """A new handle to the same tensor (same storage and autograd identity)."""
        return _out(G.tensor_ref, self._ptr())

    def pin_memory(self) -> "Tensor":
        return _out(C.tensor_pin_memory, self._ptr())

    def copy_(self, src: Any, non_blocking: bool = False) -> "Tensor":
        check(C.tensor_copy_(self._ptr(), _as_tensor(src), 1 if non_blocking else 0))
        return self

    def fill_(self, value: Any) -> "Tensor":
        if isinstance(value, Tensor):
            return self.copy_(value)
        if isinstance(value, complex):
            raise _lib.NotSupportedError("fill_ with a complex value is not supported")
        if type(value) is int and not -_EXACT <= value <= _EXACT:
            # ct_tensor_fill_ takes a double: exact only up to 2**53
            _op("fill_", "Scalar")(self, value)
            return self
        check(C.tensor_fill_(self._ptr(), float(value)))
        return self

    def zero_(self) -> "Tensor":
        return self.fill_(0.0)

    def equal(self, other: Any) -> bool:
        out = c_int32()
        check(C.tensor_equal(byref(out), self._ptr(), _as_tensor(other)))
        return bool(out.value)

    def allclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08,
                 equal_nan: bool = False) -> bool:
        out = c_int32()
        check(C.tensor_allclose(byref(out), self._ptr(), _as_tensor(other), rtol, atol,
                                1 if equal_nan else 0))
        return bool(out.value)

    def item(self) -> Any:
        n = self._meta().numel
        if n != 1:  # a ValueError (torch 1.x) and a RuntimeError (torch 2.x) alike
            raise _lib.ItemError("a Tensor with %d elements cannot be converted to Scalar" % n)
        return _op("item", "")(self)

    def tolist(self) -> Any:
        """Nested Python lists (or a scalar for a 0-d tensor). Stdlib only."""
        return _interop.tolist(self)

    def __bool__(self) -> bool:
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.dtype.is_complex:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    # ---- numpy, DLPack, pickling -------------------------------------------------------
    def numpy(self, bfloat16: str = "raise") -> Any:
        """A numpy array sharing this tensor's memory (no copy). The array keeps
        the memory alive by itself, so it stays valid after this Tensor is freed.

        numpy has no bfloat16: for a bfloat16 tensor, ``bfloat16="raise"`` (the
        default) raises TypeError, ``bfloat16="uint16"`` returns a zero-copy
        uint16 view of the raw bits, and ``bfloat16="float32"`` returns a
        float32 copy. Requires a CPU tensor that does not require grad (as in
        torch; use .detach() / .cpu())."""
        return _interop.to_numpy(self, bfloat16, generation)

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        a = self.numpy(bfloat16="float32")
        return a if dtype is None else a.astype(dtype, copy=False)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """Exports the tensor as a DLPack capsule (array API standard): a
        versioned capsule ("dltensor_versioned") when the consumer passes
        max_version >= (1, 0), a legacy "dltensor" capsule otherwise."""
        return _interop.to_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> Tuple[int, int]:
        m = self._meta()
        return (m.device_type, max(m.device_index, 0))

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled in torch.save's format (torch.load reads it)."""
        return (_unpickle, (save_pickle(self),))

    # ---- printing --------------------------------------------------------------------
    def __repr__(self) -> str:
        if not self._h:
            return "<ctorch.Tensor (freed)>"
        return _format.tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if not spec:
            return repr(self)
        return format(self.item(), spec)

    __hash__ = object.__hash__

    # ---- ops as methods ------------------------------------------------------------
    if not TYPE_CHECKING:  # type checkers see the methods of TensorOps (_tensor_ops.pyi)
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__") or name in Tensor.__slots__:
                raise AttributeError(name)
            try:
                fn = getattr(ops.aten, name)
            except AttributeError:
                raise AttributeError("'ctorch.Tensor' object has no attribute %r and there is "
                                     "no aten::%s op" % (name, name)) from None
            return _BoundOp(fn, self, name in _VARARG_METHODS)

    def __dir__(self) -> List[str]:
        return sorted(set(object.__dir__(self)) | set(dir(ops.aten)))

    # ---- indexing --------------------------------------------------------------------
    def __getitem__(self, idx: Any) -> "Tensor":
        r: Tensor = _select(self, 0, idx) if type(idx) is int else _index(self, idx)
        return r

    def __setitem__(self, idx: Any, value: Any) -> None:
        _setitem(self, idx, value)

    def __iter__(self) -> Iterator["Tensor"]:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(len(self)):
            yield self[i]

    def __pos__(self) -> "Tensor":
        return self

    if TYPE_CHECKING:  # the operators are made by _operator / _unary below
        def __add__(self, other: Any) -> "Tensor": ...
        def __radd__(self, other: Any) -> "Tensor": ...
        def __iadd__(self, other: Any) -> "Tensor": ...
        def __sub__(self, other: Any) -> "Tensor": ...
        def __rsub__(self, other: Any) -> "Tensor": ...
        def __isub__(self, other: Any) -> "Tensor": ...
        def __mul__(self, other: Any) -> "Tensor": ...
        def __rmul__(self, other: Any) -> "Tensor": ...
        def __imul__(self, other: Any) -> "Tensor": ...
        def __truediv__(self, other: Any) -> "Tensor": ...
        def __rtruediv__(self, other: Any) -> "Tensor": ...
        def __itruediv__(self, other: Any) -> "Tensor": ...
        def __floordiv__(self, other: Any) -> "Tensor": ...
        def __rfloordiv__(self, other: Any) -> "Tensor": ...
        def __mod__(self, other: Any) -> "Tensor": ...
        def __rmod__(self, other: Any) -> "Tensor": ...
        def __pow__(self, other: Any) -> "Tensor": ...
        def __rpow__(self, other: Any) -> "Tensor": ...
        def __matmul__(self, other: Any) -> "Tensor": ...
        def __rmatmul__(self, other: Any) -> "Tensor": ...
        def __and__(self, other: Any) -> "Tensor": ...
        def __rand__(self, other: Any) -> "Tensor": ...
        def __or__(self, other: Any) -> "Tensor": ...
        def __ror__(self, other: Any) -> "Tensor": ...
        def __xor__(self, other: Any) -> "Tensor": ...
        def __rxor__(self, other: Any) -> "Tensor": ...
        def __lshift__(self, other: Any) -> "Tensor": ...
        def __rshift__(self, other: Any) -> "Tensor": ...
        def __eq__(self, other: Any) -> "Tensor": ...  # type: ignore[override]
        def __ne__(self, other: Any) -> "Tensor": ...  # type: ignore[override]
        def __lt__(self, other: Any) -> "Tensor": ...
        def __le__(self, other: Any) -> "Tensor": ...
        def __gt__(self, other: Any) -> "Tensor": ...
        def __ge__(self, other: Any) -> "Tensor": ...
        def __neg__(self) -> "Tensor": ...
        def __abs__(self) -> "Tensor": ...
        def __invert__(self) -> "Tensor": ...
        def float(self) -> "Tensor": ...
        def double(self) -> "Tensor": ...
        def long(self) -> "Tensor": ...
        def int(self) -> "Tensor": ...
        def half(self) -> "Tensor": ...
        def bfloat16(self) -> "Tensor": ...
        def bool(self) -> "Tensor": ...
        # max, min, sort, topk, mode, kthvalue, median: TensorOps (values_indices results)


class values_indices(NamedTuple):
    """(values, indices), as torch.return_types (max, min, sort, topk, mode)."""
    values: Tensor
    indices: Tensor


#: ops whose (values, indices) results come back as values_indices (methods and functions)
NAMED_TUPLE_OPS = ("max", "min", "sort", "topk", "mode", "kthvalue", "median")


def _named(r: Any) -> Any:
    if type(r) is tuple and len(r) == 2:
        return values_indices(*r)
    return r


def _named_method(name: str) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return _named(getattr(ops.aten, name)(self, *args, **kwargs))
    method.__name__ = name
    method.__doc__ = "aten::%s; a (values, indices) pair comes back as values_indices" % name
    return method


def _dtype_method(name: str, d: dtype) -> Callable[[Tensor], Tensor]:
    def method(self: Tensor) -> Tensor:
        return self.to(dtype=d)
    method.__name__ = name
    method.__doc__ = "self.to(dtype=ctorch.%s)" % d.name
    return method


for _n in NAMED_TUPLE_OPS:
    setattr(Tensor, _n, _named_method(_n))
for _n, _d in (("float", _types.float32), ("double", _types.float64), ("long", _types.int64),
               ("int", _types.int32), ("half", _types.float16), ("bfloat16", _types.bfloat16),
               ("bool", _types.bool_)):
    setattr(Tensor, _n, _dtype_method(_n, _d))


def _unpickle(data: bytes) -> Tensor:
    t: Tensor = load_pickle(data)
    return t


def _dim(d: int, n: int) -> int:
    if not -n <= d < n or n == 0:
        raise _lib.CTorchIndexError("dimension %d out of range for a %d-d tensor" % (d, n))
    return d % n


class _BoundOp:
    __slots__ = ("fn", "t", "varargs")

    def __init__(self, fn: Any, t: Tensor, varargs: bool) -> None:
        self.fn = fn
        self.t = t
        self.varargs = varargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.varargs and args and all(isinstance(a, int) for a in args):
            args = (args,)
        return self.fn(self.t, *args, **kwargs)

    @property
    def __doc__(self) -> Optional[str]:  # type: ignore[override]
        return getattr(self.fn, "__doc__", None)

    def __repr__(self) -> str:
        return "<bound op %s of ctorch.Tensor>" % getattr(self.fn, "__name__", "?")


# Methods that take the sizes/dims as separate ints, as in torch (t.view(2, 3)).
_VARARG_METHODS = {"view", "reshape", "permute", "expand", "repeat", "tile", "flip", "resize_",
                   "new_zeros", "new_ones", "new_empty"}


def _looks_like_dtype(a: Any) -> bool:
    try:
        get_dtype(a)
        return True
    except _lib.Error:
        return False


def _as_tensor(x: Any) -> Tensor:
    if type(x) is Tensor:
        return x
    return as_tensor(x)


# ---- operators: one factory --------------------------------------------------------------

_SCALARS: Dict[Tuple[type, Any], Tensor] = {}
_SCALAR_DTYPES = {bool: _lib.CT_BOOL, int: _lib.CT_INT64, float: _lib.CT_FLOAT64}


def _scalar(x: Any) -> Optional[Tensor]:
    """A cached tensor standing for a Python bool/int/float as torch passes a
    Python scalar to a Tensor argument (a "wrapped number":
    ct_tensor_wrapped_number): it promotes as a number, and torch's dispatch
    modes (FakeTensorMode, torch.compile's tracers) see the number itself, so
    the cache holds no tensor of one mode that another could trip on. None
    when it cannot stand for x (ints beyond 2**53, -0.0 and nan, which the
    cache cannot key)."""
    key = (type(x), x)
    t = _SCALARS.get(key)
    if t is None:
        if type(x) is int and not -(1 << 53) <= x <= (1 << 53):
            return None
        if type(x) is float and (x != x or (x == 0.0 and str(x)[0] == "-")):
            return None
        out = c_void_p()
        check(G.tensor_wrapped_number(byref(out), float(x), _SCALAR_DTYPES[type(x)]))
        t = new_tensor(out.value or 0)
        if len(_SCALARS) < 1024:
            _SCALARS[key] = t
    return t


_SCALAR_TYPES = (int, float, bool)
#: The operators whose Tensor arguments torch's own Python accepts numbers
#: for (torch's should_allow_numbers_as_tensors): under a dispatch mode or
#: tracer the wrapped number reaches them as a Python number. Any other
#: operator gets a scalar through its Scalar overload, as torch passes it.
_NUMBERS_AS_TENSORS = frozenset({"add", "sub", "mul", "div", "floor_divide"})


# reflected Scalar overloads: aten op, overload, whether the scalar goes first
_REFLECTED = {"add": ("add", "Scalar", False), "mul": ("mul", "Scalar", False),
              "bitwise_and": ("bitwise_and", "Scalar", False),
              "bitwise_or": ("bitwise_or", "Scalar", False),
              "bitwise_xor": ("bitwise_xor", "Scalar", False),
              "sub": ("rsub", "Scalar", False), "pow": ("pow", "Scalar", True),
              "remainder": ("remainder", "Scalar_Tensor", True)}


def _operator(name: str, scalar_overload: Optional[str] = "Scalar",
              reflected: bool = False, inplace: bool = False,
              tensor_overload: str = "Tensor") -> Callable[[Tensor, Any], Any]:
    """The method for one operator (x + y, 2 - x, x += y ...): tensors go
    through ct_op_call_tensors; a Python scalar goes as a cached
    wrapped-number tensor (_scalar) to the operators whose Tensor arguments
    torch's tracers accept numbers for (_NUMBERS_AS_TENSORS), else through
    the op's Scalar overload, as torch does."""
    aten = name + "_" if inplace else name
    numbers_as_tensors = name in _NUMBERS_AS_TENSORS
    scalar_op: Optional[Tuple[str, str, bool]] = None
    if reflected:
        scalar_op = _REFLECTED.get(name)
    elif scalar_overload is not None:
        scalar_op = (aten, scalar_overload, False)

    fast: List[Any] = []   # [handle] once the tensor overload is known to be tensors-only

    # the hot names bound as defaults: local lookups on every call
    def method(self: Tensor, other: Any, _T: Any = Tensor, _tls: Any = tls,
               _call: Any = _op_call_tensors, _one: Any = _ONE, _two: Any = _TWO,
               _new: Any = new_tensor, _fast: List[Any] = fast) -> Any:
        to = type(other)
        if to is _T and _fast:
            ins, outs, _v, a_ins, a_outs, _av = _tls.fast
            if reflected:
                ins[0], ins[1] = other._h or other._ptr(), self._h or self._ptr()
            else:
                ins[0], ins[1] = self._h or self._ptr(), other._h or other._ptr()
            try:
                failed = _call(a_outs, _one, _fast[0], a_ins, _two)
            except SystemError as e:
                _lib.raise_python_error(e)
            if failed:
                raise _lib.error_from_status(_last_error_code())
            if inplace:
                _tensor_free(outs[0])
                generation[0] += 1
                return self
            return _new(outs[0])
        if not _fast:
            p = _op(aten, tensor_overload).fast(2)
            if p and p[1] == 1:
                _fast.append(p[0])
        if to is not Tensor:
            if to in _SCALAR_TYPES:
                s = _scalar(other) if numbers_as_tensors else None
                if s is not None:
                    x, y = (s, self) if reflected else (self, s)
                    return _finish(self, _op(aten, tensor_overload)(x, y))
                if scalar_op is not None:
                    c = _op(scalar_op[0], scalar_op[1])
                    return _finish(self, c(other, self) if scalar_op[2] else c(self, other))
                other = _as_tensor(other)
            else:
                try:
                    other = _as_tensor(other)
                except Exception:
                    return NotImplemented
        c = _op(aten, tensor_overload)
        return _finish(self, c(other, self) if reflected else c(self, other))

    def _finish(self: Tensor, r: Any) -> Any:
        if inplace:
            if r is not self and isinstance(r, Tensor):
                h, r._h = r._h, 0  # a fresh result no other thread has seen
                if h:
                    _tensor_free(h)
            return self
        return r

    return method


def _unary(name: str) -> Callable[[Tensor], Tensor]:
    def method(self: Tensor) -> Tensor:
        c = _op(name)
        p = c.fast(1)
        if p and p[1] == 1:
            ins, outs, _v, a_ins, a_outs, _av = tls.fast
            ins[0] = self._h or self._ptr()
            try:
                failed = _op_call_tensors(a_outs, _ONE, p[0], a_ins, _ONE)
            except SystemError as e:
                _lib.raise_python_error(e)
            if failed:
                raise _lib.error_from_status(_last_error_code())
            return new_tensor(outs[0])
        r: Tensor = c(self)
        return r
    method.__name__ = "__%s__" % name
    return method


for _py, _aten, _sov, _tov in (
        ("add", "add", "Scalar", "Tensor"), ("sub", "sub", "Scalar", "Tensor"),
        ("mul", "mul", "Scalar", "Tensor"), ("truediv", "div", "Scalar", "Tensor"),
        ("floordiv", "floor_divide", "Scalar", ""), ("mod", "remainder", "Scalar", "Tensor"),
        ("pow", "pow", "Tensor_Scalar", "Tensor_Tensor"), ("and", "bitwise_and", "Scalar", "Tensor"),
        ("or", "bitwise_or", "Scalar", "Tensor"), ("xor", "bitwise_xor", "Scalar", "Tensor"),
        ("lshift", "__lshift__", "Scalar", "Tensor"), ("rshift", "__rshift__", "Scalar", "Tensor"),
        ("eq", "eq", "Scalar", "Tensor"), ("ne", "ne", "Scalar", "Tensor"),
        ("lt", "lt", "Scalar", "Tensor"), ("le", "le", "Scalar", "Tensor"),
        ("gt", "gt", "Scalar", "Tensor"), ("ge", "ge", "Scalar", "Tensor"),
        ("matmul", "matmul", None, "")):
    _m = _operator(_aten, _sov, tensor_overload=_tov)
    _m.__name__ = "__%s__" % _py
    setattr(Tensor, "__%s__" % _py, _m)
    if _py not in ("eq", "ne", "lt", "le", "gt", "ge"):
        # reflected: 2 - x is sub(2, x); a 0-dim tensor stands for the scalar
        _r = _operator(_aten, None, reflected=True, tensor_overload=_tov)
        _r.__name__ = "__r%s__" % _py
        setattr(Tensor, "__r%s__" % _py, _r)
for _py, _aten in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("truediv", "div")):
    _i = _operator(_aten, "Scalar", inplace=True)
    _i.__name__ = "__i%s__" % _py
    setattr(Tensor, "__i%s__" % _py, _i)
for _py, _aten in (("neg", "neg"), ("abs", "abs"), ("invert", "bitwise_not")):
    setattr(Tensor, "__%s__" % _py, _unary(_aten))
del _py, _aten, _sov, _tov, _m, _r, _i


_handle.register_tensor_class(Tensor)
