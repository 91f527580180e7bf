"""TorchScript modules and pickles, cross-checked against torch.jit.load."""
import glob
import io
import os

import numpy as np
import pytest
import torch

import ctorch
from conftest import assert_same, to_ctorch, to_torch


@pytest.fixture
def ae(tmp_model):
    path, tm = tmp_model("ae", extra_files={"meta.json": '{"a": 1}'})
    return path, tm


def test_forward_and_methods_match_torch(ae):
    path, tm = ae
    m = ctorch.load(path)
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert_same(m(to_ctorch(x)), tm(x))
        assert_same(m.forward(to_ctorch(x)), tm(x))
        assert_same(m.encode(to_ctorch(x)), tm.encode(x))
        assert_same(m.call("encode", x=to_ctorch(x)), tm.encode(x))
    assert sorted(m.methods()) == ["encode", "forward", "kinds"]
    assert "encode" in dir(m)
    assert "Tensor x" in m.encode.schema


def test_arguments_and_results_keep_their_kinds(ae):
    path, tm = ae
    m = ctorch.load(path)
    x = torch.ones(2)
    args = ((x, 1), [x, x], {"a": x})
    want = tm.kinds(*args, s="!")
    got = m.kinds(*to_ctorch(args), s="!")
    assert_same(got, want)
    assert type(got) is tuple and type(got[1]) is list and type(got[2]) is dict


def test_parameters_buffers_zero_copy(ae):
    path, tm = ae
    m = ctorch.load(path)
    ps = m.named_parameters()
    assert list(ps) == [n for n, _ in tm.named_parameters()]
    for n, p in tm.named_parameters():
        assert_same(ps[n], p.detach())
    w = ps["enc.weight"]
    assert w.requires_grad
    assert w.data_ptr() == m.enc.weight.data_ptr()    # the module's own tensor
    with ctorch.no_grad():
        w.zero_()
    assert m.named_parameters()["enc.weight"].sum().item() == 0  # visible in the module
    assert list(m.named_buffers()) == ["scale"]
    assert list(m.named_parameters(recurse=False)) == []
    assert set(m.state_dict()) == {"enc.weight", "enc.bias", "dec.weight", "dec.bias", "scale"}
    assert len(m.parameters()) == 4 and len(m.buffers()) == 1
    assert isinstance(m.enc, ctorch.Module) and set(m.named_children()) == {"enc", "dec"}


def test_train_eval_to_save_extra_files(ae, tmp_path):
    path, tm = ae
    m = ctorch.load(path)
    assert m.extra_files == {"meta.json": '{"a": 1}'}
    assert m.training
    assert m.eval() is m and not m.training
    assert m.train() is m and m.training
    m.train(False)
    assert not m.training
    assert m.to(ctorch.float64) is m
    assert m.named_parameters()["enc.weight"].dtype is ctorch.float64
    assert m.to("cpu") is m
    out = tmp_path / "re.pt"
    m.save(str(out), extra_files={"k": "v"})
    t2 = torch.jit.load(str(out), _extra_files={"k": ""}) if False else None
    files = {"k": ""}
    t2 = torch.jit.load(str(out), _extra_files=files)
    assert files["k"] in (b"v", "v")
    x = torch.randn(2, 4, dtype=torch.float64)
    with torch.no_grad():
        assert_same(m(to_ctorch(x)), t2(x))
    b = m.save()
    assert isinstance(b, bytes) and len(b) > 100
    m3 = ctorch.load(b)
    assert m3.named_parameters()["enc.weight"].dtype is ctorch.float64
    m4 = ctorch.load(io.BytesIO(b), device="cpu")
    assert sorted(m4.methods()) == sorted(m.methods())
    c = m.clone()
    assert c.named_parameters()["enc.weight"].data_ptr() != \
        m.named_parameters()["enc.weight"].data_ptr()
    f = m.freeze()
    assert f(ctorch.ones(1, 4, dtype=ctorch.float64)).shape == (1, 4)


