"""ctorch.load_package: AOTInductor packages made at test time by
tests/models/make_packages.py (CTORCH_TEST_PACKAGES), every output checked
against torch's eager result; bad packages; on LibTorch < 2.6 the
not-supported error."""
import os

import numpy as np
import pytest
import torch

import ctorch

PKG_DIR = os.environ.get("CTORCH_TEST_PACKAGES")
_v = ctorch.torch_version().split(".")
AOTI = (int(_v[0]), int(_v[1])) >= (2, 6)

needs_packages = pytest.mark.skipif(
    not AOTI or not PKG_DIR,
    reason="LibTorch %s has no AOTInductor, or CTORCH_TEST_PACKAGES is not set (CTest sets it)"
    % ctorch.torch_version())


def pkg(name):
    assert PKG_DIR, "CTORCH_TEST_PACKAGES is not set"
    path = os.path.join(PKG_DIR, name)
    assert os.path.exists(path), path
    return path


def io(name):
    return torch.load(pkg(name + "_io.pt"))


def as_torch(t):
    return torch.from_dlpack(t)


def check_outputs(got, want):
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, ctorch.Tensor)
        g = as_torch(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


@needs_packages
@pytest.mark.parametrize("name", ["mlp", "multi"])
def test_outputs_match_eager(name):
    p = ctorch.load_package(pkg(name + ".pt2"))
    d = io(name)
    check_outputs(p(*[ctorch.from_dlpack(x) for x in d["inputs"]]), d["outputs"])
    # torch tensors and numpy arrays are accepted directly
    check_outputs(p(*d["inputs"]), d["outputs"])
    check_outputs(p(*[x.numpy() for x in d["inputs"]]), d["outputs"])


@needs_packages
def test_single_output_is_a_tensor_and_multi_a_tuple():
    d = io("mlp")
    assert isinstance(ctorch.load_package(pkg("mlp.pt2"))(*d["inputs"]), ctorch.Tensor)
    d = io("multi")
    out = ctorch.load_package(pkg("multi.pt2"))(*d["inputs"])
    assert isinstance(out, tuple) and len(out) == 3
    assert out[2].dtype is ctorch.int64


@needs_packages
def test_dynamic_batch():
    p = ctorch.load_package(pkg("multi.pt2"))
    for inputs, outputs in io("multi")["batches"]:
        check_outputs(p(*inputs), outputs)


@needs_packages
def test_update_constants():
    p = ctorch.load_package(pkg("mlp.pt2"))
    d = io("mlp")
    check_outputs(p(*d["inputs"]), d["outputs"])
    # The names torch's own loader lists (sorted); inductor may fold some of the
    # state_dict's away (torch 2.6 folds fc2.bias), never the weights.
    assert p.constant_names == list(d["new_names"])
    assert {"fc1.bias", "fc1.weight", "fc2.weight"} <= set(p.constant_names) <= \
        {"fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"}
    with pytest.raises(ctorch.NotFoundError, match="no constant 'nope'"):
        p.update_constants({"nope": ctorch.zeros(3)})
    with pytest.raises(ctorch.CTorchTypeError, match="expects Float"):
        p.update_constants({"fc1.bias": ctorch.zeros(16, dtype=ctorch.float64)})
    new = {k: ctorch.from_dlpack(v.clone()) for k, v in zip(d["new_names"], d["new_tensors"])}
    first = next(iter(new))
    if ctorch.torch_version().startswith("2.6"):
        # LibTorch 2.6's runtime replaces all constants once before it takes subsets
        with pytest.raises(ctorch.NotSupportedError, match="must replace all"):
            p.update_constants({first: new[first]})
        check_outputs(p(*d["inputs"]), d["outputs"])
    p.update_constants(new)
    check_outputs(p(*d["inputs"]), d["new_outputs"])
    del new
    check_outputs(p(*d["inputs"]), d["new_outputs"])  # the package keeps its own
    # a partial update has an effect, and another one undoes it
    orig = ctorch.from_dlpack(d["new_tensors"][0].clone())
    p.update_constants({first: ctorch.zeros(*orig.shape)})
    out = p(*d["inputs"])
    out = out if isinstance(out, tuple) else (out,)
    assert not torch.allclose(as_torch(out[0]), d["new_outputs"][0])
    p.update_constants({first: orig})
    check_outputs(p(*d["inputs"]), d["new_outputs"])


@needs_packages
def test_metadata_call_spec_device():
    p = ctorch.load_package(pkg("multi.pt2"))
    md = p.metadata
    assert isinstance(md, dict) and md["AOTI_DEVICE_KEY"] == "cpu"
    spec = p.call_spec
    assert len(spec) == 2 and all(isinstance(s, str) for s in spec)
    assert p.device == ctorch.device("cpu")
    assert p.constant_names == ["w"]
    assert "cpu" in repr(p)


@needs_packages
def test_load_from_bytes_and_file_object():
    d = io("mlp")
    with open(pkg("mlp.pt2"), "rb") as f:
        data = f.read()
    check_outputs(ctorch.load_package(data)(*d["inputs"]), d["outputs"])
    with open(pkg("mlp.pt2"), "rb") as f:
        check_outputs(ctorch.load_package(f)(*d["inputs"]), d["outputs"])


@needs_packages
def test_errors():
    with pytest.raises(ctorch.NotFoundError):
        ctorch.load_package(pkg("mlp.pt2") + ".missing")
    with pytest.raises(ctorch.CTorchIOError, match="not a zip archive"):
        ctorch.load_package(pkg("not_a_zip.pt2"))
    with pytest.raises(ctorch.CTorchIOError, match="not a loadable AOTInductor package"):
        ctorch.load_package(pkg("wrong_contents.pt2"))
    with pytest.raises(ctorch.CTorchIOError, match="model 'other'"):
        ctorch.load_package(pkg("mlp.pt2"), model_name="other")
    if not ctorch.cuda.is_compiled():
        with pytest.raises(ctorch.NotSupportedError, match="cuda"):
            ctorch.load_package(pkg("cuda_device.pt2"))
    p = ctorch.load_package(pkg("multi.pt2"))
    x = ctorch.zeros(4, 6)
    with pytest.raises(ctorch.InvalidArgumentError, match="takes 3 input tensors, got 1"):
        p(x)


@pytest.mark.skipif(AOTI, reason="LibTorch has AOTInductor")
def test_not_supported_names_the_version():
    with pytest.raises(ctorch.NotSupportedError, match=r"need LibTorch >= 2\.6") as e:
        ctorch.load_package("model.pt2")
    assert ctorch.torch_version() in str(e.value)
    with pytest.raises(ctorch.NotSupportedError, match=r"need LibTorch >= 2\.6"):
        ctorch.load_package(b"PK\x03\x04 not really")


RUNNERS = AOTI and (int(_v[0]), int(_v[1])) >= (2, 7)


@needs_packages
@pytest.mark.skipif(not RUNNERS, reason="LibTorch 2.6's loader has one runner")
def test_runners_serve_threads_at_once():
    """A package loaded with 3 runners, run from 6 threads 20 times each:
    every result equals the serial one (and torch's eager result)."""
    import threading
    p = ctorch.load_package(pkg("mlp.pt2"), num_runners=3)
    assert p.num_runners == 3
    d = io("mlp")
    x = ctorch.from_dlpack(d["inputs"][0])
    serial = as_torch(p(x)).clone()
    torch.testing.assert_close(serial, d["outputs"][0], rtol=1e-4, atol=1e-5)
    errors = []

    def work():
        try:
            for _ in range(20):
                assert torch.equal(as_torch(p(x)), serial)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    with pytest.raises(ctorch.InvalidArgumentError, match="a stream is for CUDA packages"):
        p.run(x, stream=0x1234)
    torch.testing.assert_close(as_torch(p.run(x, stream=None)), serial)


@pytest.mark.skipif(not AOTI or RUNNERS, reason="only LibTorch 2.6 lacks runners")
def test_runners_need_a_newer_loader():
    with pytest.raises(ctorch.NotSupportedError, match="package loader has one runner"):
        ctorch.load_package(pkg("mlp.pt2"), num_runners=2)


def test_runner_arguments_checked():
    with pytest.raises(ctorch.InvalidArgumentError, match="num_runners must be between 1 and 1024"):
        ctorch.load_package("model.pt2", num_runners=0)
    with pytest.raises(ctorch.InvalidArgumentError, match="need a path"):
        ctorch.load_package(b"PK\x03\x04", num_runners=2)
