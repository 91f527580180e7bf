"""Tensor, value conversion, generic op calls and DLPack (stdlib only)."""

import array
import ctypes
import itertools
import operator
import sys
import threading
import warnings
from ctypes import c_char_p, c_double, c_int32, c_int64, c_size_t, c_void_p, py_object

from . import _lib
from ._lib import C, G, check, error_from_status, tls as _tls
from ._types import BY_CODE, CPU, device, dtype, get_device, get_dtype
from . import _types

_new = object.__new__
_byref = ctypes.byref


def _leak(obj):
    """Makes obj immortal (used for C callbacks and capsule names that C may
    still use during interpreter shutdown)."""
    ctypes.pythonapi.Py_IncRef(py_object(obj))
    return obj


# ===========================================================================
# Values: constants and caches
# ===========================================================================

TAG_NONE, TAG_BOOL, TAG_INT, TAG_DOUBLE, TAG_STRING, TAG_TENSOR, TAG_DEVICE = range(7)
TAG_LIST, TAG_TUPLE, TAG_DICT, TAG_INT_LIST, TAG_DOUBLE_LIST, TAG_BOOL_LIST = range(7, 13)
TAG_TENSOR_LIST, TAG_OBJECT, TAG_OTHER = 13, 14, 15


def _new_value(fn, *args):
    out = c_void_p()
    check(fn(_byref(out), *args))
    return out.value


try:
    _NONE_V = _new_value(G.value_none)
    _TRUE_V = _new_value(G.value_from_bool, 1)
    _FALSE_V = _new_value(G.value_from_bool, 0)
except _lib.NotSupportedError:  # library without values yet
    _NONE_V = _TRUE_V = _FALSE_V = None
_INT_CACHE = {}
_FLOAT_CACHE = {}
_CACHE_MAX = 4096
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

_value_free = G.value_free
_tensor_free = G.tensor_free
_value_tag = G.value_tag
_value_from_tensor = G.value_from_tensor
_value_to_tensor = G.value_to_tensor
_op_call = _lib.RAW.op_call   # no argtypes: pass ctypes objects only
_op_call_tensors = _lib.RAW.op_call_tensors   # no argtypes either
_N = _lib.SIZES
_N0 = _N[0]
_N1 = _N[1]
_N2 = _N[2]
_last_error_code = G.last_error_code


def _int_value(x):
    """Borrowed-or-owned ct_value for a Python int: returns (ptr, owned)."""
    v = _INT_CACHE.get(x)
    if v is not None:
        return v, False
    if not _INT64_MIN <= x <= _INT64_MAX:
        raise OverflowError("Python int %d does not fit in int64" % x)
    v = _new_value(G.value_from_int, x)
    if len(_INT_CACHE) < _CACHE_MAX:
        w = _INT_CACHE.setdefault(x, v)  # another thread may have won the race
        if w != v:
            _value_free(v)
        return w, False
    return v, True


def _float_value(x):
    v = _FLOAT_CACHE.get(x)
    if v is not None:
        return v, False
    v = _new_value(G.value_from_double, x)
    # 0.0 == -0.0 and nan != nan: keep those out of the cache
    if x != 0.0 and x == x and len(_FLOAT_CACHE) < _CACHE_MAX:
        w = _FLOAT_CACHE.setdefault(x, v)
        if w != v:
            _value_free(v)
        return w, False
    return v, True


def to_value(x):
    """Converts a Python object to a ct_value. Returns (ptr, owned): owned
    pointers must be freed by the caller, borrowed ones (cached constants and
    tensors' own values) must not."""
    t = type(x)
    if t is Tensor:
        return (x._v or x._mkv()), False
    if x is None:
        return _NONE_V, False
    if t is bool:
        return (_TRUE_V if x else _FALSE_V), False
    if t is int:
        return _int_value(x)
    if t is float:
        return _float_value(x)
    return _to_value_slow(x)


def _to_value_slow(x):
    if isinstance(x, Tensor):
        return (x._v or x._mkv()), False
    if isinstance(x, bool):
        return (_TRUE_V if x else _FALSE_V), False
    if isinstance(x, dtype):
        return _int_value(x.code)
    if isinstance(x, device):
        return _new_value(G.value_from_device, x.code, x.c_index), True
    if isinstance(x, str):
        b = x.encode("utf-8")
        return _new_value(G.value_from_string, b, len(b)), True
    if isinstance(x, (bytes, bytearray)):
        b = bytes(x)
        return _new_value(G.value_from_string, b, len(b)), True
    if isinstance(x, Value):
        return x._ptr(), False
    if isinstance(x, (list, tuple)):
        return _seq_value(x), True
    if isinstance(x, dict):
        return _dict_value(x), True
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        # numpy arrays, torch tensors, ...: zero-copy through DLPack
        t = from_dlpack(x)
        v = t._v or t._mkv()
        return _new_value(G.value_ref, v), True
    if isinstance(x, int):  # numpy integers, IntEnum ...
        return _int_value(int(x))
    if isinstance(x, float):
        return _float_value(float(x))
    if hasattr(x, "__index__"):
        return _int_value(operator.index(x))
    if hasattr(x, "__float__") and not isinstance(x, complex):
        return _float_value(float(x))
    from ._module import Module
    if isinstance(x, Module):
        return _new_value(G.value_from_module, x._ptr()), True
    if isinstance(x, complex):
        raise _lib.NotSupportedError(
            "complex Python scalars cannot be passed as values (the C API has no complex value "
            "constructor); use a 0-dim complex tensor", 7)
    raise _lib.CTorchTypeError("cannot convert %s to a ctorch value" % type(x).__name__, 2)


def _seq_value(seq):
    n = len(seq)
    if type(seq) is not tuple and n:
        kinds = {type(e) for e in seq}
        if kinds == {int}:
            arr = (c_int64 * n)(*seq)
            return _new_value(G.value_int_list, arr, n)
        if kinds <= {int, float} and float in kinds:
            arr = (c_double * n)(*seq)
            return _new_value(G.value_double_list, arr, n)
        if kinds == {bool}:
            arr = (c_int32 * n)(*seq)
            return _new_value(G.value_bool_list, arr, n)
        if kinds == {Tensor}:
            arr = (c_void_p * n)(*[(t._h or t._mkh()) for t in seq])
            return _new_value(G.value_tensor_list, arr, n)
    ptrs, owned = [], []
    try:
        for e in seq:
            p, o = to_value(e)
            ptrs.append(p)
            if o:
                owned.append(p)
        arr = (c_void_p * max(n, 1))(*ptrs)
        fn = G.value_tuple if type(seq) is tuple else G.value_list
        return _new_value(fn, arr, n)
    finally:
        for p in owned:
            _value_free(p)


def _dict_value(d):
    n = len(d)
    ks, vs, owned = [], [], []
    try:
        for k, v in d.items():
            pk, ok = to_value(k)
            ks.append(pk)
            if ok:
                owned.append(pk)
            pv, ov = to_value(v)
            vs.append(pv)
            if ov:
                owned.append(pv)
        ka = (c_void_p * max(n, 1))(*ks)
        va = (c_void_p * max(n, 1))(*vs)
        return _new_value(G.value_dict, ka, va, n)
    finally:
        for p in owned:
            _value_free(p)


def to_owned_value(x):
    """A NEW ct_value for x (for callbacks that hand ownership to C)."""
    p, owned = to_value(x)
    if owned:
        return p
    return _new_value(G.value_ref, p)


def _sub(v, i):
    out = c_void_p()
    check(G.value_get(_byref(out), v, i))
    return out.value


def _vlen(v):
    n = c_size_t()
    check(G.value_len(_byref(n), v))
    return n.value


def from_value(v):
    """Converts an OWNED ct_value pointer to a Python object (consumes it)."""
    tag = _value_tag(v)
    if tag == TAG_TENSOR:
        t = _new(Tensor)
        t._v = v
        t._h = None
        return t
    try:
        return _convert(v, tag)
    finally:
        _value_free(v)


def borrowed_to_python(v):
    """Converts a BORROWED ct_value pointer (left alive) to a Python object."""
    return from_value(_new_value(G.value_ref, v))


