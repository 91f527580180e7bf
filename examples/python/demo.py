#!/usr/bin/env python3
"""ctorch from Python with no torch import: run a TorchScript model on numpy
data, and write custom layers over torch memory in numpy and in pure Python.

    CTORCH_LIBRARY=build/libctorch.so python3 examples/python/demo.py [MODEL.pt]

MODEL.pt defaults to demo_model.pt (what examples/c/run_model.c saves) in the
current directory or the build tree; any TorchScript model taking one float
tensor works. Without numpy the model part runs on ctorch tensors only.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))

import ctorch  # noqa: E402

try:
    import numpy as np
except ImportError:  # the binding itself needs only the standard library
    np = None


def find_model(argv):
    if len(argv) > 1:
        return argv[1]
    root = os.path.join(HERE, "..", "..")
    for d in (".", os.path.join(root, "build"), os.path.join(root, "build", "examples"),
              os.path.join(root, "build", "examples", "c")):
        p = os.path.join(d, "demo_model.pt")
        if os.path.exists(p):
            return p
    return None


def make_fallback_model():
    """A small model built without Python torch (ct_module_new + define)."""
    m = ctorch.Module.new("Demo")
    ctorch.manual_seed(0)
    m.register_parameter("w", ctorch.randn(4, 3))
    m.register_parameter("b", ctorch.zeros(3))
    m.define("def forward(self, x):\n"
             "    return torch.relu(torch.matmul(x, self.w) + self.b)\n")
    return m


# ---- custom layers on torch memory --------------------------------------------------

def f_inplace(x):
    """f!(x): x *= 2, in place, through numpy on the tensor's own memory."""
    a = x.numpy()          # zero-copy view; writes land in the tensor
    a *= 2
    return x


def g_alloc(x):
    """g(x): allocates its result with ctorch and fills it in pure Python
    (y = x**2 + 1, element by element), with no numpy."""
    y = ctorch.empty_like(x)
    flat_in = x.contiguous().reshape(-1)
    flat_out = y.reshape(-1)  # a view of y
    vals = flat_in.tolist()
    for i, v in enumerate(vals):
        flat_out[i] = v * v + 1.0
    return y


def g_alloc_numpy(x):
    """Same as g_alloc, writing through numpy into ctorch.empty memory."""
    y = ctorch.empty(*x.shape, dtype=x.dtype)
    np.square(x.numpy(), out=y.numpy())
    y.numpy()[...] += 1.0
    return y


def main(argv):
    print("ctorch %s, LibTorch %s, library %s" % (ctorch.version(), ctorch.torch_version(),
                                                 ctorch.LIBRARY_PATH))
    path = find_model(argv)
    if path:
        print("model:", path)
        m = ctorch.load(path).eval()
    else:
        print("no demo_model.pt found (pass a path); using a model built in ctorch")
        m = make_fallback_model()
    print("methods:", ", ".join("%s: %s" % kv for kv in sorted(m.methods().items())))

    # Input: numpy data, shared with torch without a copy.
    shape = (2, 4)
    for name, t in m.named_parameters().items():
        if t.ndim == 2:  # guess the input width from a weight matrix
            shape = (2, t.shape[1] if name.endswith("weight") else t.shape[0])
            break
    with ctorch.no_grad():
        if np is not None:
            x_np = np.linspace(-1, 1, shape[0] * shape[1], dtype=np.float32).reshape(shape)
            x = ctorch.from_numpy(x_np)
            assert x.data_ptr() == x_np.ctypes.data
        else:
            x = ctorch.arange(shape[0] * shape[1], dtype=ctorch.float32).reshape(*shape)
        y = m(x)
        if isinstance(y, ctorch.Tensor):
            print("output", y.shape, y.dtype)
            print(y.numpy() if np is not None else y.tolist())

    # Custom layers.
    t = ctorch.arange(6, dtype=ctorch.float32).reshape(2, 3)
    if np is not None:
        p = t.data_ptr()
        f_inplace(t)
        assert t.data_ptr() == p
        print("f!(x) in place:", t.tolist())
        print("g(x) via numpy:", g_alloc_numpy(t).tolist())
    print("g(x) pure Python:", g_alloc(t).tolist())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
