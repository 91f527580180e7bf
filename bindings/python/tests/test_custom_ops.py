"""Operators in torch's dispatcher with kernels written in Python and in C
(ctorch.library.op / Library, ct_library_*): from ctorch, and from PyTorch's
own Python in the same process (torch.ops, backward, gradcheck,
torch.jit.script), with meta tensors that never reach the real kernel."""
import ctypes
import os

import numpy as np
import pytest

import ctorch
from ctorch.library import Library, op


def softsign_np(a):
    return a / (1 + np.abs(a))


def test_python_kernel_values_fake_and_autograd():
    calls = {"cpu": 0, "fake": 0, "backward": 0}

    @op("ctpy1::softsign", "(Tensor x) -> Tensor")
    def softsign(x):
        calls["cpu"] += 1
        return ctorch.from_numpy(softsign_np(x.numpy()))   # numpy on the kernel's memory

    @softsign.register_fake
    def _(x):
        calls["fake"] += 1
        return ctorch.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.x = inputs[0]

    def backward(ctx, g):
        calls["backward"] += 1
        return g / (1 + ctx.x.abs()) ** 2

    softsign.register_autograd(backward, setup_context=setup_context)

    a = np.array([-2.5, -0.5, 0.0, 0.75, 3.0])
    y = softsign(ctorch.tensor(a))
    np.testing.assert_allclose(y.numpy(), softsign_np(a), rtol=0, atol=1e-15)
    y2 = ctorch.ops.ctpy1.softsign(ctorch.tensor(a))
    np.testing.assert_allclose(y2.numpy(), softsign_np(a), rtol=0, atol=1e-15)
    assert calls == {"cpu": 2, "fake": 0, "backward": 0}

    m = softsign(ctorch.empty(3, 4, device="meta"))
    assert m.device.type == "meta" and tuple(m.shape) == (3, 4)
    assert calls["cpu"] == 2 and calls["fake"] == 1

    # Gradients against central finite differences.
    x = ctorch.tensor(a, requires_grad=True)
    out = softsign(x)
    assert out.grad_fn.name() == "ctpy1::softsign"
    out.sum().backward()
    h = 1e-6
    fd = (softsign_np(a + h) - softsign_np(a - h)) / (2 * h)
    nz = a != 0
    np.testing.assert_allclose(x.grad.numpy()[nz], fd[nz], rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 1 / (1 + np.abs(a)) ** 2, rtol=1e-15)
    assert calls["backward"] == 1
    softsign.close()


def test_errors_and_close():
    lib = Library("ctpy2")
    lib.define("f(Tensor x) -> Tensor")
    with pytest.raises(ctorch.InvalidArgumentError, match="already defined"):
        lib.define("f(Tensor y) -> Tensor")
    with pytest.raises(ctorch.InvalidArgumentError, match="dispatch key 'XLA'"):
        lib.impl("f", lambda x: x, "XLA")
    with pytest.raises(ctorch.NotFoundError, match="'ctpy2::g' is not defined"):
        lib.impl("g", lambda x: x, "CPU")
    with pytest.raises(ctorch.InvalidArgumentError, match="belongs to torch"):
        Library("aten")

    class Boom(Exception):
        pass

    def kernel(x):
        raise Boom("kernel says no")

    lib.impl("f", kernel, "CPU")
    with pytest.raises(Boom, match="kernel says no"):
        ctorch.ops.ctpy2.f(ctorch.ones(2))

    # A kernel returning the wrong type.
    lib.define("h(Tensor x) -> Tensor")
    lib.impl("h", lambda x: 3, "CPU")
    with pytest.raises(ctorch.Error, match="expected Tensor but the kernel returned int"):
        ctorch.ops.ctpy2.h(ctorch.ones(2))

    handle = ctorch.ops.ctpy2.f
    lib.close()
    lib.close()  # idempotent
    with pytest.raises(ctorch.NotFoundError):
        ctorch.ops.ctpy2.f(ctorch.ones(2))
    with pytest.raises(ValueError, match="closed"):
        lib.define("k(Tensor x) -> Tensor")
    del handle
    import pickle
    with Library("ctpy3") as lib3:
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(lib3)


# ---- Inside PyTorch's own Python (same LibTorch, same process).

torch = pytest.importorskip("torch")


def _same_libtorch():
    if not torch.__version__.startswith(ctorch.torch_version().split("+")[0][:4]):
        pytest.skip("PyTorch %s is not the LibTorch ctorch uses (%s)"
                    % (torch.__version__, ctorch.torch_version()))


