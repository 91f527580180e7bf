#!/usr/bin/python3
"""Python binding benchmark: ctorch (ctypes) next to PyTorch's own Python, in
one process (both use the same LibTorch on Debian).

    CTORCH_LIBRARY=build/libctorch.so /usr/bin/python3 bench/bench_python.py \
        [--json out.json] [--quick | --smoke] [--big-mib N]

Rows (each a median over repeated batches, per call):
  small add      4 floats: Tensor.__add__, ctorch.ops.aten.add (overload set),
                 ctorch.ops.aten.add.Tensor vs torch's `x + y`
  meta           x.shape, x.dtype, x.device, x.ndim (cached per handle, one
                 ct_tensor_metadata per handle), and an op result's first read
  script fwd     a small scripted module (Linear+ReLU, 1x16): ctorch.load vs
                 torch.jit.load forward (ct_module_forward_tensors where the
                 library has it; the note says which path ran)
  resnet18 fwd   traced torchvision resnet18, 1x3x224x224, eval, no grad
  exchange       numpy and DLPack zero-copy imports/exports of 1 KiB, 1 MiB
                 and a big buffer (1 GiB; 256 MiB when memory is tight)
  lifetime       wrapper create+free with __del__ (what ctorch uses) against
                 the same wrapper managed by weakref.finalize
"""
import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import ctorch  # noqa: E402


def pair(fa, fb, n, batches):
    """Like per_call for two functions, alternating their batches so that load
    changes on a shared machine hit both alike. Returns (median a, median b)."""
    fa()
    fb()
    ta, tb = [], []
    for _ in range(batches):
        for fn, acc in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            acc.append((time.perf_counter() - t0) / n)
    return statistics.median(ta), statistics.median(tb)


def fmt(s):
    if s < 1e-6:
        return "%.0f ns" % (s * 1e9)
    if s < 1e-3:
        return "%.2f us" % (s * 1e6)
    if s < 1:
        return "%.2f ms" % (s * 1e3)
    return "%.2f s" % s


class Rows:
    def __init__(self):
        self.rows = []

    def add(self, group, name, ctorch_s, torch_s, note=""):
        ratio = ctorch_s / torch_s if torch_s else None
        self.rows.append({"group": group, "name": name, "ctorch_s": ctorch_s,
                          "torch_s": torch_s, "ratio": ratio, "note": note})
        print("%-10s %-40s %12s %12s %8s  %s" % (
            group, name, fmt(ctorch_s), fmt(torch_s) if torch_s else "-",
            "%.2fx" % ratio if ratio else "-", note), flush=True)


def mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.lin(x))


CONVNET_SRC = """
def forward(self, x):
    h = torch.relu(torch.conv2d(x, self.conv_w, self.conv_b, [1, 1], [1, 1]))
    h = torch.flatten(torch.max_pool2d(h, [2, 2]), 1)
    return torch.linear(h / (1 + torch.abs(h)), self.fc_w, self.fc_b)
"""


class TorchConvNet(torch.nn.Module):
    """The conv net of bench_train.cpp as PyTorch users write it (eager)."""

    def __init__(self, init):
        super().__init__()
        for k, v in init.items():
            setattr(self, k, torch.nn.Parameter(v.clone()))

    def forward(self, x):
        F = torch.nn.functional
        h = F.max_pool2d(F.relu(F.conv2d(x, self.conv_w, self.conv_b, padding=1)), 2).flatten(1)
        return F.linear(h / (1 + h.abs()), self.fc_w, self.fc_b)


