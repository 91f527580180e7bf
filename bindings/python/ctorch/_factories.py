"""Tensor factories: ``tensor``, ``as_tensor``, ``zeros`` and friends, ``*_like``."""

from __future__ import annotations

import array
import operator
from ctypes import byref, c_int64, c_void_p
from typing import (TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple,
                    Union, overload)

from . import _handle, _lib, _types
from ._lib import C, CT_DEVICE_CPU, NO_INDEX, check, int_arg
from ._interop import from_dlpack, from_numpy
from ._types import CPU, DeviceLike, DTypeLike, dtype, get_device, get_dtype
from ._call import aten as _op
from ._handle import new_tensor

if TYPE_CHECKING:  # the class is tensor.py's, which imports this module
    from .tensor import Tensor

_DEFAULT_DTYPE = _types.float32
_EXACT = 1 << 53  # ints up to this pass through a C double exactly


def _out(fn: Callable[..., int], *args: Any) -> Tensor:
    out = c_void_p()
    check(fn(byref(out), *args))
    return new_tensor(out.value or 0)


def _sizes_arg(size: Sequence[Any]) -> Tuple[Any, int]:
    if len(size) == 1 and not isinstance(size[0], int):
        s = size[0]
        size = s.tolist() if isinstance(s, _handle.Tensor) else s
    # ctypes would wrap 2**64 + 3 silently to 3
    dims = tuple(int_arg(s, "int64", "size at dimension %d", i) for i, s in enumerate(size))
    return (c_int64 * max(len(dims), 1))(*dims), len(dims)


def _dev_args(dev: Any) -> Tuple[int, int]:
    if dev is None:
        return CT_DEVICE_CPU, NO_INDEX
    d = get_device(dev)
    return d.code, d.c_index


def _dt(d: Any) -> int:
    code: int = (_DEFAULT_DTYPE if d is None else get_dtype(d)).code
    return code


def _factory(cfn: Callable[..., int], size: Tuple[Any, ...], dtype: Optional[DTypeLike],
             device: Optional[DeviceLike], requires_grad: bool) -> Tensor:
    sizes, n = _sizes_arg(size)
    dc, di = _dev_args(device)
    return _out(cfn, sizes, n, _dt(dtype), dc, di, 1 if requires_grad else 0)


# Sizes go as separate ints or as one sequence (a tuple, a list, t.shape); dtype, device and
# requires_grad are keyword-only, as in torch.
@overload
def empty(*size: int, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
          requires_grad: bool = False) -> Tensor: ...