def _kernels():
    path = os.environ.get("CTORCH_TEST_KERNELS")
    if not path or not os.path.exists(path):
        pytest.skip("CTORCH_TEST_KERNELS (libctorch_test_kernels.so) not set")
    k = ctypes.CDLL(path)
    k.ctk_register_softsign.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    k.ctk_register_softsign.restype = ctypes.c_int32
    return k


def test_c_kernel_from_pytorch():
    _same_libtorch()
    k = _kernels()
    counts = (ctypes.c_int64 * 4).in_dll(k, "ctk_counts")
    for i in range(4):
        counts[i] = 0
    lib = Library("ctpt")
    assert k.ctk_register_softsign(lib._handle, b"softsign(Tensor x) -> Tensor") == 0

    x = torch.randn(6, dtype=torch.float64, requires_grad=True)
    y = torch.ops.ctpt.softsign(x)
    assert torch.allclose(y, torch.nn.functional.softsign(x), rtol=0, atol=1e-15)
    y.sum().backward()
    ref = x.detach().clone().requires_grad_(True)
    torch.nn.functional.softsign(ref).sum().backward()
    assert torch.allclose(x.grad, ref.grad, rtol=1e-14)
    assert counts[0] == 1 and counts[2] == 1
    assert torch.autograd.gradcheck(torch.ops.ctpt.softsign,
                                    (torch.randn(5, dtype=torch.float64, requires_grad=True),))

    m = torch.ops.ctpt.softsign(torch.empty(2, 9, device="meta"))
    assert m.shape == (2, 9) and m.device.type == "meta"
    assert counts[1] == 1

    class M(torch.nn.Module):
        def forward(self, x):
            return torch.ops.ctpt.softsign(x) * 2

    sm = torch.jit.script(M())
    z = torch.randn(4, dtype=torch.float64)
    assert torch.allclose(sm(z), 2 * torch.nn.functional.softsign(z))
    lib.close()
    assert counts[3] == 2  # the CPU and Meta kernels; y's graph keeps the backward's ctx
    del y
    assert counts[3] == 3
    with pytest.raises(Exception, match="ctpt"):
        torch.ops.ctpt.softsign(z)


def test_python_kernel_from_pytorch():
    _same_libtorch()
    seen = []

    @op("ctpy4::scale", "(Tensor x, float a) -> Tensor")
    def scale(x, a):
        seen.append(type(x).__name__)
        return ctorch.from_numpy(x.numpy() * a)

    def setup_context(ctx, inputs, output):
        ctx.a = inputs[1]

    scale.register_autograd(lambda ctx, g: (g * ctx.a, None), setup_context=setup_context)

    x = torch.tensor([1.0, -2.0, 3.5], dtype=torch.float64, requires_grad=True)
    y = torch.ops.ctpy4.scale(x, 2.5)
    assert y.tolist() == [2.5, -5.0, 8.75]
    assert seen == ["Tensor"]
    (y * torch.arange(3.0, dtype=torch.float64)).sum().backward()
    assert x.grad.tolist() == [0.0, 2.5, 5.0]
    assert torch.autograd.gradcheck(lambda t: torch.ops.ctpy4.scale(t, 1.5),
                                    (torch.randn(4, dtype=torch.float64, requires_grad=True),))

    @torch.jit.script
    def f(t: torch.Tensor) -> torch.Tensor:
        return torch.ops.ctpy4.scale(t, 3.0) + 1

    assert f(torch.ones(2, dtype=torch.float64)).tolist() == [4.0, 4.0]

    class Bad(Exception):
        pass

    def failing(x, a):
        raise Bad("from the python kernel")

    lib = Library("ctpy5")
    lib.define("scale(Tensor x, float a) -> Tensor")
    lib.impl("scale", failing, "CPU")
    with pytest.raises(RuntimeError, match="from the python kernel"):
        torch.ops.ctpy5.scale(torch.ones(2), 1.0)
    lib.close()
    scale.close()


def test_exit_with_operators_still_registered():
    """Kernels never closed (and a graph still holding a backward) at exit:
    the dispatcher frees them after Python is gone; no callback may run then."""
    import subprocess
    import sys
    code = (
        "import ctorch\n"
        "from ctorch.library import op\n"
        "@op('ctpy6::neg', '(Tensor x) -> Tensor')\n"
        "def neg(x):\n"
        "    return -x\n"
        "neg.register_autograd(lambda ctx, g: -g)\n"
        "x = ctorch.ones(2, requires_grad=True)\n"
        "y = neg(x)\n"
        "print(y.tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
                           os.path.abspath(ctorch.__file__)))))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[-1.0, -1.0]"
