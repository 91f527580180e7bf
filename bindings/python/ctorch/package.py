"""AOTInductor packages (.pt2): models exported with torch.export and compiled
ahead of time with torch._inductor.aoti_compile_and_package, run through
libctorch's ct_package_* functions (LibTorch >= 2.6; older LibTorch raises
NotSupportedError naming the version needed).

    >>> pkg = ctorch.load_package("model.pt2")
    >>> y = pkg(ctorch.randn(3, 8))          # one output: a Tensor
    >>> pkg.constant_names                    # ['fc1.bias', 'fc1.weight', ...]
    >>> pkg.update_constants({"fc1.bias": ctorch.zeros(16)})
"""
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union
from ctypes import byref, c_char_p, c_int32, c_size_t, c_void_p

from ._factories import as_tensor
from ._values import from_value
from .tensor import Tensor
from ._handle import new_tensor as _wrap_h
from . import _release
from ._lib import C, InvalidArgumentError, check
from ._types import device

__all__ = ["Package", "load_package"]

_MAX_OUTPUTS = 64


def _handles(tensors: Sequence[Any]) -> Tuple[List[Tensor], Any]:
    """Keeps the Tensor objects alive while their handles are in use."""
    ts = [t if isinstance(t, Tensor) else as_tensor(t) for t in tensors]
    arr = (c_void_p * len(ts))(*[t._ptr() for t in ts])
    return ts, arr


class Package(_release.Handle):
    """A loaded AOTInductor package. Calling it runs the model: tensors (ctorch
    Tensors, or anything ctorch.as_tensor takes) in the exported order; returns
    one Tensor for a single output, else a tuple of Tensors."""

    __slots__ = ("_p", "__weakref__")
    _free_c = C.package_free
    _handle_kind = "ctorch.Package"
    # A loaded package is compiled code LibTorch unpacked and dlopened; the C
    # API can neither duplicate nor serialize it, and sharing the handle
    # would free it twice: copies and pickles are refused.
    _no_copy = ("the C API cannot duplicate a loaded package; load the .pt2 file (or its "
                "bytes) again with ctorch.load_package")

    def __init__(self, path: Any, model_name: Optional[str] = None, *, num_runners: int = 1,
                 device_index: int = -1) -> None:
        out = c_void_p()
        name = model_name.encode() if model_name is not None else None
        if isinstance(path, (bytes, bytearray, memoryview)) and not isinstance(path, bytes):
            path = bytes(path)
        if num_runners != 1 or device_index != -1:
            # num_runners threads run it at once; device_index: a CUDA package's device.
            if isinstance(path, bytes) and path[:2] == b"PK" or hasattr(path, "read"):
                raise InvalidArgumentError("num_runners and device_index need a path (the C API "
                                           "loads them only from a file)")
            check(C.package_load_ext(byref(out), os.fsencode(path), name, int(num_runners),
                                      int(device_index)))
        elif isinstance(path, bytes) and path[:2] == b"PK":
            check(C.package_load_buffer(byref(out), path, len(path), name))
        elif hasattr(path, "read"):
            data = path.read()
            check(C.package_load_buffer(byref(out), data, len(data), name))
        else:
            check(C.package_load(byref(out), os.fsencode(path), name))
        self._p = out.value

    def __call__(self, *inputs: Any) -> Union[Tensor, Tuple[Tensor, ...]]:
        return self._run(C.package_run, inputs)

    def _run(self, run: Any, inputs: Tuple[Any, ...], *stream: int
             ) -> Union[Tensor, Tuple[Tensor, ...]]:
        """ct_package_run or ct_package_run_on_stream (stream: its last argument)."""
        keep, arr = _handles(inputs)
        outs = (c_void_p * _MAX_OUTPUTS)()
        n = c_size_t()
        check(run(outs, _MAX_OUTPUTS, byref(n), self._ptr(), arr, len(keep), *stream))
        res = tuple(_wrap_h(outs[i]) for i in range(n.value))
        return res[0] if len(res) == 1 else res

    def run(self, *inputs: Any, stream: Any = None) -> Union[Tensor, Tuple[Tensor, ...]]:
        """As calling it; stream: a CUDA stream to queue the model's kernels
        on (a cudaStream_t as int, or an object with .cuda_stream such as
        torch.cuda.Stream; None: torch's current stream)."""
        if stream is None:
            return self(*inputs)
        return self._run(C.package_run_on_stream, inputs,
                         int(getattr(stream, "cuda_stream", stream)))

    @property
    def num_runners(self) -> int:
        """How many threads can run it at once (load_package(num_runners=...))."""
        out = c_size_t()
        check(C.package_num_runners(byref(out), self._ptr()))
        return int(out.value)

    @property
    def metadata(self) -> Any:
        """dict[str, str]: AOTI_DEVICE_KEY and what the exporter stored."""
        out = c_void_p()
        check(C.package_metadata(byref(out), self._ptr()))
        return from_value(out.value)

    @property
    def call_spec(self) -> Any:
        """[in_spec, out_spec]: torch.export's serialized pytree specs (JSON)."""
        out = c_void_p()
        check(C.package_call_spec(byref(out), self._ptr()))
        return from_value(out.value)

    @property
    def constant_names(self) -> Any:
        """Sorted dotted names of the constants (weights, buffers)."""
        out = c_void_p()
        check(C.package_constant_names(byref(out), self._ptr()))
        return from_value(out.value)

    def update_constants(self, constants: Dict[str, Any]) -> None:
        """Replaces constants ({name: tensor}, a subset is fine) without
        recompiling. The package keeps references to the tensors (no copy)."""
        names = list(constants)
        keep, arr = _handles([constants[k] for k in names])
        enc = [k.encode() for k in names]
        cnames = (c_char_p * len(enc))(*enc)
        check(C.package_update_constants(self._ptr(), cnames, arr, len(names)))

    @property
    def device(self) -> Any:
        """The ctorch.device the package runs on."""
        t, i = c_int32(), c_int32()
        check(C.package_device(byref(t), byref(i), self._ptr()))
        return device._from_codes(t.value, i.value)

    def __repr__(self) -> str:
        return "<ctorch.Package on %s>" % (self.device if self._p else "freed")


def load_package(path: Any, model_name: Optional[str] = None, *, num_runners: int = 1,
                 device_index: int = -1) -> Package:
    """Loads an AOTInductor package (.pt2) from a path, bytes or a binary file
    object; model_name picks a model inside it (default "model").
    num_runners: how many threads may run it at once (LibTorch >= 2.7's
    loader; a path only); device_index: the CUDA device for a CUDA package."""
    return Package(path, model_name, num_runners=num_runners, device_index=device_index)
