"""Plumbing for Python callbacks called from C (foreign ops, autograd
functions): exceptions raised inside a callback are reported to ctorch with
ct_set_error(CT_ERR_CALLBACK, message) and kept here, so that the ctorch call
that ran the callback re-raises the original Python exception object.

Callbacks can run on another thread than the one that made the ctorch call
(CUDA backward runs on torch's device threads), so pending exceptions are kept
in a process-wide table and matched by their message."""

import threading
import traceback
from typing import List, Optional, Tuple

_lock = threading.Lock()
_pending: List[Tuple[str, BaseException]] = []  # [(message, exception)], newest last
_MAX_PENDING = 64


def format_exception(exc: BaseException) -> str:
    return "%s: %s" % (type(exc).__name__, exc)


def report(exc: BaseException) -> int:
    """Records `exc` and stores its message as ctorch's last error; returns the
    status the callback must return."""
    from . import _lib
    msg = format_exception(exc)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    with _lock:
        _pending.append((msg, exc))
        del _pending[:-_MAX_PENDING]
    full = msg + "\nPython traceback of the callback:\n" + tb
    st: int = _lib.G.set_error(_lib.CT_ERR_CALLBACK, full.encode("utf-8", "replace"))
    return st


def take_pending(message: Optional[str] = None) -> Optional[BaseException]:
    """Removes and returns the pending exception whose message appears in
    `message` (the newest if message is None), or None."""
    with _lock:
        if not _pending:
            return None
        if message is None:
            return _pending.pop()[1]
        for i in range(len(_pending) - 1, -1, -1):
            if _pending[i][0] in message:
                return _pending.pop(i)[1]
    return None
