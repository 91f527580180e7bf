"""Custom autograd functions and foreign ops written in Python."""
import os
import subprocess
import sys
import threading

import pytest
import torch

import ctorch
from conftest import assert_same, to_ctorch

HERE = os.path.dirname(os.path.abspath(__file__))


class CubeMath:
    """k * x**3 and its gradient, written once for both libraries' Function."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * x * x * g * ctx.k, None


class Cube(CubeMath, ctorch.autograd.Function):
    pass


class TorchCube(CubeMath, torch.autograd.Function):
    pass


def test_function_gradients_match_torch():
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    TorchCube.apply(x, 2.0).sin().sum().backward()
    xc = ctorch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = Cube.apply(xc, 2.0)
    assert y.requires_grad and y.grad_fn_name == "Cube"
    assert_same(y.detach(), TorchCube.apply(x.detach(), 2.0))
    y.sin().sum().backward()
    assert_same(xc.grad, x.grad)


class Pair(ctorch.autograd.Function):
    num_outputs = 2

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a + b

    @staticmethod
    def backward(ctx, g_prod, g_sum):
        a, b = ctx.saved_tensors
        return g_prod * b + g_sum, g_prod * a + g_sum


def test_two_inputs_two_outputs():
    a = ctorch.tensor([1.0, 2.0], requires_grad=True)
    b = ctorch.tensor([3.0, 5.0], requires_grad=True)
    p, s = Pair.apply(a, b)
    (p * 2 + s).sum().backward()
    assert a.grad.tolist() == [2 * 3.0 + 1, 2 * 5.0 + 1]
    assert b.grad.tolist() == [2 * 1.0 + 1, 2 * 2.0 + 1]


def test_output_count_learned_without_num_outputs():
    calls = []

    class Split(ctorch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            calls.append(1)
            return x * 1, x * 2, x * 3

        @staticmethod
        def backward(ctx, a, b, c):
            return a + 2 * b + 3 * c

    x = ctorch.ones(2, requires_grad=True)
    outs = Split.apply(x)
    assert len(outs) == 3 and len(calls) == 2   # first call learned the count
    sum(o.sum() for o in outs[1:]).backward() if False else None
    (outs[0] + outs[1] + outs[2]).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]
    Split.apply(x)
    assert len(calls) == 3                     # remembered afterwards


def test_exception_in_backward_is_reraised_from_backward():
    class Bad(ctorch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward 42")

    x = ctorch.ones(2, requires_grad=True)
    y = Bad.apply(x).sum()
    with pytest.raises(ValueError, match="boom in backward 42") as ei:
        y.backward()
    cause = ei.value.__cause__
    assert isinstance(cause, ctorch.CallbackError) and cause.code == 9
    assert "boom in backward 42" in str(cause)
    # ctorch still works afterwards
    assert (x * 2).sum().item() == 4.0


def test_exception_in_forward_is_reraised_from_apply():
    class BadF(ctorch.autograd.Function):
        num_outputs = 1

        @staticmethod
        def forward(ctx, x):
            raise KeyError("bad forward")

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(KeyError, match="bad forward"):
        BadF.apply(ctorch.ones(1, requires_grad=True))


def test_ctx_is_released_after_graph_dies():
    from ctorch import autograd as ag
    import gc
    gc.collect()
    n0 = len(ag._states)
    x = ctorch.ones(3, requires_grad=True)
    y = Cube.apply(x, 1.0)
    assert len(ag._states) == n0 + 1
    y.sum().backward()
    del y
    import gc
    gc.collect()
    assert len(ag._states) == n0
    with ctorch.no_grad():
        Cube.apply(x, 1.0)
    assert len(ag._states) == n0  # no graph recorded: destroyed at once


def test_autograd_grad_function():
    x = ctorch.tensor([1.0, 2.0], requires_grad=True)
    w = ctorch.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    gx, gw = ctorch.autograd.grad(y, [x, w])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    z = ctorch.ones(1, requires_grad=True)
    g = ctorch.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert g[1] is None


class NumpyScale(ctorch.autograd.Function):
    """A backward that returns a numpy array, or a torch tensor (issue 40 item 4: the
    temporary ctorch tensor made from it was freed before the C call)."""
    kind = "numpy"

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        import numpy as np
        grad = np.asarray(g.numpy() * 2 + 0.5, dtype=np.float32)
        return torch.from_numpy(grad) if NumpyScale.kind == "torch" else grad


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_backward_may_return_numpy_or_torch(kind):
    NumpyScale.kind = kind
    for _ in range(20):  # a freed handle shows as a crash or as another tensor's values
        x = ctorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        NumpyScale.apply(x).sum().backward()
        assert x.grad.tolist() == [2.5, 2.5, 2.5]


@pytest.mark.parametrize("form", ["numpy", "list", "torch"])
def test_grad_outputs_from_numpy_lists_and_torch(form):
    import numpy as np
    for _ in range(20):
        x = ctorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 3
        go = {"numpy": np.zeros(3, dtype=np.float32), "list": [0.0, 0.0, 0.0],
              "torch": torch.zeros(3)}[form]
        filler = [ctorch.full((3,), 4.0) for _ in range(4)]  # would reuse a freed handle
        (gx,) = ctorch.autograd.grad(y, [x], grad_outputs=[go])
        assert gx.tolist() == [0.0, 0.0, 0.0], gx.tolist()
        del filler


# ---- foreign ops -------------------------------------------------------------------

def test_register_python_op_called_from_ops_and_torchscript():
    @ctorch.library.register("pyt::affine(Tensor x, float a, float b=1.0) -> Tensor")
    def affine(x, a, b):
        assert isinstance(x, ctorch.Tensor) and isinstance(a, float)
        return x * a + b

    t = ctorch.tensor([1.0, 2.0])
    assert ctorch.ops.pyt.affine(t, 2.0).tolist() == [3.0, 5.0]
    assert ctorch.ops.pyt.affine(t, 2, b=0.0).tolist() == [2.0, 4.0]
    assert "pyt::affine(Tensor x, float a, float b=1" in ctorch.ops.pyt.affine.__doc__
    assert "affine" in dir(ctorch.ops.pyt) and "pyt" in dir(ctorch.ops)
    m = ctorch.Module.new("UsesPy")
    m.define("def forward(self, x):\n    return pyt.affine(x, 3.0) - 1\n")
    assert m(t).tolist() == [3.0, 6.0]
    assert ctorch.library.registered()[
        "pyt::affine(Tensor x, float a, float b=1.0) -> Tensor"] is affine


def test_register_python_op_multiple_results_and_kinds():
    @ctorch.library.register("pyt::stats(Tensor x, str tag) -> (Tensor, int, str)")
    def stats(x, tag):
        return x.sum(), x.numel(), tag.upper()

    s, n, tag = ctorch.ops.pyt.stats(ctorch.ones(4), "ab")
    assert s.item() == 4.0 and n == 4 and tag == "AB"


def test_exception_in_python_op_is_reraised():
    @ctorch.library.register("pyt::fails(Tensor x) -> Tensor")
    def fails(x):
        raise ZeroDivisionError("python op failed 7")

    with pytest.raises(ZeroDivisionError, match="python op failed 7") as ei:
        ctorch.ops.pyt.fails(ctorch.ones(1))
    assert isinstance(ei.value.__cause__, ctorch.CallbackError)

    @ctorch.library.register("pyt::wrong_result(Tensor x) -> Tensor")
    def wrong(x):
        return "not a tensor"

    with pytest.raises(ctorch.CallbackError, match="expected Tensor"):
        ctorch.ops.pyt.wrong_result(ctorch.ones(1))


def test_register_errors():
    with pytest.raises(ctorch.InvalidArgumentError, match="schema"):
        ctorch.library.register("not a schema((", lambda: None)
    ctorch.library.register("pyt::once(Tensor x) -> Tensor", lambda x: x)
    with pytest.raises(ctorch.InvalidArgumentError, match="already registered"):
        ctorch.library.register("pyt::once(Tensor x) -> Tensor", lambda x: x)


def test_saved_model_calling_python_op(tmp_path):
    """A model saved by PyTorch that calls torch.ops.pytest_ns.twice runs in
    ctorch with the op implemented in Python (registered before loading)."""
    path = str(tmp_path / "foreign.pt")
    r = subprocess.run([sys.executable, os.path.join(HERE, "helpers_models.py"), path],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("could not make the model: " + r.stderr[-300:])
    ctorch.library.register("pytest_ns::twice(Tensor x) -> Tensor", lambda x: x * 2)
    m = ctorch.load(path)
    assert m(ctorch.tensor([1.0, 2.0])).tolist() == [3.0, 5.0]


def test_python_op_from_several_threads():
    @ctorch.library.register("pyt::inc(Tensor x) -> Tensor")
    def inc(x):
        return x + 1

    errors = []

    def work():
        try:
            for _ in range(200):
                if ctorch.ops.pyt.inc(ctorch.zeros(2)).tolist() != [1.0, 1.0]:
                    errors.append("bad")
        except Exception as e:  # pragma: no cover
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
