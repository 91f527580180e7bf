"""Tensor indexing: ints, slices, None, ``...``, and tensor / list / mask indices,
for getting (views where torch gives views) and setting."""

import operator
from typing import Any, List, Optional, Tuple

from . import _call, _handle, _lib, _types, _values
from ._call import aten as _op
from ._factories import as_tensor
from ._handle import new_tensor
from ._lib import SIZES, tls

_int_cached = _values._INT_CACHE.get
_ONE, _TWO = SIZES[1], SIZES[2]
_tv = _call._op_call_tv
_select_h: List[Any] = []  # [the aten::select.int handle (c_void_p)], set on first use


def select(t: Any, dim: int, i: int) -> Any:
    """t.select(dim, i) for Python ints (t[i], and each int of t[i, j]): one
    C call, ct_op_call_tensors_values with the cached int values (no value is
    made or freed)."""
    vd, vi = _int_cached(dim), _int_cached(i)
    if vd is None or vi is None or not _select_h:
        # first use, or an int not cached yet (the general call caches it)
        if not _select_h:
            _select_h.append(_op("select", "int").hc)
        return _op("select", "int")(t, dim, i)
    ins, outs, vals, a_ins, a_outs, a_vals = tls.fast
    ins[0] = t._h or t._ptr()
    vals[0] = vd
    vals[1] = vi
    try:
        st = _tv(a_outs, _ONE, _select_h[0], a_ins, _ONE, a_vals, _TWO)
    except SystemError as e:
        _lib.raise_python_error(e)
    if st:
        raise _lib.error_from_status(st)
    return new_tensor(outs[0])


def _as_tensor(x: Any) -> Any:
    return x if type(x) is _handle.Tensor else as_tensor(x)


def index(t: Any, idx: Any) -> Any:
    if not isinstance(idx, tuple):
        idx = (idx,)
    t, adv = _basic_index(t, idx)
    if adv:
        r: Any = _op("index", "Tensor")(t, _adv_list(adv))
        return r
    return t


_BOUND = 1 << 62  # beyond any dimension; c10::SymInt takes ints below -2**62 as symbolic


def _bound(x: Any) -> int:
    """A slice bound clamped to +-2**62, as Python clamps bounds (t[2**70:] is
    empty, t[-2**70:] everything): no dimension is that long."""
    return min(max(operator.index(x), -_BOUND), _BOUND)


def _adv_list(adv: List[Tuple[int, Any]]) -> List[Optional[Any]]:
    idxs: List[Optional[Any]] = [None] * (max(d for d, _ in adv) + 1)
    for d, it in adv:
        idxs[d] = it
    return idxs


def _basic_index(t: Any, idx: Tuple[Any, ...]) -> Tuple[Any, List[Tuple[int, Any]]]:
    """Applies ints, slices, None and Ellipsis; returns (view, advanced) where
    advanced lists (dim in the view, index tensor) for tensor/list indices."""
    nd = t.ndim
    consumed = sum(1 for i in idx if i is not None and i is not Ellipsis
                   and not isinstance(i, bool))
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise _lib.CTorchIndexError("an index can only have a single ellipsis ('...')")
    if consumed > nd:
        raise _lib.CTorchIndexError("too many indices for tensor of dimension %d" % nd)
    dim = 0
    adv: List[Tuple[int, Any]] = []
    cur = t
    for it in idx:
        if it is None:
            cur = _op("unsqueeze")(cur, dim)
            dim += 1
        elif it is Ellipsis:
            dim += nd - consumed
        elif isinstance(it, bool):
            raise _lib.NotSupportedError("boolean scalar indices are not supported")
        elif isinstance(it, int) or (hasattr(it, "__index__") and not isinstance(it, _handle.Tensor)
                                     and not hasattr(it, "__len__")):
            cur = select(cur, dim, it if type(it) is int else operator.index(it))
        elif isinstance(it, slice):
            step = 1 if it.step is None else operator.index(it.step)
            if step <= 0:
                raise _lib.InvalidArgumentError("step must be greater than zero")
            if it.start is not None or it.stop is not None or step != 1:
                cur = _op("slice", "Tensor")(
                    cur, dim, None if it.start is None else _bound(it.start),
                    None if it.stop is None else _bound(it.stop), step)
            dim += 1
        else:
            ti = _as_tensor(it)
            if ti.dtype in (_types.int32, _types.int16, _types.int8):
                ti = ti.to(dtype=_types.int64)
            adv.append((dim, ti))
            dim += 1 if ti.dtype not in (_types.bool_, _types.uint8) else ti.ndim
    return cur, adv


def setitem(t: Any, idx: Any, value: Any) -> None:
    if not isinstance(idx, tuple):
        idx = (idx,)
    view, adv = _basic_index(t, idx)
    if adv:
        if not isinstance(value, _handle.Tensor):
            value = as_tensor(value, dtype=t.dtype, device=t.device)
        _op("index_put_")(view, _adv_list(adv), value)
        return
    if isinstance(value, (int, float, bool)):
        view.fill_(value)
    else:
        view.copy_(_as_tensor(value))