def test_attributes_get_set(ae):
    path, _ = ae
    m = ctorch.load(path)
    assert m.scale.tolist() == [2.0]
    m.scale = ctorch.tensor([3.0])
    assert m.scale.tolist() == [3.0]
    with pytest.raises(AttributeError):
        m.nope
    with pytest.raises(ctorch.Error):
        m.scale = "a string"


def test_module_errors(ae):
    path, _ = ae
    m = ctorch.load(path)
    with pytest.raises(ctorch.CTorchTypeError) as ei:
        m("not a tensor")
    assert "forward" in str(ei.value) and "schema" in str(ei.value).lower()
    with pytest.raises(ctorch.NotFoundError):
        m.call("nope")
    with pytest.raises(ctorch.TorchError) as ei:
        m(ctorch.ones(3, 5))
    assert "mat" in str(ei.value)
    with pytest.raises(ctorch.NotFoundError):
        ctorch.load("/no/such/file.pt")
    with pytest.raises(ctorch.CTorchIOError):
        ctorch.load(b"")
    m.free()
    with pytest.raises(ctorch.InvalidArgumentError, match="freed"):
        m(ctorch.ones(1, 4))
    with ctorch.load(path) as m2:
        assert m2.training
    assert "freed" in repr(m2)


def test_module_as_value():
    """A Module passed as an argument / set as an attribute (ct_value_from_module)."""
    child = ctorch.Module.new("Child")
    child.register_parameter("w", ctorch.full((2,), 3.0))
    child.define("def forward(self, x):\n    return x * self.w\n")
    parent = ctorch.Module.new("Parent")
    parent.register_module("c", child)
    parent.define("def forward(self, x):\n    return self.c.forward(x) + 1\n")
    assert parent(ctorch.ones(2)).tolist() == [4.0, 4.0]
    other = ctorch.Module.new("Child")
    other.register_parameter("w", ctorch.full((2,), 5.0))
    other.define("def forward(self, x):\n    return x * self.w\n")
    # another class of the same name: refused, and the message says why
    with pytest.raises(ctorch.CTorchTypeError, match="another class of the same name"):
        parent.c = other
    # a module of the attribute's class: taken (the child, its weight changed through it)
    child.w = ctorch.full((2,), 5.0)
    parent.c = child
    assert parent(ctorch.ones(2)).tolist() == [6.0, 6.0]
    parent.c = parent.c
    assert parent.c(ctorch.ones(2)).tolist() == [5.0, 5.0]


def test_build_module_without_python_torch():
    m = ctorch.Module.new("Affine")
    m.register_parameter("w", ctorch.full((3,), 2.0))
    m.register_buffer("b", ctorch.ones(3))
    m.define("def forward(self, x):\n    return x * self.w + self.b\n")
    assert m(ctorch.arange(3, dtype=ctorch.float32)).tolist() == [1.0, 3.0, 5.0]
    with pytest.raises(ctorch.TorchError):
        m.define("def broken(self, x):\n    return x +\n")
    buf = m.save()
    tm = torch.jit.load(io.BytesIO(buf))
    assert tm(torch.arange(3.0)).tolist() == [1.0, 3.0, 5.0]


COUNTED = """
def one(self, x):
    self.calls.add_(1)
    return x
def pair(self, x):
    self.calls.add_(1)
    return x, x + 1
def listed(self, x):
    self.calls.add_(1)
    return [x, x]
def named(self, x):
    self.calls.add_(1)
    return {'a': x}
def nothing(self, x):
    self.calls.add_(1)
def many(self, x):
    self.calls.add_(1)
    return x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
"""


