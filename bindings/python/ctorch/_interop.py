"""Zero-copy exchange: numpy (``__array_interface__`` and ``ct_tensor_from_blob``)
and DLPack capsules (the ctypes structures of ``_lib``), plus ``tolist``.

Tensors are made by ``_handle.new_tensor``."""

import ctypes
import itertools
import warnings
from ctypes import POINTER, byref, c_char_p, c_int64, c_void_p, py_object
from typing import Any, Dict, Optional, Set

from . import _lib, _handle
from ._handle import new_tensor
from ._capi import Blob, DELETER, DLManagedTensor, DLManagedTensorVersioned
from ._lib import (C, G, CT_BLOB_BYTE_STRIDES, CT_DEVICE_CPU, CT_DEVICE_CUDA, DL_CPU, DL_CUDA,
                   DL_ROCM, DL_STREAM_LEGACY, NO_INDEX, check, error_from_status, tls)
from ._types import BY_TYPESTR, CPU, device, get_device
from ._meta import from_info as _meta_from_info, new_info as _new_info

_byref = byref


def leak(obj: Any) -> Any:
    """Makes obj immortal (C callbacks and capsule names that C may still use
    during interpreter shutdown)."""
    ctypes.pythonapi.Py_IncRef(py_object(obj))
    return obj


def _wrap(fn: Any, *args: Any) -> Any:
    out = c_void_p()
    check(fn(byref(out), *args))
    return new_tensor(out.value or 0)


# ---- numpy zero-copy --------------------------------------------------------------------

_blob_refs: Dict[int, Any] = {}
_blob_ids = itertools.count(1)
#: Counters for tests and debugging: blobs created / deleter calls.
blob_stats = {"created": 0, "released": 0}


def _blob_deleter(data: Any, ctx: Any, _refs: Dict[int, Any] = _blob_refs,
                  _stats: Dict[str, int] = blob_stats) -> None:
    # Runs on whichever thread frees the last tensor using the memory; the
    # ctypes thunk takes the GIL. Never raises, and survives a half-torn-down
    # interpreter (every name bound as a default).
    try:
        _refs.pop(ctx, None)
        _stats["released"] += 1
    except BaseException:
        pass


_BLOB_DELETER = leak(DELETER(_blob_deleter))
_BLOB_DELETER_ADDR = ctypes.cast(_BLOB_DELETER, c_void_p).value
_BLOB_SIZE = ctypes.sizeof(Blob)
_wrap_blob = G.tensor_wrap  # cheap: the GIL stays held


def from_numpy(a: Any) -> Any:
    """A tensor sharing a numpy array's memory (no copy). The array is kept
    alive until torch lets go of the memory (the last tensor or view using it
    is freed). Byte-swapped, negatively strided or misaligned arrays are
    refused, as in torch.

    Two routes, same result: numpy's own DLPack export (its deleter is C, so
    freeing the tensor calls no Python; one ctorch call, ct_tensor_from_dlpack,
    and no argument arrays), and, for what numpy does not export or ctorch
    does not import (read-only arrays, other byte orders, bool on older numpy,
    negative strides, ...), ``ct_tensor_wrap`` with a Python deleter,
    which also gives the errors and warnings."""
    if type(a) is (_NDARRAY or _ndarray()):
        # the DLPack route inline (this is the hot path: no helper calls)
        try:
            cap = a.__dlpack__()
            p = _PyCapsule_GetPointer(cap, b"dltensor")  # ValueError if not a legacy capsule
        except Exception:
            p = None
        if p:
            # ownership passes to ctorch, which runs numpy's deleter even on failure
            _PyCapsule_SetName(cap, _USED_ADDR)
            out = tls.out
            if not _from_dlpack(tls.out_ref, p):
                return new_tensor(out.value)
            _clear_error()
    return _from_numpy_blob(a)


def _from_numpy_dlpack(a: Any) -> Any:
    """A tensor on a numpy array through numpy's legacy DLPack export, or None
    when numpy or ctorch refuses it (nothing is left over then)."""
    try:
        cap = a.__dlpack__()
        p = _PyCapsule_GetPointer(cap, b"dltensor")  # ValueError if not a legacy capsule
    except Exception:
        return None
    if not p:
        return None
    _PyCapsule_SetName(cap, _USED_ADDR)
    if _from_dlpack(tls.out_ref, p):
        _clear_error()
        return None
    return new_tensor(tls.out.value)