def _convert(v, tag):
    if tag == TAG_NONE:
        return None
    if tag == TAG_BOOL:
        o = c_int32()
        check(G.value_to_bool(_byref(o), v))
        return bool(o.value)
    if tag == TAG_INT:
        o = c_int64()
        check(G.value_to_int(_byref(o), v))
        return o.value
    if tag == TAG_DOUBLE:
        o = c_double()
        check(G.value_to_double(_byref(o), v))
        return o.value
    if tag == TAG_STRING:
        p = c_void_p()
        n = c_size_t()
        check(G.value_to_string(_byref(p), _byref(n), v))
        return ctypes.string_at(p.value, n.value).decode("utf-8", "surrogateescape") \
            if n.value else ""
    if tag == TAG_DEVICE:
        a, b = c_int32(), c_int32()
        check(G.value_to_device(_byref(a), _byref(b), v))
        return device._from_codes(a.value, b.value)
    if tag in (TAG_LIST, TAG_INT_LIST, TAG_DOUBLE_LIST, TAG_BOOL_LIST, TAG_TENSOR_LIST):
        return [from_value(_sub(v, i)) for i in range(_vlen(v))]
    if tag == TAG_TUPLE:
        return tuple(from_value(_sub(v, i)) for i in range(_vlen(v)))
    if tag == TAG_DICT:
        res = {}
        for i in range(_vlen(v)):
            k, x = c_void_p(), c_void_p()
            check(G.value_dict_item(_byref(k), _byref(x), v, i))
            key = from_value(k.value)
            if isinstance(key, Tensor):
                key = _HashableTensorKey(key)
            res[key] = from_value(x.value)
        return res
    if tag == TAG_OBJECT:
        m = c_void_p()
        if G.value_to_module(_byref(m), v) == 0:
            from ._module import Module
            return Module._wrap(m.value)
        G.clear_error()
    return Value._wrap(_new_value(G.value_ref, v))


class _HashableTensorKey:
    """Dict key standing for a tensor key of a TorchScript Dict[Tensor, ...]."""
    __slots__ = ("tensor",)

    def __init__(self, t):
        self.tensor = t

    def __hash__(self):
        return id(self.tensor)

    def __repr__(self):
        return repr(self.tensor)


class Value:
    """An opaque TorchScript value that has no Python equivalent (a script
    object, a complex number, a generator ...). It can be passed back to
    ctorch calls."""

    __slots__ = ("_p", "__weakref__")

    @classmethod
    def _wrap(cls, p):
        o = _new(cls)
        o._p = p
        return o

    def _ptr(self):
        if not self._p:
            raise _lib.InvalidArgumentError("use of a freed value", 1)
        return self._p

    @property
    def tag(self):
        return _value_tag(self._ptr())

    @property
    def type_str(self):
        out = c_void_p()
        check(G.value_type_str(_byref(out), self._ptr()))
        return _lib.take_string(out.value)

    def __repr__(self):
        out = c_void_p()
        check(G.value_to_repr(_byref(out), self._ptr()))
        return "Value(%s: %s)" % (_lib.take_string(out.value), self.type_str)

    def free(self):
        p, self._p = self._p, None
        if p:
            _value_free(p)

    def __del__(self):
        p = self._p
        if p:
            self._p = None
            _value_free(p)


# ===========================================================================
# Generic op calls
# ===========================================================================

_LIST_N = None


def _broadcast_map(op):
    """{position or name: N} for arguments typed int[N] / SymInt[N] (N given)
    in every overload that has them, where no overload takes a plain int there:
    a Python int passed there is repeated N times, as torch's Python does
    (t.sum(dim=1), conv stride=2)."""
    global _LIST_N
    if _LIST_N is None:
        import re
        _LIST_N = re.compile(r"^(?:int|SymInt)\[(\d+)\]\??$")
    found = {}
    blocked = set()
    name, typ = c_char_p(), c_char_p()
    kwonly = c_int32()
    op = op.value if isinstance(op, c_void_p) else op
    for ov in range(G.op_num_overloads(op)):
        na = c_size_t()
        if G.op_num_arguments(_byref(na), op, ov):
            G.clear_error()
            continue
        pos = 0
        for i in range(na.value):
            if G.op_argument(_byref(name), _byref(typ), None, _byref(kwonly), op, ov, i):
                G.clear_error()
                break
            nm, ty = name.value.decode(), typ.value.decode()
            m = _LIST_N.match(ty)
            keys = (nm,) if kwonly.value else (nm, pos)
            for k in keys:
                if m:
                    found.setdefault(k, set()).add(int(m.group(1)))
                elif ty.rstrip("?") in ("int", "SymInt", "Scalar", "float", "Any"):
                    blocked.add(k)
            if not kwonly.value:
                pos += 1
    return {k: next(iter(v)) for k, v in found.items() if len(v) == 1 and k not in blocked}


def _apply_broadcast(bmap, args, kwargs):
    args = list(args)
    for i, a in enumerate(args):
        if type(a) is int and i in bmap:
            args[i] = [a] * bmap[i]
    if kwargs:
        kwargs = dict(kwargs)
        for k, a in kwargs.items():
            if type(a) is int and k in bmap:
                kwargs[k] = [a] * bmap[k]
    return args, kwargs


def kwargs_values(kwargs, owned):
    """ctypes arrays (names, values, count) for keyword arguments; values that
    were created here are appended to `owned` for the caller to free."""
    if not kwargs:
        return None, None, 0
    nk = len(kwargs)
    names = (c_char_p * nk)(*[k.encode() for k in kwargs])
    kv = []
    for a in kwargs.values():
        p, o = to_value(a)
        kv.append(p)
        if o:
            owned.append(p)
    return names, (c_void_p * nk)(*kv), nk


def call_op(op, args, kwargs, bmap=None):
    """Calls the op handle `op` (a c_void_p) with Python arguments; returns the
    Python result. bmap: see _broadcast_map. Used by ctorch.ops, Tensor
    methods and indexing."""
    if bmap:
        args, kwargs = _apply_broadcast(bmap, args, kwargs)
    owned = []
    try:
        ptrs = []
        for a in args:
            if type(a) is Tensor:
                ptrs.append(a._v or a._mkv())
                continue
            p, o = to_value(a)
            ptrs.append(p)
            if o:
                owned.append(p)
        n = len(ptrs)
        names, vals, nk = kwargs_values(kwargs, owned)
        tls = _tls
        if n > 16:
            arr = (c_void_p * n)(*ptrs)
            cn = c_size_t(n)
        else:
            arr = tls.args
            for i, p in enumerate(ptrs):
                arr[i] = p
            cn = _N[n]
        st = _op_call(tls.out_ref, op, arr, cn, names, vals, _N[nk] if nk <= 16 else
                      c_size_t(nk))
        if st:
            raise error_from_status(st)
        return from_value(tls.out.value)
    finally:
        for p in owned:
            _value_free(p)


_op_cache = {}
_op_cache_lock = threading.Lock()


def find_op(name, overload):
    """A cached ct_op handle for (name, overload); overload None = overload set."""
    key = (name, overload)
    h = _op_cache.get(key)
    if h is None:
        out = c_void_p()
        check(G.op_find(_byref(out), name.encode(), None if overload is None else
                        overload.encode()))
        with _op_cache_lock:
            h = _op_cache.setdefault(key, out.value)
            if h != out.value:
                G.op_free(out.value)
    return h


def _invalidate_op_cache():
    # Handles stay valid (never freed: another thread may be using them);
    # overload sets must be looked up again to see new overloads.
    with _op_cache_lock:
        for k in [k for k in _op_cache if k[1] is None]:
            del _op_cache[k]


class _LazyOp:
    """A ct_op handle looked up on first use (tensor operators); calling it
    gives the handle as a c_void_p (what the hot path passes to C)."""
    __slots__ = ("name", "overload", "h")

    def __init__(self, name, overload=""):
        self.name = name
        self.overload = overload
        self.h = None

    def __call__(self):
        h = self.h
        if h is None:
            h = self.h = c_void_p(find_op(self.name, self.overload))
        return h


# ===========================================================================
# Tensor
# ===========================================================================

def _sizes_arg(size):
    if len(size) == 1 and not isinstance(size[0], int):
        size = size[0]
        if isinstance(size, Tensor):
            size = size.tolist()
    size = tuple(operator.index(s) for s in size)
    return (c_int64 * max(len(size), 1))(*size), len(size)


