"""Tensors: factories, metadata, operators, indexing, conversions, lifetime.
Every result is cross-checked against PyTorch."""
import gc
import threading
import weakref

import numpy as np
import pytest
import torch

import ctorch
from conftest import assert_same, to_ctorch, to_torch


def test_factories_match_torch():
    assert_same(ctorch.zeros(2, 3), torch.zeros(2, 3))
    assert_same(ctorch.zeros((2, 3)), torch.zeros((2, 3)))
    assert_same(ctorch.ones([4], dtype=ctorch.float64), torch.ones(4, dtype=torch.float64))
    assert_same(ctorch.full((2, 2), 7), torch.full((2, 2), 7))
    assert_same(ctorch.full((2, 2), 1.5), torch.full((2, 2), 1.5))
    assert_same(ctorch.full((2,), True), torch.full((2,), True))
    assert_same(ctorch.arange(5), torch.arange(5))
    assert_same(ctorch.arange(1, 2, 0.25), torch.arange(1, 2, 0.25))
    assert_same(ctorch.arange(10, 0, -3), torch.arange(10, 0, -3))
    assert_same(ctorch.eye(3), torch.eye(3))
    assert_same(ctorch.eye(2, 4, dtype=ctorch.int32), torch.eye(2, 4, dtype=torch.int32))
    e = ctorch.empty(3, 4, dtype="float16")
    assert e.shape == (3, 4) and e.dtype is ctorch.float16
    ctorch.manual_seed(0)
    r = ctorch.rand(1000)
    assert 0 <= r.min().item() and r.max().item() < 1
    n = ctorch.randn(10000, dtype=torch.float64)  # torch dtypes are accepted
    assert n.dtype is ctorch.float64 and abs(n.mean().item()) < 0.1
    assert ctorch.zeros(0, 3).shape == (0, 3)
    assert ctorch.ones(()).shape == ()
    x = ctorch.ones(2, requires_grad=True)
    assert x.requires_grad and x.is_leaf


def test_like_factories():
    t = ctorch.ones(2, 3, dtype=ctorch.float64)
    for f in ("empty_like", "zeros_like", "ones_like", "rand_like", "randn_like"):
        r = getattr(ctorch, f)(t)
        assert r.shape == (2, 3) and r.dtype is ctorch.float64
    assert ctorch.full_like(t, 4).tolist() == [[4.0] * 3] * 2
    assert ctorch.zeros_like(t, dtype=ctorch.int32).dtype is ctorch.int32


def test_tensor_from_python_data():
    assert_same(ctorch.tensor([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 4]]))
    assert_same(ctorch.tensor([1.5, 2]), torch.tensor([1.5, 2]))
    assert_same(ctorch.tensor([True, False]), torch.tensor([True, False]))
    assert_same(ctorch.tensor(3), torch.tensor(3))
    assert_same(ctorch.tensor([[1, 2]], dtype=ctorch.float16), torch.tensor([[1, 2]],
                                                                            dtype=torch.float16))
    assert_same(ctorch.tensor([1 + 2j, 3]), torch.tensor([1 + 2j, 3]))
    assert_same(ctorch.tensor([]), torch.tensor([]))
    with pytest.raises(ctorch.InvalidArgumentError, match="ragged"):
        ctorch.tensor([[1, 2], [3]])
    with pytest.raises(ctorch.CTorchTypeError):
        ctorch.tensor(["a"])


def test_tensor_copies_numpy_and_torch():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ctorch.tensor(a)
    assert t.data_ptr() != a.ctypes.data
    a[0, 0] = 100
    assert t[0, 0].item() == 0
    assert t.dtype is ctorch.int32
    tt = torch.arange(4.0)
    c = ctorch.tensor(tt)
    assert c.data_ptr() != tt.data_ptr()
    assert_same(c, tt)
    assert_same(ctorch.tensor(a[:, ::2]), torch.from_numpy(a[:, ::2].copy()))