def _ndarray() -> Any:
    global _NDARRAY
    if _NDARRAY is None:
        import numpy
        _NDARRAY = numpy.ndarray
    return _NDARRAY


_NDARRAY: Any = None


def _from_numpy_blob(a: Any) -> Any:
    ai = a.__array_interface__
    typestr = ai["typestr"]
    d = BY_TYPESTR.get(typestr)
    if d is None:
        if typestr[0] == ">":
            raise _lib.CTorchTypeError("byte-swapped (big-endian) arrays are not supported; "
                                       "use a.astype(a.dtype.newbyteorder('='))")
        raise _lib.CTorchTypeError(
            "can't convert a numpy array of dtype %s; supported: bool, uint8, int8, int16, "
            "int32, int64, float16, float32, float64, complex64, complex128" % (a.dtype,))
    shape = ai["shape"]
    nd = len(shape)
    ptr, readonly = ai["data"]
    bstrides = ai["strides"]  # None for C-contiguous arrays; bytes, checked by ctorch
    if bstrides is not None and min(bstrides, default=0) < 0:
        raise _lib.InvalidArgumentError(
            "numpy arrays with negative strides are not supported; use a.copy()")
    if readonly:
        warnings.warn("the numpy array is not writable; the tensor shares its memory and "
                      "writing to it is undefined behaviour", UserWarning, stacklevel=2)
    key = next(_blob_ids)
    _blob_refs[key] = a
    b = _blob()
    b.data = ptr or None
    b.sizes = (c_int64 * nd)(*shape) if nd else None
    b.strides = (c_int64 * nd)(*bstrides) if bstrides is not None else None
    b.ndim = nd
    b.dtype = d.code
    b.ctx = key
    out = tls.out
    st = _wrap_blob(tls.out_ref, None, byref(b))
    if st:
        _blob_refs.pop(key, None)  # the deleter is not called on failure
        raise error_from_status(st)
    blob_stats["created"] += 1
    return new_tensor(out.value or 0)


def _blob() -> Any:
    """A ct_blob for host memory with the Python deleter (the fields the call varies unset)."""
    b = Blob()
    b.size = _BLOB_SIZE
    b.device_type = CT_DEVICE_CPU
    b.device_index = NO_INDEX
    b.flags = CT_BLOB_BYTE_STRIDES
    b.deleter = _BLOB_DELETER_ADDR
    return b


_NP_DTYPES: Dict[Any, Any] = {}   # ctorch dtype -> numpy.dtype
_tensor_ref = G.tensor_ref
_ref_info = G.tensor_ref_info
_tensor_free = G.tensor_free
_c_char = ctypes.c_char


class _ArrayMemory:
    """What keeps a numpy array from ``Tensor.numpy()`` valid: one handle to
    the tensor, freed when the array (its ctypes buffer) dies. Lighter than a
    ``Tensor`` (nothing else is ever done with it)."""

    __slots__ = ("_h",)
    _h: int

    def __del__(self, _free: Any = _tensor_free) -> None:
        _free(self._h)


_new_memory = object.__new__