def _dev_args(dev):
    if dev is None:
        return 1, -1
    d = get_device(dev)
    return d.code, d.c_index


def _wrap_h(h):
    t = _new(Tensor)
    t._h = h
    t._v = None
    return t


def _wrap_v(v):
    t = _new(Tensor)
    t._v = v
    t._h = None
    return t


def _tensor_out(fn, *args):
    out = c_void_p()
    st = fn(_byref(out), *args)
    if st:
        raise error_from_status(st)
    return _wrap_h(out.value)


class Tensor:
    """A handle to a LibTorch tensor.

    Operators (+, -, *, /, //, %, **, @, comparisons, unary -, ~, abs),
    indexing, and every aten op as a method (``t.sum(dim=1)``) run through
    ctorch's generic op call. The handle is freed when the object dies, or at
    once with ``free()`` or a ``with`` block."""

    # _h: ct_tensor* (int) or None; _v: ct_value* holding the same tensor, or
    # None. At least one is set while the tensor is alive; the other is made
    # on demand and cached (results of ops arrive as values, factories as
    # tensor handles).
    __slots__ = ("_h", "_v", "__weakref__")

    def __new__(cls, data=None, dtype=None, device=None, requires_grad=False):
        if data is None:
            raise TypeError("use ctorch.tensor(data), ctorch.empty(...) or another factory")
        return tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)

    # ---- handle plumbing -------------------------------------------------
    def _mkh(self):
        v = self._v
        if not v:
            raise _lib.InvalidArgumentError("use of a freed tensor", 1)
        out = c_void_p()
        check(_value_to_tensor(_byref(out), v))
        if self._h:  # another thread made one meanwhile
            _tensor_free(out.value)
        else:
            self._h = out.value
        return self._h

    def _mkv(self):
        h = self._h
        if not h:
            raise _lib.InvalidArgumentError("use of a freed tensor", 1)
        out = c_void_p()
        check(_value_from_tensor(_byref(out), h))
        if self._v:  # another thread made one meanwhile
            _value_free(out.value)
        else:
            self._v = out.value
        return self._v

    @property
    def _handle(self):
        """The ct_tensor* as an int (borrowed; valid while this object lives)."""
        return self._h or self._mkh()

    def free(self):
        """Frees the handle now (the memory lives on while other handles, views
        or numpy arrays use it). Further use raises ctorch.InvalidArgumentError."""
        h, v = self._h, self._v
        self._h = self._v = None
        if h:
            _tensor_free(h)
        if v:
            _value_free(v)

    def __del__(self):
        h, v = self._h, self._v
        if h:
            _tensor_free(h)
        if v:
            _value_free(v)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()
        return False

    @property
    def is_freed(self):
        return not (self._h or self._v)

    # ---- metadata ------------------------------------------------------------
    @property
    def shape(self):
        h = self._h or self._mkh()
        n = _ndim(h)
        return tuple(_sizes(h)[:n]) if n else ()

    def size(self, dim=None):
        if dim is None:
            return self.shape
        out = c_int64()
        check(G.tensor_size(_byref(out), self._h or self._mkh(), dim))
        return out.value

    @property
    def strides(self):
        """Strides in elements (numpy's .strides is in bytes)."""
        h = self._h or self._mkh()
        n = _ndim(h)
        return tuple(_strides(h)[:n]) if n else ()

    def stride(self, dim=None):
        if dim is None:
            return self.strides
        out = c_int64()
        check(G.tensor_stride(_byref(out), self._h or self._mkh(), dim))
        return out.value

    @property
    def ndim(self):
        return _ndim(self._h or self._mkh())

    def dim(self):
        return _ndim(self._h or self._mkh())

    def numel(self):
        return G.tensor_numel(self._h or self._mkh())

    def element_size(self):
        return G.tensor_element_size(self._h or self._mkh())

    @property
    def nbytes(self):
        return G.tensor_nbytes(self._h or self._mkh())

    @property
    def itemsize(self):
        return G.tensor_element_size(self._h or self._mkh())

    def storage_offset(self):
        return G.tensor_storage_offset(self._h or self._mkh())

    @property
    def dtype(self):
        code = G.tensor_dtype(self._h or self._mkh())
        d = BY_CODE.get(code)
        if d is None:
            raise _lib.CTorchTypeError("tensor has a dtype ctorch has no code for", 2)
        return d

    @property
    def device(self):
        h = self._h or self._mkh()
        return device._from_codes(G.tensor_device_type(h), G.tensor_device_index(h))

    @property
    def is_cuda(self):
        return G.tensor_device_type(self._h or self._mkh()) == 2

    def data_ptr(self):
        """Address of the first element (0 for an empty tensor)."""
        return G.tensor_data_ptr(self._h or self._mkh()) or 0

    def is_contiguous(self):
        return bool(G.tensor_is_contiguous(self._h or self._mkh()))

    def is_pinned(self):
        return bool(G.tensor_is_pinned(self._h or self._mkh()))

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype.is_complex

    def __len__(self):
        h = self._h or self._mkh()
        if _ndim(h) == 0:
            raise TypeError("len() of a 0-d tensor")
        return _sizes(h)[0]

    # ---- autograd ------------------------------------------------------------
    @property
    def requires_grad(self):
        return bool(G.tensor_requires_grad(self._h or self._mkh()))

    @requires_grad.setter
    def requires_grad(self, flag):
        check(G.tensor_set_requires_grad(self._h or self._mkh(), 1 if flag else 0))

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self):
        out = c_void_p()
        check(G.tensor_grad(_byref(out), self._h or self._mkh()))
        return _wrap_h(out.value) if out.value else None

    @grad.setter
    def grad(self, g):
        check(G.tensor_set_grad(self._h or self._mkh(), None if g is None else g._handle))

    def zero_grad(self):
        check(G.tensor_zero_grad(self._h or self._mkh()))

    @property
    def is_leaf(self):
        return bool(G.tensor_is_leaf(self._h or self._mkh()))

    @property
    def grad_fn_name(self):
        """Name of the autograd node that made this tensor ("AddBackward0"), or None."""
        out = c_void_p()
        check(G.tensor_grad_fn_name(_byref(out), self._h or self._mkh()))
        return _lib.take_string(out.value)

    def backward(self, gradient=None, retain_graph=False, create_graph=False):
        """Runs backward. An exception raised by a Python autograd.Function's
        backward is re-raised here (the original exception, with the ctorch
        error as __cause__)."""
        g = None
        if gradient is not None:
            g = as_tensor(gradient)._handle
        st = C.tensor_backward(self._h or self._mkh(), g, 1 if (retain_graph or create_graph)
                               else 0, 1 if create_graph else 0)
        if st:
            raise error_from_status(st)

    # ---- conversions -----------------------------------------------------------
    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False):
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
        dt = get_dtype(dtype).code if dtype is not None else -1
        if device is not None:
            d = get_device(device)
            dc, di = d.code, d.c_index
        else:
            dc, di = 0, -1
        return _tensor_out(C.tensor_to, self._h or self._mkh(), dc, di, dt,
                           1 if non_blocking else 0, 1 if copy else 0)

    def cpu(self):
        return self.to(device=CPU)

    def cuda(self, index=None):
        return self.to(device=_types.device("cuda", index))

    def float(self):
        return self.to(dtype=_types.float32)

    def double(self):
        return self.to(dtype=_types.float64)

    def long(self):
        return self.to(dtype=_types.int64)

    def int(self):
        return self.to(dtype=_types.int32)

    def half(self):
        return self.to(dtype=_types.float16)

    def bfloat16(self):
        return self.to(dtype=_types.bfloat16)

    def bool(self):
        return self.to(dtype=_types.bool_)

    def clone(self):
        return _tensor_out(C.tensor_clone, self._h or self._mkh())

    def detach(self):
        return _tensor_out(G.tensor_detach, self._h or self._mkh())

    def contiguous(self):
        return _tensor_out(C.tensor_contiguous, self._h or self._mkh())

    def ref(self):
        """A new handle to the same tensor (same storage and autograd identity)."""
        return _tensor_out(G.tensor_ref, self._h or self._mkh())

    def pin_memory(self):
        return _tensor_out(C.tensor_pin_memory, self._h or self._mkh())

    def copy_(self, src, non_blocking=False):
        src = as_tensor(src)
        check(C.tensor_copy_(self._h or self._mkh(), src._handle, 1 if non_blocking else 0))
        return self

    def fill_(self, value):
        if isinstance(value, Tensor):
            return self.copy_(value)
        if isinstance(value, complex):
            raise _lib.NotSupportedError("fill_ with a complex value is not supported", 7)
        check(C.tensor_fill_(self._h or self._mkh(), float(value)))
        return self

    def zero_(self):
        return self.fill_(0.0)

    def equal(self, other):
        out = c_int32()
        check(C.tensor_equal(_byref(out), self._h or self._mkh(), as_tensor(other)._handle))
        return bool(out.value)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        out = c_int32()
        check(C.tensor_allclose(_byref(out), self._h or self._mkh(), as_tensor(other)._handle,
                                rtol, atol, 1 if equal_nan else 0))
        return bool(out.value)

    def item(self):
        return call_op(_OPS["item"](), (self,), None)

    def tolist(self):
        """Nested Python lists (or a scalar for a 0-d tensor). Stdlib only."""
        return _tolist(self)

    def __bool__(self):
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.dtype.is_complex:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    # ---- numpy ----------------------------------------------------------------
    def numpy(self, bfloat16="raise"):
        """A numpy array sharing this tensor's memory (no copy). The array keeps
        the memory alive by itself (it holds its own handle), so it stays valid
        after this Tensor is freed.

        numpy has no bfloat16: for a bfloat16 tensor, ``bfloat16="raise"`` (the
        default) raises TypeError, ``bfloat16="uint16"`` returns a zero-copy
        uint16 view of the raw bits, and ``bfloat16="float32"`` returns a
        float32 copy. Requires a CPU tensor that does not require grad (as in
        torch; use .detach() / .cpu())."""
        import numpy
        h = self._h or self._mkh()
        d = self.dtype
        if G.tensor_device_type(h) != 1:
            raise _lib.CTorchTypeError(
                "can't convert %s tensor to numpy; use .cpu() first" % self.device, 2)
        if G.tensor_requires_grad(h):
            raise _lib.InvalidArgumentError(
                "can't call numpy() on a tensor that requires grad; use .detach().numpy()", 1)
        typestr = d.typestr
        if typestr is None:
            if bfloat16 == "uint16":
                typestr = "<u2"
            elif bfloat16 == "float32":
                return self.to(dtype=_types.float32).numpy()
            else:
                raise _lib.CTorchTypeError(
                    "numpy has no bfloat16 dtype: use t.numpy(bfloat16='uint16') for a "
                    "zero-copy view of the raw bits, t.numpy(bfloat16='float32') for a "
                    "converted copy, or t.float().numpy()", 2)
        if G.tensor_numel(h) == 0:
            return numpy.empty(self.shape, dtype=typestr)
        return numpy.asarray(_ArrayHolder(self, typestr))

    def __array__(self, dtype=None, copy=None):
        a = self.numpy(bfloat16="float32") if self.dtype is _types.bfloat16 else self.numpy()
        if dtype is not None:
            a = a.astype(dtype, copy=False)
        return a

    # ---- DLPack ---------------------------------------------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Exports the tensor as a DLPack capsule (array API standard).
        A versioned capsule ("dltensor_versioned") is returned when the consumer
        passes max_version >= (1, 0), a legacy "dltensor" capsule otherwise."""
        return _to_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        h = self._h or self._mkh()
        dt = G.tensor_device_type(h)
        return (dt, max(G.tensor_device_index(h), 0))

    # ---- printing ---------------------------------------------------------------
    def __repr__(self):
        if self.is_freed:
            return "<ctorch.Tensor (freed)>"
        out = c_void_p()
        check(C.tensor_to_string(_byref(out), self._h or self._mkh()))
        return _lib.take_string(out.value)

    __str__ = __repr__

    def __format__(self, spec):
        if not spec:
            return repr(self)
        return format(self.item(), spec)

    __hash__ = object.__hash__

    # ---- ops as methods ------------------------------------------------------------
    def __getattr__(self, name):
        if name.startswith("__") or name in ("_h", "_v"):
            raise AttributeError(name)
        from . import ops
        try:
            fn = getattr(ops.aten, name)
        except AttributeError:
            raise AttributeError("'ctorch.Tensor' object has no attribute %r and there is no "
                                 "aten::%s op" % (name, name)) from None
        if name in _VARARG_METHODS:
            return _BoundVarargOp(fn, self)
        return _BoundOp(fn, self)

    def __dir__(self):
        from . import ops
        return sorted(set(object.__dir__(self)) | set(dir(ops.aten)))

    # ---- indexing --------------------------------------------------------------------
    def __getitem__(self, idx):
        if type(idx) is int:
            a = _tls.args
            a[0] = self._v or self._mkv()
            a[1] = _ZERO_V
            v, owned = _int_value(idx)
            a[2] = v
            try:
                return _call_tensor_op(_OPS["select"](), 3)
            finally:
                if owned:
                    _value_free(v)
        return _index(self, idx)

    def __setitem__(self, idx, value):
        _setitem(self, idx, value)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(len(self)):
            yield self[i]


class _BoundOp:
    __slots__ = ("fn", "t")

    def __init__(self, fn, t):
        self.fn = fn
        self.t = t

    def __call__(self, *args, **kwargs):
        return self.fn(self.t, *args, **kwargs)

    @property
    def __doc__(self):
        return self.fn.__doc__

    def __repr__(self):
        return "<bound op %s of ctorch.Tensor>" % getattr(self.fn, "__name__", "?")


# Methods that take the sizes/dims as separate ints, as in torch (t.view(2, 3)).
_VARARG_METHODS = {"view", "reshape", "permute", "expand", "repeat", "tile", "flip"}


class _BoundVarargOp(_BoundOp):
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        if args and all(isinstance(a, int) for a in args):
            args = (args,)
        return self.fn(self.t, *args, **kwargs)


def _looks_like_dtype(a):
    try:
        get_dtype(a)
        return True
    except _lib.Error:
        return False


_ndim = G.tensor_ndim
_sizes = G.tensor_sizes
_strides = G.tensor_strides


class _ArrayHolder:
    """Exposes a tensor's memory through __array_interface__; numpy keeps this
    object as the array's base, and this object keeps a handle."""
    __slots__ = ("_t", "__array_interface__")

    def __init__(self, t, typestr):
        ref = t.ref()
        self._t = ref
        h = ref._h
        n = _ndim(h)
        shape = tuple(_sizes(h)[:n]) if n else ()
        item = G.tensor_element_size(h)
        strides = tuple(s * item for s in _strides(h)[:n]) if n else ()
        ptr = G.tensor_data_ptr(h) or 0
        numel = G.tensor_numel(h)
        if numel == 0 and not ptr:
            ptr = 0
        self.__array_interface__ = {
            "version": 3, "shape": shape, "typestr": typestr,
            "data": (ptr, False), "strides": strides,
        }


