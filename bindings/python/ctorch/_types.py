"""dtype and device objects (stdlib only)."""

from typing import Any, Optional, Type, Union

from . import _lib
from ._lib import (CT_BOOL, CT_UINT8, CT_INT8, CT_INT16, CT_INT32, CT_INT64, CT_FLOAT16,
                   CT_BFLOAT16, CT_FLOAT32, CT_FLOAT64, CT_COMPLEX64, CT_COMPLEX128, CT_UINT16,
                   CT_UINT32, CT_UINT64, CT_DEVICE_CPU, CT_DEVICE_CUDA, CT_DEVICE_META,
                   CT_DEVICE_MPS, CT_DEVICE_XPU, CT_DEVICE_HIP, CT_DEVICE_PRIVATEUSE1, NO_INDEX)


class dtype:
    """A ctorch dtype: ``ctorch.float32`` and friends.

    ``code`` is the frozen C code (``CT_FLOAT32`` ...), ``itemsize`` the bytes
    per element and ``typestr`` the numpy array-interface type string, or
    None for bfloat16 (numpy has no bfloat16)."""

    __slots__ = ("name", "code", "itemsize", "typestr", "is_floating_point", "is_complex",
                 "is_signed", "is_quantized")

    def __init__(self, code: int, typestr: Optional[str], kind: str) -> None:
        # name and size from the library, as every binding reads them
        self.name: str = _lib.G.dtype_name(code).decode()
        self.code = code
        self.itemsize = int(_lib.G.dtype_element_size(code))
        self.typestr = typestr
        self.is_floating_point = kind == "f"
        self.is_complex = kind == "c"
        self.is_signed = kind in "fciq"
        self.is_quantized = kind == "q"

    def __repr__(self) -> str:
        return "ctorch." + self.name

    __str__ = __repr__

    def __reduce__(self) -> Any:
        return (get_dtype, (self.name,))

    @property
    def numpy_dtype(self) -> Any:
        """The matching numpy dtype (imports numpy). Raises TypeError for bfloat16."""
        if self.typestr is None:
            raise TypeError("numpy has no bfloat16 dtype")
        import numpy
        return numpy.dtype(self.typestr)


bool_ = dtype(CT_BOOL, "|b1", "b")
uint8 = dtype(CT_UINT8, "|u1", "u")
int8 = dtype(CT_INT8, "|i1", "i")
int16 = dtype(CT_INT16, "<i2", "i")
int32 = dtype(CT_INT32, "<i4", "i")
int64 = dtype(CT_INT64, "<i8", "i")
float16 = dtype(CT_FLOAT16, "<f2", "f")
bfloat16 = dtype(CT_BFLOAT16, None, "f")
float32 = dtype(CT_FLOAT32, "<f4", "f")
float64 = dtype(CT_FLOAT64, "<f8", "f")
complex64 = dtype(CT_COMPLEX64, "<c8", "c")
complex128 = dtype(CT_COMPLEX128, "<c16", "c")
# unsigned wider ints (LibTorch 2.3+; ctorch codes 13-15)
uint16 = dtype(CT_UINT16, "<u2", "u")
uint32 = dtype(CT_UINT32, "<u4", "u")
uint64 = dtype(CT_UINT64, "<u8", "u")
# 8-bit floats and quantized types (LibTorch 2.x; no numpy equivalent)
float8_e4m3fn = dtype(_lib.CT_FLOAT8_E4M3FN, None, "f")
float8_e5m2 = dtype(_lib.CT_FLOAT8_E5M2, None, "f")
float8_e4m3fnuz = dtype(_lib.CT_FLOAT8_E4M3FNUZ, None, "f")
float8_e5m2fnuz = dtype(_lib.CT_FLOAT8_E5M2FNUZ, None, "f")
qint8 = dtype(_lib.CT_QINT8, None, "q")
quint8 = dtype(_lib.CT_QUINT8, None, "q")
qint32 = dtype(_lib.CT_QINT32, None, "q")
quint4x2 = dtype(_lib.CT_QUINT4X2, None, "q")

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64,
       complex128, uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
       float8_e5m2fnuz, qint8, quint8, qint32, quint4x2)