def to_numpy(t: Any, bfloat16: str, generation: Any) -> Any:
    """A numpy array on the tensor's memory. The array's base is a ctypes
    char array over exactly the bytes the view reaches, which holds a new
    handle to the tensor (so the memory lives while the array does). The
    handle comes with the metadata in one C call (ct_tensor_ref_info) when
    the Tensor has none cached or it is stale (`generation`: tensor.py's
    counter of in-place changes; the new metadata is cached on t), else with
    ct_tensor_ref."""
    m = t._m
    if m is not None and t._g != generation[0]:
        m = None
    if m is None:
        st = _ref_info(tls.out_ref, _info_ref(), t._h or t._ptr())
    else:
        st = _tensor_ref(tls.out_ref, t._h or t._ptr())
    if st:
        raise error_from_status(st)
    owner = _new_memory(_ArrayMemory)
    owner._h = tls.out.value or 0
    if m is None:
        m = t._m = _meta_from_info(tls.info[0])
        t._g = generation[0]
    if m.device_type != CT_DEVICE_CPU:
        raise _lib.CTorchTypeError("can't convert %s tensor to numpy; use .cpu() first"
                                   % t.device)
    if m.requires_grad:
        raise _lib.InvalidArgumentError(
            "can't call numpy() on a tensor that requires grad; use .detach().numpy()")
    d = m.dtype
    ndt = _NP_DTYPES.get(d)
    if ndt is None:
        typestr = own = d.typestr if d is not None else None
        if typestr is None:
            if bfloat16 == "uint16":
                typestr = "<u2"
            elif bfloat16 == "float32":
                return t.float().numpy()
            else:
                raise _lib.CTorchTypeError(
                    "numpy has no bfloat16 dtype: use t.numpy(bfloat16='uint16') for a "
                    "zero-copy view of the raw bits, t.numpy(bfloat16='float32') for a "
                    "converted copy, or t.float().numpy()")
        ndt = _numpy().dtype(typestr)
        if own is not None:  # not the bfloat16="uint16" view: that depends on the option
            _NP_DTYPES[d] = ndt
    if m.numel == 0:
        return _numpy().empty(m.shape, dtype=ndt)
    item = ndt.itemsize
    if m.is_contiguous:
        extent, strides = m.numel, None  # numpy's own C-order strides are the same
    else:
        extent = 1  # elements from the first to the last one the view reaches
        for n, st in zip(m.shape, m.strides):
            extent += (n - 1) * st
        strides = tuple([st * item for st in m.strides])
    buf: Any = (_c_char * (extent * item)).from_address(m.data)
    buf._t = owner  # keeps the memory alive: the array's base is buf
    return (_NDARRAY or _ndarray())(m.shape, ndt, buf, 0, strides)


def _info_ref() -> Any:
    try:
        return tls.info[1]
    except AttributeError:
        return _new_info()[1]


def _numpy() -> Any:
    import numpy
    return numpy


# ---- DLPack through PyCapsules --------------------------------------------------------

_pyapi = ctypes.pythonapi
_PyCapsule_New = _pyapi.PyCapsule_New
_PyCapsule_New.restype = py_object
_PyCapsule_New.argtypes = (c_void_p, c_void_p, c_void_p)
_PyCapsule_IsValid = _pyapi.PyCapsule_IsValid
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = (py_object, c_char_p)
_PyCapsule_GetPointer = _pyapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = c_void_p
_PyCapsule_GetPointer.argtypes = (py_object, c_char_p)
_PyCapsule_SetName = _pyapi.PyCapsule_SetName
_PyCapsule_SetName.restype = ctypes.c_int
_PyCapsule_SetName.argtypes = (py_object, c_void_p)
_PyCapsule_GetName = _pyapi.PyCapsule_GetName
_PyCapsule_GetName.restype = c_void_p
_PyCapsule_GetName.argtypes = (py_object,)
# Raw-pointer variants for the destructor (it receives a PyObject* it must not
# incref while the object is being destroyed).
_RawIsValid = ctypes.PYFUNCTYPE(ctypes.c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _pyapi))
_RawGetPointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer",
                                                                   _pyapi))

# Capsule names must outlive every capsule: immortal buffers.
_NAME_LEGACY = leak(ctypes.create_string_buffer(b"dltensor"))
_NAME_VERSIONED = leak(ctypes.create_string_buffer(b"dltensor_versioned"))
_NAME_USED = leak(ctypes.create_string_buffer(b"used_dltensor"))
_USED_ADDR = ctypes.addressof(_NAME_USED)
_from_dlpack = G.tensor_from_dlpack
_clear_error = G.clear_error
_NAME_USED_VERSIONED = leak(ctypes.create_string_buffer(b"used_dltensor_versioned"))
#: Counters for tests: capsules made / managed tensors deleted by a capsule
#: destructor because nobody consumed them.
dlpack_stats = {"exported": 0, "unconsumed_deleted": 0}