def train_step_rows(rows, n, B):
    """One training step (forward, cross-entropy, backward, Adam): ctorch (a module from
    TorchScript source, ctorch.optim.Adam) vs PyTorch (an eager nn.Module, torch.optim.Adam)."""
    g = torch.Generator().manual_seed(0)
    init = {"conv_w": torch.randn(16, 3, 3, 3, generator=g) * 0.2,
            "conv_b": torch.randn(16, generator=g) * 0.1,
            "fc_w": torch.randn(10, 4096, generator=g) * 0.02, "fc_b": torch.zeros(10)}
    x, y = torch.randn(32, 3, 32, 32, generator=g), torch.randint(10, (32,), generator=g)
    tm = TorchConvNet(init)
    topt = torch.optim.Adam(tm.parameters(), lr=1e-3)
    cm = ctorch.Module.new("BenchConvNet")
    for k, v in init.items():
        cm.register_parameter(k, ctorch.from_numpy(v.numpy().copy()))
    cm.define(CONVNET_SRC)
    copt = ctorch.optim.Adam(cm.parameters(), lr=1e-3)
    cx, cy = ctorch.from_numpy(x.numpy()), ctorch.from_numpy(y.numpy())
    xent = ctorch.ops.aten.cross_entropy_loss

    def ctorch_step():
        loss = xent(cm(cx), cy)
        copt.zero_grad()
        loss.backward()
        copt.step()

    def torch_step():
        loss = torch.nn.functional.cross_entropy(tm(x), y)
        topt.zero_grad()
        loss.backward()
        topt.step()

    # the same TorchScript module run by PyTorch (torch.jit.load of ctorch's save): what
    # the binding adds, the JIT being on both sides
    import io
    jm = torch.jit.load(io.BytesIO(cm.save()))
    jopt = torch.optim.Adam(list(jm.parameters()), lr=1e-3)

    def torch_jit_step():
        loss = torch.nn.functional.cross_entropy(jm(x), y)
        jopt.zero_grad()
        loss.backward()
        jopt.step()

    rows.add("train", "train step conv net 32x3x32x32 (Adam)", *pair(ctorch_step, torch_jit_step,
                                                                     n, B),
             "both: the same TorchScript module and Adam (torch.jit.load of ctorch's save)")
    rows.rows[-1]["target"] = 1.3
    rows.add("train", "train step conv net, vs eager PyTorch", *pair(ctorch_step, torch_step, n, B),
             "ctorch: TorchScript module + ctorch.optim.Adam; torch: eager nn.Module + "
             "torch.optim.Adam")


def layer_stack_rows(rows, n, B):
    """Forward and backward of a layer stack (Conv1d, BatchNorm1d, LSTM, MultiheadAttention,
    Linear; bench_train.cpp's): ctorch.nn's layers in a module vs the same torch.nn layers,
    eager, with the same initial values."""
    nn, tnn = ctorch.nn, torch.nn
    cm = ctorch.Module.new("BenchStack")
    for name, layer in [("conv", nn.Conv1d(16, 32, 3, padding=1)), ("bn", nn.BatchNorm1d(32)),
                        ("lstm", nn.LSTM(32, 32)), ("attn", nn.MultiheadAttention(32, 4)),
                        ("head", nn.Linear(32, 10))]:
        cm.register_module(name, layer)
    cm.define("def forward(self, x: Tensor) -> Tensor:\n"
              "    h = torch.relu(self.bn.forward(self.conv.forward(x)))\n"
              "    h = h.permute(2, 0, 1)\n"
              "    h = self.lstm.forward(h)[0]\n"
              "    a = self.attn.forward(h, h, h, need_weights=False)[0]\n"
              "    return self.head.forward(a.mean(0))\n")

    class Stack(tnn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = tnn.Conv1d(16, 32, 3, padding=1), tnn.BatchNorm1d(32)
            self.lstm, self.attn = tnn.LSTM(32, 32), tnn.MultiheadAttention(32, 4)
            self.head = tnn.Linear(32, 10)

        def forward(self, x):
            h = torch.relu(self.bn(self.conv(x))).permute(2, 0, 1)
            h = self.lstm(h)[0]
            return self.head(self.attn(h, h, h, need_weights=False)[0].mean(0))

    tm = Stack()
    tm.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                        for k, v in cm.state_dict().items()})
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 16, 32, generator=g), torch.randint(10, (8,), generator=g)
    cx, cy = ctorch.from_numpy(x.numpy()), ctorch.from_numpy(y.numpy())
    closs, tloss = nn.CrossEntropyLoss(), tnn.CrossEntropyLoss()

    def ctorch_step():
        cm.zero_grad()
        closs(cm(cx), cy).backward()

    def torch_step():
        tm.zero_grad()
        tloss(tm(x), y).backward()

    rows.add("train", "layer stack forward+backward (conv, bn, LSTM, attention)",
             *pair(ctorch_step, torch_step, n, B),
             "ctorch.nn layers (TorchScript modules) vs the same torch.nn layers, eager")
    rows.rows[-1]["target"] = 1.3