# ---- fast tensor-operator path -----------------------------------------------

_OP_NAMES = {
    "add": ("aten::add", "Tensor"), "add_s": ("aten::add", "Scalar"),
    "sub": ("aten::sub", "Tensor"), "sub_s": ("aten::sub", "Scalar"),
    "rsub_s": ("aten::rsub", "Scalar"),
    "mul": ("aten::mul", "Tensor"), "mul_s": ("aten::mul", "Scalar"),
    "div": ("aten::div", "Tensor"), "div_s": ("aten::div", "Scalar"),
    "floordiv": ("aten::floor_divide", ""), "floordiv_s": ("aten::floor_divide", "Scalar"),
    "mod": ("aten::remainder", "Tensor"), "mod_s": ("aten::remainder", "Scalar"),
    "rmod_s": ("aten::remainder", "Scalar_Tensor"),
    "pow": ("aten::pow", "Tensor_Tensor"), "pow_s": ("aten::pow", "Tensor_Scalar"),
    "rpow_s": ("aten::pow", "Scalar"),
    "matmul": ("aten::matmul", ""),
    "eq": ("aten::eq", "Tensor"), "eq_s": ("aten::eq", "Scalar"),
    "ne": ("aten::ne", "Tensor"), "ne_s": ("aten::ne", "Scalar"),
    "lt": ("aten::lt", "Tensor"), "lt_s": ("aten::lt", "Scalar"),
    "le": ("aten::le", "Tensor"), "le_s": ("aten::le", "Scalar"),
    "gt": ("aten::gt", "Tensor"), "gt_s": ("aten::gt", "Scalar"),
    "ge": ("aten::ge", "Tensor"), "ge_s": ("aten::ge", "Scalar"),
    "and": ("aten::bitwise_and", "Tensor"), "and_s": ("aten::bitwise_and", "Scalar"),
    "or": ("aten::bitwise_or", "Tensor"), "or_s": ("aten::bitwise_or", "Scalar"),
    "xor": ("aten::bitwise_xor", "Tensor"), "xor_s": ("aten::bitwise_xor", "Scalar"),
    "lshift": ("aten::__lshift__", "Tensor"), "lshift_s": ("aten::__lshift__", "Scalar"),
    "rshift": ("aten::__rshift__", "Tensor"), "rshift_s": ("aten::__rshift__", "Scalar"),
    "iadd": ("aten::add_", "Tensor"), "iadd_s": ("aten::add_", "Scalar"),
    "isub": ("aten::sub_", "Tensor"), "isub_s": ("aten::sub_", "Scalar"),
    "imul": ("aten::mul_", "Tensor"), "imul_s": ("aten::mul_", "Scalar"),
    "idiv": ("aten::div_", "Tensor"), "idiv_s": ("aten::div_", "Scalar"),
    "neg": ("aten::neg", ""), "abs": ("aten::abs", ""), "invert": ("aten::bitwise_not", ""),
    "reciprocal": ("aten::reciprocal", ""),
    "select": ("aten::select", "int"), "slice": ("aten::slice", "Tensor"),
    "unsqueeze": ("aten::unsqueeze", ""), "index": ("aten::index", "Tensor"),
    "index_put_": ("aten::index_put_", ""), "item": ("aten::item", ""),
    "alias": ("aten::alias", ""), "empty_like": ("aten::empty_like", ""),
    "zeros_like": ("aten::zeros_like", ""), "ones_like": ("aten::ones_like", ""),
    "full_like": ("aten::full_like", ""), "rand_like": ("aten::rand_like", ""),
    "randn_like": ("aten::randn_like", ""),
}
_OPS = {k: _LazyOp(*v) for k, v in _OP_NAMES.items()}
_ZERO_V = _int_value(0)[0] if _NONE_V is not None else None