def _delete_managed(p: int, versioned: bool) -> None:
    """Runs the deleter of a DLManagedTensor[Versioned] at address p."""
    struct = DLManagedTensorVersioned if versioned else DLManagedTensor
    ptr = ctypes.cast(p, POINTER(struct))
    if ptr.contents.deleter:
        ptr.contents.deleter(ptr)


def _capsule_destructor(cap: int, _isvalid: Any = _RawIsValid, _getptr: Any = _RawGetPointer,
                        _delete: Any = _delete_managed, _stats: Dict[str, int] = dlpack_stats
                        ) -> None:
    # Deletes the managed tensor only when no consumer took it (a consumer
    # renames the capsule to used_dltensor[_versioned]).
    try:
        if _isvalid(cap, b"dltensor"):
            p, versioned = _getptr(cap, b"dltensor"), False
        elif _isvalid(cap, b"dltensor_versioned"):
            p, versioned = _getptr(cap, b"dltensor_versioned"), True
        else:
            return
        if p:
            _delete(p, versioned)
            _stats["unconsumed_deleted"] += 1
    except BaseException:
        pass


_CAPSULE_DESTRUCTOR = leak(ctypes.CFUNCTYPE(None, c_void_p)(_capsule_destructor))
_CAPSULE_DESTRUCTOR_ADDR = ctypes.cast(_CAPSULE_DESTRUCTOR, c_void_p).value


def to_dlpack(t: Any, stream: Any, max_version: Any, dl_device: Any, copy: Any) -> Any:
    m = t._meta()
    devtype = m.device_type
    if dl_device is not None:
        want = (int(dl_device[0]), int(dl_device[1]))
        if want != t.__dlpack_device__():
            if copy is False:
                raise BufferError("__dlpack__: the tensor is on %s but dl_device=%r was asked "
                                  "with copy=False" % (t.device, dl_device))
            if want[0] == DL_CPU:
                t = t.to(device=CPU, copy=True)
            elif want[0] == DL_CUDA:
                t = t.to(device=device("cuda", want[1]), copy=True)
            else:
                raise BufferError("__dlpack__: unsupported dl_device %r" % (dl_device,))
            devtype = want[0]
            copy = False  # already a copy
    if devtype == CT_DEVICE_CUDA:
        if stream is None:
            s = DL_STREAM_LEGACY  # the array API: None means the legacy default stream
        elif stream == 0:
            raise ValueError("__dlpack__: stream 0 is ambiguous and not allowed")
        else:
            s = _lib.int_arg(int(stream), "int64", "__dlpack__: stream")
    else:
        if stream not in (None, -1):
            raise ValueError("__dlpack__: stream must be None for a CPU tensor")
        s = -1
    out = c_void_p()
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    fn = C.tensor_to_dlpack_versioned if versioned else C.tensor_to_dlpack
    check(fn(byref(out), t._ptr(), 1 if copy else 0, s))
    name = _NAME_VERSIONED if versioned else _NAME_LEGACY
    try:
        cap = _PyCapsule_New(out.value, ctypes.addressof(name), _CAPSULE_DESTRUCTOR_ADDR)
    except BaseException:
        _delete_managed(out.value or 0, versioned)
        raise
    dlpack_stats["exported"] += 1
    return cap


def _is_capsule(x: Any) -> bool:
    return type(x).__name__ == "PyCapsule"


def from_dlpack(x: Any, *, device: Any = None, copy: Optional[bool] = None) -> Any:
    """A tensor sharing the memory of any DLPack producer (numpy, torch, cupy,
    a ctorch.Tensor, or a bare DLPack capsule), with no copy. Asks for a
    versioned capsule (max_version=(1, 0)) and falls back to the legacy
    protocol when the producer does not know max_version. The capsule is
    consumed (renamed used_dltensor[_versioned]) and ownership passes to
    ctorch, which calls the producer's deleter once, when the last tensor
    using the memory is freed."""
    if type(x) is (_NDARRAY or _ndarray()) and device is None and not copy:
        t = _from_numpy_dlpack(x)  # the hot path: numpy's legacy export, one ctorch call
        if t is not None:
            return t
        t = _from_capsule(_get_capsule(x))
    elif isinstance(x, _handle.Tensor):
        t = x.ref()
    else:
        t = _from_capsule(x if _is_capsule(x) else _get_capsule(x))
    if device is not None and t.device != get_device(device):
        t = t.to(device=device, copy=copy is not False)
    elif copy:
        t = t.clone()
    return t


