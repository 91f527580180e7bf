"""Printing tensors as torch's Python does: ``tensor([[0., 0., ..., 0.]], dtype=...)``,
summarised past ``threshold`` elements with ``edgeitems`` per edge."""

import math
from typing import Any, Callable, List, Optional

from . import _lib


class _Options:
    threshold = 1000
    edgeitems = 3
    precision = 4
    linewidth = 80
    sci_mode: Optional[bool] = None


PRINT_OPTS = _Options()


def set_printoptions(precision: Optional[int] = None, threshold: Optional[int] = None,
                     edgeitems: Optional[int] = None, linewidth: Optional[int] = None,
                     sci_mode: Optional[bool] = None) -> None:
    """torch.set_printoptions for ctorch tensors."""
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


class _Ellipsis:
    pass


_ELL = _Ellipsis()


def _gather(t: Any, summarize: bool) -> Any:
    """Nested lists of the values that will be shown (_ELL where elided)."""
    n = t.shape[0]
    e = PRINT_OPTS.edgeitems
    if t.ndim == 1:
        if summarize and n > 2 * e:
            return t[:e].tolist() + [_ELL] + t[n - e:].tolist()
        return t.tolist()
    if summarize and n > 2 * e:
        return [_gather(t[i], summarize) for i in range(e)] + [_ELL] + \
            [_gather(t[i], summarize) for i in range(n - e, n)]
    return [_gather(t[i], summarize) for i in range(n)]


def _flat(x: Any, acc: List[Any]) -> List[Any]:
    if isinstance(x, list):
        for e in x:
            _flat(e, acc)
    elif x is not _ELL:
        acc.append(x)
    return acc


def _float_formatter(vals: List[float]) -> Callable[[float], str]:
    p = PRINT_OPTS.precision
    finite = [abs(v) for v in vals if math.isfinite(v) and v != 0]
    int_mode = all(v == math.ceil(v) for v in finite)
    sci = False
    if finite:
        mx, mn = max(finite), min(finite)
        sci = mx / mn > 1000.0 or mx > 1.0e8 or (not int_mode and mn < 1.0e-4)
    if PRINT_OPTS.sci_mode is not None:
        sci = PRINT_OPTS.sci_mode

    def fmt(v: float) -> str:
        if not math.isfinite(v):
            return str(v)
        if sci:
            return "{:.{}e}".format(v, p)
        if int_mode:
            return "{:.0f}.".format(v)
        return "{:.{}f}".format(v, p)
    return fmt


def _formatter(vals: List[Any], floating: bool, complex_: bool) -> Callable[[Any], str]:
    if complex_:
        fr = _float_formatter([v.real for v in vals])
        fi = _float_formatter([v.imag for v in vals])

        def base(v: Any) -> str:
            im = fi(v.imag)
            return "%s%s%sj" % (fr(v.real), "" if im.startswith("-") else "+", im)
    elif floating:
        ff = _float_formatter(vals)

        def base(v: Any) -> str:
            return ff(v)
    else:
        def base(v: Any) -> str:
            return str(v)
    width = max((len(base(v)) for v in vals), default=1)
    return lambda v: base(v).rjust(width)


def _layout(x: Any, dim: int, indent: int, fmt: Callable[[Any], str]) -> str:
    if dim == 1:
        data = [" ..." if v is _ELL else fmt(v) for v in x]
        w = max((len(d) for d in data), default=1) + 2
        per_line = max(1, (PRINT_OPTS.linewidth - indent) // w)
        lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = ["..." if r is _ELL else _layout(r, dim - 1, indent + 1, fmt) for r in x]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(rows) + "]"


_DEFAULT_DTYPES = (_lib.CT_FLOAT32, _lib.CT_INT64, _lib.CT_BOOL, _lib.CT_COMPLEX64)


def tensor_repr(t: Any) -> str:
    prefix = "tensor("
    indent = len(prefix)
    d = t.dtype
    suffixes = []
    m = t._meta()
    if m.device_type != _lib.CT_DEVICE_CPU:
        suffixes.append("device='%s'" % t.device)
    shape = m.shape
    if m.numel == 0 and len(shape) != 1:
        body = "[]"
        suffixes.insert(0, "size=%s" % (tuple(shape),))
    elif m.numel == 0:
        body = "[]"
    else:
        summarize = m.numel > PRINT_OPTS.threshold
        src = t.detach() if m.requires_grad else t
        data = _gather(src, summarize) if shape else src.item()
        vals = _flat(data, []) if shape else [data]
        fmt = _formatter(vals, d.is_floating_point, d.is_complex)
        body = _layout(data, len(shape), indent, fmt) if shape else fmt(data).strip()
    if d.code not in _DEFAULT_DTYPES:
        suffixes.append("dtype=%r" % d)
    if m.requires_grad:
        gf = t.grad_fn_name
        suffixes.append("grad_fn=<%s>" % gf if gf else "requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"
