"""Shared fixtures. Run with /usr/bin/python3 (numpy, torch, pytest):

    CTORCH_LIBRARY=build/libctorch.so CTORCH_TEST_MODELS=build/models \
        /usr/bin/python3 -m pytest -q bindings/python/tests
"""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
# CTORCH_TEST_INSTALLED=1 (the wheel leg): test the installed package, not this checkout
if PKG_ROOT not in sys.path and not os.environ.get("CTORCH_TEST_INSTALLED"):
    sys.path.insert(0, PKG_ROOT)

import ctorch  # noqa: E402


def header():
    """include/ctorch.h read by the one header parser (scripts/ctorch_header.py),
    or a skip outside the source tree."""
    repo = os.path.dirname(os.path.dirname(PKG_ROOT))
    path = os.path.join(repo, "include", "ctorch.h")
    if not os.path.exists(path):
        pytest.skip("not in the source tree")
    scripts = os.path.join(repo, "scripts")
    if scripts not in sys.path:
        sys.path.append(scripts)  # ctorch_header, gen_bindings
    import ctorch_header
    return ctorch_header.parse(path)


def to_torch(x):
    """ctorch results -> torch objects (tensors through DLPack, zero-copy)."""
    import torch
    if isinstance(x, ctorch.Tensor):
        t = x.detach() if x.requires_grad else x
        if t.dtype is ctorch.bool_:
            # torch 1.13's DLPack knows no kDLBool: go through numpy (zero-copy)
            return torch.from_numpy(t.numpy())
        return torch.from_dlpack(t)
    if isinstance(x, tuple):
        return tuple(to_torch(e) for e in x)
    if isinstance(x, list):
        return [to_torch(e) for e in x]
    if isinstance(x, dict):
        return {k: to_torch(v) for k, v in x.items()}
    return x


def to_ctorch(x):
    """torch objects -> ctorch objects (tensors zero-copy through DLPack)."""
    import torch
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.bool:
            # torch 1.13 exports bool as kDLUInt/8 (no kDLBool): use numpy
            return ctorch.from_numpy(x.detach().numpy())
        return ctorch.from_dlpack(x.detach())
    if isinstance(x, tuple):
        return tuple(to_ctorch(e) for e in x)
    if isinstance(x, list):
        return [to_ctorch(e) for e in x]
    if isinstance(x, dict):
        return {k: to_ctorch(v) for k, v in x.items()}
    return x


def assert_same(got, want, rtol=1e-5, atol=1e-6):
    """Deep comparison of a ctorch result with a torch reference."""
    import torch
    if isinstance(want, torch.Tensor):
        assert isinstance(got, ctorch.Tensor), type(got)
        g = to_torch(got)
        assert g.dtype == want.dtype, (g.dtype, want.dtype)
        assert tuple(g.shape) == tuple(want.shape)
        if want.dtype.is_floating_point or want.dtype.is_complex:
            assert torch.allclose(g, want.detach(), rtol=rtol, atol=atol), (g, want)
        else:
            assert torch.equal(g, want), (g, want)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want), (type(got), type(want))
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert_same(a, b, rtol, atol)
    elif isinstance(want, dict):
        assert isinstance(got, dict)
        assert list(got) == list(want)
        for k in want:
            assert_same(got[k], want[k], rtol, atol)
    elif isinstance(want, float):
        assert got == pytest.approx(want)
    else:
        assert got == want


@pytest.fixture(scope="session")
def models_dir():
    d = os.environ.get("CTORCH_TEST_MODELS")
    if not d or not os.path.isdir(d):
        pytest.skip("CTORCH_TEST_MODELS is not set or missing (tests/models/make_models.py)")
    return d


@pytest.fixture
def tmp_model(tmp_path):
    """Scripts a small torch module defined in helpers_models.py and saves it."""
    import helpers_models

    def make(name, **kw):
        return helpers_models.save(name, str(tmp_path), **kw)
    return make
