"""ctorch.ops: namespaces, overloads, argument conversion, docs."""
import pydoc

import numpy as np
import pytest
import torch

import ctorch
from ctorch import ops
from conftest import assert_same, to_ctorch


def test_call_with_positional_and_keyword_args_matches_torch():
    a, b = torch.randn(3), torch.randn(3)
    ca, cb = to_ctorch(a), to_ctorch(b)
    assert_same(ops.aten.add(ca, cb, alpha=2), torch.add(a, b, alpha=2))
    assert_same(ops.aten.add.Tensor(ca, cb), a + b)
    assert_same(ops.aten.add.Scalar(ca, 3), a + 3)
    assert_same(ops.aten.add(ca, 2.5), a + 2.5)
    assert_same(ops.aten.mul(ca, cb), a * b)
    assert_same(ops.aten.clamp(ca, min=-0.1, max=0.1), torch.clamp(a, min=-0.1, max=0.1))
    assert_same(ops.aten.cat([ca, cb], 0), torch.cat([a, b], 0))
    assert_same(ops.aten.stack((ca, cb), dim=1), torch.stack((a, b), dim=1))
    m = torch.randn(2, 3, 4)
    assert_same(ops.aten.sum(to_ctorch(m), [0, 2], keepdim=True),
                torch.sum(m, [0, 2], keepdim=True))
    assert_same(ops.aten.sum(to_ctorch(m), dim=1), m.sum(dim=1))
    assert_same(ops.aten.sum(to_ctorch(m), dtype=ctorch.float64), m.sum(dtype=torch.float64))
    assert_same(ops.aten.zeros([2, 3], dtype=ctorch.int32), torch.zeros(2, 3, dtype=torch.int32))
    assert_same(ops.aten.ones([2], dtype=ctorch.float64, device=ctorch.device("cpu")),
                torch.ones(2, dtype=torch.float64))
    x = torch.randn(1, 2, 5, 5)
    w = torch.randn(3, 2, 3, 3)
    assert_same(ops.aten.conv2d(to_ctorch(x), to_ctorch(w), None, 2, 1),
                torch.conv2d(x, w, None, 2, 1), atol=1e-5)


def test_results_of_every_kind():
    t = ctorch.tensor([[3.0, 1.0], [2.0, 5.0]])
    vals, idx = ops.aten.max(t, 1)   # a tuple result
    assert vals.tolist() == [3.0, 5.0] and idx.tolist() == [0, 1]
    parts = ops.aten.split(ctorch.arange(5), 2)  # Tensor[]
    assert isinstance(parts, list) and [p.tolist() for p in parts] == [[0, 1], [2, 3], [4]]
    assert ops.aten.size(t) == [2, 2]            # int[]
    assert ops.aten.dim(t) == 2                  # int
    assert ops.aten.is_floating_point(t) is True  # bool
    assert ops.aten.item(ctorch.tensor(2.5)) == 2.5
    assert ops.aten.lower("AbC") == "abc"   # str in, str out
    assert ops.aten.len([1, 2, 3]) == 3
    assert ops.prim.device(t) == ctorch.device("cpu")  # Device
    assert ops.aten.__and__(True, False) is False


def test_inplace_op_returns_same_tensor():
    t = ctorch.zeros(3)
    r = ops.aten.add_(t, 1.0)
    assert r.data_ptr() == t.data_ptr() and t.tolist() == [1.0] * 3


def test_overload_packets_docs_and_dir():
    add = ops.aten.add
    assert "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor" in \
        add.__doc__
    assert "Tensor" in add.overloads() and "Scalar" in add.overloads()
    assert "Tensor" in dir(add)
    assert "aten::add.Tensor" in add.Tensor.__doc__
    assert "aten::relu(Tensor self) -> Tensor" in ops.aten.relu.default.__doc__
    text = pydoc.render_doc(add, renderer=pydoc.plaintext)
    assert "aten::add.Tensor" in text
    assert "aten::add.Tensor" in pydoc.render_doc(add.Tensor, renderer=pydoc.plaintext)
    d = dir(ops.aten)
    assert "add" in d and "conv2d" in d and len(d) > 500
    assert "aten" in dir(ops) and "prim" in dir(ops)
    assert hasattr(ops.aten, "relu") and not hasattr(ops.aten, "no_such_op")
    with pytest.raises(ctorch.NotFoundError, match="no_such_op"):
        ops.aten.no_such_op
    with pytest.raises(ctorch.NotFoundError, match="overloads"):
        ops.aten.add.NoSuchOverload
    assert repr(add) == "<ctorch op aten::add>"


