"""The one marshalling path: operator, ``ops``, ``Module`` and script calls.

Two ways into C, chosen per call:

* tensors only (every argument a Tensor, no keywords, and C says the op /
  method takes and returns tensors only): ``ct_op_call_tensors`` /
  ``ct_module_forward_tensors`` -- tensor handles in, tensor handles out, one
  C call, no value handles;
* everything else: ``ct_op_call`` / ``ct_module_call`` / ``ct_script_call``
  with ``ct_value`` arguments (see ``_values``).

``generation`` counts calls that may have changed tensor metadata in place
(in-place ops, module and script calls); tensors re-read their cached
metadata when it moved (see ``tensor.Tensor._meta``).
"""

import re
import threading
import warnings
from ctypes import byref, c_char_p, c_int32, c_size_t, c_void_p
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from . import _lib
from ._lib import C, G, FAST_SLOTS, SIZES, check, error_from_status, raise_python_error, tls
from . import _handle, _values
from ._handle import new_tensor
from ._values import free_values, from_value, to_value, values_array

_op_call = C.op_call
_op_call_tensors = C.op_call_tensors
_ONE = SIZES[1]
_last_error_code = G.last_error_code
MAX_OUTPUTS = FAST_SLOTS

#: [n]: bumped by calls that may change tensor metadata in place.
generation = [0]


def bump() -> None:
    generation[0] += 1


_warnings_count = G.warnings_count


def flush_warnings(stacklevel: int = 3) -> None:
    """Re-issues the LibTorch warnings the library kept for this thread as
    Python warnings (UserWarning, as torch's Python does), then clears them.
    Called after the general op path, module and script calls and loads; the
    tensors-only op path skips it (one C call less per small op)."""
    n = G.warnings_count()
    if not n:
        return
    msgs = [(G.warnings_get(i) or b"").decode("utf-8", "replace") for i in range(n)]
    G.warnings_clear()
    for m in msgs:
        warnings.warn(m, UserWarning, stacklevel=stacklevel)


# ---- op handles ----------------------------------------------------------------------

_op_cache: Dict[Tuple[str, Optional[str]], int] = {}
_op_cache_lock = threading.Lock()


def find_op(name: str, overload: Optional[str]) -> int:
    """A cached ct_op handle for (name, overload); overload None = overload set."""
    key = (name, overload)
    h = _op_cache.get(key)
    if h is None:
        out = c_void_p()
        check(G.op_find(byref(out), name.encode(), None if overload is None else
                        overload.encode()))
        with _op_cache_lock:
            h = _op_cache.setdefault(key, out.value or 0)
            if h != out.value:
                G.op_free(out.value)
    return h


def invalidate_op_cache() -> None:
    """Overload sets must be looked up again to see newly registered overloads
    (single-overload handles stay: another thread may be using them)."""
    with _op_cache_lock:
        for k in [k for k in _op_cache if k[1] is None]:
            del _op_cache[k]


def num_overloads(h: int) -> int:
    n: int = G.op_num_overloads(h)
    return n


def schemas(h: int) -> List[str]:
    res = []
    for i in range(num_overloads(h)):
        s = c_char_p()
        check(G.op_schema(byref(s), h, i))
        res.append((s.value or b"").decode())
    return res


def num_returns(h: int) -> Optional[int]:
    """The number of results when every overload agrees on it, else None."""
    counts = set()
    for ov in range(num_overloads(h)):
        n = c_size_t()
        if G.op_num_returns(byref(n), h, ov):
            G.clear_error()
            return None
        counts.add(n.value)
    return counts.pop() if len(counts) == 1 else None


def tensors_only(h: int, n: int) -> bool:
    """Whether ct_op_call_tensors(op, n tensors) is a valid call for h."""
    out = c_int32()
    check(G.op_tensors_only(byref(out), h, n))
    return out.value == 1


# ---- the general path (ct_value arguments) --------------------------------------------

def kwargs_values(kwargs: Optional[Dict[str, Any]], owned: List[int]) -> Tuple[Any, Any, int]:
    """ctypes arrays (names, values, count) for keyword arguments; new value
    handles go to `owned` for the caller to free."""
    if not kwargs:
        return None, None, 0
    names = (c_char_p * len(kwargs))(*[k.encode() for k in kwargs])
    vals, nk = values_array(kwargs.values(), owned)
    return names, vals, nk


def call_op(op: Any, args: Sequence[Any], kwargs: Optional[Dict[str, Any]],
            mutates: bool = True, one_tensor: bool = False) -> Any:
    """Calls the op handle with Python arguments through ct_op_call; returns
    the Python result. mutates: the op may change its arguments in place
    (tensor metadata caches are invalidated after it)."""
    owned: List[int] = []
    try:
        n = len(args)
        if n <= FAST_SLOTS:
            arr = tls.args
            for i, a in enumerate(args):
                p, o = to_value(a)
                arr[i] = p
                if o:
                    owned.append(p)
        else:
            arr, n = values_array(args, owned)
        names, vals, nk = kwargs_values(kwargs, owned)
        out = c_void_p()
        try:
            st = _op_call(byref(out), op, arr, n, names, vals, nk)
        except SystemError as e:
            raise_python_error(e)
        if mutates or (kwargs and "out" in kwargs):
            generation[0] += 1
        if st:
            raise error_from_status(st)
        if _warnings_count():
            flush_warnings(4)
        if one_tensor:
            return _values.take_tensor(out.value or 0)
        return from_value(out.value or 0)
    finally:
        free_values(owned)