def test_methods_run_once_per_call():
    """Issue 21: a method with side effects runs exactly once per call, whatever
    it returns (the tensors-only path is chosen from the schema beforehand),
    and more than 16 tensors come back."""
    m = ctorch.Module.new("Counted")
    m.register_buffer("calls", ctorch.zeros(1, dtype=ctorch.int64))
    m.define(COUNTED)
    x = ctorch.ones(2)
    expected = {"one": ctorch.Tensor, "pair": tuple, "listed": list, "named": dict,
                "nothing": type(None), "many": tuple}
    for round_ in range(2):  # the second round uses the per-method decision
        for i, (name, kind) in enumerate(expected.items()):
            r = getattr(m, name)(x)
            assert type(r) is kind, (name, r)
            assert m.calls.tolist() == [round_ * len(expected) + i + 1], name
    assert len(m.many(x)) == 20
    assert m.pair(x)[1].tolist() == [2.0, 2.0]


# ---- the shared test models (tests/models/make_models.py) ----------------------

def _names(models_dir):
    # PyTorch-made models only: c_module* is written by the C tests, and nms
    # needs torchvision's op library (tested in tests/c/test_load_library.c).
    names = (os.path.basename(p)[:-6] for p in glob.glob(os.path.join(models_dir, "*_io.pt")))
    return sorted(n for n in names if not n.startswith("c_") and n != "nms")


def test_reference_models_match_torch(models_dir):
    names = _names(models_dir)
    assert names, "no models in " + models_dir
    for name in names:
        io_ = torch.load(os.path.join(models_dir, name + "_io.pt"))
        m = ctorch.load(os.path.join(models_dir, name + ".pt"))
        tm = torch.jit.load(os.path.join(models_dir, name + ".pt"))
        with torch.no_grad(), ctorch.no_grad():
            got = m(*to_ctorch(io_["inputs"]))
            assert_same(got, io_["output"], rtol=1e-4, atol=1e-5)
            assert_same(got, tm(*io_["inputs"]), rtol=1e-4, atol=1e-5)
        assert list(m.named_parameters()) == io_["param_names"], name
        assert list(m.named_buffers()) == io_["buffer_names"], name
        for k in ("inputs_neg", "inputs_opt"):
            if k in io_:
                with ctorch.no_grad():
                    assert_same(m(*to_ctorch(io_[k])), io_["output" + k[6:]])


def test_reference_io_through_load_pickle(models_dir):
    """An _io.pt pickle read by ctorch itself gives the same inputs/outputs."""
    io_ = ctorch.load_pickle(os.path.join(models_dir, "lstm_io.pt"))
    tio = torch.load(os.path.join(models_dir, "lstm_io.pt"))
    assert_same(io_["inputs"], tio["inputs"])
    m = ctorch.load(os.path.join(models_dir, "lstm.pt"))
    with ctorch.no_grad():
        assert_same(m(*io_["inputs"]), tio["output"], atol=1e-5)


def test_load_pickle_single_element_list(models_dir):
    io_ = ctorch.load_pickle(os.path.join(models_dir, "multi_io.pt"))
    tio = torch.load(os.path.join(models_dir, "multi_io.pt"))
    m = ctorch.load(os.path.join(models_dir, "multi.pt"))
    with ctorch.no_grad():
        assert_same(m.encode(*io_["inputs"]), tio["encode_out"], atol=1e-6)
        assert_same(m.decode(*io_["decode_in"], **io_["decode_kwargs"]), tio["decode_out"])


def test_reference_extra_files(models_dir):
    m = ctorch.load(os.path.join(models_dir, "with_meta.pt"))
    ef = m.extra_files
    assert ef["notes.txt"] == "hello" and '"with_meta"' in ef["meta.json"]


def test_resnet18_matches_torch(models_dir):
    p = os.path.join(models_dir, "resnet18.pt")
    if not os.path.exists(p):
        pytest.skip("no resnet18 (torchvision missing when the models were made)")
    io_ = torch.load(os.path.join(models_dir, "resnet18_io.pt"))
    m = ctorch.load(p).eval()
    x = io_["inputs"][0].numpy()
    with ctorch.no_grad():
        y = m(ctorch.from_numpy(x))
    np.testing.assert_allclose(y.numpy(), io_["output"].numpy(), rtol=1e-4, atol=1e-4)


