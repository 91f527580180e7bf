"""ctorch.cuda.Event and ctorch.cuda.CUDAGraph, as torch's (ct_cuda_event_*,
ct_cuda_graph_*). Without a CUDA device, creating one raises
NotSupportedError."""

from ctypes import byref, c_double, c_int32, c_void_p
from typing import Any, Optional

from . import _release
from ._lib import C, G, check, int_arg


def _stream_arg(stream: Any) -> Optional[int]:
    """A cudaStream_t from an int, an object with .cuda_stream (torch.cuda.Stream) or None."""
    if stream is None:
        return None
    return int(getattr(stream, "cuda_stream", stream)) or None


class Event(_release.Handle):
    """A CUDA event: record(stream=None), synchronize(), query(),
    elapsed_time(end) in milliseconds (both made with enable_timing=True)."""

    __slots__ = ("_p", "__weakref__")
    _free_c = G.cuda_event_free
    _handle_kind = "ctorch.cuda.Event"
    _no_copy = "a CUDA event lives in one process; make a new one"

    def __init__(self, enable_timing: bool = False) -> None:
        self._p: Optional[int] = None
        out = c_void_p()
        check(G.cuda_event_new(byref(out), 1 if enable_timing else 0))
        self._p = out.value

    def record(self, stream: Any = None) -> None:
        check(G.cuda_event_record(self._ptr(), _stream_arg(stream)))

    def synchronize(self) -> None:
        check(C.cuda_event_synchronize(self._ptr()))

    def query(self) -> bool:
        done = c_int32()
        check(G.cuda_event_query(byref(done), self._ptr()))
        return bool(done.value)

    def elapsed_time(self, end: "Event") -> float:
        ms = c_double()
        check(G.cuda_event_elapsed_ms(byref(ms), self._ptr(), end._ptr()))
        return float(ms.value)


class CUDAGraph(_release.Handle):
    """Captures CUDA work once and replays it::

        g = ctorch.cuda.CUDAGraph()
        with g.capture():
            y = x * 2 + 1        # captured, not run
        x.fill_(5); g.replay()   # y now holds 11s

    Tensors made while capturing keep their addresses; replay reads the
    captured inputs and writes the captured outputs in place."""

    __slots__ = ("_p", "__weakref__")
    _free_c = G.cuda_graph_free
    _handle_kind = "ctorch.cuda.CUDAGraph"
    _no_copy = "capture a new one"

    def __init__(self) -> None:
        self._p: Optional[int] = None
        out = c_void_p()
        check(G.cuda_graph_new(byref(out)))
        self._p = out.value

    def capture_begin(self, device: int = -1) -> None:
        check(G.cuda_graph_capture_begin(self._ptr(), int_arg(device, "int32", "capture_begin")))

    def capture_end(self) -> None:
        check(G.cuda_graph_capture_end(self._ptr()))

    def capture(self, device: int = -1) -> "_Capture":
        """A with-block that captures its CUDA work (as torch.cuda.graph)."""
        return _Capture(self, device)

    def replay(self) -> None:
        check(C.cuda_graph_replay(self._ptr()))

    def reset(self) -> None:
        check(G.cuda_graph_reset(self._ptr()))


class _Capture:
    def __init__(self, graph: CUDAGraph, device: int) -> None:
        self.graph, self.device = graph, device

    def __enter__(self) -> CUDAGraph:
        self.graph.capture_begin(self.device)
        return self.graph

    def __exit__(self, *exc: Any) -> None:
        self.graph.capture_end()