def test_metadata():
    t = ctorch.zeros(2, 3, 4, dtype=ctorch.int16)
    assert t.shape == (2, 3, 4) == t.size()
    assert t.size(1) == 3 and t.size(-1) == 4
    assert t.strides == (12, 4, 1) == t.stride()
    assert t.stride(0) == 12
    assert t.ndim == 3 == t.dim()
    assert t.numel() == 24 and len(t) == 2
    assert t.dtype is ctorch.int16 and t.element_size() == 2 and t.nbytes == 48
    assert t.device == ctorch.device("cpu") == "cpu"
    assert str(t.device) == "cpu"
    assert t.is_contiguous()
    assert not t.transpose(0, 2).is_contiguous()
    assert t.data_ptr() != 0
    assert ctorch.zeros(0).data_ptr() == 0
    assert not t.requires_grad and t.grad is None
    v = t[1]
    assert v.storage_offset() == 12


REPR_CASES = [
    lambda: torch.tensor([1.0, 2.0]), lambda: torch.tensor(3.5), lambda: torch.tensor(7),
    lambda: torch.arange(6).reshape(2, 3), lambda: torch.tensor([True, False]),
    lambda: torch.tensor([1.5, -2.25, 1e-5]), lambda: torch.tensor([1e10, 1.0]),
    lambda: torch.tensor([0.1, float("nan"), float("inf")]),
    lambda: torch.zeros(1000, 1000), lambda: torch.arange(2000.0),
    lambda: torch.arange(24.0).reshape(2, 3, 4), lambda: torch.zeros(0, 3),
    lambda: torch.zeros(0), lambda: torch.ones(3, dtype=torch.float64),
    lambda: torch.ones(2, dtype=torch.int32), lambda: torch.ones(2, dtype=torch.float16),
    lambda: torch.randn(5, 40), lambda: torch.arange(30.0).reshape(3, 10) * 1000.5,
]


@pytest.mark.parametrize("case", range(len(REPR_CASES)))
def test_repr_is_torchs(case):
    """repr() prints as torch's Python does (summarised past 1000 elements)."""
    t = REPR_CASES[case]()
    assert repr(to_ctorch(t)) == repr(t).replace("torch.", "ctorch.")


def test_repr_grad_and_short_reprs():
    x = ctorch.ones(2, requires_grad=True)
    tx = torch.ones(2, requires_grad=True)
    assert repr(x) == repr(tx)
    assert repr(x * 2) == repr(tx * 2)
    assert len(repr(ctorch.zeros(1000, 1000))) < 600
    assert repr(ctorch.ops.aten.add) == "<ctorch op aten::add>"
    assert repr(ctorch.ops.aten.add.Tensor) == "<ctorch op aten::add.Tensor>"
    m = ctorch.Module.new("M")
    m.define("def forward(self, x):\n    return x\n")
    assert repr(m) == "<ctorch.Module methods: forward>"
    t = ctorch.ones(1)
    t.free()
    assert "freed" in repr(t)


