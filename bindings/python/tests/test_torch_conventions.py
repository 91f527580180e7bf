"""Where a torch user's habits meet ctorch (issue 26, item 3): torch's exception
classes, messages without C function names, and torch's calling forms (variadic
einsum, numpy's axis/keepdims, grad_fn.name()), each checked against torch itself."""
import pytest

import ctorch

torch = pytest.importorskip("torch")


def test_a_missing_file_is_file_not_found_as_in_torch(tmp_path):
    missing = str(tmp_path / "nope.pt")
    for load in (ctorch.load, ctorch.load_pickle):
        with pytest.raises(FileNotFoundError) as ei:
            load(missing)
        e = ei.value
        assert isinstance(e, OSError) and isinstance(e, ctorch.NotFoundError)
        assert e.errno == 2 and e.filename == missing
        assert e.function in ("ct_module_load", "ct_pickle_load")
    with pytest.raises(FileNotFoundError):
        torch.load(missing)
    # other NotFoundErrors stay LookupErrors only
    with pytest.raises(ctorch.NotFoundError) as ei:
        ctorch.ops.aten.no_such_op_here
    assert not isinstance(ei.value, OSError)


def test_messages_do_not_start_with_c_function_names():
    cases = [lambda: ctorch.ones(2) + ctorch.ones(3),
             lambda: ctorch.ops.aten.select.int(ctorch.ones(2), 0, "x"),
             lambda: ctorch.ops.aten.item(ctorch.ones(2))]
    for f in cases:
        with pytest.raises(ctorch.Error) as ei:
            f()
        assert not str(ei.value).startswith("ct_"), str(ei.value)
        assert ei.value.function and ei.value.function.startswith("ct_")
        assert str(ei.value) == ei.value.message


def test_item_of_several_elements_raises_what_torch_raises():
    with pytest.raises((RuntimeError, ValueError)) as th_err:
        torch.ones(2).item()
    with pytest.raises(type(th_err.value)) as ct_err:  # ValueError on torch 1.x, RuntimeError on 2.x
        ctorch.ones(2).item()
    assert isinstance(ct_err.value, RuntimeError) and isinstance(ct_err.value, ValueError)
    assert str(ct_err.value) == "a Tensor with 2 elements cannot be converted to Scalar"
    assert ctorch.ones(1, 1).item() == 1.0


def test_einsum_takes_operands_as_torch_does():
    a, b = ctorch.arange(6.0).reshape(2, 3), ctorch.arange(12.0).reshape(3, 4)
    ta, tb = torch.arange(6.0).reshape(2, 3), torch.arange(12.0).reshape(3, 4)
    want = torch.einsum("ij,jk->ik", ta, tb).tolist()
    assert ctorch.einsum("ij,jk->ik", a, b).tolist() == want
    assert ctorch.einsum("ij,jk->ik", [a, b]).tolist() == want
    assert ctorch.einsum("ij->", a).item() == torch.einsum("ij->", ta).item()


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "prod", "std"])
def test_numpy_axis_and_keepdims_names(op):
    x = ctorch.arange(1.0, 7.0).reshape(2, 3)
    t = torch.arange(1.0, 7.0).reshape(2, 3)
    kw = {"axis": 1, "keepdims": True} if op != "prod" else {"axis": 1}
    got = getattr(x, op)(**kw)
    want = getattr(t, op)(**kw)
    assert got.shape == tuple(want.shape)
    assert got.flatten().tolist() == pytest.approx(want.flatten().tolist())
    # a function-style call and the C binder's own names still win
    assert ctorch.sum(x, axis=0).tolist() == torch.sum(t, axis=0).tolist()
    with pytest.raises(ctorch.InvalidArgumentError, match="multiple values for argument"):
        x.sum(dim=0, axis=1)


def test_grad_fn_is_an_object_with_name():
    x = ctorch.ones(2, requires_grad=True)
    y = (x * 2).sum()
    tx = torch.ones(2, requires_grad=True)
    ty = (tx * 2).sum()
    assert x.grad_fn is None and tx.grad_fn is None
    assert y.grad_fn.name() == ty.grad_fn.name() == "SumBackward0"
    assert "SumBackward0" in repr(y.grad_fn)
