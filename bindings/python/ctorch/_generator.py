"""Random generators, as torch.Generator: ``ctorch.Generator("cpu")`` is a
generator of its own, ``ctorch.default_generator("cpu")`` the device's
default (what ops use without ``generator=``). Pass one to an op's
``generator`` argument. Copies and pickles are new generators with the same
state (as torch's)."""

import ctypes
from ctypes import byref, c_int32, c_int64, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, Optional, Tuple

from . import _handle, _release
from ._handle import new_tensor
from ._interop import from_dlpack
from ._lib import CT_DEVICE_CPU, CT_UINT8, G, check
from ._types import device as _device

if TYPE_CHECKING:
    from .tensor import Tensor


class Generator(_release.Handle):
    __slots__ = ("_p", "__weakref__")
    _free_c = G.generator_free
    _handle_kind = "generator"

    def __init__(self, device: Any = "cpu") -> None:
        self._p = None
        d = _device(device)
        out = c_void_p()
        check(G.generator_new(byref(out), d.code, d.c_index))
        self._p = out.value

    @classmethod
    def _default(cls, device: Any) -> "Generator":
        g = object.__new__(cls)
        g._p = None
        d = _device(device)
        out = c_void_p()
        check(G.generator_default(byref(out), d.code, d.c_index))
        g._p = out.value
        return g

    def manual_seed(self, seed: int) -> "Generator":
        """Seeds it (negative seeds wrap to uint64, as in torch); returns self."""
        check(G.generator_manual_seed(self._ptr(), int(seed) & 0xFFFFFFFFFFFFFFFF))
        return self

    def seed(self) -> int:
        """Seeds it from a non-deterministic source; returns that seed."""
        out = c_uint64()
        check(G.generator_seed(byref(out), self._ptr()))
        return int(out.value)

    def initial_seed(self) -> int:
        out = c_uint64()
        check(G.generator_initial_seed(byref(out), self._ptr()))
        return int(out.value)

    def get_state(self) -> "Tensor":
        """Its state as a uint8 tensor: the bytes torch.Generator.get_state() gives."""
        out = c_void_p()
        check(G.generator_state(byref(out), self._ptr()))
        return new_tensor(out.value)

    def set_state(self, state: Any) -> "Generator":
        """Restores a state from get_state() here or in PyTorch: a uint8
        tensor (ctorch's, or torch's / numpy's through DLPack) or its bytes."""
        if isinstance(state, (bytes, bytearray)):
            state = _bytes_tensor(bytes(state))
        elif not isinstance(state, _handle.Tensor):
            state = from_dlpack(state)
        check(G.generator_set_state(self._ptr(), state._ptr()))
        return self

    @property
    def device(self) -> _device:
        t, i = c_int32(), c_int32()
        check(G.generator_device(byref(t), byref(i), self._ptr()))
        return _device(_device._NAMES.get(t.value, "cpu"), i.value if i.value >= 0 else None)

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_rebuild, (str(self.device), bytes(self.get_state().tolist())))

    def _clone(self) -> "Generator":
        """copy.copy and copy.deepcopy: a new generator in the same state."""
        return _rebuild(str(self.device), bytes(self.get_state().tolist()))

    def __repr__(self) -> str:
        return "<ctorch.Generator on %s, initial seed %d>" % (self.device, self.initial_seed())


def _bytes_tensor(b: bytes) -> "Tensor":
    """A 1-D uint8 CPU tensor holding a copy of b."""
    out = c_void_p()
    n = c_int64(len(b))
    check(G.tensor_empty(byref(out), byref(n), 1, CT_UINT8, CT_DEVICE_CPU, -1, 0))
    t = new_tensor(out.value)
    if b:
        ctypes.memmove(G.tensor_data_ptr(out.value), b, len(b))
    return t


def _rebuild(device: str, state: bytes) -> Generator:
    return Generator(device).set_state(state)


def default_generator(device: Any = "cpu") -> Generator:
    """The device's default generator (torch.default_generator for the CPU,
    torch.cuda.default_generators[i] for CUDA): seeding it seeds every op
    that is given no generator."""
    return Generator._default(device)


__all__ = ["Generator", "default_generator"]