def _call_tensor_op(op, n):
    """Calls op (c_void_p) with the first n entries of the thread's argument
    array already filled; the result must be a single tensor."""
    tls = _tls
    st = _op_call(tls.out_ref, op, tls.args, _N[n], None, None, _N0)
    if st:
        raise error_from_status(st)
    t = _new(Tensor)
    t._v = tls.out.value
    t._h = None
    return t


def _call_tensors_op(op, n):
    """Calls op (c_void_p) through ct_op_call_tensors with the first n entries
    of the thread's tensor-handle array already filled; the result must be a
    single tensor (it arrives as a ct_tensor handle)."""
    tls = _tls
    if _op_call_tensors(tls.out_ref, _N1, op, tls.tensors, _N[n]):
        raise error_from_status(_last_error_code())
    t = _new(Tensor)
    t._h = tls.out.value
    t._v = None
    return t


def _call2(op, x, y):
    """op(x, y) for two Tensors, the result a single tensor. ct_op_call_tensors
    when both carry a ct_tensor handle, else ct_op_call: a tensor holding only
    a value (a ct_op_call result) would otherwise need a handle made for this
    one call, while a long-lived operand keeps the value made for it."""
    xh = x._h
    yh = y._h
    if xh and yh:
        a = _tls.tensors
        a[0] = xh
        a[1] = yh
        return _call_tensors_op(op, 2)
    a = _tls.args
    a[0] = x._v or x._mkv()
    a[1] = y._v or y._mkv()
    return _call_tensor_op(op, 2)


def _make_binop(name, reverse=False):
    opT = _OPS[name]
    opS = _OPS.get(name + "_s")

    def binop(self, other, _Tensor=Tensor, _new=_new, _tls=_tls, _op_call=_op_call,
              _op_call_tensors=_op_call_tensors, _N1=None, _N2=None, _N0=None):
        to = type(other)
        if to is not _Tensor:
            if to is float or to is int or to is bool:
                if opS is not None:
                    # Scalar overload: values path (ct_op_call)
                    ov, owned = to_value(other)
                    if owned:
                        return _binop_owned(opS(), self, ov)
                    a, out_ref, out = _tls.frame
                    a[0] = self._v or self._mkv()
                    a[1] = ov
                    if _op_call(out_ref, opS.h or opS(), a, _N2, None, None, _N0):
                        raise error_from_status(_last_error_code())
                    t = _new(_Tensor)
                    t._v = out.value
                    t._h = None
                    return t
                other = scalar_tensor(other, self)
            else:
                try:
                    other = as_tensor(other)
                except Exception:
                    return NotImplemented
        # Tensor and Tensor: handles in, handle out (ct_op_call_tensors) when
        # both carry handles; the values path otherwise (see _call2)
        sh = self._h
        oh = other._h
        if not (sh and oh):
            return _call2(opT.h or opT(), self, other)
        a, out_ref, out = _tls.tframe
        a[0] = sh
        a[1] = oh
        if _op_call_tensors(out_ref, _N1, opT.h or opT(), a, _N2):
            raise error_from_status(_last_error_code())
        t = _new(_Tensor)
        t._h = out.value
        t._v = None
        return t

    binop.__defaults__ = (Tensor, _new, _tls, _op_call, _op_call_tensors, _N1, _N2, _N0)
    binop.__name__ = "__%s__" % name
    return binop


def _binop_owned(op, self, ov):
    try:
        a = _tls.args
        a[0] = self._v or self._mkv()
        a[1] = ov
        return _call_tensor_op(op, 2)
    finally:
        _value_free(ov)


def _make_rbinop(name, scalar_op):
    opT = _OPS[name]
    opS = _OPS.get(scalar_op) if scalar_op else None

    def rbinop(self, other):
        to = type(other)
        if opS is not None and (to is float or to is int or to is bool):
            ov, owned = to_value(other)
            a = _tls.args
            if scalar_op in ("rpow_s", "rmod_s"):
                a[0], a[1] = ov, self._v or self._mkv()
            else:
                a[0], a[1] = self._v or self._mkv(), ov
            try:
                return _call_tensor_op(opS(), 2)
            finally:
                if owned:
                    _value_free(ov)
        try:
            other = as_tensor(other) if to is not Tensor else other
        except Exception:
            return NotImplemented
        if to is not Tensor and not isinstance(other, Tensor):
            return NotImplemented
        if to in (float, int, bool):
            other = scalar_tensor(other, self)
        return _call2(opT(), other, self)

    rbinop.__name__ = "__r%s__" % name
    return rbinop


def _make_inplace(name):
    opT = _OPS[name]
    opS = _OPS[name + "_s"]

    def iop(self, other):
        to = type(other)
        if to is not Tensor and to in (float, int, bool):
            ov, owned = to_value(other)
            op = opS()
        else:
            other = as_tensor(other)
            ov, owned = other._v or other._mkv(), False
            op = opT()
        tls = _tls
        a = tls.args
        a[0] = self._v or self._mkv()
        a[1] = ov
        try:
            st = _op_call(tls.out_ref, op, a, _N[2], None, None, _N0)
            if st:
                raise error_from_status(st)
            _value_free(tls.out.value)
        finally:
            if owned:
                _value_free(ov)
        return self

    iop.__name__ = "__%s__" % name
    return iop


def _make_unop(name):
    op = _OPS[name]

    def unop(self, _Tensor=Tensor, _new=_new, _tls=_tls, _op_call_tensors=_op_call_tensors,
             _N1=None):
        h = self._h
        if not h:  # no handle: the values path (see _call2)
            _tls.args[0] = self._v or self._mkv()
            return _call_tensor_op(op.h or op(), 1)
        a, out_ref, out = _tls.tframe
        a[0] = h
        if _op_call_tensors(out_ref, _N1, op.h or op(), a, _N1):
            raise error_from_status(_last_error_code())
        t = _new(_Tensor)
        t._h = out.value
        t._v = None
        return t

    unop.__defaults__ = (Tensor, _new, _tls, _op_call_tensors, _N1)

    unop.__name__ = "__%s__" % name
    return unop