def returns_one_tensor(h: int) -> bool:
    """Whether every overload of h returns exactly one Tensor (then results
    skip the value tag query)."""
    typ = c_char_p()
    for ov in range(num_overloads(h)):
        n = c_size_t()
        if G.op_num_returns(byref(n), h, ov) or n.value != 1 or \
                G.op_return(None, byref(typ), h, ov, 0) or typ.value != b"Tensor":
            G.clear_error()
            return False
    return True


# ---- the tensors-only path --------------------------------------------------------------

def call_tensors(op: Any, tensors: Sequence[Any], n_out: int) -> Any:
    """ct_op_call_tensors: Tensors in; one Tensor out (n_out == 1) or a tuple."""
    t = tls
    arr = t.tensors
    i = 0
    for a in tensors:
        arr[i] = a._h or a._ptr()
        i += 1
    outs = t.outputs
    try:
        failed = _op_call_tensors(outs, SIZES[n_out], op, arr, SIZES[i])
    except SystemError as e:
        raise_python_error(e)
    if failed:
        raise error_from_status(_last_error_code())
    if n_out == 1:
        return new_tensor(outs[0])
    return tuple(_values.wrap_or_none(outs[k]) for k in range(n_out))


_op_call_tv = C.op_call_tensors_values
_int_cached = _values._INT_CACHE.get
_NONE_V = _values.NONE_V


def call_tensors_values(op: Any, args: Sequence[Any], mutates: bool) -> Any:
    """ct_op_call_tensors_values for an op whose every overload returns one
    Tensor: the leading Tensors as tensor handles, the rest as values (small
    ints, floats, None and bools are cached value handles: x[1] makes one C
    call and creates no value); one Tensor out."""
    ins, outs, vals, a_ins, a_outs, a_vals = tls.fast
    nt = nv = 0
    owned: Optional[List[int]] = None
    T = _handle.Tensor
    try:
        for a in args:
            ta = type(a)
            if ta is T and not nv:
                ins[nt] = a._h or a._ptr()
                nt += 1
                continue
            p = _int_cached(a) if ta is int else _NONE_V if a is None else None
            if p is None:
                p, o = to_value(a)
                if o:
                    if owned is None:
                        owned = []
                    owned.append(p)
            vals[nv] = p
            nv += 1
    except BaseException:
        if owned:
            free_values(owned)
        raise
    try:
        st = _op_call_tv(a_outs, _ONE, op, a_ins, SIZES[nt], a_vals, SIZES[nv])
    except SystemError as e:
        raise_python_error(e)
    finally:
        if owned:
            free_values(owned)
    if mutates:
        generation[0] += 1
    if st:
        raise error_from_status(st)
    return new_tensor(outs[0])


class OpCaller:
    """Calls one op handle: the tensors-only path when the arguments allow it
    (decided once per argument count by ct_op_tensors_only), the general path
    otherwise. `mutates`: the op changes its arguments in place (its name ends
    in "_"), so tensor metadata caches are invalidated after each call."""

    __slots__ = ("h", "hc", "n_out", "by_n", "mutates", "bmap", "one_tensor", "qualname")

    def __init__(self, h: int, mutates: bool, broadcast: bool = False,
                 qualname: Optional[str] = None) -> None:
        self.h = h
        self.hc = c_void_p(h)
        self.n_out = num_returns(h)
        #: per argument count: (handle, number of results) for the tensors-only
        #: call, or None when it does not apply
        self.by_n: Dict[int, Optional[Tuple[c_void_p, int]]] = {}
        self.mutates = mutates
        self.bmap = broadcast_map(h) if broadcast else None
        self.one_tensor = returns_one_tensor(h)
        self.qualname = qualname  # set for an overload set: see fast()

    def fast(self, n: int) -> Optional[Tuple[c_void_p, int]]:
        """Decides once per argument count. For an overload set, the overload
        the library would resolve to is called directly (the first one that is
        tensors-only for n tensors, when the set as a whole is), which skips
        the resolution in C on every call."""
        if n in self.by_n:
            return self.by_n[n]
        pick: Optional[Tuple[c_void_p, int]] = None
        if n <= FAST_SLOTS and tensors_only(self.h, n):
            pick = (self.hc, self.n_out or 0)
            if self.qualname and num_overloads(self.h) > 1:
                for s in schemas(self.h):
                    ov = s.split("(", 1)[0].partition(".")[2]
                    single = find_op(self.qualname, ov)
                    if tensors_only(single, n):
                        pick = (c_void_p(single), num_returns(single) or 0)
                        break
        if pick is not None and not 0 < pick[1] <= MAX_OUTPUTS:
            pick = None
        self.by_n[n] = pick
        return pick

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            T = _handle.Tensor
            for a in args:
                if type(a) is not T:
                    if self.one_tensor and not self.bmap and len(args) <= FAST_SLOTS:
                        return call_tensors_values(self.hc, args, self.mutates)
                    break
            else:
                n = len(args)
                by_n = self.by_n
                pick = by_n[n] if n in by_n else self.fast(n)
                if pick is not None:
                    if self.mutates:
                        generation[0] += 1
                    hc, n_out = pick
                    if n_out != 1:
                        return call_tensors(hc, args, n_out)
                    ins, outs, _v, a_ins, a_outs, _av = tls.fast
                    i = 0
                    for a in args:
                        ins[i] = a._h or a._ptr()
                        i += 1
                    try:
                        failed = _op_call_tensors(a_outs, _ONE, hc, a_ins, SIZES[i])
                    except SystemError as e:
                        raise_python_error(e)
                    if failed:
                        raise error_from_status(_last_error_code())
                    return new_tensor(outs[0])
        if self.bmap:
            return call_op(self.hc, *apply_broadcast(self.bmap, args, kwargs), self.mutates,
                           self.one_tensor)
        return call_op(self.hc, args, kwargs, self.mutates, self.one_tensor)


