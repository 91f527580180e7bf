"""Python objects to and from ct_value handles (TorchScript values); ``Value``.

Tensors and Modules are made and recognised through ``_handle`` (the classes
registered there), so this module imports neither tensor.py nor _module.py.
"""

import ctypes
import operator
from ctypes import byref, c_double, c_int32, c_int64, c_size_t, c_void_p
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import _lib, _release, _handle
from ._handle import new_tensor
from ._interop import from_dlpack
from ._lib import (G, CT_VALUE_BOOL, CT_VALUE_BOOL_LIST, CT_VALUE_DEVICE, CT_VALUE_DICT,
                   CT_VALUE_DOUBLE, CT_VALUE_DOUBLE_LIST, CT_VALUE_INT, CT_VALUE_INT_LIST,
                   CT_VALUE_LIST, CT_VALUE_NONE, CT_VALUE_OBJECT, CT_VALUE_STRING,
                   CT_VALUE_TENSOR, CT_VALUE_TENSOR_LIST, CT_VALUE_TUPLE, check)
from ._types import device, dtype
from ._generator import Generator

_new = object.__new__
_value_free = G.value_free
_value_tag = G.value_tag

def new_value(fn: Callable[..., int], *args: Any) -> int:
    """Calls a ct_value constructor; returns the new handle (an int)."""
    out = c_void_p()
    check(fn(byref(out), *args))
    return out.value or 0


NONE_V = new_value(G.value_none)
TRUE_V = new_value(G.value_from_bool, 1)
FALSE_V = new_value(G.value_from_bool, 0)
_INT_CACHE: Dict[int, int] = {}
_FLOAT_CACHE: Dict[float, int] = {}
_CACHE_MAX = 4096
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def int_value(x: int) -> Tuple[int, bool]:
    """(ct_value, owned) for a Python int; small ones are cached (borrowed)."""
    v = _INT_CACHE.get(x)
    if v is not None:
        return v, False
    if not _INT64_MIN <= x <= _INT64_MAX:
        _lib.int_arg(x, "int64", "integer argument")  # raises IntRangeError (an OverflowError)
    v = new_value(G.value_from_int, x)
    if len(_INT_CACHE) < _CACHE_MAX:
        w = _INT_CACHE.setdefault(x, v)  # another thread may have won the race
        if w != v:
            _value_free(v)
        return w, False
    return v, True


def float_value(x: float) -> Tuple[int, bool]:
    v = _FLOAT_CACHE.get(x)
    if v is not None:
        return v, False
    v = new_value(G.value_from_double, x)
    # 0.0 == -0.0 and nan != nan: keep those out of the cache
    if x != 0.0 and x == x and len(_FLOAT_CACHE) < _CACHE_MAX:
        w = _FLOAT_CACHE.setdefault(x, v)
        if w != v:
            _value_free(v)
        return w, False
    return v, True


def to_value(x: Any) -> Tuple[int, bool]:
    """Converts a Python object to a ct_value. Returns (handle, owned): owned
    handles must be freed by the caller (free_values), borrowed ones (cached
    constants) must not."""
    t = type(x)
    if t is _handle.Tensor:
        return new_value(G.value_from_tensor, x._ptr()), True
    if x is None:
        return NONE_V, False
    if t is bool:
        return (TRUE_V if x else FALSE_V), False
    if t is int:
        return int_value(x)
    if t is float:
        return float_value(x)
    return _to_value_slow(x)


def _to_value_slow(x: Any) -> Tuple[int, bool]:
    if isinstance(x, _handle.Tensor):
        return new_value(G.value_from_tensor, x._ptr()), True
    if isinstance(x, bool):
        return (TRUE_V if x else FALSE_V), False
    if isinstance(x, dtype):
        return int_value(x.code)
    if isinstance(x, device):
        return new_value(G.value_from_device, x.code, x.c_index), True
    if isinstance(x, str):
        b = x.encode("utf-8")
        return new_value(G.value_from_string, b, len(b)), True
    if isinstance(x, (bytes, bytearray)):
        b = bytes(x)
        return new_value(G.value_from_string, b, len(b)), True
    if isinstance(x, Value):
        return x._ptr(), False
    if isinstance(x, Generator):
        return new_value(G.value_from_generator, x._ptr()), True
    if isinstance(x, (list, tuple)):
        return _seq_value(x), True
    if isinstance(x, dict):
        return _dict_value(x), True
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        # numpy arrays, torch tensors, ...: zero-copy through DLPack
        t = from_dlpack(x)  # kept alive until the value holds its own reference
        return new_value(G.value_from_tensor, t._ptr()), True
    if isinstance(x, int):  # IntEnum ...
        return int_value(int(x))
    if isinstance(x, float):
        return float_value(float(x))
    if hasattr(x, "__index__"):  # numpy integers
        return int_value(operator.index(x))
    if hasattr(x, "__float__") and not isinstance(x, complex):
        return float_value(float(x))
    if _handle.Module is not None and isinstance(x, _handle.Module):
        return new_value(G.value_from_module, x._ptr()), True
    if isinstance(x, complex):
        raise _lib.NotSupportedError(
            "complex Python scalars cannot be passed as values (the C API has no complex value "
            "constructor); use a 0-dim complex tensor")
    raise _lib.CTorchTypeError("cannot convert %s to a ctorch value" % type(x).__name__)