for _n in ("add", "sub", "mul", "matmul", "eq", "ne", "lt", "le", "gt", "ge", "and", "or",
           "xor", "lshift", "rshift", "mod", "pow"):
    setattr(Tensor, "__%s__" % _n, _make_binop(_n))
Tensor.__truediv__ = _make_binop("div")
Tensor.__floordiv__ = _make_binop("floordiv")
Tensor.__radd__ = _make_rbinop("add", "add_s")
Tensor.__rmul__ = _make_rbinop("mul", "mul_s")
Tensor.__rand__ = _make_rbinop("and", "and_s")
Tensor.__ror__ = _make_rbinop("or", "or_s")
Tensor.__rxor__ = _make_rbinop("xor", "xor_s")
Tensor.__rsub__ = _make_rbinop("sub", "rsub_s")
Tensor.__rpow__ = _make_rbinop("pow", "rpow_s")
Tensor.__rmod__ = _make_rbinop("mod", "rmod_s")
Tensor.__rmatmul__ = _make_rbinop("matmul", None)
Tensor.__rtruediv__ = _make_rbinop("div", None)
Tensor.__rfloordiv__ = _make_rbinop("floordiv", None)
for _n in ("add", "sub", "mul"):
    setattr(Tensor, "__i%s__" % _n, _make_inplace("i" + _n))
Tensor.__itruediv__ = _make_inplace("idiv")
Tensor.__neg__ = _make_unop("neg")
Tensor.__abs__ = _make_unop("abs")
Tensor.__invert__ = _make_unop("invert")
del _n


def __pos__(self):
    return self


Tensor.__pos__ = __pos__


def scalar_tensor(x, like=None):
    """A 0-dim tensor holding the Python scalar x (on like's device)."""
    if isinstance(x, bool):
        dt = _types.bool_
    elif isinstance(x, int):
        dt = _types.int64
    elif isinstance(x, complex):
        dt = _types.complex128
    else:
        dt = _types.float64
    return tensor(x, dtype=dt, device=like.device if like is not None else None)


# ---- indexing ------------------------------------------------------------------

def _index(t, idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    t, adv = _basic_index(t, idx)
    if adv:
        idxs = [None] * (max(d for d, _ in adv) + 1)
        for d, it in adv:
            idxs[d] = it
        return call_op(_OPS["index"](), (t, idxs), None)
    return t


def _basic_index(t, idx):
    """Applies ints, slices, None and Ellipsis; returns (view, advanced) where
    advanced lists (dim in the view, index tensor) for tensor/list indices."""
    nd = t.ndim
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis
                   and not (isinstance(i, (bool,)) ))
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise _lib.CTorchIndexError("an index can only have a single ellipsis ('...')", 3)
    if consumed > nd:
        raise _lib.CTorchIndexError(
            "too many indices for tensor of dimension %d" % nd, 3)
    dim = 0
    adv = []
    cur = t
    sel = _OPS["select"]
    sli = _OPS["slice"]
    uns = _OPS["unsqueeze"]
    for it in idx:
        if it is None:
            cur = call_op(uns(), (cur, dim), None)
            dim += 1
        elif it is Ellipsis:
            dim += nd - consumed
        elif isinstance(it, bool):
            raise _lib.NotSupportedError("boolean scalar indices are not supported", 7)
        elif isinstance(it, int) or (hasattr(it, "__index__") and not isinstance(it, Tensor)
                                     and not hasattr(it, "__len__")):
            cur = call_op(sel(), (cur, dim, operator.index(it)), None)
        elif isinstance(it, slice):
            start, stop, step = it.start, it.stop, it.step
            if step is None:
                step = 1
            step = operator.index(step)
            if step <= 0:
                raise _lib.InvalidArgumentError("step must be greater than zero", 1)
            if start is not None or stop is not None or step != 1:
                cur = call_op(sli(), (cur, dim, None if start is None else operator.index(start),
                                      None if stop is None else operator.index(stop), step),
                              None)
            dim += 1
        else:
            ti = as_tensor(it)
            if ti.dtype in (_types.int32, _types.int16, _types.int8, _types.uint8) and \
                    ti.dtype is not _types.uint8:
                ti = ti.to(dtype=_types.int64)
            adv.append((dim, ti))
            dim += 1 if ti.dtype not in (_types.bool_, _types.uint8) else ti.ndim
    return cur, adv


def _setitem(t, idx, value):
    if not isinstance(idx, tuple):
        idx = (idx,)
    view, adv = _basic_index(t, idx)
    if adv:
        idxs = [None] * (max(d for d, _ in adv) + 1)
        for d, it in adv:
            idxs[d] = it
        if not isinstance(value, Tensor):
            value = tensor(value, dtype=t.dtype, device=t.device) \
                if not hasattr(value, "__dlpack__") else as_tensor(value)
        call_op(_OPS["index_put_"](), (view, idxs, value), None)
        return
    if isinstance(value, (int, float, bool)) and not isinstance(value, Tensor):
        view.fill_(value)
    else:
        src = value if isinstance(value, Tensor) else as_tensor(value)
        view.copy_(src)


# ---- tolist (stdlib only) ---------------------------------------------------------

_FMT = {1: "?", 2: "B", 3: "b", 4: "h", 5: "i", 6: "q", 9: "f", 10: "d"}


def _tolist(t):
    d = t.dtype
    if d.code in (7, 8):  # half, bfloat16: go through float32
        t = t.to(dtype=_types.float32)
        d = _types.float32
    if d.is_complex:
        re = call_op(c_void_p(find_op("aten::real", "")), (t,), None).tolist()
        im = call_op(c_void_p(find_op("aten::imag", "")), (t,), None).tolist()

        def zipc(a, b):
            if isinstance(a, list):
                return [zipc(x, y) for x, y in zip(a, b)]
            return complex(a, b)
        return zipc(re, im)
    c = t.to(device=CPU).contiguous()
    shape = c.shape
    n = c.numel()
    if n == 0:
        def empty(s):
            return [] if len(s) == 1 else [empty(s[1:]) for _ in range(s[0])]
        return empty(shape) if shape else []
    buf = ctypes.string_at(c.data_ptr(), c.nbytes)
    mv = memoryview(buf)
    if not shape:
        return mv.cast(_FMT[d.code])[0]
    return mv.cast(_FMT[d.code], shape).tolist()


# ===========================================================================
# Factories
# ===========================================================================

_DEFAULT_DTYPE = _types.float32


def _dt(dtype, default=None):
    if dtype is None:
        return (default or _DEFAULT_DTYPE).code
    return get_dtype(dtype).code


def _make_factory(cname, doc):
    cfn = getattr(C, cname)

    def factory(*size, dtype=None, device=None, requires_grad=False):
        sizes, n = _sizes_arg(size)
        dc, di = _dev_args(device)
        return _tensor_out(cfn, sizes, n, _dt(dtype), dc, di, 1 if requires_grad else 0)

    factory.__name__ = cname[10:]
    factory.__doc__ = doc
    return factory


empty = _make_factory("tensor_empty", "empty(*size, dtype=float32, device='cpu', "
                      "requires_grad=False): uninitialised tensor.")
zeros = _make_factory("tensor_zeros", "zeros(*size, dtype=float32, device='cpu', "
                      "requires_grad=False)")
ones = _make_factory("tensor_ones", "ones(*size, dtype=float32, device='cpu', "
                     "requires_grad=False)")
