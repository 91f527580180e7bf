#!/usr/bin/python3
"""Where the time of ctorch's Python hot paths goes, piece by piece, next to
PyTorch's own figure in the same process: x + y, t.numpy(), from_numpy(a).

Each piece is the same work the binding does, timed alone (best of 7 runs of
20,000 calls). The pieces add up to the whole within the noise; what is left
over is the interpreter's own cost of the method call and local lookups.

  CTORCH_LIBRARY=build-bench/libctorch.so /usr/bin/python3 bench/profile_python.py [--json F]

bench/run.sh runs it and bench/report.py prints the table; bench/causes.toml
cites it for the Python rows that miss their targets.
"""
import ctypes
import importlib
import json
import os
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings",
                                "python"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import ctorch  # noqa: E402
from ctorch import _lib  # noqa: E402
from ctorch._handle import new_tensor  # noqa: E402

T = importlib.import_module("ctorch.tensor")
I = importlib.import_module("ctorch._interop")
torch.set_num_threads(1)
ctorch.set_num_threads(1)


def best(f, n=20000, r=7):
    return min(timeit.repeat(f, number=n, repeat=r)) / n * 1e9


def add_pieces():
    x, y = ctorch.ones(4), ctorch.ones(4)
    tx, ty = torch.ones(4), torch.ones(4)
    x + y
    op = T._op("add", "Tensor").fast(2)[0]
    ins, outs, _v, a_ins, a_outs, _av = _lib.tls.fast
    ins[0], ins[1] = x._h, y._h
    one, two = _lib.SIZES[1], _lib.SIZES[2]
    C, G = _lib.C.op_call_tensors, _lib.G.op_call_tensors
    free = _lib.G.tensor_free
    noop = _lib.G.last_error_code

    def call_gil_released():
        C(a_outs, one, op, a_ins, two)
        free(outs[0])

    def call_gil_held():
        G(a_outs, one, op, a_ins, two)
        free(outs[0])

    def wrapper():
        new_tensor(0)

    def method_only():  # the operator method, its wrapper and __del__, no C call
        outs[0] = 0  # the no-op call leaves it 0: the wrapper owns nothing
        T.Tensor.__add__(x, y, _call=noop_call)

    def noop_call(*a):
        return 0

    floor = _cxx_floor()
    whole = best(lambda: x + y)
    rows = [("x + y (whole)", whole),
            ("  torch::add from C++, same process (bench_julia_floor's loop)", floor or 0.0),
            ("  ct_op_call_tensors + ct_tensor_free through ctypes, GIL released",
             best(call_gil_released)),
            ("    same with the GIL held (no release/reacquire)", best(call_gil_held)),
            ("    one ctypes call with no arguments (ct_last_error_code)", best(noop)),
            ("  the Tensor wrapper (_handle.new_tensor)", best(wrapper)),
            ("  the operator method + wrapper + __del__, C call replaced by a no-op function",
             best(method_only)),
            ("    of which the no-op function's call and the outs[0] reset",
             best(lambda: (outs.__setitem__(0, 0), noop_call(1, 2, 3, 4, 5)))),
            ("  a Python call of an empty lambda (the harness)", best(lambda: None))]
    return rows, whole, best(lambda: tx + ty)


def _cxx_floor():
    """torch::add on 4 floats timed by a C++ loop in this process
    (build-bench/bench/libbench_julia_floor.so), or None without it."""
    lib = os.path.join(os.path.dirname(os.path.abspath(_lib.LIBRARY_PATH)), "bench",
                       "libbench_julia_floor.so")
    if not os.path.exists(lib):
        return None
    f = ctypes.CDLL(lib).ctb_add_ns
    f.restype, f.argtypes = ctypes.c_double, [ctypes.c_int64]
    return min(f(20000) for _ in range(7))


def numpy_pieces():
    x = ctorch.ones(256)
    tx = torch.ones(256)
    m = x._meta()
    B = ctypes.c_char * 1024
    nd = np.dtype("<f4")
    h = x._ptr()
    ref, out = I._tensor_ref, _lib.tls.out
    free = _lib.G.tensor_free

    def handle():
        ref(_lib.tls.out_ref, h)
        free(out.value)

    info_ref = I._info_ref()

    def handle_info():
        I._ref_info(_lib.tls.out_ref, info_ref, h)
        free(out.value)

    def owner():
        o = I._new_memory(I._ArrayMemory)
        o._h = 0

    def buffer():
        b = B.from_address(m.data)
        b._t = None

    b = B.from_address(m.data)
    whole = best(lambda: x.numpy())
    rows = [("t.numpy() (whole)", whole),
            ("  cached metadata read (_meta)", best(lambda: x._meta())),
            ("  a new tensor handle for the array's base (ct_tensor_ref + its free)", best(handle)),
            ("    the same with the metadata (ct_tensor_ref_info + free; uncached _m)",
             best(handle_info)),
            ("  the handle's owner object (_ArrayMemory + its __del__)", best(owner)),
            ("  ctypes buffer over the bytes (from_address + attribute)", best(buffer)),
            ("  numpy.ndarray on the buffer", best(lambda: np.ndarray((256,), nd, b, 0, None)))]
    return rows, whole, best(lambda: tx.numpy())


def from_numpy_pieces():
    a = np.ones(256, dtype=np.float32)
    cap_name = b"dltensor"
    get = I._PyCapsule_GetPointer
    free = _lib.G.tensor_free

    def export():
        c = a.__dlpack__()
        get(c, cap_name)

    def dl_import():
        c = a.__dlpack__()
        p = get(c, cap_name)
        I._PyCapsule_SetName(c, I._USED_ADDR)
        I._from_dlpack(_lib.tls.out_ref, p)
        free(_lib.tls.out.value)

    whole = best(lambda: ctorch.from_numpy(a))
    rows = [("from_numpy(a) (whole)", whole),
            ("  numpy's __dlpack__ + PyCapsule_GetPointer", best(export)),
            ("  ... + SetName + ct_tensor_from_dlpack + ct_tensor_free", best(dl_import)),
            ("  the Tensor wrapper", best(lambda: new_tensor(0)))]
    return rows, whole, best(lambda: torch.from_numpy(a))


def main():
    report = []
    for name, fn in (("x + y", add_pieces), ("t.numpy()", numpy_pieces),
                     ("from_numpy", from_numpy_pieces)):
        rows, whole, torch_ns = fn()
        print("%s: ctorch %.0f ns, PyTorch %.0f ns, ratio %.2f" % (name, whole, torch_ns,
                                                                    whole / torch_ns))
        for label, ns in rows:
            print("  %8.0f ns  %s" % (ns, label))
        report.append({"case": name, "ctorch_ns": whole, "torch_ns": torch_ns,
                       "pieces": [{"what": label.strip(), "ns": ns} for label, ns in rows]})
    if len(sys.argv) == 3 and sys.argv[1] == "--json":
        with open(sys.argv[2], "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