BY_CODE = {d.code: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({
    "bool_": bool_, "half": float16, "float": float32, "double": float64, "long": int64,
    "int": int32, "short": int16, "byte": uint8, "char": int8, "cfloat": complex64,
    "cdouble": complex128, "f2": float16, "f4": float32, "f8": float64, "i1": int8,
    "i2": int16, "i4": int32, "i8": int64, "u1": uint8, "b1": bool_, "c8": complex64,
    "c16": complex128,
})
# numpy typestr (with byte order) -> dtype
BY_TYPESTR = {d.typestr: d for d in ALL if d.typestr}
BY_TYPESTR.update({"=" + d.typestr[1:]: d for d in ALL if d.typestr})
_BY_TYPESTR = BY_TYPESTR


def get_dtype(x: Any) -> Any:
    """Converts a ctorch dtype, a name ("float32", "float"), a numpy dtype or
    scalar type, a torch dtype, or a Python type (float, int, bool, complex)
    to a ctorch dtype."""
    if isinstance(x, dtype):
        return x
    if x is None:
        return None
    if x is float:
        return float64
    if x is int:
        return int64
    if x is bool:
        return bool_
    if x is complex:
        return complex128
    if isinstance(x, str):
        s = x
    else:
        # numpy dtype / scalar type: have .str or dtype(x).str; torch dtype: str()
        ts = getattr(x, "str", None)
        if isinstance(ts, str) and ts in _BY_TYPESTR:
            return _BY_TYPESTR[ts]
        s = getattr(x, "__name__", None) or str(x)
    if s.startswith("torch."):
        s = s[6:]
    if s.startswith("ctorch."):
        s = s[7:]
    if s.startswith("numpy."):
        s = s[6:]
    d = _BY_NAME.get(s) or _BY_TYPESTR.get(s)
    if d is None:
        raise _lib.CTorchTypeError("unknown dtype %r" % (x,))
    return d


class device:
    """A device: ``ctorch.device("cpu")``, ``ctorch.device("cuda", 0)``,
    ``ctorch.device("cuda:1")``. ``type`` is "cpu" or "cuda"; ``index`` is
    None for "the current device"."""

    __slots__ = ("type", "index", "code")
    type: str
    index: Optional[int]
    code: int

    _TYPES = {"cpu": CT_DEVICE_CPU, "cuda": CT_DEVICE_CUDA, "meta": CT_DEVICE_META,
              "mps": CT_DEVICE_MPS, "xpu": CT_DEVICE_XPU, "hip": CT_DEVICE_HIP,
              "privateuseone": CT_DEVICE_PRIVATEUSE1}
    _NAMES = {v: k for k, v in _TYPES.items()}

    def __init__(self, type: Any, index: Optional[int] = None) -> None:
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, str) and ":" in type:
            if index is not None:
                raise _lib.InvalidArgumentError(
                    "device %r already has an index; do not pass index=%r" % (type, index))
            type, _, idx = type.partition(":")
            try:
                index = int(idx)
            except ValueError:
                raise _lib.InvalidArgumentError(
                    "bad device string %r" % (type + ":" + idx,)) from None
        elif not isinstance(type, str):
            # torch.device or anything with .type/.index
            t = getattr(type, "type", None)
            if isinstance(t, str):
                type, index = t, getattr(type, "index", None) if index is None else index
            else:
                raise _lib.InvalidArgumentError("bad device %r" % (type,))
        if type not in self._TYPES:
            raise _lib.InvalidArgumentError(
                "unknown device type %r (expected one of %s)" % (type, ", ".join(self._TYPES)))
        if index is not None:
            # passed to C as int32: 2**32 + 1 must not become device 1
            index = _lib.int_arg(int(index), "int32", "device index")
            if index < 0:
                index = None
        if type == "cpu":
            index = None
        self.type = type
        self.index = index
        self.code = self._TYPES[type]

    @classmethod
    def _from_codes(cls, code: int, index: Optional[int]) -> "device":
        d = cls.__new__(cls)
        d.type = cls._NAMES.get(code, "unknown")
        d.code = code
        d.index = None if index is None or index < 0 or code == CT_DEVICE_CPU else index
        return d

    @property
    def c_index(self) -> int:
        return NO_INDEX if self.index is None else self.index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except _lib.Error:
                return False
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    def __repr__(self) -> str:
        if self.index is None:
            return "device(type=%r)" % self.type
        return "device(type=%r, index=%d)" % (self.type, self.index)


CPU = device("cpu")

#: What a factory's dtype= takes (for type checkers): a ctorch dtype, a name ("float16") or a
#: Python / numpy scalar type (float, numpy.float32). numpy and torch dtype objects work too at
#: run time (get_dtype), but are not in the annotation: numpy and torch are optional.
DTypeLike = Union[dtype, str, Type[object]]
#: What device= takes: a ctorch device, a string ("cuda:0") or a CUDA index.
DeviceLike = Union[device, str, int]


def get_device(x: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, device):
        return x
    if isinstance(x, int):
        return device("cuda", x)
    return device(x)
