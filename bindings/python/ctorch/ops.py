"""Every registered operator, by namespace: ``ctorch.ops.aten.add(a, b, alpha=2)``,
``ctorch.ops.aten.add.Tensor(a, b)`` (one overload), ``ctorch.ops.myns.scale(x, 2.0)``.

Namespaces and ops are built lazily from ct_op_list() / ct_op_find(); each op
is a plain Python function whose __doc__ lists its schemas, so help() and tab
completion work. Calling an op without an overload name lets ctorch pick the
first overload whose schema accepts the arguments; naming the overload
(``.Tensor``, ``.default``) skips that resolution and is the fastest call.
"""

import sys
import threading
import types
from ctypes import byref, c_char_p, c_int32, c_size_t, c_void_p

from . import _lib
from ._core import (call_op, find_op, from_value, _invalidate_op_cache, _broadcast_map, Tensor,
                    _op_call, _op_call_tensors, _N)
from ._lib import error_from_status, tls as _tls

_new = object.__new__


def _tensor_overload(qualname, h, n):
    """(handle, returns_one_tensor) of the first overload of the set `h` that
    accepts n positional tensors and nothing else, as ctorch's resolution
    would pick it; None when there is none."""
    name, typ, dflt = c_char_p(), c_char_p(), c_char_p()
    kwonly = c_int32()
    for ov in range(G.op_num_overloads(h)):
        na = c_size_t()
        if G.op_num_arguments(byref(na), h, ov):
            G.clear_error()
            return None
        ok = True
        pos = 0
        for i in range(na.value):
            if G.op_argument(byref(name), byref(typ), byref(dflt), byref(kwonly), h, ov, i):
                G.clear_error()
                return None
            if not kwonly.value and pos < n:
                if typ.value not in (b"Tensor", b"Tensor?"):
                    ok = False
                    break
                pos += 1
            elif dflt.value is None:
                ok = False
                break
        if not ok or pos < n:
            continue
        sch = c_char_p()
        if G.op_schema(byref(sch), h, ov):
            G.clear_error()
            return None
        ovname = sch.value.decode().split("(", 1)[0].partition(".")[2]
        try:
            hh = find_op(qualname, ovname)
        except _lib.Error:
            return None
        return hh, _returns_one_tensor(hh)
    return None


def _returns_one_tensor(h):
    """True when every overload in the handle returns exactly one Tensor."""
    for ov in range(G.op_num_overloads(h)):
        n = c_size_t()
        if G.op_num_returns(byref(n), h, ov) or n.value != 1:
            G.clear_error()
            return False
        ty = c_char_p()
        if G.op_return(None, byref(ty), h, ov, 0) or ty.value != b"Tensor":
            G.clear_error()
            return False
    return True
from ._lib import G, check



class OpNotFoundError(_lib.NotFoundError, AttributeError):
    """An unknown op or overload (also an AttributeError, so hasattr() works)."""


_index_lock = threading.Lock()
_index = None  # {ns: {name: set(overloads)}}


def _build_index():
    global _index
    with _index_lock:
        if _index is not None:
            return _index
        out = c_void_p()
        check(G.op_list(byref(out)))
        names = from_value(out.value)
        idx = {}
        for full in names:
            ns, _, rest = full.partition("::")
            name, _, ov = rest.partition(".")
            idx.setdefault(ns, {}).setdefault(name, set()).add(ov)
        _index = idx
        return idx


def _reset_index():
    global _index
    with _index_lock:
        _index = None
    _invalidate_op_cache()
    mod = sys.modules[__name__]
    for ns in list(_namespaces):
        _namespaces[ns]._clear()


def schemas(qualname, overload=None):
    """Schema strings of an op ("aten::add") or one overload."""
    h = find_op(qualname, overload)
    n = G.op_num_overloads(h)
    res = []
    for i in range(n):
        s = c_char_p()
        check(G.op_schema(byref(s), h, i))
        res.append(s.value.decode())
    return res