def custom_op_rows(rows, n, B):
    """softsign on 4 floats through PyTorch's dispatcher (torch.ops, called from PyTorch's
    Python): the kernel written in Python/numpy and registered through ctorch.library, against
    the same loop in a C++ TORCH_LIBRARY extension (bench_custom_ext.cpp, next to the library
    in build*/bench/). Skipped when that extension is not built or torch is another LibTorch."""
    ext = os.path.join(os.path.dirname(ctorch.LIBRARY_PATH), "bench", "libbench_custom_ext.so")
    if not os.path.exists(ext) or not torch.__version__.startswith(
            ctorch.torch_version().split("+")[0][:4]):
        print("custom op rows skipped (no %s, or torch %s is not ctorch's LibTorch %s)"
              % (ext, torch.__version__, ctorch.torch_version()))
        return
    torch.ops.load_library(ext)

    @ctorch.library.op("ctbench_py::softsign", "(Tensor x) -> Tensor", device_types="cpu")
    def softsign(x):
        a = x.numpy()
        return ctorch.from_numpy(a / (1 + np.abs(a)))

    tx = torch.randn(4)
    py_op, cpp_op = torch.ops.ctbench_py.softsign, torch.ops.ctbench_cpp.softsign
    if not torch.allclose(py_op(tx), cpp_op(tx)):
        raise SystemExit("bench_python.py: the Python and C++ softsign kernels differ")
    rows.add("custom", "custom op softsign 4 floats (torch.ops)",
             *pair(lambda: py_op(tx), lambda: cpp_op(tx), max(1, n // 4), B),
             "Python kernel through ctorch.library vs a C++ TORCH_LIBRARY kernel")
    softsign.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write the results as JSON to this path")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--smoke", action="store_true",
                    help="every case once or twice, no meaningful numbers: that the benchmark "
                         "still runs against this binding (ctest bench.python_smoke)")
    ap.add_argument("--big-mib", type=int, default=None,
                    help="size of the big exchange buffer (default 1024, or 256 when "
                         "less than 8 GiB of memory is available)")
    args = ap.parse_args()
    q = 0.005 if args.smoke else 0.2 if args.quick else 1.0
    B = 1 if args.smoke else 7 if args.quick else 15
    if args.smoke and args.big_mib is None:
        args.big_mib = 1

    torch.set_num_threads(1)
    ctorch.set_num_threads(1)
    rows = Rows()
    print("ctorch %s (LibTorch %s) at %s; torch %s; numpy %s" % (
        ctorch.version(), ctorch.torch_version(), ctorch.LIBRARY_PATH, torch.__version__,
        np.__version__))
    print("%-10s %-40s %12s %12s %8s" % ("group", "case", "ctorch", "torch", "ratio"))

    # ---- small ops ---------------------------------------------------------
    n = int(20000 * q)
    x, y = ctorch.ones(4), ctorch.ones(4)
    tx, ty = torch.ones(4), torch.ones(4)
    add, addT = ctorch.ops.aten.add, ctorch.ops.aten.add.Tensor
    rows.add("small", "x + y (Tensor.__add__)", *pair(lambda: x + y, lambda: tx + ty, n, B))
    rows.add("small", "ops.aten.add.Tensor(x, y)",
             *pair(lambda: addT(x, y), lambda: torch.ops.aten.add.Tensor(tx, ty), n, B),
             "vs torch.ops.aten.add.Tensor")
    rows.add("small", "ops.aten.add(x, y) (overload set)",
             *pair(lambda: add(x, y), lambda: torch.add(tx, ty), n, B), "vs torch.add")
    rows.add("small", "ops.aten.add.Tensor(x, y) vs x + y",
             *pair(lambda: addT(x, y), lambda: tx + ty, n, B), "vs torch x + y")
    rows.add("small", "x * 2.0", *pair(lambda: x * 2.0, lambda: tx * 2.0, n, B))
    rows.add("small", "x[1]", *pair(lambda: x[1], lambda: tx[1], n, B))
    rows.add("meta", "x.shape", *pair(lambda: x.shape, lambda: tx.shape, n, B))
    rows.add("meta", "x.dtype", *pair(lambda: x.dtype, lambda: tx.dtype, n, B))
    rows.add("meta", "x.device", *pair(lambda: x.device, lambda: tx.device, n, B))
    rows.add("meta", "x.ndim", *pair(lambda: x.ndim, lambda: tx.ndim, n, B))
    rows.add("meta", "fresh result: (x + y).shape",
             *pair(lambda: (x + y).shape, lambda: (tx + ty).shape, n, B),
             "op + first metadata read")
    rows.add("small", "ones(4) factory", *pair(lambda: ctorch.ones(4), lambda: torch.ones(4), n, B))

    # ---- custom operator: a Python kernel vs the same in a C++ extension --------
    custom_op_rows(rows, n, B)

    # ---- training step: the conv net of bench_train.cpp --------------------------
    train_step_rows(rows, 1 if args.smoke else 5 if args.quick else 20, B)
    layer_stack_rows(rows, 1 if args.smoke else 5 if args.quick else 20, B)

    # ---- lifetime: __del__ against weakref.finalize -----------------------------
    free = ctorch._lib.G.tensor_free
    ref = ctorch._lib.G.tensor_ref
    import ctypes
    h = x._handle

    class WithDel:
        __slots__ = ("h",)

        def __init__(self):
            o = ctypes.c_void_p()
            ref(ctypes.byref(o), h)
            self.h = o.value

        def __del__(self):
            free(self.h)

    class WithFinalize:
        __slots__ = ("h", "__weakref__")

        def __init__(self):
            o = ctypes.c_void_p()
            ref(ctypes.byref(o), h)
            self.h = o.value
            weakref.finalize(self, free, self.h)

    t_del, t_fin = pair(lambda: WithDel(), lambda: WithFinalize(), n, B)
    rows.add("lifetime", "handle wrapper: __del__ vs finalize", t_del, t_fin,
             "torch column = weakref.finalize")

    # ---- a small scripted module ------------------------------------------------
    tmp = tempfile.mkdtemp(prefix="ctorch_bench_")
    torch.manual_seed(0)
    tiny_path = os.path.join(tmp, "tiny.pt")
    torch.jit.save(torch.jit.script(Tiny().eval()), tiny_path)
    cm = ctorch.load(tiny_path).eval()
    tm = torch.jit.load(tiny_path).eval()
    xi = ctorch.randn(1, 16)
    txi = torch.from_numpy(xi.numpy())
    with ctorch.no_grad(), torch.no_grad():
        rows.add("module", "tiny scripted forward (1x16)", *pair(lambda: cm(xi), lambda: tm(txi), n // 4, B),
                 "tensors-only call")

    # ---- resnet18 ------------------------------------------------------------------
    try:
        import torchvision
        net = torchvision.models.resnet18(weights=None).eval()
        rx = torch.randn(1, 3, 224, 224)
        rpath = os.path.join(tmp, "resnet18.pt")
        with torch.no_grad():
            torch.jit.save(torch.jit.trace(net, (rx,)), rpath)
        cr = ctorch.load(rpath).eval()
        tr = torch.jit.load(rpath).eval()
        crx = ctorch.from_numpy(rx.numpy())
        with ctorch.no_grad(), torch.no_grad():
            nr = max(3, int(10 * q))
            rows.add("module", "resnet18 forward (1x3x224x224)", *pair(lambda: cr(crx), lambda: tr(rx), nr, 5))
            same = np.allclose(cr(crx).numpy(), tr(rx).numpy(), atol=1e-4)
            print("           resnet18 outputs agree: %s" % same)
    except ImportError:
        print("torchvision missing: resnet18 skipped")

    # ---- exchange ----------------------------------------------------------------------
    big = args.big_mib
    if big is None:
        big = 1024 if mem_available() > 8 * (1 << 30) else 256
    sizes = [("1 KiB", 1 << 10), ("1 MiB", 1 << 20), ("%d MiB" % big if big != 1024 else "1 GiB",
                                                       big << 20)]
    ne = int(5000 * q)
    for label, nbytes in sizes:
        a = np.ones(nbytes // 4, dtype=np.float32)
        ct = ctorch.from_numpy(a)
        tt = torch.from_numpy(a)
        rows.add("exchange", "from_numpy %s" % label, *pair(lambda: ctorch.from_numpy(a), lambda: torch.from_numpy(a), ne, B))
        rows.add("exchange", "tensor.numpy() %s" % label, *pair(lambda: ct.numpy(), lambda: tt.numpy(), ne, B))
        rows.add("exchange", "from_dlpack(ndarray) %s" % label,
                 *pair(lambda: ctorch.from_dlpack(a), lambda: torch.from_dlpack(a), ne, B))
        rows.add("exchange", "from_dlpack(torch tensor) %s" % label,
                 *pair(lambda: ctorch.from_dlpack(tt), lambda: torch.from_dlpack(tt), ne, B), "torch column: torch->torch")
        rows.add("exchange", "torch.from_dlpack(ctorch) %s" % label,
                 *pair(lambda: torch.from_dlpack(ct), lambda: torch.from_dlpack(tt), ne, B), "torch column: torch->torch")
        rows.add("exchange", "np.from_dlpack(ctorch) %s" % label,
                 *pair(lambda: np.from_dlpack(ct), lambda: np.from_dlpack(tt), ne, B))
        p = ct.data_ptr()
        assert ctorch.from_dlpack(tt).data_ptr() == p == torch.from_dlpack(ct).data_ptr()
        del a, ct, tt
        gc.collect()

    if args.json:
        meta = {"ctorch": ctorch.version(), "libtorch": ctorch.torch_version(),
                "torch": torch.__version__, "numpy": np.__version__,
                "python": sys.version.split()[0], "library": ctorch.LIBRARY_PATH,
                "big_mib": big, "quick": args.quick, "loadavg": os.getloadavg()}
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows.rows}, f, indent=2)
        print("wrote", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
