"""Explicit free() made safe against use of the same handle on another thread.

A handle is borrowed by every ctorch call that uses it, from the moment the
call reads it off its Python object until C returns (with the GIL released on
the long paths). free() on another thread in that window would free it under
the call. The calls themselves carry no bookkeeping (x + y stays one C call):
instead, release() frees at once only while no ctorch code may be borrowing
the handle (no other thread's stack holds a frame of this package, nor this
thread's below the free() call: checked with sys._current_frames under the
GIL); otherwise the handle is parked and freed when its object dies (every
call borrowing a handle holds the object) or at a later release() that finds
ctorch idle. Standard library only.

Finalizers (``Handle.__del__``, Tensor's) also run at interpreter exit, after
shutdown may have set the package's module globals to None: everything they
call is bound when their class is defined (closure cells, default arguments),
so they still free the C handle then (C deleters that call back into Python
are written the same way: _interop, autograd, library).
"""

import os
import sys
import threading
from typing import Any, Dict, Optional, Tuple

_PKG_PREFIX = os.path.dirname(__file__) + os.sep
_current_frames = getattr(sys, "_current_frames", None)
_gil_enabled = getattr(sys, "_is_gil_enabled", None)
#: id(owner) -> (free function, handle) of handles whose free() was deferred
_deferred: Dict[int, Tuple[Any, int]] = {}
#: Frames of the free() chain itself (skipped at the top of the calling thread).
_FREE_CHAIN = frozenset({"_ctorch_busy_elsewhere", "release", "free_handle", "free",
                         "__exit__"})


#: co_filename -> whether it is a file of this package (a cache: few files)
_OURS: Dict[str, bool] = {}


def _ours(filename: str) -> bool:
    o = _OURS.get(filename)
    if o is None:
        o = _OURS[filename] = filename.startswith(_PKG_PREFIX)
    return o


def _ctorch_busy_elsewhere() -> bool:
    """Whether a handle may be borrowed right now by ctorch code other than
    the free() asking: another thread runs ctorch code, or the calling thread
    does below the free() chain (a free() inside a callback that ctorch
    called, or inside a user method ctorch called while marshalling), or the
    state cannot be known (no sys._current_frames, no GIL)."""
    if _current_frames is None or (_gil_enabled is not None and not _gil_enabled()):
        return True
    me = threading.get_ident()
    ours = _OURS.get
    for tid, f in _current_frames().items():
        if tid == me:
            while f is not None and f.f_code.co_name in _FREE_CHAIN and \
                    _ours(f.f_code.co_filename):
                f = f.f_back
        while f is not None:
            o = ours(f.f_code.co_filename)
            if o or (o is None and _ours(f.f_code.co_filename)):
                return True
            f = f.f_back
    return False


def release(owner: Any, free: Any, h: int) -> None:
    """Frees handle h, just taken off `owner` by its free() (never from
    __del__: a dead object's handle is free to go): now when no ctorch code
    may be borrowing it, else when `owner` dies (its __del__ calls
    release_deferred) or at a later release() that finds ctorch idle."""
    if _ctorch_busy_elsewhere():
        _deferred[id(owner)] = (free, h)
        return
    free(h)
    while _deferred:
        try:
            _k, (fn, p) = _deferred.popitem()
        except KeyError:
            break
        fn(p)


def release_deferred(owner: Any, _deferred: Dict[int, Tuple[Any, int]] = _deferred) -> None:
    """Frees the handle whose free() `owner` deferred (from its __del__)."""
    e = _deferred.pop(id(owner), None)
    if e is not None:
        e[0](e[1])


def free_handle(owner: Any, attr: str, free: Any) -> None:
    """A handle class's free(): takes the handle off owner.<attr> and
    releases it (now, or deferred as release() decides)."""
    h = getattr(owner, attr, None)
    setattr(owner, attr, None)
    if h:
        release(owner, free, h)


def free_on_del(owner: Any, attr: str, free: Any, _getattr: Any = getattr,
                _setattr: Any = object.__setattr__,
                _deferred: Dict[int, Tuple[Any, int]] = _deferred,
                _release_deferred: Any = release_deferred) -> None:
    """A handle class's __del__: frees owner.<attr>'s handle at once, or the
    one an earlier free() deferred. Uses no module global (see above), nor
    the class's own __setattr__ (Module's reads its module's globals)."""
    h = _getattr(owner, attr, None)
    if h:
        _setattr(owner, attr, None)
        free(h)
    elif _deferred:
        _release_deferred(owner)


class Handle:
    """The base of every class owning one C handle but Tensor (whose hot
    paths keep their own slots and finalizer): free(), the finalizer, the
    freed-handle check and the copy and pickle rules, written once.

    A subclass sets, as class attributes:
      _free_c   the C function that frees the handle (bound when the class is
                made, so the finalizer works at interpreter exit too);
      _handle_kind  its name in messages ("ctorch.cuda.Event");
      _no_copy  why a copy or pickle is refused, or None where the subclass
                defines _clone() (copy.copy and copy.deepcopy) and
                __reduce__/__reduce_ex__ (pickle; otherwise refused too);
      _handle_attr  the slot holding the handle ("_p"; Module "_m").
    A copy never shares the handle: a pickled or copied slot would be freed
    twice."""
    __slots__ = ()
    _handle_attr = "_p"
    _free_c: Any = None
    _handle_kind = "ctorch handle"
    _no_copy: Optional[str] = None
    _p: Optional[int]

    def _ptr(self) -> int:
        """The live handle (for C calls); ValueError once freed. (A class
        keeping it elsewhere than _p overrides this.)"""
        p = self._p
        if not p:
            raise ValueError("use of a freed %s" % self._handle_kind)
        return p

    def free(self) -> None:
        """Frees the C handle now (deferred while another thread runs ctorch
        code: see Tensor.free); also done when the object is collected."""
        free_handle(self, type(self)._handle_attr, type(self)._free_c)

    def __del__(self, _free_on_del: Any = free_on_del) -> None:
        cls = type(self)  # class attributes only: module globals may be gone at exit
        _free_on_del(self, cls._handle_attr, cls._free_c)

    def _refusal(self, verb: str) -> TypeError:
        k = self._handle_kind
        return TypeError("%s %s cannot be %s: %s" % ("an" if k[:1] in "aeiouAEIOU" else "a", k,
                                                     verb, self._no_copy or "no such form"))

    def _clone(self) -> Any:
        raise self._refusal("copied")

    def __copy__(self) -> Any:
        if self._no_copy is not None:
            raise self._refusal("copied")
        return self._clone()

    def __deepcopy__(self, memo: Any) -> Any:
        return self.__copy__()

    def __reduce__(self) -> Any:
        raise self._refusal("pickled")