@overload
def empty(size: Sequence[int], /, *, dtype: Optional[DTypeLike] = None,
          device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor: ...
def empty(*size: Any, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
          requires_grad: bool = False) -> Tensor:
    """empty(*size, dtype=float32, device='cpu', requires_grad=False): uninitialised tensor."""
    return _factory(C.tensor_empty, size, dtype, device, requires_grad)


@overload
def zeros(*size: int, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
          requires_grad: bool = False) -> Tensor: ...
@overload
def zeros(size: Sequence[int], /, *, dtype: Optional[DTypeLike] = None,
          device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor: ...
def zeros(*size: Any, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
          requires_grad: bool = False) -> Tensor:
    """zeros(*size, dtype=float32, device='cpu', requires_grad=False)"""
    return _factory(C.tensor_zeros, size, dtype, device, requires_grad)


@overload
def ones(*size: int, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
         requires_grad: bool = False) -> Tensor: ...
@overload
def ones(size: Sequence[int], /, *, dtype: Optional[DTypeLike] = None,
         device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor: ...
def ones(*size: Any, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
         requires_grad: bool = False) -> Tensor:
    """ones(*size, dtype=float32, device='cpu', requires_grad=False)"""
    return _factory(C.tensor_ones, size, dtype, device, requires_grad)


@overload
def rand(*size: int, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
         requires_grad: bool = False) -> Tensor: ...
@overload
def rand(size: Sequence[int], /, *, dtype: Optional[DTypeLike] = None,
         device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor: ...
def rand(*size: Any, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
         requires_grad: bool = False) -> Tensor:
    """rand(*size, ...): uniform [0, 1)"""
    return _factory(C.tensor_rand, size, dtype, device, requires_grad)


@overload
def randn(*size: int, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
          requires_grad: bool = False) -> Tensor: ...
@overload
def randn(size: Sequence[int], /, *, dtype: Optional[DTypeLike] = None,
          device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor: ...
def randn(*size: Any, dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
          requires_grad: bool = False) -> Tensor:
    """randn(*size, ...): standard normal"""
    return _factory(C.tensor_randn, size, dtype, device, requires_grad)


def full(size: Union[int, Sequence[int]], fill_value: Union[int, float, bool], *,
         dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
         requires_grad: bool = False) -> Tensor:
    """full(size, fill_value): the dtype follows fill_value as in torch (bool,
    int64, float32) unless given."""
    if isinstance(size, int):
        size = (size,)
    sizes, n = _sizes_arg(tuple(size))
    if dtype is None:
        dtype = _types.bool_ if isinstance(fill_value, bool) else (
            _types.int64 if isinstance(fill_value, int) else _DEFAULT_DTYPE)
    dc, di = _dev_args(device)
    if type(fill_value) is int and not -_EXACT <= fill_value <= _EXACT:
        # ct_tensor_full takes a double: exact only up to 2**53
        t = _out(C.tensor_empty, sizes, n, get_dtype(dtype).code, dc, di, 0)
        t.fill_(fill_value)
        if requires_grad:
            t.requires_grad = True
        return t
    return _out(C.tensor_full, sizes, n, float(fill_value), get_dtype(dtype).code, dc, di,
                1 if requires_grad else 0)


def arange(start: Union[int, float], end: Optional[Union[int, float]] = None,
           step: Union[int, float] = 1, *, dtype: Optional[DTypeLike] = None,
           device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """arange(end) or arange(start, end, step); int64 when every argument is an
    int, float32 otherwise (as in torch)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = _types.int64 if all(isinstance(x, int) for x in (start, end, step)) \
            else _DEFAULT_DTYPE
    if any(type(x) is int and not -_EXACT <= x <= _EXACT for x in (start, end, step)):
        # ct_tensor_arange takes doubles: exact only up to 2**53
        t: Tensor = _op("arange", "start_step")(start, end, step, dtype=get_dtype(dtype),
                                                device=get_device(device or CPU))
        if requires_grad:
            t.requires_grad = True
        return t
    dc, di = _dev_args(device)
    return _out(C.tensor_arange, float(start), float(end), float(step), get_dtype(dtype).code,
                dc, di, 1 if requires_grad else 0)


def eye(n: int, m: Optional[int] = None, *, dtype: Optional[DTypeLike] = None,
        device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    dc, di = _dev_args(device)
    return _out(C.tensor_eye, int_arg(n, "int64", "eye: n"),
                -1 if m is None else int_arg(m, "int64", "eye: m"), _dt(dtype), dc, di,
                1 if requires_grad else 0)


def _like(name: str, t: Any, args: Tuple[Any, ...], dtype: Optional[DTypeLike],
          device: Optional[DeviceLike], requires_grad: bool) -> Tensor:
    kw: Dict[str, Any] = {}
    if dtype is not None:
        kw["dtype"] = get_dtype(dtype)
    if device is not None:
        kw["device"] = get_device(device)
    r: Tensor = _op(name)(as_tensor(t), *args, **kw)
    if requires_grad:
        r.requires_grad = True
    return r


def empty_like(t: Any, *, dtype: Optional[DTypeLike] = None,
               device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """empty_like(t, dtype=None, device=None): like torch.empty_like"""
    return _like("empty_like", t, (), dtype, device, requires_grad)


def zeros_like(t: Any, *, dtype: Optional[DTypeLike] = None,
               device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """zeros_like(t, dtype=None, device=None): like torch.zeros_like"""
    return _like("zeros_like", t, (), dtype, device, requires_grad)


def ones_like(t: Any, *, dtype: Optional[DTypeLike] = None,
              device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """ones_like(t, dtype=None, device=None): like torch.ones_like"""
    return _like("ones_like", t, (), dtype, device, requires_grad)


def full_like(t: Any, fill_value: Union[int, float, bool], *,
              dtype: Optional[DTypeLike] = None, device: Optional[DeviceLike] = None,
              requires_grad: bool = False) -> Tensor:
    """full_like(t, fill_value, dtype=None, device=None): like torch.full_like"""
    return _like("full_like", t, (fill_value,), dtype, device, requires_grad)


def rand_like(t: Any, *, dtype: Optional[DTypeLike] = None,
              device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """rand_like(t, dtype=None, device=None): like torch.rand_like"""
    return _like("rand_like", t, (), dtype, device, requires_grad)


def randn_like(t: Any, *, dtype: Optional[DTypeLike] = None,
               device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """randn_like(t, dtype=None, device=None): like torch.randn_like"""
    return _like("randn_like", t, (), dtype, device, requires_grad)


# ---- tensor(data): copies of Python data ---------------------------------------------------

def _infer(data: Any) -> Tuple[List[int], List[Any], Set[str]]:
    """Shape, flat list and kinds (b, i, f, c) of nested Python lists of scalars."""
    shape: List[int] = []
    x = data
    while isinstance(x, (list, tuple)):
        shape.append(len(x))
        if not x:
            break
        x = x[0]
    flat: List[Any] = []

    def walk(x: Any, depth: int) -> None:
        if depth == len(shape):
            if isinstance(x, (list, tuple)):
                raise _lib.InvalidArgumentError("ragged nested sequence")
            flat.append(x.item() if isinstance(x, _handle.Tensor) else x)
            return
        if not isinstance(x, (list, tuple)) or len(x) != shape[depth]:
            raise _lib.InvalidArgumentError(
                "ragged nested sequence: expected length %d at depth %d" % (shape[depth], depth))
        for e in x:
            walk(e, depth + 1)
    walk(data, 0)
    kinds = set()
    for e in flat:
        if isinstance(e, bool):
            kinds.add("b")
        elif isinstance(e, int):
            kinds.add("i")
        elif isinstance(e, float):
            kinds.add("f")
        elif isinstance(e, complex):
            kinds.add("c")
        elif hasattr(e, "__index__"):
            kinds.add("i")
        elif hasattr(e, "__float__"):
            kinds.add("f")
        else:
            raise _lib.CTorchTypeError("cannot make a tensor from %s" % type(e).__name__)
    return shape, flat, kinds


def _from_flat(shape: List[int], flat: List[Any], d: dtype, kinds: Set[str]) -> Tensor:
    """Packs flat Python scalars with the array module and copies them in."""
    sizes, n = _sizes_arg(tuple(shape))
    buf: "array.array[Any]"
    if "c" in kinds or d.is_complex:
        vals: List[float] = []
        for e in flat:
            e = complex(e)
            vals += [e.real, e.imag]
        buf = array.array("d", vals)
        tmp = _types.complex128
    elif d is _types.bool_ or kinds == {"b"}:
        buf = array.array("b", [1 if e else 0 for e in flat])
        tmp = _types.bool_
    elif d.is_floating_point or "f" in kinds:
        buf = array.array("d", [float(e) for e in flat])
        tmp = _types.float64
    else:
        ints = [operator.index(e) for e in flat]
        try:
            buf = array.array("q", ints)
        except OverflowError:
            for i, e in enumerate(ints):
                int_arg(e, "int64", "tensor: element %d", i)
            raise
        tmp = _types.int64
    addr = buf.buffer_info()[0] if len(buf) else None
    t = _out(C.tensor_from_data, addr, sizes, n, tmp.code, CT_DEVICE_CPU, NO_INDEX)
    return t if tmp is d else t.to(dtype=d)


def tensor(data: Any, *, dtype: Optional[DTypeLike] = None,
           device: Optional[DeviceLike] = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a COPY of data: nested lists/tuples of Python
    scalars, a Python scalar, a numpy array, or any DLPack producer (a torch
    tensor, a ctorch.Tensor). dtype is inferred as torch does (bool, int64,
    float32, complex64) unless given."""
    if isinstance(data, _handle.Tensor):
        t = data.detach().clone()
        if dtype is not None or device is not None:
            t = t.to(dtype=dtype, device=device)
    elif hasattr(data, "__array_interface__") or hasattr(data, "__dlpack__"):
        src = _from_array_like(data)
        t = src.clone() if src.device == CPU else src.to(device=CPU, copy=True)
        if dtype is not None or device is not None:
            t = t.to(dtype=dtype, device=device)
    else:
        shape, flat, kinds = _infer(data)
        if dtype is None:
            d = (_types.complex64 if "c" in kinds else _DEFAULT_DTYPE if "f" in kinds else
                 _types.int64 if "i" in kinds else _types.bool_ if "b" in kinds else
                 _DEFAULT_DTYPE)
        else:
            d = get_dtype(dtype)
        t = _from_flat(shape, flat, d, kinds)
        if device is not None and get_device(device) != CPU:
            t = t.to(device=device)
    if requires_grad:
        t.requires_grad = True
    return t


def as_tensor(x: Any, dtype: Optional[DTypeLike] = None,
              device: Optional[DeviceLike] = None) -> Tensor:
    """x itself if it is a Tensor; a zero-copy tensor for DLPack producers
    (numpy arrays, torch tensors) when possible; else a new tensor."""
    if isinstance(x, _handle.Tensor):
        if dtype is None and device is None:
            return x
        return x.to(dtype=dtype, device=device)
    if hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__"):
        t = _from_array_like(x)
        if dtype is not None or device is not None:
            t = t.to(dtype=dtype, device=device)
        return t
    return tensor(x, dtype=dtype, device=device)


def _from_array_like(x: Any) -> Tensor:
    if type(x).__module__ == "numpy" and hasattr(x, "__array_interface__"):
        try:
            t: Tensor = from_numpy(x)
            return t
        except _lib.Error:
            import numpy
            t = from_numpy(numpy.ascontiguousarray(x))
            return t
    if hasattr(x, "__dlpack__"):
        t = from_dlpack(x)
        return t
    import numpy
    t = from_numpy(numpy.ascontiguousarray(numpy.asarray(x)))
    return t


def scalar_tensor(x: Any, like: Optional[Tensor] = None) -> Tensor:
    """A 0-dim tensor holding the Python scalar x (on like's device)."""
    dt = (_types.bool_ if isinstance(x, bool) else _types.int64 if isinstance(x, int) else
          _types.complex128 if isinstance(x, complex) else _types.float64)
    return tensor(x, dtype=dt, device=like.device if like is not None else None)

