"""Tensor metadata read in one C call (ct_tensor_metadata) into an immutable
record, which tensor.Tensor caches per handle."""

from ctypes import byref, sizeof
from typing import Any, Dict, NamedTuple, Optional, Tuple

from . import _lib
from ._capi import TensorInfo
from ._lib import G, check, tls
from ._types import BY_CODE, device, dtype

_INFO_SIZE = sizeof(TensorInfo)


class Meta(NamedTuple):
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    dtype: Optional[dtype]    # None: a dtype ctorch has no code for
    device_type: int
    device_index: int
    requires_grad: int
    is_contiguous: int
    numel: int
    storage_offset: int
    data: int
    device: device
    ndim: int


_DEVICES: Dict[Tuple[int, int], device] = {}


def device_of(code: int, index: int) -> device:
    d = _DEVICES.get((code, index))
    if d is None:
        d = _DEVICES[(code, index)] = device._from_codes(code, index)
    return d


_tnew = tuple.__new__


def read(h: int) -> Meta:
    """All metadata of a handle in one C call (ct_tensor_metadata)."""
    try:
        info, ref = tls.info
    except AttributeError:
        info, ref = new_info()
    st = G.tensor_metadata(ref, h)
    if st:
        check(st)
    return from_info(info)


def from_info(info: TensorInfo) -> Meta:
    """The record of a filled ct_tensor_info (by ct_tensor_metadata, or by the
    one-call exchanges ct_tensor_ref_info and ct_tensor_wrap)."""
    nd = info.ndim
    dt, di = info.device_type, info.device_index
    dev = _DEVICES.get((dt, di)) or device_of(dt, di)
    m: Meta = _tnew(Meta, (tuple(info.sizes[:nd]), tuple(info.strides[:nd]),
                           BY_CODE.get(info.dtype), dt, di, info.requires_grad,
                           info.is_contiguous, info.numel, info.storage_offset,
                           info.data or 0, dev, nd))
    return m


def new_info() -> Tuple[TensorInfo, Any]:
    """This thread's ct_tensor_info (size set) and a byref to it."""
    info = TensorInfo()
    info.size = _INFO_SIZE
    tls.info = (info, byref(info))
    return tls.info