_ATEN: Dict[Tuple[str, str], OpCaller] = {}


def aten(name: str, overload: str = "") -> OpCaller:
    """The cached caller of aten::name.overload (operators, indexing, factories)."""
    c = _ATEN.get((name, overload))
    if c is None:
        c = _ATEN[(name, overload)] = OpCaller(find_op("aten::" + name, overload),
                                               mutates=name.endswith("_"))
    return c


# ---- ints for int[N] arguments, as torch's Python does ----------------------------------

_LIST_N = re.compile(r"^(?:int|SymInt)\[(\d+)\]\??$")


def broadcast_map(h: int) -> Dict[Any, int]:
    """{position or name: N} for arguments typed int[N] / SymInt[N] (N given)
    in every overload that has them, where no overload takes a plain int there:
    a Python int passed there is repeated N times, as torch's Python does
    (t.sum(dim=1), conv stride=2). Reads argument types, not schema strings."""
    found: Dict[Any, Set[int]] = {}
    blocked = set()
    name, typ = c_char_p(), c_char_p()
    kwonly = c_int32()
    for ov in range(num_overloads(h)):
        na = c_size_t()
        if G.op_num_arguments(byref(na), h, ov):
            G.clear_error()
            continue
        pos = 0
        for i in range(na.value):
            if G.op_argument(byref(name), byref(typ), None, byref(kwonly), h, ov, i):
                G.clear_error()
                break
            nm, ty = (name.value or b"").decode(), (typ.value or b"").decode()
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


def apply_broadcast(bmap: Dict[Any, int], args: Sequence[Any],
                    kwargs: Optional[Dict[str, Any]]) -> Tuple[Sequence[Any], Any]:
    new_args = [[a] * bmap[i] if type(a) is int and i in bmap else a
                for i, a in enumerate(args)]
    if kwargs:
        kwargs = {k: [a] * bmap[k] if type(a) is int and k in bmap else a
                  for k, a in kwargs.items()}
    return new_args, kwargs


# ---- modules and scripts -----------------------------------------------------------------

_MAX_OUT = SIZES[MAX_OUTPUTS]


def forward_tensors(m: int, method: bytes, args: Sequence[Any], count: int) -> Any:
    """ct_module_forward_tensors: one C call, tensor handles in and out, for a
    method whose schema returns one Tensor (count 0) or a tuple of `count`
    Tensors (ct_module_method_results, asked once per method)."""
    ins, outs, n, n_ref, a_ins, a_outs = tls.forward
    i = 0
    for a in args:
        ins[i] = a._h or a._ptr()
        i += 1
    try:
        if count <= MAX_OUTPUTS:
            st = C.module_forward_tensors(a_outs, _MAX_OUT, n_ref, m, method, a_ins, SIZES[i])
        else:  # more results than the thread's array holds
            outs = (c_void_p * count)()
            st = C.module_forward_tensors(outs, count, n_ref, m, method, a_ins, SIZES[i])
    except SystemError as e:
        raise_python_error(e)
    generation[0] += 1
    if st:
        raise error_from_status(st)
    if _warnings_count():
        flush_warnings(5)
    if count == 0:
        return new_tensor(outs[0])
    return tuple([new_tensor(outs[j]) for j in range(n.value)])


def call_method(fn: Any, handle: int, method: bytes, args: Sequence[Any],
                kwargs: Optional[Dict[str, Any]]) -> Any:
    """ct_module_call / ct_script_call with value arguments."""
    owned: List[int] = []
    try:
        arr, n = values_array(args, owned)
        names, vals, nk = kwargs_values(kwargs, owned)
        out = c_void_p()
        st = fn(byref(out), handle, method, arr, n, names, vals, nk)
        generation[0] += 1
        if st:
            raise error_from_status(st)
        if _warnings_count():
            flush_warnings(4)
        return from_value(out.value or 0)
    finally:
        free_values(owned)