BINOPS = ["__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__",
          "__pow__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]


@pytest.mark.parametrize("op", BINOPS)
def test_binary_operators_match_torch(op):
    torch.manual_seed(1)
    a = torch.randn(3, 4).abs() + 0.5
    b = torch.randn(3, 4).abs() + 0.5
    ca, cb = to_ctorch(a), to_ctorch(b)
    assert_same(getattr(ca, op)(cb), getattr(a, op)(b))
    assert_same(getattr(ca, op)(2.0), getattr(a, op)(2.0))
    assert_same(getattr(ca, op)(3), getattr(a, op)(3))


@pytest.mark.parametrize("op", ["__radd__", "__rsub__", "__rmul__", "__rtruediv__",
                                "__rpow__", "__rfloordiv__", "__rmod__"])
def test_reflected_operators_match_torch(op):
    a = torch.tensor([1.0, 2.0, 4.0])
    ca = to_ctorch(a)
    assert_same(getattr(ca, op)(3.0), getattr(a, op)(3.0))
    assert_same(getattr(ca, op)(2), getattr(a, op)(2))


def test_int_and_bitwise_operators():
    a = torch.tensor([1, 2, 3, 12])
    b = torch.tensor([3, 3, 1, 5])
    ca, cb = to_ctorch(a), to_ctorch(b)
    for op in ("__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__add__",
               "__floordiv__", "__mod__"):
        assert_same(getattr(ca, op)(cb), getattr(a, op)(b))
        assert_same(getattr(ca, op)(2), getattr(a, op)(2))
    assert_same(~ca, ~a)
    assert_same(-ca, -a)
    assert_same(abs(-ca), abs(-a))
    assert_same(2 & ca, 2 & a)
    assert_same(+ca, a)


def test_matmul_and_neg():
    a = torch.randn(3, 4)
    b = torch.randn(4, 5)
    assert_same(to_ctorch(a) @ to_ctorch(b), a @ b, atol=1e-5)
    assert_same(-to_ctorch(a), -a)


def test_operators_with_numpy_and_torch_operands():
    c = ctorch.ones(3)
    assert_same(c + np.arange(3, dtype=np.float32), torch.ones(3) + torch.arange(3.0))
    assert_same(c * torch.full((3,), 2.0), torch.full((3,), 2.0))


def test_inplace_operators_keep_identity():
    t = ctorch.ones(3)
    p = t.data_ptr()
    u = t
    t += 1
    t *= ctorch.full((3,), 3.0)
    t -= 0.5
    t /= 2
    assert t is u and t.data_ptr() == p
    assert t.tolist() == [2.75] * 3


def test_broadcast_error_message():
    with pytest.raises(ctorch.TorchError, match="size of tensor a"):
        ctorch.ones(3) + ctorch.ones(4)


def test_methods_are_aten_ops():
    a = torch.randn(3, 4)
    c = to_ctorch(a)
    assert_same(c.sum(), a.sum())
    assert_same(c.sum(dim=1), a.sum(dim=1))
    assert_same(c.mean(1, keepdim=True), a.mean(1, keepdim=True))
    assert_same(c.view(4, 3), a.view(4, 3))
    assert_same(c.reshape(-1), a.reshape(-1))
    assert_same(c.permute(1, 0), a.permute(1, 0))
    assert_same(c.transpose(0, 1), a.transpose(0, 1))
    assert_same(c.relu(), a.relu())
    assert_same(c.softmax(-1), a.softmax(-1))
    assert_same(c.argmax(dim=1), a.argmax(dim=1))
    assert "aten::sum" in c.sum.__doc__
    with pytest.raises(AttributeError):
        c.definitely_not_an_op
    assert "softmax" in dir(c)


def test_item_tolist_and_conversions():
    t = ctorch.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert t.tolist() == [[1.5, 2.0], [3.0, 4.0]]
    assert t[0, 0].item() == 1.5 and float(t[0, 0]) == 1.5
    assert int(ctorch.tensor(7)) == 7 and bool(ctorch.tensor(True))
    assert [1, 2, 3][ctorch.tensor(1)] == 2
    assert ctorch.tensor([1, 2]).tolist() == [1, 2]
    assert ctorch.ones(2, dtype=ctorch.bfloat16).tolist() == [1.0, 1.0]
    assert ctorch.zeros(2, 0).tolist() == [[], []]
    assert [x.item() for x in ctorch.arange(3)] == [0, 1, 2]
    assert "%.2f" % ctorch.tensor(1.234).item() == "1.23"
    assert "{:.1f}".format(ctorch.tensor(2.25)) == "2.2"


INDICES = [
    1, -1, (0, 2), (slice(None), 1), (Ellipsis, 0), (None, 1), (0, None, slice(1, 3)),
    slice(None, None, 2), (slice(1, None), slice(None, -1, 2)), (Ellipsis, None),
    (1, Ellipsis, 2), slice(-2, None), (slice(None), None, slice(None), None),
]


@pytest.mark.parametrize("idx", INDICES, ids=[repr(i) for i in INDICES])
def test_getitem_matches_torch(idx):
    a = torch.arange(60.0).reshape(3, 4, 5)
    c = to_ctorch(a)
    r = c[idx]
    assert_same(r, a[idx])
    # basic indexing gives views
    assert r.numel() == 0 or r.data_ptr() == a[idx].data_ptr()


def test_advanced_indexing_matches_torch():
    a = torch.arange(20).reshape(4, 5)
    c = to_ctorch(a)
    assert_same(c[ctorch.tensor([0, 2])], a[torch.tensor([0, 2])])
    assert_same(c[[1, 3]], a[[1, 3]])
    assert_same(c[:, ctorch.tensor([4, 0])], a[:, torch.tensor([4, 0])])
    assert_same(c[c > 10], a[a > 10])


def test_setitem_matches_torch():
    a = torch.zeros(3, 4)
    c = ctorch.zeros(3, 4)
    for idx, val in [(0, 1.0), ((slice(None), 1), 2.0), ((2, slice(1, 3)), 5),
                     ((Ellipsis, 3), torch.tensor([7.0, 8.0, 9.0]))]:
        a[idx] = val
        c[idx] = to_ctorch(val) if isinstance(val, torch.Tensor) else val
    c[1, 0] = ctorch.tensor(-1.0)
    a[1, 0] = -1.0
    assert_same(c, a)
    c[c > 4] = 0.0
    a[a > 4] = 0.0
    assert_same(c, a)
    c[[0, 2]] = ctorch.tensor(3.0)
    a[[0, 2]] = 3.0
    assert_same(c, a)


def test_index_errors():
    c = ctorch.zeros(3, 4)
    with pytest.raises(ctorch.Error, match="out of range|index"):
        c[5]
    with pytest.raises(IndexError, match="too many indices"):
        c[0, 0, 0]
    with pytest.raises(ValueError, match="step"):
        c[::-1]


def test_int_index_paths_match_torch():
    """t[i] and t[i, j] take ct_op_call_tensors_values with cached int values;
    ints the cache has not seen yet, numpy ints and huge ints take the general
    call. All give torch's result (a view) or its error."""
    from ctorch import _lib, _values
    a = torch.arange(60.0).reshape(3, 4, 5)
    c = to_ctorch(a)
    for i in (0, 1, 2, -1, -3):
        assert_same(c[i], a[i])
        assert c[i].data_ptr() == a[i].data_ptr()
        assert_same(c[i], a[i])                      # again: the cached values
    assert_same(c[1, -2], a[1, -2])
    assert_same(c[np.int64(2)], a[2])
    assert_same(c[np.int32(1), 3], a[1, 3])
    assert_same(c[1, 2, 3], a[1, 2, 3])
    big = 10 ** 6 + 12345                            # not cached before this call
    with pytest.raises(IndexError, match="out of range"):
        c[big]
    with pytest.raises(IndexError, match="out of range"):
        c[-4]
    with pytest.raises(OverflowError):
        c[1 << 70]
    # no value handle is made per call: the int cache does not grow on repeats
    n = len(_values._INT_CACHE)
    for _ in range(3):
        c[2]
        c[0, 1]
    assert len(_values._INT_CACHE) == n


def test_mixed_tensor_scalar_ops_match_torch():
    """Ops called with leading tensors and then Python scalars go through
    ct_op_call_tensors_values: same results, errors and in-place behaviour as
    torch."""
    a = torch.arange(12.0).reshape(3, 4)
    c = to_ctorch(a)
    assert_same(ctorch.ops.aten.select(c, 1, 2), a.select(1, 2))
    assert_same(ctorch.ops.aten.unsqueeze(c, 0), a.unsqueeze(0))
    assert_same(ctorch.ops.aten.add(c, 2.5), a + 2.5)
    assert_same(ctorch.ops.aten.add.Scalar(c, 2, 3), torch.ops.aten.add.Scalar(a, 2, 3))
    assert_same(ctorch.ops.aten.clamp(c, None, 4), a.clamp(None, 4))
    assert_same(ctorch.ops.aten.transpose(c, 0, 1), a.transpose(0, 1))
    assert_same(ctorch.ops.aten.slice.Tensor(c, 1, None, 3, 2), a[:, :3:2])
    # a value that must be made (a list) and freed again
    assert_same(ctorch.ops.aten.reshape(c, [4, 3]), a.reshape(4, 3))
    # in-place: the metadata cache notices
    d = ctorch.zeros(2, 3)
    assert d.shape == (2, 3)
    ctorch.ops.aten.unsqueeze_(d, 0)
    assert d.shape == (1, 2, 3)
    ctorch.ops.aten.mul_(d, 3)
    # errors are the library's, naming the call (an overload whose results
    # are one Tensor takes the one-call path; the aten::select set also holds
    # the list op select.t, so it takes the general path)
    with pytest.raises(ctorch.Error, match="select") as ei:
        ctorch.ops.aten.select.int(c, 0, "x")
    assert ei.value.function == "ct_op_call_tensors_values"
    with pytest.raises(ctorch.Error) as ei:
        ctorch.ops.aten.select(c, 0, "x")
    assert ei.value.function == "ct_op_call" and not str(ei.value).startswith("ct_")
    with pytest.raises(IndexError, match="out of range"):
        ctorch.ops.aten.select.int(c, 0, 7)
    # values made for the call (a list) are freed after it, and when a later
    # argument cannot be converted
    from ctorch import _call
    freed = []
    real = _call.free_values
    try:
        _call.free_values = lambda hs: (freed.extend(hs), real(hs))
        assert_same(ctorch.ops.aten.reshape(c, [4, 3]), a.reshape(4, 3))
        assert len(freed) == 1
        with pytest.raises(ctorch.NotSupportedError):
            ctorch.ops.aten.reshape(c, [4, 3], 1j)
        assert len(freed) == 2
    finally:
        _call.free_values = real


def test_to_clone_contiguous_detach():
    t = ctorch.arange(6).reshape(2, 3)
    assert t.to(ctorch.float64).dtype is ctorch.float64
    assert t.to("cpu") is not t and t.to("cpu").data_ptr() == t.data_ptr()
    assert t.to(dtype="float32", copy=True).dtype is ctorch.float32
    assert t.to(torch.float16).dtype is ctorch.float16
    assert t.to(ctorch.zeros(1, dtype=ctorch.int8)).dtype is ctorch.int8
    assert t.float().dtype is ctorch.float32 and t.double().dtype is ctorch.float64
    c = t.clone()
    assert c.data_ptr() != t.data_ptr() and c.equal(t)
    tt = t.t()
    cc = tt.contiguous()
    assert cc.is_contiguous() and cc.equal(tt) and cc.data_ptr() != tt.data_ptr()
    assert t.contiguous().data_ptr() == t.data_ptr()
    x = ctorch.ones(2, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    r = x.ref()
    assert r.requires_grad and r.data_ptr() == x.data_ptr()
    assert ctorch.tensor([1.0]).allclose(ctorch.tensor([1.0 + 1e-9]))
    t.copy_(ctorch.ones(3))
    assert t.tolist() == [[1, 1, 1], [1, 1, 1]]
    t.fill_(4)
    assert t.tolist() == [[4] * 3] * 2
    t.zero_()
    assert t.sum().item() == 0


def test_free_and_context_manager():
    t = ctorch.ones(3)
    v = t[0]  # a view keeps the storage
    t.free()
    assert t.is_freed
    t.free()  # twice is fine
    with pytest.raises(ctorch.InvalidArgumentError, match="freed"):
        t.shape
    with pytest.raises(ctorch.InvalidArgumentError, match="freed"):
        t + 1
    assert v.item() == 1.0
    with ctorch.zeros(2) as z:
        assert z.sum().item() == 0
    assert z.is_freed


def test_wrapper_death_frees_handle():
    """__del__ frees the handle: a numpy array wrapped zero-copy is released
    once the last ctorch wrapper is gone."""
    a = np.ones(4)
    r = weakref.ref(a) if hasattr(a, "__weakref__") else None
    import sys
    before = sys.getrefcount(a)
    t = ctorch.from_numpy(a)
    u = t + 0  # a new tensor, not sharing a's memory
    assert sys.getrefcount(a) == before + 1
    del t
    gc.collect()
    assert sys.getrefcount(a) == before


def test_autograd_on_tensors_matches_torch():
    xa = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    xc = ctorch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (xa * xa * 3 + xa.relu()).sum().backward()
    y = (xc * xc * 3 + xc.relu()).sum()
    assert y.grad_fn_name == "SumBackward0"
    y.backward()
    assert_same(xc.grad, xa.grad)
    xc.zero_grad()
    assert xc.grad.tolist() == [0.0, 0.0, 0.0]
    xc.grad = ctorch.ones(3)
    assert xc.grad.tolist() == [1.0, 1.0, 1.0]
    xc.grad = None
    assert xc.grad is None
    z = xc * 2
    z.backward(ctorch.tensor([1.0, 2.0, 3.0]))
    assert xc.grad.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(ctorch.Error, match="grad"):
        ctorch.ones(2).sum().backward()
    g, = ctorch.autograd.grad((xc * xc).sum(), xc)
    assert g.tolist() == [2.0, -4.0, 6.0]
    xc.requires_grad = False
    assert not xc.requires_grad


def test_threads_share_handles():
    """Several Python threads run ops on the same tensors at once (the
    per-thread argument arrays keep the calls apart)."""
    a = ctorch.arange(1000, dtype=ctorch.float64)
    want = (a * 2 + 1).sum().item()
    errors = []

    def work(k):
        try:
            for i in range(300):
                s = (a * 2 + 1).sum().item()
                if s != want:
                    errors.append(s)
                if a[k].item() != k:
                    errors.append(("idx", k))
        except Exception as e:  # pragma: no cover
            errors.append(e)
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def test_dtype_objects():
    assert ctorch.float32.numpy_dtype == np.float32
    assert ctorch.get_dtype(np.dtype("int16")) is ctorch.int16
    assert ctorch.get_dtype(np.float64) is ctorch.float64
    assert ctorch.get_dtype(torch.bfloat16) is ctorch.bfloat16
    assert ctorch.get_dtype("half") is ctorch.float16
    assert ctorch.get_dtype(float) is ctorch.float64
    assert ctorch.float is ctorch.float32 and ctorch.long is ctorch.int64
    with pytest.raises(TypeError):
        ctorch.bfloat16.numpy_dtype
    with pytest.raises(ctorch.CTorchTypeError):
        ctorch.get_dtype("float7")
    assert repr(ctorch.float32) == "ctorch.float32"
    d = ctorch.device("cuda:1")
    assert d.type == "cuda" and d.index == 1 and str(d) == "cuda:1"
    assert ctorch.device("cpu") == ctorch.device(torch.device("cpu"))
    with pytest.raises(ctorch.InvalidArgumentError):
        ctorch.device("tpu")


def test_pickle_and_deepcopy_round_trip_through_torch_save_format():
    import copy
    import io
    import pickle
    t = ctorch.arange(6.0).reshape(2, 3)
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), copy.copy(t)):
        assert u.equal(t) and u.dtype is t.dtype and u.shape == t.shape
        assert u.data_ptr() != t.data_ptr()
    # the payload is torch.save's format: torch.load reads it
    fn, (payload,) = t.__reduce_ex__(2)
    assert torch.equal(torch.load(io.BytesIO(payload)), torch.arange(6.0).reshape(2, 3))
    i = ctorch.tensor([1, 2, 3], dtype=ctorch.int32)
    assert pickle.loads(pickle.dumps(i)).dtype is ctorch.int32
    # ctorch reads what torch pickled the same way
    buf = io.BytesIO()
    torch.save(torch.ones(2, dtype=torch.float64), buf)
    assert fn(buf.getvalue()).tolist() == [1.0, 1.0]


