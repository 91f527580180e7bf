"""Every registered operator, by namespace: ``ctorch.ops.aten.add(a, b, alpha=2)``,
``ctorch.ops.aten.add.Tensor(a, b)`` (one overload), ``ctorch.ops.myns.scale(x, 2.0)``.

Namespaces and ops are built lazily from ct_op_list() / ct_op_find(); each op
is a callable whose __doc__ lists its schemas, so help() and tab completion
work. Calling an op without an overload name lets ctorch pick the first
overload whose schema accepts the arguments; naming the overload
(``.Tensor``, ``.default``) skips that resolution. Calls go through
``_call.OpCaller``: tensors-only calls through ct_op_call_tensors when
ct_op_tensors_only allows it, the rest through ct_op_call.
"""

import sys
import threading
import types
from ctypes import byref, c_void_p
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Set

from . import _lib
from ._call import OpCaller, find_op, invalidate_op_cache, schemas as _schemas
from ._lib import G, check
from ._values import from_value


class OpNotFoundError(_lib.NotFoundError, AttributeError):
    """An unknown op or overload (also an AttributeError, so hasattr() works)."""


_index_lock = threading.Lock()
_index: Optional[Dict[str, Dict[str, Set[str]]]] = None  # {ns: {name: {overloads}}}


def _build_index() -> Dict[str, Dict[str, Set[str]]]:
    global _index
    with _index_lock:
        if _index is not None:
            return _index
        out = c_void_p()
        check(G.op_list(byref(out)))
        idx: Dict[str, Dict[str, Set[str]]] = {}
        for full in from_value(out.value or 0):
            ns, _, rest = full.partition("::")
            name, _, ov = rest.partition(".")
            idx.setdefault(ns, {}).setdefault(name, set()).add(ov)
        _index = idx
        return idx


def _reset_index() -> None:
    """Forgets every namespace's ops (after a registration)."""
    global _index
    with _index_lock:
        _index = None
    invalidate_op_cache()
    for ns in list(_namespaces):
        _namespaces[ns]._clear()


def schemas(qualname: str, overload: Optional[str] = None) -> List[str]:
    """Schema strings of an op ("aten::add") or one overload."""
    return _schemas(find_op(qualname, overload))


class OpOverload(OpCaller):
    """One overload (overload "" = ``.default``) or, for OpPacket, the set.
    Calling it is OpCaller.__call__ (no extra layer)."""

    def __init__(self, qualname: str, overload: Optional[str]) -> None:
        h = find_op(qualname, overload)
        name = qualname.partition("::")[2]
        super().__init__(h, mutates=name.endswith("_") or (overload or "").startswith("out"),
                         broadcast=True, qualname=qualname if overload is None else None)
        self._qualname = qualname
        self._overload = overload
        self._ct_handle = h
        self._ct_schemas = _schemas(h)
        self.__name__ = name if overload is None else (overload or "default")
        self.__qualname__ = "ops.%s" % qualname.replace("::", ".") + (
            "" if overload is None else "." + (overload or "default"))
        self.__doc__ = "\n".join(self._ct_schemas)

    @property
    def schemas(self) -> List[str]:
        return list(self._ct_schemas)

    def __repr__(self) -> str:
        ov = "" if self._overload is None else "." + (self._overload or "default")
        return "<ctorch op %s%s>" % (self._qualname, ov)

    # An op is a process-wide constant, like a function: copies are the op
    # itself, and a pickle names it (looked up again when loaded).
    def __copy__(self) -> "OpOverload":
        return self

    def __deepcopy__(self, memo: Any) -> "OpOverload":
        return self

    def __reduce__(self) -> Any:
        return (_op_by_name, (self._qualname, self._overload))


class OpPacket(OpOverload):
    """All overloads of one operator. Call it to resolve the overload from the
    arguments; its attributes are the single overloads (``.Tensor``, ``.default``
    for the unnamed overload). ``help(op)`` shows the schemas."""

    def __init__(self, qualname: str) -> None:
        super().__init__(qualname, None)

    def overloads(self) -> List[str]:
        """Names of the overloads ("" is the default overload, alias .default)."""
        return [s.split("(", 1)[0].partition(".")[2] for s in self._ct_schemas]

    def __getattr__(self, ov: str) -> OpOverload:
        if ov.startswith("__") or ov.startswith("_"):
            raise AttributeError(ov)
        try:
            fn = OpOverload(self._qualname, "" if ov == "default" else ov)
        except _lib.NotFoundError:
            raise OpNotFoundError("%s has no overload %r (overloads: %s)" % (
                self._qualname, ov, ", ".join(o or "default" for o in self.overloads()))) \
                from None
        self.__dict__[ov] = fn
        return fn

    def __dir__(self) -> List[str]:
        return sorted(set(object.__dir__(self)) | {o or "default" for o in self.overloads()})


class OpNamespace(types.ModuleType):
    """One operator namespace (aten, prim, a custom one). Attributes are ops."""

    def __init__(self, name: str) -> None:
        super().__init__("ctorch.ops." + name)
        self._ns = name
        self.__doc__ = "Operators in the %r namespace (see dir())." % name

    def _clear(self) -> None:
        for k in [k for k in self.__dict__ if not k.startswith("_")]:
            del self.__dict__[k]

    def __getattr__(self, name: str) -> OpPacket:
        if name.startswith("__") and name not in _build_index().get(self._ns, ()):
            raise AttributeError(name)  # Python machinery (__path__, __wrapped__ ...)
        q = self._ns + "::" + name
        try:
            p = OpPacket(q)
        except _lib.NotFoundError as e:
            raise OpNotFoundError("no operator %s: %s" % (q, e.message.splitlines()[0])) \
                from None
        self.__dict__[name] = p
        return p

    def __dir__(self) -> List[str]:
        return sorted(set(_build_index().get(self._ns, {})) | set(self.__dict__))

    def __repr__(self) -> str:
        return "<ctorch ops namespace %r>" % self._ns


_namespaces: Dict[str, OpNamespace] = {}


def __getattr__(ns: str) -> OpNamespace:
    if ns.startswith("__"):
        raise AttributeError(ns)
    m = _namespaces.get(ns)
    if m is None:
        m = _namespaces[ns] = OpNamespace(ns)
        setattr(sys.modules[__name__], ns, m)
    return m


def __dir__() -> List[str]:
    return sorted(set(_build_index()) | set(globals()))


def _op_by_name(qualname: str, overload: Optional[str]) -> OpOverload:
    """ops.<ns>.<name>[.<overload>] for a pickled op."""
    ns, _, name = qualname.partition("::")
    p: OpOverload = getattr(__getattr__(ns), name)
    if overload is not None:
        p = getattr(p, overload or "default")
    return p


if TYPE_CHECKING:  # every aten op with its overloads, generated from the schemas (gen_stubs.py)
    from ._aten_ops import AtenNamespace
    aten: AtenNamespace
else:
    aten = __getattr__("aten")