def free_values(owned: List[int]) -> None:
    for p in owned:
        _value_free(p)


def values_array(items: Any, owned: List[int]) -> Tuple[Any, int]:
    """A ctypes array of ct_values for items; new handles go to `owned`."""
    ptrs = []
    for e in items:
        p, o = to_value(e)
        ptrs.append(p)
        if o:
            owned.append(p)
    n = len(ptrs)
    return (c_void_p * max(n, 1))(*ptrs), n


def _seq_value(seq: Any) -> int:
    n = len(seq)
    if type(seq) is not tuple and n:
        kinds = {type(e) for e in seq}
        if kinds == {int} and all(-2**63 <= e < 2**63 for e in seq):
            return new_value(G.value_int_list, (c_int64 * n)(*seq), n)
        if kinds <= {int, float} and float in kinds:
            return new_value(G.value_double_list, (c_double * n)(*seq), n)
        if kinds == {bool}:
            return new_value(G.value_bool_list, (c_int32 * n)(*seq), n)
        if kinds == {_handle.Tensor}:
            return new_value(G.value_tensor_list, (c_void_p * n)(*[t._ptr() for t in seq]), n)
    owned: List[int] = []
    try:
        arr, n = values_array(seq, owned)
        return new_value(G.value_tuple if type(seq) is tuple else G.value_list, arr, n)
    finally:
        free_values(owned)


def _dict_value(d: Dict[Any, Any]) -> int:
    owned: List[int] = []
    try:
        ka, n = values_array(d.keys(), owned)
        va, _ = values_array(d.values(), owned)
        return new_value(G.value_dict, ka, va, n)
    finally:
        free_values(owned)


def to_owned_value(x: Any) -> int:
    """A NEW ct_value for x (for callbacks that hand ownership to C)."""
    p, owned = to_value(x)
    return p if owned else new_value(G.value_ref, p)


def _sub(v: int, i: int) -> int:
    return new_value(G.value_get, v, i)


def _vlen(v: int) -> int:
    n = c_size_t()
    check(G.value_length(byref(n), v))
    return n.value


def wrap_or_none(h: Optional[int]) -> Any:
    """A Tensor for a new handle, or None (handle freed) when the tensor is
    undefined (ops such as convolution_backward return undefined tensors for
    outputs they were asked not to compute)."""
    if not G.tensor_is_defined(h):
        G.tensor_free(h)
        return None
    return new_tensor(h)


def take_tensor(v: Optional[int]) -> Any:
    """The Tensor inside an OWNED tensor value (consumes the value)."""
    try:
        return new_tensor(new_value(G.value_to_tensor, v))
    finally:
        _value_free(v)


def from_value(v: Optional[int]) -> Any:
    """Converts an OWNED ct_value handle to a Python object (consumes it)."""
    if not v:
        raise _lib.InternalError("from_value: NULL value")
    try:
        tag = _value_tag(v)
        if tag == CT_VALUE_TENSOR:
            return wrap_or_none(new_value(G.value_to_tensor, v))
        return _convert(v, tag)
    finally:
        _value_free(v)


def borrowed_to_python(v: int) -> Any:
    """Converts a BORROWED ct_value handle (left alive) to a Python object."""
    return from_value(new_value(G.value_ref, v))