def test_module_level_functions_and_named_tuples():
    a = torch.randn(3, 4)
    x = to_ctorch(a)
    assert_same(ctorch.cat([x, x]), torch.cat([a, a]))
    assert_same(ctorch.stack([x, x], 1), torch.stack([a, a], 1))
    assert_same(ctorch.matmul(x, x.T), torch.matmul(a, a.T))
    assert_same(ctorch.where(x > 0, x, ctorch.zeros(1)), torch.where(a > 0, a, torch.zeros(1)))
    for f in ("relu", "sigmoid", "tanh"):
        assert_same(getattr(ctorch, f)(x), getattr(torch, f)(a))
    assert_same(ctorch.softmax(x, -1), torch.softmax(a, -1))
    assert_same(x.mT, a.mT)
    b = torch.randn(2, 3, 4)
    assert_same(to_ctorch(b).mT, b.mT)
    assert_same(to_ctorch(b).T, b.permute(2, 1, 0))
    for name, args in (("max", (1,)), ("min", (1,)), ("sort", ()), ("topk", (2,)),
                       ("mode", ()), ("kthvalue", (2,)), ("median", (1,))):
        want = getattr(torch, name)(a, *args)
        for got in (getattr(ctorch, name)(x, *args), getattr(x, name)(*args)):
            assert isinstance(got, ctorch.values_indices)
            assert_same(got.values, want.values)
            assert_same(got.indices, want.indices)
    assert_same(x.max(), a.max())   # one result stays a tensor