def test_pickles_from_torch_save(models_dir):
    t = ctorch.load_pickle(os.path.join(models_dir, "tensor.pt"))
    assert_same(t, torch.load(os.path.join(models_dir, "tensor.pt")))
    l = ctorch.load_pickle(os.path.join(models_dir, "tensor_list.pt"))
    assert_same(l, torch.load(os.path.join(models_dir, "tensor_list.pt")))
    tu = ctorch.load_pickle(os.path.join(models_dir, "tensor_tuple.pt"))
    assert_same(tu, torch.load(os.path.join(models_dir, "tensor_tuple.pt")))


def test_state_dict_pickle(models_dir):
    sd = ctorch.load_pickle(os.path.join(models_dir, "state_dict.pt"))
    tsd = torch.load(os.path.join(models_dir, "state_dict.pt"))
    assert list(sd) == list(tsd)
    for k in tsd:
        assert_same(sd[k], tsd[k])


def test_load_pickle_nesting_limit():
    # ctorch refuses values nested deeper than 256 (lists, tuples, dicts);
    # 256 levels load and convert to Python objects under Python's default
    # recursion limit (the binding converts recursively).
    def nested(n):  # pickle protocol 2 of n lists inside each other
        return b"\x80\x02" + b"(" * (n - 1) + b"]" + b"l" * (n - 1) + b"."
    v = ctorch.load_pickle(nested(256))
    depth = 0
    while isinstance(v, list):
        depth += 1
        v = v[0] if v else None
    assert depth == 256
    t = ctorch.load_pickle(b"\x80\x02)" + b"\x85" * 255 + b".")
    assert isinstance(t, tuple)
    with pytest.raises(ctorch.CTorchIOError, match="nesting deeper than 256"):
        ctorch.load_pickle(nested(257))


def test_save_pickle_read_by_torch(tmp_path):
    obj = {"w": ctorch.arange(6, dtype=ctorch.float32).reshape(2, 3), "n": 3,
           "l": [ctorch.ones(2), ctorch.zeros(1)]}
    p = tmp_path / "x.pt"
    ctorch.save_pickle(obj, str(p))
    back = torch.load(str(p))
    assert back["n"] == 3 and back["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["l"][0].tolist() == [1.0, 1.0]
    b = ctorch.save_pickle(ctorch.tensor([1, 2, 3]))
    assert torch.load(io.BytesIO(b)).tolist() == [1, 2, 3]
    again = ctorch.load_pickle(b)
    assert again.tolist() == [1, 2, 3]
    bio = io.BytesIO()
    ctorch.save_pickle([1.5, "s"], bio)
    assert torch.load(io.BytesIO(bio.getvalue())) == [1.5, "s"]
    with pytest.raises(ctorch.CTorchIOError):
        ctorch.load_pickle(b"garbage")


def test_demo_example_runs(models_dir):
    """examples/python/demo.py runs a model on numpy data without torch."""
    import subprocess
    import sys
    demo = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "python",
                        "demo.py")
    if not os.path.exists(demo):
        pytest.skip("no examples/python/demo.py")
    env = dict(os.environ, CTORCH_LIBRARY=ctorch.LIBRARY_PATH)
    code = ("import sys, runpy; sys.argv = [%r, %r]; "
            "runpy.run_path(%r, run_name='__main__')" % (demo, os.path.join(models_dir,
                                                                              "gate.pt"), demo))
    r = subprocess.run([sys.executable, "-c", code + "; assert 'torch' not in sys.modules"],
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "f!(x) in place: [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]" in r.stdout
    assert "g(x) pure Python: [[1.0, 5.0, 17.0], [37.0, 65.0, 101.0]]" in r.stdout