def _convert(v: int, tag: int) -> Any:
    if tag == CT_VALUE_NONE:
        return None
    if tag == CT_VALUE_BOOL:
        b = c_int32()
        check(G.value_to_bool(byref(b), v))
        return bool(b.value)
    if tag == CT_VALUE_INT:
        iv = c_int64()
        check(G.value_to_int(byref(iv), v))
        return iv.value
    if tag == CT_VALUE_DOUBLE:
        f = c_double()
        check(G.value_to_double(byref(f), v))
        return f.value
    if tag == CT_VALUE_STRING:
        p = c_void_p()
        n = c_size_t()
        check(G.value_as_string(byref(p), byref(n), v))
        return ctypes.string_at(p.value or 0, n.value).decode("utf-8", "surrogateescape") \
            if n.value else ""
    if tag == CT_VALUE_DEVICE:
        a, b = c_int32(), c_int32()
        check(G.value_to_device(byref(a), byref(b), v))
        return device._from_codes(a.value, b.value)
    if tag in (CT_VALUE_LIST, CT_VALUE_INT_LIST, CT_VALUE_DOUBLE_LIST, CT_VALUE_BOOL_LIST,
               CT_VALUE_TENSOR_LIST):
        return [from_value(_sub(v, i)) for i in range(_vlen(v))]
    if tag == CT_VALUE_TUPLE:
        return tuple(from_value(_sub(v, i)) for i in range(_vlen(v)))
    if tag == CT_VALUE_DICT:
        res = {}
        for i in range(_vlen(v)):
            k, x = c_void_p(), c_void_p()
            check(G.value_dict_item(byref(k), byref(x), v, i))
            key = from_value(k.value or 0)
            if isinstance(key, _handle.Tensor):
                key = HashableTensorKey(key)
            res[key] = from_value(x.value or 0)
        return res
    if tag == CT_VALUE_OBJECT and _handle.Module is not None:
        m = c_void_p()
        if G.value_to_module(byref(m), v) == _lib.CT_OK:
            return _handle.Module._wrap(m.value)
        G.clear_error()
    return Value._wrap(new_value(G.value_ref, v))


class HashableTensorKey:
    """Dict key standing for a tensor key of a TorchScript Dict[Tensor, ...]."""
    __slots__ = ("tensor",)

    def __init__(self, t: Any) -> None:
        self.tensor = t

    def __hash__(self) -> int:
        return id(self.tensor)

    def __repr__(self) -> str:
        return repr(self.tensor)


class Value(_release.Handle):
    """An opaque TorchScript value that has no Python equivalent (a script
    object, a complex number, a generator ...). It can be passed back to
    ctorch calls."""

    __slots__ = ("_p", "__weakref__")
    _free_c = _value_free
    _handle_kind = "value"

    @classmethod
    def _wrap(cls, p: int) -> "Value":
        o = _new(cls)
        o._p = p
        return o

    def _ptr(self) -> int:
        if not self._p:
            raise _lib.InvalidArgumentError("use of a freed value")
        return self._p

    @property
    def tag(self) -> int:
        tag: int = _value_tag(self._ptr())
        return tag

    @property
    def type_str(self) -> str:
        return _lib.take_string(new_value(G.value_type_str, self._ptr())) or ""

    def __repr__(self) -> str:
        if not self._p:
            return "Value(<freed>)"
        r = _lib.take_string(new_value(G.value_to_repr, self._ptr())) or ""
        if len(r) > 80:
            r = r[:77] + "..."
        return "Value(%s: %s)" % (r, self.type_str)

    # ---- copying and pickling -------------------------------------------------------
    def __copy__(self) -> "Value":
        """copy.copy: a new handle to the same value (shared, as a shallow
        copy shares; ct_value_ref)."""
        return Value._wrap(new_value(G.value_ref, self._ptr()))

    def _pickled(self, what: str) -> bytes:
        buf, n = c_void_p(), c_size_t()
        st = _lib.C.pickle_save_buffer(byref(buf), byref(n), self._ptr())
        if st:
            err = _lib.error_from_status(st)
            raise _lib.CTorchTypeError("cannot %s a ctorch.Value of type %s: %s"
                                       % (what, self.type_str, err)) from err
        return _lib.take_buffer(buf.value, n.value)

    def __deepcopy__(self, memo: Any) -> "Value":
        """copy.deepcopy: the value through torch.save's format and back
        (CTorchTypeError, a TypeError, for values it cannot hold)."""
        return _load_value(self._pickled("deepcopy"))

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled in torch.save's format (CTorchTypeError, a TypeError, for
        values it cannot hold)."""
        return (_load_value, (self._pickled("pickle"),))


def _load_value(data: bytes) -> Value:
    """A Value of torch.save bytes (Value pickles)."""
    return Value._wrap(new_value(_lib.C.pickle_load_buffer, data, len(data)))


__all__ = ["Value", "to_value", "from_value", "borrowed_to_python", "to_owned_value",
           "free_values", "values_array", "new_value", "take_tensor"]