def _make_op(qualname, overload):
    """A Python function calling one overload (overload is a str) or the
    overload set (None)."""
    h = find_op(qualname, overload)
    hc = c_void_p(h)
    bmap = _broadcast_map(h)
    _call = call_op
    tensor_result = _returns_one_tensor(h)
    _T = Tensor
    tls = _tls
    opc = _op_call
    opt = _op_call_tensors
    N = _N
    N0 = N[0]
    N1 = N[1]
    last_code = G.last_error_code

    # For an overload set called with tensors only: the overload ctorch would
    # pick, per argument count, resolved once (then the single-overload fast
    # path in C applies), and whether it returns exactly one Tensor (then
    # ct_op_call_tensors: handles in, handle out, no value wrapping).
    by_n = {}
    is_set = overload is None and G.op_num_overloads(h) > 1

    def pick(n):
        hh = _tensor_overload(qualname, h, n) if is_set else None
        by_n[n] = (c_void_p(hh[0]), hh[1]) if hh else (hc, tensor_result)
        return by_n[n]

    def op(*args, **kwargs):
        # Fast path: only tensors, positionally.
        if not kwargs and len(args) <= 16:
            handles = True
            for a in args:
                if type(a) is not _T:
                    break
                if not a._h:
                    handles = False
            else:
                n = len(args)
                hn, one_tensor = by_n.get(n) or pick(n)
                # ct_op_call_tensors when the result is one Tensor and every
                # input carries a handle; else ct_op_call (see _core._call2)
                if one_tensor and handles:
                    arr, out_ref, out = tls.tframe
                    i = 0
                    for a in args:
                        arr[i] = a._h
                        i += 1
                    if opt(out_ref, N1, hn, arr, N[n]):
                        raise error_from_status(last_code())
                    t = _new(_T)
                    t._h = out.value
                    t._v = None
                    return t
                arr = tls.args
                i = 0
                for a in args:
                    arr[i] = a._v or a._mkv()
                    i += 1
                st = opc(tls.out_ref, hn, arr, N[n], None, None, N0)
                if st:
                    raise error_from_status(st)
                if one_tensor:
                    t = _new(_T)
                    t._v = tls.out.value
                    t._h = None
                    return t
                return from_value(tls.out.value)
        return _call(hc, args, kwargs, bmap)

    ns, _, name = qualname.partition("::")
    op.__name__ = name if overload is None else (overload or "default")
    op.__qualname__ = "ops.%s.%s" % (ns, name) + ("" if overload is None
                                                   else "." + (overload or "default"))
    op.__module__ = __name__
    sch = schemas(qualname, overload)
    op.__doc__ = "\n".join(sch)
    op._ct_handle = h
    op._ct_schemas = sch
    return op


class OpPacket:
    """All overloads of one operator. Call it to resolve the overload from the
    arguments; its attributes are the single overloads (``.Tensor``, ``.default``
    for the unnamed overload). ``help(op)`` shows the schemas."""

    def __init__(self, qualname, fn):
        self._qualname = qualname
        self._call_set = fn
        self.__name__ = qualname.partition("::")[2]
        self.__qualname__ = fn.__qualname__

    def overloads(self):
        """Names of the overloads ("" is the default overload, alias .default)."""
        res = []
        for s in self._call_set._ct_schemas:
            nm = s.split("(", 1)[0]
            res.append(nm.partition(".")[2])
        return res

    @property
    def schemas(self):
        return list(self._call_set._ct_schemas)

    def __getattr__(self, ov):
        if ov.startswith("__"):
            raise AttributeError(ov)
        name = "" if ov == "default" else ov
        try:
            fn = _make_op(self._qualname, name)
        except _lib.NotFoundError:
            raise OpNotFoundError("%s has no overload %r (overloads: %s)" % (
                self._qualname, ov, ", ".join(o or "default" for o in self.overloads())), 4) \
                from None
        self.__dict__[ov] = fn
        return fn

    def __dir__(self):
        return sorted(set(object.__dir__(self)) |
                      {o or "default" for o in self.overloads()})

    def __repr__(self):
        return "<ctorch op %s>" % self._qualname


class OpNamespace(types.ModuleType):
    """One operator namespace (aten, prim, a custom one). Attributes are ops."""

    def __init__(self, name):
        super().__init__("ctorch.ops." + name)
        self._ns = name
        self.__doc__ = "Operators in the %r namespace (see dir())." % name

    def _clear(self):
        for k in [k for k in self.__dict__ if not k.startswith("_")]:
            del self.__dict__[k]

    def __getattr__(self, name):
        if name.startswith("__") and name not in _build_index().get(self._ns, ()):
            raise AttributeError(name)  # Python machinery (__path__, __wrapped__ ...)
        q = self._ns + "::" + name
        try:
            fn = _make_op(q, None)
        except _lib.NotFoundError as e:
            raise OpNotFoundError("no operator %s: %s" % (q, e.message.splitlines()[0]), 4) \
                from None
        # One small class per op: calling the packet goes straight to fn, and
        # help(packet) shows the schemas (the class docstring).
        cls = type(name, (OpPacket,), {"__call__": staticmethod(fn), "__doc__": fn.__doc__,
                                       "__module__": "ctorch.ops." + self._ns})
        p = cls(q, fn)
        self.__dict__[name] = p
        return p

    def __dir__(self):
        idx = _build_index()
        return sorted(set(idx.get(self._ns, {})) | set(self.__dict__))

    def __repr__(self):
        return "<ctorch ops namespace %r>" % self._ns


_namespaces = {}


def __getattr__(ns):
    if ns.startswith("__"):
        raise AttributeError(ns)
    m = _namespaces.get(ns)
    if m is None:
        m = _namespaces[ns] = OpNamespace(ns)
        setattr(sys.modules[__name__], ns, m)
    return m


def __dir__():
    return sorted(set(_build_index()) | set(globals()))
