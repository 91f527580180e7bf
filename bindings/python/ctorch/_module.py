"""TorchScript modules, scripts and torch.save pickles."""

import os
import ctypes
from ctypes import byref, c_char_p, c_size_t, c_void_p

from . import _lib
from ._lib import C, G, check, error_from_status, tls as _tls
from ._core import to_value, from_value, _value_free, _new_value, borrowed_to_python, kwargs_values
from ._types import get_device, get_dtype


def _call_args(args, kwargs):
    """Converts Python arguments; returns (arr, n, names, vals, nk, owned)."""
    owned = []
    ptrs = []
    try:
        for a in args:
            p, o = to_value(a)
            ptrs.append(p)
            if o:
                owned.append(p)
        n = len(ptrs)
        arr = (c_void_p * max(n, 1))(*ptrs)
        names, vals, nk = kwargs_values(kwargs, owned)
        return arr, n, names, vals, nk, owned
    except BaseException:
        for p in owned:
            _value_free(p)
        raise


def _read_bytes(data):
    if isinstance(data, (bytes, bytearray, memoryview)):
        b = bytes(data)
        return b
    if hasattr(data, "read"):
        return data.read()
    return None


def _take_buffer(p, n):
    try:
        return ctypes.string_at(p, n) if n else b""
    finally:
        _lib.C.free(p)


def _dict_value_of_str(d):
    if d is None:
        return None, False
    d = {str(k): (v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v))
         for k, v in d.items()}
    return to_value(d)


class Module:
    """A TorchScript module (ct_module). Calling it runs forward; its methods
    are attributes (``m.encode(x)``), as are its parameters, buffers,
    submodules and plain attributes. Arguments and results keep their kinds:
    tuples stay tuples, lists lists, dicts dicts."""

    __slots__ = ("_m", "_methods_cache", "__weakref__")

    @classmethod
    def _wrap(cls, h):
        m = object.__new__(cls)
        m._m = h
        m._methods_cache = None
        return m

    def _ptr(self):
        m = self._m
        if not m:
            raise _lib.InvalidArgumentError("use of a freed module", 1)
        return m

    def free(self):
        m, self._m = self._m, None
        if m:
            G.module_free(m)

    def __del__(self):
        m = self._m
        if m:
            self._m = None
            G.module_free(m)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()
        return False

    # ---- calling -------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        return self.call("forward", *args, **kwargs)

    def forward(self, *args, **kwargs):
        return self.call("forward", *args, **kwargs)

    def call(self, method, *args, **kwargs):
        """Runs any method by name with positional and keyword arguments."""
        arr, n, names, vals, nk, owned = _call_args(args, kwargs)
        try:
            out = c_void_p()
            st = C.module_call(byref(out), self._ptr(), method.encode(), arr, n, names, vals,
                               nk)
            if st:
                raise error_from_status(st)
            return from_value(out.value)
        finally:
            for p in owned:
                _value_free(p)

    def methods(self):
        """{name: schema} of every method."""
        if self._methods_cache is None:
            out = c_void_p()
            check(G.module_methods(byref(out), self._ptr()))
            self._methods_cache = from_value(out.value)
        return dict(self._methods_cache)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_m", "_methods_cache"):
            raise AttributeError(name)
        if name in self.methods():
            return _Method(self, name)
        out = c_void_p()
        st = G.module_get_attr(byref(out), self._ptr(), name.encode())
        if st == 4:
            G.clear_error()
            raise AttributeError("TorchScript module has no method or attribute %r" % name)
        if st:
            raise error_from_status(st)
        return from_value(out.value)

    def __setattr__(self, name, value):
        if name in Module.__slots__:
            object.__setattr__(self, name, value)
            return
        p, owned = to_value(value)
        try:
            check(G.module_set_attr(self._ptr(), name.encode(), p))
        finally:
            if owned:
                _value_free(p)

    def __dir__(self):
        names = set(object.__dir__(self)) | set(self.methods())
        try:
            names |= set(self.named_attributes(recurse=False))
        except _lib.Error:
            pass
        return sorted(names)

    # ---- introspection ---------------------------------------------------------
    def _dict(self, fn, recurse):
        out = c_void_p()
        check(fn(byref(out), self._ptr(), 1 if recurse else 0))
        return from_value(out.value)

    def named_parameters(self, recurse=True):
        """{dotted name: Tensor}; the tensors are the module's own (no copy)."""
        return self._dict(G.module_named_parameters, recurse)

    def named_buffers(self, recurse=True):
        return self._dict(G.module_named_buffers, recurse)

    def named_attributes(self, recurse=False):
        return self._dict(G.module_named_attributes, recurse)

    def named_children(self, recurse=False):
        """{name: Module} of child modules (recurse=True: all descendants)."""
        return self._dict(G.module_named_children, recurse)

    def parameters(self, recurse=True):
        return list(self.named_parameters(recurse).values())

    def buffers(self, recurse=True):
        return list(self.named_buffers(recurse).values())

    def state_dict(self):
        d = dict(self.named_parameters())
        d.update(self.named_buffers())
        return d

    @property
    def extra_files(self):
        """{name: str} of the archive's extra files."""
        out = c_void_p()
        check(G.module_extra_files(byref(out), self._ptr()))
        return from_value(out.value)

    @property
    def training(self):
        return G.module_is_training(self._ptr()) == 1

    # ---- changing ----------------------------------------------------------------
    def to(self, device=None, dtype=None, non_blocking=False):
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
            dc, di = 0, -1
        dt = get_dtype(dtype).code if dtype is not None else -1
        check(C.module_to(self._ptr(), dc, di, dt, 1 if non_blocking else 0))
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, index=None):
        return self.to(get_device("cuda" if index is None else "cuda:%d" % index))

    def train(self, mode=True):
        check(G.module_train(self._ptr(), 1 if mode else 0))
        return self

    def eval(self):
        check(G.module_eval(self._ptr()))
        return self

    def clone(self):
        out = c_void_p()
        check(C.module_clone(byref(out), self._ptr()))
        return Module._wrap(out.value)

    def freeze(self):
        """torch.jit.freeze: a new, frozen module (eval mode)."""
        out = c_void_p()
        check(C.module_freeze(byref(out), self._ptr()))
        return Module._wrap(out.value)

    def optimize_for_inference(self):
        out = c_void_p()
        check(C.module_optimize_for_inference(byref(out), self._ptr()))
        return Module._wrap(out.value)

    def save(self, path=None, extra_files=None):
        """Saves a TorchScript archive to path, or returns its bytes when path is
        None. extra_files: {name: str} stored as _extra_files."""
        ev, owned = _dict_value_of_str(extra_files)
        try:
            if path is None:
                p, n = c_void_p(), c_size_t()
                check(C.module_save_buffer(byref(p), byref(n), self._ptr(), ev))
                return _take_buffer(p.value, n.value)
            check(C.module_save(self._ptr(), os.fsencode(path), ev))
        finally:
            if owned:
                _value_free(ev)

    # ---- building -------------------------------------------------------------------
    @classmethod
    def new(cls, class_name="Module"):
        """An empty module to fill with register_* and define()."""
        out = c_void_p()
        check(G.module_new(byref(out), class_name.encode()))
        return cls._wrap(out.value)

    def register_parameter(self, name, t, requires_grad=True):
        check(G.module_register_parameter(self._ptr(), name.encode(), t._handle,
                                          1 if requires_grad else 0))

    def register_buffer(self, name, t):
        check(G.module_register_buffer(self._ptr(), name.encode(), t._handle))

    def register_module(self, name, child):
        check(G.module_register_module(self._ptr(), name.encode(), child._ptr()))

    def define(self, source):
        """Compiles TorchScript methods from source."""
        check(C.module_define(self._ptr(), source.encode()))
        self._methods_cache = None

    def __repr__(self):
        if not self._m:
            return "<ctorch.Module (freed)>"
        try:
            meths = sorted(self.methods())
        except _lib.Error:
            meths = []
        return "<ctorch.Module methods=%s>" % meths