_LEGACY_PRODUCERS: Set[type] = set()


def _get_capsule(x: Any) -> Any:
    if not hasattr(x, "__dlpack__"):
        raise _lib.CTorchTypeError(
            "from_dlpack: %s has no __dlpack__ method and is not a DLPack capsule"
            % type(x).__name__)
    kw = {}
    dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (DL_CPU, 0)
    if int(dev[0]) in (DL_CUDA, DL_ROCM):  # ask the producer to sync with our stream
        sp = c_void_p()
        if G.cuda_current_stream(byref(sp), _lib.int_arg(int(dev[1]), "int32",
                                                        "__dlpack_device__ index")) == _lib.CT_OK:
            kw["stream"] = sp.value or DL_STREAM_LEGACY
        else:
            G.clear_error()
            kw["stream"] = DL_STREAM_LEGACY
    tx = type(x)
    if tx not in _LEGACY_PRODUCERS:
        try:
            return x.__dlpack__(max_version=(1, 0), **kw)
        except TypeError:
            # remembered per type: older producers (numpy < 2.1, torch < 2.4)
            # do not know max_version
            _LEGACY_PRODUCERS.add(tx)
    return x.__dlpack__(**kw)


def _from_capsule(cap: Any) -> Any:
    if _PyCapsule_IsValid(cap, b"dltensor_versioned"):
        p = _PyCapsule_GetPointer(cap, b"dltensor_versioned")
        used, fn = _NAME_USED_VERSIONED, C.tensor_from_dlpack_versioned
    elif _PyCapsule_IsValid(cap, b"dltensor"):
        p = _PyCapsule_GetPointer(cap, b"dltensor")
        used, fn = _NAME_USED, C.tensor_from_dlpack
    else:
        np_ = _PyCapsule_GetName(cap) if _is_capsule(cap) else None
        name = ctypes.string_at(np_).decode() if np_ else None
        if name and name.startswith("used_"):
            raise BufferError("from_dlpack: this DLPack capsule was already consumed")
        raise _lib.CTorchTypeError("from_dlpack: not a DLPack capsule (name %r)" % (name,))
    # Ownership passes to ctorch now, whatever happens next.
    if _PyCapsule_SetName(cap, ctypes.addressof(used)) != 0:
        raise _lib.InternalError("PyCapsule_SetName failed")
    return _wrap(fn, p)


# ---- tolist (stdlib only) ---------------------------------------------------------------

_FMT = {_lib.CT_BOOL: "?", _lib.CT_UINT8: "B", _lib.CT_INT8: "b", _lib.CT_INT16: "h",
        _lib.CT_INT32: "i", _lib.CT_INT64: "q", _lib.CT_FLOAT32: "f", _lib.CT_FLOAT64: "d"}


def tolist(t: Any) -> Any:
    d = t.dtype
    if d.code in (_lib.CT_FLOAT16, _lib.CT_BFLOAT16):  # no struct format: via float32
        return tolist(t.float())
    if d.is_complex:  # aten::real / aten::imag, as methods
        re, im = tolist(t.real()), tolist(t.imag())

        def zipc(a: Any, b: Any) -> Any:
            if isinstance(a, list):
                return [zipc(x, y) for x, y in zip(a, b)]
            return complex(a, b)
        return zipc(re, im)
    c = t.to(device=CPU).contiguous()
    shape = c.shape
    if c.numel() == 0:
        def empty(s: Any) -> Any:
            return [] if len(s) == 1 else [empty(s[1:]) for _ in range(s[0])]
        return empty(shape) if shape else []
    mv = memoryview(ctypes.string_at(c.data_ptr(), c.nbytes))
    if not shape:
        return mv.cast(_FMT[d.code])[0]
    return mv.cast(_FMT[d.code], shape).tolist()

