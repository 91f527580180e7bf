"""TorchScript modules, scripts and torch.save pickles."""

import os
from ctypes import byref, c_int32, c_int64, c_size_t, c_void_p
from collections import namedtuple
from typing import Any, Dict, List, Optional

from . import _lib, _call, _handle, _release
from ._lib import (C, G, CT_DEVICE_KEEP, CT_DTYPE_KEEP, CT_ERR_NOT_FOUND, NO_INDEX, check,
                   error_from_status)
from ._values import to_value, from_value
from ._types import get_device, get_dtype

_forward_tensors = _call.forward_tensors
from ._values import free_values  # noqa: E402
# What load_state_dict returns, as torch's.
IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


def _read_bytes(data: Any) -> Optional[bytes]:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if hasattr(data, "read"):
        b: bytes = data.read()
        return b
    return None


def _dict_value_of_str(d: Optional[Dict[str, Any]]) -> Any:
    if d is None:
        return None, False
    d = {str(k): (v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v))
         for k, v in d.items()}
    return to_value(d)


class Module(_release.Handle):
    """A TorchScript module (ct_module). Calling it runs forward; its methods
    are attributes (``m.encode(x)``), as are its parameters, buffers,
    submodules and plain attributes. Arguments and results keep their kinds:
    tuples stay tuples, lists lists, dicts dicts."""

    __slots__ = ("_m", "_methods_cache", "_kinds", "__weakref__")
    _handle_attr = "_m"
    _free_c = G.module_free
    _handle_kind = "module"
    _m: Optional[int]
    _methods_cache: Optional[Dict[str, str]]
    _kinds: Dict[str, Any]

    @classmethod
    def _wrap(cls, h: Optional[int]) -> "Module":
        m = object.__new__(cls)
        m._m = h
        m._methods_cache = None
        m._kinds = {}
        return m

    def _ptr(self) -> int:
        m = self._m
        if not m:
            raise _lib.InvalidArgumentError("use of a freed module")
        return m

    @property
    def _as_parameter_(self) -> int:
        return self._ptr()

    # ---- copying and pickling ---------------------------------------------------
    def __copy__(self) -> "Module":
        """copy.copy: a real copy, the same as copy.deepcopy (clone():
        parameters and buffers copied). torch's copy.copy of a ScriptModule
        shares the parameters; a ctorch copy shares neither handle nor
        tensors with the original, so either can be changed or freed alone."""
        return self.clone()

    def __deepcopy__(self, memo: Any) -> "Module":
        """copy.deepcopy: clone() (parameters and buffers copied)."""
        return self.clone()

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled as its TorchScript archive (save(), extra files included);
        unpickling loads it with ctorch.load, in any process."""
        return (load, (self.save(extra_files=self.extra_files or None),))

    def __enter__(self) -> "Module":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.free()

    # ---- calling -------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("forward", args, kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("forward", args, kwargs)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Runs any method by name with positional and keyword arguments.
        Tensor arguments only, and a method returning tensors only: one
        ct_module_forward_tensors call, no value handles."""
        return self._call(method, args, kwargs)

    def _call(self, method: str, args: Any, kwargs: Any) -> Any:
        if not kwargs and len(args) <= _lib.FAST_SLOTS:
            kind = self._kinds.get(method, 0)
            if kind == 0:
                kind = self._kind(method)
            if kind is not None:
                T = _handle.Tensor
                for a in args:
                    if type(a) is not T:
                        break
                else:
                    return _forward_tensors(self._m or self._ptr(), kind[0], args, kind[1])
        return _call.call_method(C.module_call, self._ptr(), method.encode(), args, kwargs)

    def _kind(self, method: str) -> Any:
        """(encoded name, result count) of a method whose schema returns one
        Tensor (count 0) or a tuple of Tensors, for the tensors-only call; None
        for any other result (ct_module_method_results, asked once per method,
        so the method never runs for nothing)."""
        kind, count = c_int32(), c_int64()
        st = C.module_method_results(byref(kind), byref(count), self._ptr(), method.encode())
        if st:
            if st != CT_ERR_NOT_FOUND:
                raise error_from_status(st)
            G.clear_error()
            return None  # the value path reports the unknown method
        k = kind.value
        r = ((method.encode(), 0 if k == _lib.CT_RESULT_TENSOR else count.value)
             if k in (_lib.CT_RESULT_TENSOR, _lib.CT_RESULT_TUPLE) else None)
        self._kinds[method] = r
        return r

    def methods(self) -> Dict[str, str]:
        """{name: schema} of every method."""
        if self._methods_cache is None:
            out = c_void_p()
            check(G.module_methods(byref(out), self._ptr()))
            self._methods_cache = from_value(out.value)
        return dict(self._methods_cache or {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in Module.__slots__:
            raise AttributeError(name)
        if name in self.methods():
            return _Method(self, name)
        out = c_void_p()
        st = G.module_get_attr(byref(out), self._ptr(), name.encode())
        if st == CT_ERR_NOT_FOUND:
            G.clear_error()
            raise AttributeError("TorchScript module has no method or attribute %r" % name)
        if st:
            raise error_from_status(st)
        return from_value(out.value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in Module.__slots__:
            object.__setattr__(self, name, value)
            return
        p, owned = to_value(value)
        try:
            check(G.module_set_attr(self._ptr(), name.encode(), p))
            _call.bump()
        finally:
            if owned:
                G.value_free(p)

    def __dir__(self) -> List[str]:
        names = set(object.__dir__(self)) | set(self.methods())
        try:
            names |= set(self.named_attributes(recurse=False))
        except _lib.Error:
            pass
        return sorted(names)

    # ---- introspection ---------------------------------------------------------
    def _dict(self, fn: Any, recurse: bool) -> Dict[str, Any]:
        out = c_void_p()
        check(fn(byref(out), self._ptr(), 1 if recurse else 0))
        d: Dict[str, Any] = from_value(out.value)
        return d

    def named_parameters(self, recurse: bool = True) -> Dict[str, Any]:
        """{dotted name: Tensor}; the tensors are the module's own (no copy)."""
        return self._dict(G.module_named_parameters, recurse)

    def named_buffers(self, recurse: bool = True) -> Dict[str, Any]:
        return self._dict(G.module_named_buffers, recurse)

    def named_attributes(self, recurse: bool = False) -> Dict[str, Any]:
        return self._dict(G.module_named_attributes, recurse)

    def named_children(self, recurse: bool = False) -> Dict[str, "Module"]:
        """{name: Module} of child modules (recurse=True: all descendants)."""
        return self._dict(G.module_named_children, recurse)

    def parameters(self, recurse: bool = True) -> List[Any]:
        return list(self.named_parameters(recurse).values())

    def children(self) -> List["Module"]:
        return list(self.named_children().values())

    def named_modules(self) -> Dict[str, "Module"]:
        """{name: Module} of this module ('') and all its descendants."""
        out: Dict[str, Module] = {"": self}
        out.update(self.named_children(recurse=True))
        return out

    def modules(self) -> List["Module"]:
        return list(self.named_modules().values())

    def load_state_dict(self, state_dict: Dict[str, Any], strict: bool = True) -> Any:
        """torch.nn.Module.load_state_dict, all or nothing; returns
        (missing_keys, unexpected_keys). Values may be ctorch or torch tensors
        or numpy arrays."""
        owned: List[int] = []
        try:
            d, _ = to_value(dict(state_dict))
            if _:
                owned.append(d)
            out = c_void_p()
            check(C.module_load_state_dict(byref(out), self._ptr(), d, 1 if strict else 0))
            missing, unexpected = from_value(out.value)
            return IncompatibleKeys(missing, unexpected)
        finally:
            free_values(owned)

    def zero_grad(self, set_to_none: bool = True) -> None:
        check(G.module_zero_grad(self._ptr(), 1 if set_to_none else 0))

    def buffers(self, recurse: bool = True) -> List[Any]:
        return list(self.named_buffers(recurse).values())

    def state_dict(self) -> Dict[str, Any]:
        """{name: Tensor} in torch's order (the module's own tensors)."""
        out = c_void_p()
        check(G.module_state_dict(byref(out), self._ptr()))
        d: Dict[str, Any] = from_value(out.value)
        return d

    @property
    def extra_files(self) -> Dict[str, str]:
        """{name: str} of the archive's extra files."""
        out = c_void_p()
        check(G.module_extra_files(byref(out), self._ptr()))
        d: Dict[str, str] = from_value(out.value)
        return d

    @property
    def training(self) -> bool:
        return bool(G.module_is_training(self._ptr()) == 1)

    # ---- changing ----------------------------------------------------------------
    def to(self, device: Any = None, dtype: Any = None, non_blocking: bool = False) -> "Module":
        """Moves parameters and buffers in place; returns self."""
        if device is not None and dtype is None and not isinstance(device, str):
            try:
                dtype, device = get_dtype(device), None
            except _lib.Error:
                pass
        if device is not None:
            d = get_device(device)
            dc, di = d.code, d.c_index
        else:
            dc, di = CT_DEVICE_KEEP, NO_INDEX
        dt = get_dtype(dtype).code if dtype is not None else CT_DTYPE_KEEP
        check(C.module_to(self._ptr(), dc, di, dt, 1 if non_blocking else 0))
        _call.bump()
        return self

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self, index: Optional[int] = None) -> "Module":
        return self.to(get_device("cuda" if index is None else "cuda:%d" % index))

    def train(self, mode: bool = True) -> "Module":
        check(G.module_train(self._ptr(), 1 if mode else 0))
        return self

    def eval(self) -> "Module":
        check(G.module_eval(self._ptr()))
        return self

    def clone(self) -> "Module":
        out = c_void_p()
        check(C.module_clone(byref(out), self._ptr()))
        return Module._wrap(out.value)

    def to_pytorch(self) -> "Module":
        """A copy whose calls of operators written in Python (or any host
        language) are replaced by their TorchScript twins
        (``CustomOp.register_twin``): saved, it opens with torch.jit.load
        without ctorch. NotSupportedError names the operators without one."""
        out = c_void_p()
        check(C.module_to_pytorch(byref(out), self._ptr()))
        return Module._wrap(out.value)

    def freeze(self) -> "Module":
        """torch.jit.freeze: a new, frozen module (eval mode)."""
        out = c_void_p()
        check(C.module_freeze(byref(out), self._ptr()))
        return Module._wrap(out.value)

    def optimize_for_inference(self) -> "Module":
        out = c_void_p()
        check(C.module_optimize_for_inference(byref(out), self._ptr()))
        return Module._wrap(out.value)

    def save(self, path: Any = None, extra_files: Optional[Dict[str, Any]] = None) -> Optional[bytes]:
        """Saves a TorchScript archive to path, or returns its bytes when path is
        None. extra_files: {name: str} stored as _extra_files."""
        ev, owned = _dict_value_of_str(extra_files)
        try:
            if path is None:
                p, n = c_void_p(), c_size_t()
                check(C.module_save_buffer(byref(p), byref(n), self._ptr(), ev))
                return _lib.take_buffer(p.value, n.value)
            check(C.module_save(self._ptr(), os.fsencode(path), ev))
            return None
        finally:
            if owned:
                G.value_free(ev)

    # ---- building -------------------------------------------------------------------
    @classmethod
    def new(cls, class_name: str = "Module") -> "Module":
        """An empty module to fill with register_* and define()."""
        out = c_void_p()
        check(G.module_new(byref(out), class_name.encode()))
        return cls._wrap(out.value)

    def register_parameter(self, name: str, t: Any, requires_grad: bool = True) -> None:
        check(G.module_register_parameter(self._ptr(), name.encode(), t._handle,
                                          1 if requires_grad else 0))

    def register_buffer(self, name: str, t: Any) -> None:
        check(G.module_register_buffer(self._ptr(), name.encode(), t._handle))

    def register_module(self, name: str, child: "Module") -> None:
        check(G.module_register_module(self._ptr(), name.encode(), child._ptr()))

    def define(self, source: str) -> None:
        """Compiles TorchScript methods from source."""
        check(C.module_define(self._ptr(), source.encode()))
        self._methods_cache = None
        self._kinds = {}  # type: Dict[str, Any]

    def __repr__(self) -> str:
        if not self._m:
            return "<ctorch.Module (freed)>"
        try:
            meths = sorted(self.methods())
        except _lib.Error:
            meths = []
        shown = ", ".join(meths[:4]) + (", ... (%d)" % len(meths) if len(meths) > 4 else "")
        return "<ctorch.Module methods: %s>" % shown


_handle.register_module_class(Module)


class _Method:
    __slots__ = ("module", "name")

    def __init__(self, module: Module, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.module._call(self.name, args, kwargs)

    @property
    def schema(self) -> str:
        return self.module.methods()[self.name]

    @property
    def __doc__(self) -> str:  # type: ignore[override]
        return self.schema

    def __repr__(self) -> str:
        return "<ctorch method %s>" % self.schema


def load(f: Any, device: Any = None, map_location: Any = None) -> Module:
    """Loads a TorchScript archive (torch.jit.save) from a path, bytes or a
    binary file object. device (alias map_location): where to put the
    parameters; None keeps the saved devices."""
    if device is None:
        device = map_location
    if device is None:
        dc, di = CT_DEVICE_KEEP, NO_INDEX
    else:
        d = get_device(device)
        dc, di = d.code, d.c_index
    out = c_void_p()
    data = _read_bytes(f)
    if data is not None:
        check(C.module_load_buffer(byref(out), data, len(data), dc, di))
    else:
        check(C.module_load(byref(out), os.fsencode(f), dc, di))
    return Module._wrap(out.value)


def load_pickle(f: Any) -> Any:
    """Loads what Python's torch.save wrote (a tensor, a state_dict, lists,
    tuples, dicts of tensors and scalars) from a path, bytes or file object."""
    out = c_void_p()
    data = _read_bytes(f)
    if data is not None:
        check(C.pickle_load_buffer(byref(out), data, len(data)))
    else:
        check(C.pickle_load(byref(out), os.fsencode(f)))
    return from_value(out.value)


def save_pickle(obj: Any, f: Any = None) -> Optional[bytes]:
    """Saves obj in torch.save's format, to a path, or returns the bytes when
    f is None; torch.load reads it."""
    p, owned = to_value(obj)
    try:
        if f is None:
            buf, n = c_void_p(), c_size_t()
            check(C.pickle_save_buffer(byref(buf), byref(n), p))
            return _lib.take_buffer(buf.value, n.value)
        if hasattr(f, "write"):
            buf, n = c_void_p(), c_size_t()
            check(C.pickle_save_buffer(byref(buf), byref(n), p))
            f.write(_lib.take_buffer(buf.value, n.value))
            return None
        check(C.pickle_save(p, os.fsencode(f)))
        return None
    finally:
        if owned:
            G.value_free(p)


class Script(_release.Handle):
    """TorchScript functions compiled from source: ``s = compile_script(src)``,
    then ``s.fname(args)`` or ``s.call("fname", ...)``. Copies and pickles
    hold the source and compile it again."""

    __slots__ = ("_s", "_source", "__weakref__")
    _handle_attr = "_s"
    _free_c = G.script_free
    _handle_kind = "script"
    _s: Optional[int]
    _source: str

    def __init__(self, source: str) -> None:
        out = c_void_p()
        check(C.script_compile(byref(out), source.encode()))
        self._s = out.value
        self._source = source

    @property
    def source(self) -> str:
        """The TorchScript source this script was compiled from."""
        return self._source

    def _ptr(self) -> int:
        if not self._s:
            raise _lib.InvalidArgumentError("use of a freed script")
        return self._s

    def _live_source(self) -> str:
        if not self._s:
            raise _lib.InvalidArgumentError("use of a freed script")
        return self._source

    def _clone(self) -> "Script":
        """copy.copy and copy.deepcopy: the source compiled again (a script
        holds no state)."""
        return Script(self._live_source())

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled as its source; unpickling compiles it again."""
        return (Script, (self._live_source(),))

    def functions(self) -> List[str]:
        out = c_void_p()
        check(G.script_functions(byref(out), self._s))
        names: List[str] = from_value(out.value)
        return names

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if not self._s:
            raise _lib.InvalidArgumentError("use of a freed script")
        return _call.call_method(C.script_call, self._s, name.encode(), args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self.functions():
            raise AttributeError("script has no function %r" % name)
        return lambda *a, **k: self.call(name, *a, **k)


def compile_script(source: str) -> Script:
    return Script(source)