def test_bad_arguments_name_the_op_and_schema():
    with pytest.raises(ctorch.CTorchTypeError) as ei:
        ops.aten.add.Tensor(ctorch.ones(2), [1, 2])
    assert "aten::add" in str(ei.value) and "schema" in str(ei.value)
    with pytest.raises(ctorch.Error) as ei:
        ops.aten.add(ctorch.ones(2), ctorch.ones(2), nonsense=3)
    assert "nonsense" in str(ei.value)
    with pytest.raises(ctorch.Error):
        ops.aten.relu()
    with pytest.raises(ctorch.CTorchTypeError, match="cannot convert"):
        ops.aten.relu(object())
    with pytest.raises(OverflowError):
        ops.aten.add(ctorch.ones(1), 1 << 70)


def test_value_conversions_round_trip():
    """Python values through a TorchScript function and back keep their kinds."""
    s = ctorch.compile_script(
        "def ident(x: Any):\n    return x\n"
        "def info(d: Dict[str, List[int]], t: Tuple[int, str], o: Optional[float]):\n"
        "    return (len(d), t[1], o is None)\n")
    for v in (None, True, 3, 2.5, "héllo", [1, 2], [1.5, 2.0], [True, False], (1, "a"),
              {"a": 1}, ctorch.device("cpu"), [[1], [2, 3]], {"k": [1.0]}):
        r = s.ident(v)
        assert r == v and type(r) is type(v), (v, r)
    t = ctorch.ones(2)
    r = s.ident([t, t])
    assert isinstance(r, list) and r[0].data_ptr() == t.data_ptr()
    assert s.info({"a": [1], "b": []}, (1, "x"), None) == (2, "x", True)
    assert s.info(d={"a": [1]}, t=(1, "y"), o=1.0) == (1, "y", False)
    assert "ident" in s.functions()
    assert s.call("ident", 5) == 5
    with pytest.raises(ctorch.NotSupportedError):
        s.ident(1 + 2j)


def test_dtype_argument_uses_ctorch_codes():
    r = ops.aten.to(ctorch.ones(2), ctorch.float16)
    assert r.dtype is ctorch.float16
    r = ops.aten.to(ctorch.ones(2), dtype=ctorch.int8)
    assert r.dtype is ctorch.int8


def test_call_by_overload_set_resolution():
    t = ctorch.tensor([1.0, 4.0, 9.0])
    assert ops.aten.sqrt(t).tolist() == [1.0, 2.0, 3.0]
    assert ops.aten.pow(t, 2).tolist() == [1.0, 16.0, 81.0]
    assert ops.aten.pow(2, ctorch.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    assert ops.aten.where(t > 2, t, ctorch.zeros(3)).tolist() == [0.0, 4.0, 9.0]


def test_tensor_only_calls_agree_with_torch():
    """Tensor-only calls with tensor results go through ct_op_call_tensors
    (handles in, handles out); they agree with torch whatever made the
    inputs (factories, ct_op_call results, tensors-only results)."""
    a, b = torch.randn(2, 2), torch.randn(2, 2)

    def handle(t):
        return to_ctorch(t)

    def value(t):
        return to_ctorch(t)[0:2]    # a ct_op_call result (slice)

    for mx, my in ((handle, handle), (value, value), (handle, value), (value, handle)):
        assert_same(mx(a) + my(b), a + b)
        assert_same(mx(a) @ my(b), a @ b)
        assert_same(mx(a) < my(b), a < b)
        assert_same(-mx(a), -a)
        assert_same(ops.aten.mul(mx(a), my(b)), a * b)
        assert_same(ops.aten.mul.Tensor(mx(a), my(b)), a * b)
        assert_same(ops.aten.neg(mx(a)), -a)
        x, y = mx(a), my(b)
        assert_same(x - y, a - b)
        assert_same(x / y, a / b)
        assert_same(abs(x), abs(a))
        vals, idx = ops.aten.sort(x)            # two results
        tv, ti = torch.sort(a)
        assert_same(vals, tv)
        assert_same(idx, ti)
    ha, hb = handle(a), handle(b)
    r = ha + hb
    assert r._h and type(r._h) is int               # one ct_tensor handle
    with pytest.raises(ctorch.TorchError) as ei:
        ha + ctorch.ones(3)
    assert ei.value.function == "ct_op_call_tensors"
    with pytest.raises(ctorch.TorchError):
        ops.aten.add(ha, ctorch.ones(3))
    f = ctorch.ones(2, 2)
    f.free()
    with pytest.raises(ctorch.InvalidArgumentError, match="freed"):
        ha + f
    with pytest.raises(ctorch.InvalidArgumentError, match="freed"):
        -f