class _Method:
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module = module
        self.name = name

    def __call__(self, *args, **kwargs):
        return self.module.call(self.name, *args, **kwargs)

    @property
    def schema(self):
        return self.module.methods()[self.name]

    @property
    def __doc__(self):
        return self.schema

    def __repr__(self):
        return "<ctorch method %s>" % self.schema


def load(f, device=None, map_location=None):
    """Loads a TorchScript archive (torch.jit.save) from a path, bytes or a
    binary file object. device (alias map_location): where to put the
    parameters; None keeps the saved devices."""
    if device is None:
        device = map_location
    if device is None:
        dc, di = 0, -1
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


def load_pickle(f):
    """Loads what Python's torch.save wrote (a tensor, a state_dict, lists,
    tuples, dicts of tensors and scalars) from a path, bytes or file object."""
    out = c_void_p()
    data = _read_bytes(f)
    if data is not None:
        check(C.pickle_load_buffer(byref(out), data, len(data)))
    else:
        check(C.pickle_load(byref(out), os.fsencode(f)))
    return from_value(out.value)


def save_pickle(obj, f=None):
    """Saves obj in torch.save's format, to a path, or returns the bytes when
    f is None; torch.load reads it."""
    p, owned = to_value(obj)
    try:
        if f is None:
            buf, n = c_void_p(), c_size_t()
            check(C.pickle_save_buffer(byref(buf), byref(n), p))
            return _take_buffer(buf.value, n.value)
        if hasattr(f, "write"):
            buf, n = c_void_p(), c_size_t()
            check(C.pickle_save_buffer(byref(buf), byref(n), p))
            f.write(_take_buffer(buf.value, n.value))
            return None
        check(C.pickle_save(p, os.fsencode(f)))
    finally:
        if owned:
            _value_free(p)


class Script:
    """TorchScript functions compiled from source: ``s = compile_script(src)``,
    then ``s.fname(args)`` or ``s.call("fname", ...)``."""

    __slots__ = ("_s", "__weakref__")

    def __init__(self, source):
        out = c_void_p()
        check(C.script_compile(byref(out), source.encode()))
        self._s = out.value

    def functions(self):
        out = c_void_p()
        check(G.script_functions(byref(out), self._s))
        return from_value(out.value)

    def call(self, name, *args, **kwargs):
        arr, n, names, vals, nk, owned = _call_args(args, kwargs)
        try:
            out = c_void_p()
            st = C.script_call(byref(out), self._s, name.encode(), arr, n, names, vals, nk)
            if st:
                raise error_from_status(st)
            return from_value(out.value)
        finally:
            for p in owned:
                _value_free(p)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self.functions():
            raise AttributeError("script has no function %r" % name)
        return lambda *a, **k: self.call(name, *a, **k)

    def free(self):
        s, self._s = self._s, None
        if s:
            G.script_free(s)

    def __del__(self):
        s = getattr(self, "_s", None)
        if s:
            self._s = None
            G.script_free(s)


def compile_script(source):
    return Script(source)
