"""``report``: how a Python callback called from C (foreign ops, autograd
functions) reports the exception it raised. The message goes to ctorch with
ct_set_error(CT_ERR_CALLBACK, message) and the exception object to _lib's
pending table, so that the ctorch call that ran the callback re-raises the
original exception (``_lib.error_from_status``). Callbacks can run on another
thread than that call (CUDA backward runs on torch's device threads): the
table is process-wide and matched by message."""

import traceback

from . import _lib


def format_exception(exc: BaseException) -> str:
    return "%s: %s" % (type(exc).__name__, exc)


def report(exc: BaseException) -> int:
    """Records `exc` and stores its message as ctorch's last error; returns the
    status the callback must return."""
    msg = format_exception(exc)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    _lib.keep_pending(msg, exc)
    full = msg + "\nPython traceback of the callback:\n" + tb
    st: int = _lib.G.set_error(_lib.CT_ERR_CALLBACK, full.encode("utf-8", "replace"))
    return st