rand = _make_factory("tensor_rand", "rand(*size, ...): uniform [0, 1)")
randn = _make_factory("tensor_randn", "randn(*size, ...): standard normal")


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """full(size, fill_value): the dtype follows fill_value as in torch (bool,
    int64, float32) unless given."""
    if isinstance(size, int):
        size = (size,)
    sizes, n = _sizes_arg(tuple(size))
    if dtype is None:
        dtype = _types.bool_ if isinstance(fill_value, bool) else (
            _types.int64 if isinstance(fill_value, int) else _DEFAULT_DTYPE)
    dc, di = _dev_args(device)
    return _tensor_out(C.tensor_full, sizes, n, float(fill_value), get_dtype(dtype).code, dc,
                       di, 1 if requires_grad else 0)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """arange(end) or arange(start, end, step); int64 when every argument is an
    int, float32 otherwise (as in torch)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = _types.int64 if all(isinstance(x, int) for x in (start, end, step)) \
            else _DEFAULT_DTYPE
    dc, di = _dev_args(device)
    return _tensor_out(C.tensor_arange, float(start), float(end), float(step),
                       get_dtype(dtype).code, dc, di, 1 if requires_grad else 0)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    dc, di = _dev_args(device)
    return _tensor_out(C.tensor_eye, n, -1 if m is None else m, _dt(dtype), dc, di,
                       1 if requires_grad else 0)


def _like(name):
    def f(t, *args, dtype=None, device=None, requires_grad=False):
        kw = {}
        if dtype is not None:
            kw["dtype"] = get_dtype(dtype)
        if device is not None:
            kw["device"] = get_device(device)
        r = call_op(_OPS[name](), (as_tensor(t),) + args, kw)
        if requires_grad:
            r.requires_grad = True
        return r
    f.__name__ = name
    f.__doc__ = "%s(t%s, dtype=None, device=None): like torch.%s" % (
        name, ", fill_value" if name == "full_like" else "", name)
    return f


empty_like = _like("empty_like")
zeros_like = _like("zeros_like")
ones_like = _like("ones_like")
full_like = _like("full_like")
rand_like = _like("rand_like")
randn_like = _like("randn_like")


def _infer(data):
    """Shape, flat list and dtype of nested Python lists of scalars."""
    shape = []
    x = data
    while isinstance(x, (list, tuple)):
        shape.append(len(x))
        if not x:
            break
        x = x[0]
    flat = []

    def walk(x, depth):
        if depth == len(shape):
            if isinstance(x, (list, tuple)):
                raise _lib.InvalidArgumentError("ragged nested sequence", 1)
            flat.append(x)
            return
        if not isinstance(x, (list, tuple)) or len(x) != shape[depth]:
            raise _lib.InvalidArgumentError(
                "ragged nested sequence: expected length %d at depth %d" % (shape[depth], depth),
                1)
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
        elif isinstance(e, Tensor):
            kinds.add("t")
        elif hasattr(e, "__index__"):
            kinds.add("i")
        elif hasattr(e, "__float__"):
            kinds.add("f")
        else:
            raise _lib.CTorchTypeError("cannot make a tensor from %s" % type(e).__name__, 2)
    if "t" in kinds:
        flat = [e.item() if isinstance(e, Tensor) else e for e in flat]
        return _infer_kinds(shape, flat)
    return shape, flat, kinds


def _infer_kinds(shape, flat):
    kinds = set("b" if isinstance(e, bool) else "i" if isinstance(e, int) else
                "c" if isinstance(e, complex) else "f" for e in flat)
    return shape, flat, kinds


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a COPY of data: nested lists/tuples of Python
    scalars, a Python scalar, a numpy array, or any DLPack producer (a torch
    tensor, a ctorch.Tensor). dtype is inferred as torch does (bool, int64,
    float32, complex64) unless given."""
    if isinstance(data, Tensor):
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
            if "c" in kinds:
                d = _types.complex64
            elif "f" in kinds:
                d = _DEFAULT_DTYPE
            elif "i" in kinds:
                d = _types.int64
            elif "b" in kinds:
                d = _types.bool_
            else:
                d = _DEFAULT_DTYPE
        else:
            d = get_dtype(dtype)
        t = _from_flat(shape, flat, d, kinds)
        if device is not None and get_device(device) != CPU:
            t = t.to(device=device)
    if requires_grad:
        t.requires_grad = True
    return t


def _from_flat(shape, flat, d, kinds):
    """Packs flat Python scalars with the array module and copies them in."""
    sizes, n = _sizes_arg(tuple(shape))
    if "c" in kinds or d.is_complex:
        vals = []
        for e in flat:
            e = complex(e)
            vals += [e.real, e.imag]
        buf = array.array("d", vals)
        tmp_dt = _types.complex128
    elif d is _types.bool_ or (kinds == {"b"}):
        buf = array.array("b", [1 if e else 0 for e in flat])
        tmp_dt = _types.bool_
    elif d.is_floating_point or "f" in kinds:
        buf = array.array("d", [float(e) for e in flat])
        tmp_dt = _types.float64
    else:
        buf = array.array("q", [operator.index(e) for e in flat])
        tmp_dt = _types.int64
    addr = buf.buffer_info()[0] if len(buf) else None
    t = _tensor_out(C.tensor_from_data, addr, sizes, n, tmp_dt.code, 1, -1)
    if tmp_dt is not d:
        t = t.to(dtype=d)
    return t


def as_tensor(x, dtype=None, device=None):
    """x itself if it is a Tensor; a zero-copy tensor for DLPack producers
    (numpy arrays, torch tensors) when possible; else a new tensor."""
    if isinstance(x, Tensor):
        if dtype is None and device is None:
            return x
        return x.to(dtype=dtype, device=device)
    if hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__"):
        t = _from_array_like(x)
        if dtype is not None or device is not None:
            t = t.to(dtype=dtype, device=device)
        return t
    return tensor(x, dtype=dtype, device=device)


def _from_array_like(x):
    if type(x).__module__ == "numpy" and hasattr(x, "__array_interface__"):
        try:
            return from_numpy(x)
        except _lib.Error:
            import numpy
            return from_numpy(numpy.ascontiguousarray(x))
    if hasattr(x, "__dlpack__"):
        return from_dlpack(x)
    import numpy
    return from_numpy(numpy.ascontiguousarray(numpy.asarray(x)))


# ===========================================================================
# numpy zero-copy (ct_tensor_from_blob + a ctypes deleter)
# ===========================================================================

_blob_refs = {}
_blob_ids = itertools.count(1)
#: Counters for tests and debugging: blobs created / deleter calls.
blob_stats = {"created": 0, "released": 0}


def _blob_deleter(data, ctx, _refs=_blob_refs, _stats=blob_stats):
    # Runs on whichever thread frees the last tensor using the memory; the
    # ctypes thunk takes the GIL. Never raise (nothing could catch it), and
    # survive a half-torn-down interpreter (all names bound as defaults).
    try:
        _refs.pop(ctx, None)
        _stats["released"] += 1
    except BaseException:
        pass


_BLOB_DELETER = _leak(_lib.DELETER(_blob_deleter))


def from_numpy(a):
    """A tensor sharing a numpy array's memory (no copy). The array is kept
    alive until torch lets go of the memory (the last tensor or view using it
    is freed). Byte-swapped, negatively strided or misaligned arrays are
    refused, as in torch."""
    ai = a.__array_interface__
    typestr = ai["typestr"]
    d = _BY_TYPESTR.get(typestr)
    if d is None:
        if typestr[0] == ">" and typestr[1:] != "":
            raise _lib.CTorchTypeError("byte-swapped (big-endian) arrays are not supported; "
                                       "use a.astype(a.dtype.newbyteorder('='))", 2)
        raise _lib.CTorchTypeError(
            "can't convert a numpy array of dtype %s; supported: bool, uint8, int8, int16, "
            "int32, int64, float16, float32, float64, complex64, complex128" % (a.dtype,), 2)
    shape = ai["shape"]
    nd = len(shape)
    ptr, readonly = ai["data"]
    bstrides = ai["strides"]  # None for C-contiguous arrays
    if bstrides is None:
        strides_arr = None
    else:
        item = d.itemsize
        es = []
        for s in bstrides:
            if s < 0:
                raise _lib.InvalidArgumentError(
                    "numpy arrays with negative strides are not supported; use a.copy()", 1)
            if s % item:
                raise _lib.InvalidArgumentError(
                    "numpy array strides are not a multiple of the element size", 1)
            es.append(s // item)
        strides_arr = (c_int64 * nd)(*es)
    if readonly:
        warnings.warn("the numpy array is not writable; the tensor shares its memory and "
                      "writing to it is undefined behaviour", UserWarning, stacklevel=2)
    sizes = (c_int64 * nd)(*shape) if nd else None
    key = next(_blob_ids)
    _blob_refs[key] = a
    tls = _tls
    st = _from_blob(tls.out_ref, c_void_p(ptr) if ptr else None, sizes, _N[nd], strides_arr,
                    _I32[d.code], _I32[1], _I32[-1], _BLOB_DELETER, c_void_p(key))
    if st:
        _blob_refs.pop(key, None)  # the deleter is not called on failure
        raise error_from_status(st)
    blob_stats["created"] += 1
    t = _new(Tensor)
    t._h = tls.out.value
    t._v = None
    return t


_BY_TYPESTR = _types._BY_TYPESTR
_from_blob = _lib.RAW.tensor_from_blob
_I32 = _lib.I32


# ===========================================================================
# DLPack through PyCapsules
# ===========================================================================

_pyapi = ctypes.pythonapi
_PyCapsule_New = _pyapi.PyCapsule_New
_PyCapsule_New.restype = py_object
_PyCapsule_New.argtypes = (c_void_p, c_void_p, c_void_p)
_PyCapsule_IsValid = _pyapi.PyCapsule_IsValid
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = (py_object, c_char_p)
_PyCapsule_GetPointer = _pyapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = c_void_p
_PyCapsule_GetPointer.argtypes = (py_object, c_char_p)
_PyCapsule_SetName = _pyapi.PyCapsule_SetName
_PyCapsule_SetName.restype = ctypes.c_int
_PyCapsule_SetName.argtypes = (py_object, c_void_p)
_PyCapsule_GetName = _pyapi.PyCapsule_GetName
_PyCapsule_GetName.restype = c_void_p
_PyCapsule_GetName.argtypes = (py_object,)
# Raw-pointer variants for the destructor (it receives a PyObject* it must not
# incref while the object is being destroyed).
_RawIsValid = ctypes.PYFUNCTYPE(ctypes.c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _pyapi))
_RawGetPointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer",
                                                                   _pyapi))

# Capsule names must outlive every capsule: immortal buffers.
_NAME_LEGACY = _leak(ctypes.create_string_buffer(b"dltensor"))
_NAME_VERSIONED = _leak(ctypes.create_string_buffer(b"dltensor_versioned"))
_NAME_USED = _leak(ctypes.create_string_buffer(b"used_dltensor"))
_NAME_USED_VERSIONED = _leak(ctypes.create_string_buffer(b"used_dltensor_versioned"))
_MANAGED_DELETER = ctypes.CFUNCTYPE(None, c_void_p)
#: Counters for tests: capsules made / managed tensors deleted by a capsule
#: destructor because nobody consumed them.
dlpack_stats = {"exported": 0, "unconsumed_deleted": 0}


def _capsule_destructor(cap, _isvalid=_RawIsValid, _getptr=_RawGetPointer,
                        _del=_MANAGED_DELETER, _stats=dlpack_stats):
    # Deletes the managed tensor only when no consumer took it (a consumer
    # renames the capsule to used_dltensor[_versioned]).
    try:
        if _isvalid(cap, b"dltensor"):
            p = _getptr(cap, b"dltensor")
            off = 56
        elif _isvalid(cap, b"dltensor_versioned"):
            p = _getptr(cap, b"dltensor_versioned")
            off = 16
        else:
            return
        if p:
            fn = c_void_p.from_address(p + off).value
            if fn:
                _del(fn)(p)
            _stats["unconsumed_deleted"] += 1
    except BaseException:
        pass


_CAPSULE_DESTRUCTOR = _leak(ctypes.CFUNCTYPE(None, c_void_p)(_capsule_destructor))
_CAPSULE_DESTRUCTOR_ADDR = ctypes.cast(_CAPSULE_DESTRUCTOR, c_void_p).value


def _to_dlpack(t, stream, max_version, dl_device, copy):
    h = t._h or t._mkh()
    devtype = G.tensor_device_type(h)
    if dl_device is not None:
        want = (int(dl_device[0]), int(dl_device[1]))
        have = t.__dlpack_device__()
        if want != have:
            if copy is False:
                raise BufferError("__dlpack__: the tensor is on %s but dl_device=%r was asked "
                                  "with copy=False" % (t.device, dl_device))
            if want[0] == 1:
                t = t.to(device=CPU, copy=True)
            elif want[0] == 2:
                t = t.to(device=_types.device("cuda", want[1]), copy=True)
            else:
                raise BufferError("__dlpack__: unsupported dl_device %r" % (dl_device,))
            h = t._h
            devtype = want[0]
            copy = False  # already a copy
    if devtype == 2:
        if stream is None:
            s = 1  # the array API: None means the legacy default stream
        elif stream == 0:
            raise ValueError("__dlpack__: stream 0 is ambiguous and not allowed")
        else:
            s = int(stream)
    else:
        if stream not in (None, -1):
            raise ValueError("__dlpack__: stream must be None for a CPU tensor")
        s = -1
    cp = 1 if copy else 0
    out = c_void_p()
    if max_version is not None and tuple(max_version)[0] >= 1:
        check(C.tensor_to_dlpack_versioned(_byref(out), h, cp, s))
        name = _NAME_VERSIONED
    else:
        check(C.tensor_to_dlpack(_byref(out), h, cp, s))
        name = _NAME_LEGACY
    try:
        cap = _PyCapsule_New(out.value, ctypes.addressof(name), _CAPSULE_DESTRUCTOR_ADDR)
    except BaseException:
        off = 16 if name is _NAME_VERSIONED else 56
        _MANAGED_DELETER(c_void_p.from_address(out.value + off).value)(out.value)
        raise
    dlpack_stats["exported"] += 1
    return cap


def _is_capsule(x):
    return type(x).__name__ == "PyCapsule"


def from_dlpack(x, *, device=None, copy=None):
    """A tensor sharing the memory of any DLPack producer (numpy, torch, cupy,
    a ctorch.Tensor, or a bare DLPack capsule), with no copy. Asks for a
    versioned capsule (max_version=(1, 0)) and falls back to the legacy
    protocol when the producer does not know max_version. The capsule is
    consumed (renamed used_dltensor[_versioned]) and ownership passes to
    ctorch, which calls the producer's deleter once, when the last tensor
    using the memory is freed."""
    if isinstance(x, Tensor):
        t = x.ref()
    else:
        cap = x if _is_capsule(x) else _get_capsule(x, device, copy)
        t = _from_capsule(cap)
    if device is not None and t.device != get_device(device):
        t = t.to(device=device, copy=copy is not False)
    elif copy:
        t = t.clone()
    return t


def _get_capsule(x, device, copy):
    if not hasattr(x, "__dlpack__"):
        raise _lib.CTorchTypeError(
            "from_dlpack: %s has no __dlpack__ method and is not a DLPack capsule"
            % type(x).__name__, 2)
    kw = {}
    dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (1, 0)
    if int(dev[0]) in (2, 10):  # CUDA/ROCm: ask the producer to sync with our stream
        sp = c_void_p()
        if G.cuda_current_stream(_byref(sp), int(dev[1])) == 0:
            kw["stream"] = sp.value or 1
        else:
            G.clear_error()
            kw["stream"] = 1
    tx = type(x)
    if tx not in _LEGACY_PRODUCERS:
        try:
            return x.__dlpack__(max_version=(1, 0), **kw)
        except TypeError:
            # remembered per type: older producers (numpy < 2.1, torch < 2.4)
            # do not know max_version
            _LEGACY_PRODUCERS.add(tx)
    return x.__dlpack__(**kw)


_LEGACY_PRODUCERS = set()


def _from_capsule(cap):
    if _PyCapsule_IsValid(cap, b"dltensor_versioned"):
        p = _PyCapsule_GetPointer(cap, b"dltensor_versioned")
        used, fn = _NAME_USED_VERSIONED, C.tensor_from_dlpack_versioned
    elif _PyCapsule_IsValid(cap, b"dltensor"):
        p = _PyCapsule_GetPointer(cap, b"dltensor")
        used, fn = _NAME_USED, C.tensor_from_dlpack
    else:
        np_ = _PyCapsule_GetName(cap) if _is_capsule(cap) else None
        name = ctypes.string_at(np_).decode() if np_ else None
        if name and name.startswith("used_"):
            raise BufferError("from_dlpack: this DLPack capsule was already consumed")
        raise _lib.CTorchTypeError("from_dlpack: not a DLPack capsule (name %r)" % (name,), 2)
    # Ownership passes to ctorch now, whatever happens next.
    if _PyCapsule_SetName(cap, ctypes.addressof(used)) != 0:
        raise _lib.InternalError("PyCapsule_SetName failed", 10)
    return _tensor_out(fn, p)
